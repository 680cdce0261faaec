// The harness's own GPU tests: the random fills (and their sums and bin counts) match the CPU's numbers, the
// timing guards catch the ways a submission can game the timing while honest
// work passes, and the check of a timed matrix product finds a wrong element.
// Without a GPU they are skipped, like every GPU test.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kit/device_check.cuh"
#include "kit/device_count.cuh"
#include "kit/kit.cuh"
#include "kit/matmul_reference.hpp"

namespace {

constexpr int kBlock = 256;
constexpr std::size_t kCount = 1000003;  // a prime: not a multiple of the block

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

__global__ void double_kernel(const float* in, float* out, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

void launch_double(const float* d_in, float* d_out, std::size_t n) {
  double_kernel<<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock>>>(d_in, d_out, n);
  CUDA_CHECK_LAUNCH();
}

// out = 2 in on kCount floats (or `count`), with fresh inputs before every call
// and every output of a verified call compared exactly (doubling is exact).
// `call` runs the work under test; `verified` counts the verify calls.
struct DoublingCase {
  explicit DoublingCase(std::size_t count = kCount) : n(count), d_in(count), d_out(count) {}

  kit::TimedWork work(std::function<void()> call) {
    kit::TimedWork w;
    w.name = "double_kernel";
    w.call = std::move(call);
    w.work_per_call = 2.0 * n * sizeof(float);
    w.outputs = {kit::Output::device("out", d_out.data(), n)};
    w.refresh = [this](const kit::Call& c) { kit::fill_uniform_floats(d_in.data(), n, c.rng("in"), -1.0f, 1.0f); };
    w.verify = [this](const kit::Call& c) {
      ++verified;
      const std::vector<float> in = c.rng("in").uniform_floats(n, -1.0f, 1.0f);
      const std::vector<float> out = d_out.download();
      for (std::size_t i = 0; i < n; ++i)
        if (out[i] != 2.0f * in[i]) return false;
      return true;
    };
    return w;
  }
  void honest() { launch_double(d_in.data(), d_out.data(), n); }

  std::size_t n;
  kit::DeviceBuffer<float> d_in, d_out;
  int verified = 0;
};

kit::TimingOptions options() {
  kit::TimingOptions o;
  o.warmup = 2;
  o.repeats = 7;
  o.ceiling_margin = 1.5;
  return o;
}

}  // namespace

TEST_CASE("harness: the GPU's random fills equal the CPU's numbers") {
  const kit::Rng rng(23);
  for (const std::size_t n : {std::size_t{1}, kCount}) {
    INFO("n = " << n);
    kit::DeviceBuffer<float> floats(n);
    kit::DeviceBuffer<int> ints(n);
    kit::DeviceBuffer<std::uint8_t> bytes(n);
    kit::fill_uniform_floats(floats.data(), n, rng, -1000.0f, 1000.0f);
    kit::fill_uniform_ints(ints.data(), n, rng, -100, 100);
    kit::fill_uniform_bytes(bytes.data(), n, rng, 2, 253);
    CUDA_CHECK(cudaDeviceSynchronize());
    CHECK(floats.download() == rng.uniform_floats(n, -1000.0f, 1000.0f));
    CHECK(ints.download() == rng.uniform_ints(n, -100, 100));
    CHECK(bytes.download() == rng.uniform_bytes(n, 2, 253));
  }
}

TEST_CASE("harness: the sums of random floats made on the GPU match the CPU's sums of the same numbers") {
  const kit::Rng rng(11);
  for (const std::size_t n : {std::size_t{1}, kCount, (std::size_t{1} << 24) + 7}) {
    for (const auto& range : {std::pair{0.0f, 1.0f}, std::pair{-1000.0f, 1000.0f}}) {
      const float low = range.first, high = range.second;
      INFO("n = " << n << ", values in [" << low << ", " << high << ")");
      double sum = 0.0, abs_sum = 0.0;
      for (const float v : rng.uniform_floats(n, low, high)) {
        sum += v;
        abs_sum += std::fabs(v);
      }
      const kit::Sums got = kit::sums_on_device(n, kit::UniformFloatAt(rng, low, high));
      // Either side's additions in double err by at most n * 2^-53 of sum(|x|) (a recursive sum's bound).
      const double allowed = 2.0 * static_cast<double>(n) * 0x1.0p-53 * abs_sum;
      CHECK(std::fabs(got.sum - sum) <= allowed);
      CHECK(std::fabs(got.abs_sum - abs_sum) <= allowed);
    }
  }
  CHECK(kit::sums_on_device(0, kit::UniformFloatAt(rng, 0.0f, 1.0f)).abs_sum == 0.0);
}

// Element i of rng.uniform_ints(count, low, high) as its own bin, made on the GPU as the CPU makes it.
struct IntBin {
  std::uint64_t seed;
  int low;
  std::uint64_t span;
  __device__ int operator()(std::size_t i) const {
    return kit::detail::uniform_int(kit::detail::random_bits(seed, i), low, span);
  }
};

std::vector<unsigned> counts_on_host(const std::vector<int>& values, int bins) {
  std::vector<unsigned> counts(static_cast<std::size_t>(bins), 0u);
  for (const int v : values)
    if (v >= 0 && v < bins) ++counts[static_cast<std::size_t>(v)];
  return counts;
}

TEST_CASE("harness: bins counted on the GPU match the CPU's counts of the same numbers") {
  const kit::Rng rng(12);
  // 256 bins count in shared memory; 20000 do not fit there and count in global memory. Values of -1
  // and of the bin count itself belong to no bin.
  for (const int bins : {256, 20000}) {
    for (const std::size_t n : {std::size_t{1}, kCount}) {
      INFO("n = " << n << ", bins = " << bins);
      const IntBin bin_at{rng.seed(), -1, kit::detail::int_span(-1, bins)};
      CHECK(kit::count_bins_on_device(n, bins, bin_at) == counts_on_host(rng.uniform_ints(n, -1, bins), bins));
    }
  }
  CHECK(kit::count_bins_on_device(0, 4, IntBin{1, 0, 4}) == std::vector<unsigned>(4, 0u));
}

TEST_CASE("harness: gather reads device memory at the given positions, for every element size") {
  const auto values = kit::Rng(5).uniform_floats(kCount, -1.0f, 1.0f);
  const kit::DeviceBuffer<float> floats(values);
  const auto positions = kit::sample_positions(kCount, 1000);
  const auto got = kit::gather(floats.data(), positions);
  REQUIRE(got.size() == positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) CHECK(got[i] == values[positions[i]]);

  const auto bytes = kit::Rng(6).uniform_bytes(kCount);
  const kit::DeviceBuffer<std::uint8_t> d_bytes(bytes);
  const auto got_bytes = kit::gather(d_bytes.data(), positions);
  for (std::size_t i = 0; i < positions.size(); ++i) CHECK(got_bytes[i] == bytes[positions[i]]);
}

// The `count` elements of device memory starting `offset` elements from `at` (which may be before it).
std::vector<float> read_device(const float* at, std::ptrdiff_t offset, std::size_t count) {
  std::vector<float> values(count);
  CUDA_CHECK(cudaMemcpy(values.data(), at + offset, count * sizeof(float), cudaMemcpyDeviceToHost));
  return values;
}

TEST_CASE("harness: a guarded input holds its fill in both zones, and its values or the poison between") {
  const std::size_t guard = 100, count = 5;
  const std::vector<float> values{1, 2, 3, 4, 5};
  const kit::GuardedInput<float> given(values, guard, 2.5f);
  CHECK(read_device(given.data(), -100, guard) == std::vector<float>(guard, 2.5f));
  CHECK(read_device(given.data(), 0, count) == values);
  CHECK(read_device(given.data(), count, guard) == std::vector<float>(guard, 2.5f));

  const kit::GuardedInput<float> to_make(count, guard, 2.5f);  // the test writes its elements on the GPU
  CHECK(read_device(to_make.data(), -100, guard) == std::vector<float>(guard, 2.5f));
  CHECK(read_device(to_make.data(), count, guard) == std::vector<float>(guard, 2.5f));

  const kit::GuardedInput<float> poisoned(count, guard);
  for (const float v : read_device(poisoned.data(), -100, 2 * guard + count)) CHECK(kit::is_poison(v));
}

// Element i of the floats of a stream, as kit::fill_uniform_floats writes them, in double.
struct StreamValue {
  kit::UniformFloatAt value;
  __host__ __device__ double operator()(std::size_t i) const { return value(i); }
};

TEST_CASE("harness: an output compared on the GPU is right, or its first wrong elements are named") {
  const std::size_t n = (std::size_t{1} << 22) + 3;
  const kit::Rng rng(71);
  const StreamValue expected{kit::UniformFloatAt(rng, -1.0f, 1.0f)};
  kit::DeviceBuffer<float> d_out(n);
  kit::fill_uniform_floats(d_out.data(), n, rng, -1.0f, 1.0f);
  const kit::CaseContext context{"n = 4194307", "the kernel"};
  CHECK_FALSE(kit::close_on_device_failure(d_out.data(), n, expected, kit::Tolerance{}, context).has_value());

  // Two wrong elements far apart (the second beyond the window the CPU reads again), and one never written.
  const auto set = [&](std::size_t i, float value) {
    CUDA_CHECK(cudaMemcpy(d_out.data() + i, &value, sizeof(float), cudaMemcpyHostToDevice));
  };
  set(1000, 5.0f);
  set(n - 1, 7.0f);
  set(2000, kit::poison_value<float>());
  const std::optional<std::string> failure =
      kit::close_on_device_failure(d_out.data(), n, expected, kit::Tolerance{}, context);
  REQUIRE(failure.has_value());
  CHECK(contains(*failure, "3 of 4194307 elements are wrong; 1 of them were never written"));
  CHECK(contains(*failure, "\n  [1000]: "));
  CHECK(contains(*failure, ", 5\n  [2000]: "));
  CHECK(contains(*failure, "never written (poison)"));
  CHECK(contains(*failure, "Look at: the kernel"));
  // Within a tolerance, a small error is no error.
  set(1000, static_cast<float>(expected(1000)) * (1.0f + 1e-7f));
  set(2000, static_cast<float>(expected(2000)));
  set(n - 1, static_cast<float>(expected(n - 1)));
  CHECK_FALSE(kit::close_on_device_failure(d_out.data(), n, expected, kit::Tolerance{1e-6, 0.0}, context));
}

TEST_CASE("harness: the poison check counts unwritten elements in device memory") {
  kit::DeviceBuffer<std::uint8_t> bytes(kCount);
  const kit::Output output = kit::Output::device("gray", bytes.data(), kCount, 0);
  kit::poison(output);
  CHECK(kit::count_unwritten(output) == kCount);
  CUDA_CHECK(cudaMemset(bytes.data(), 171, kCount - 5));  // the usual poison is an ordinary gray here
  CHECK(kit::count_unwritten(output) == 5);

  kit::DeviceBuffer<double> doubles(kCount);
  const kit::Output double_output = kit::Output::device("sums", doubles.data(), kCount);
  kit::poison(double_output);
  CUDA_CHECK(
      cudaMemset(reinterpret_cast<unsigned char*>(doubles.data()) + 8 * 10 + 7, 0, 1));  // one byte of element 10
  CHECK(kit::count_unwritten(double_output) == kCount - 1);
}

TEST_CASE("harness: honest work passes the timing guards") {
  DoublingCase test;
  const kit::GuardedRun run = kit::run_guarded(test.work([&] { test.honest(); }), options());
  CHECK(run.failure == "");
  CHECK(run.timing.samples_s.size() == 7);
  CHECK(run.timing.median_s > 0.0);
  CHECK(run.verified_samples.size() == 4);  // the last and 3 of the other 6
  CHECK(run.verified_samples.back() == 7);
  CHECK(test.verified == 4);
}

TEST_CASE("harness: time_work reports honest work and passes") {
  DoublingCase test(std::size_t{1} << 26);  // 512 MiB moved per call: far beyond L2
  kit::TimedWork work = test.work([&] { test.honest(); });
  const kit::TimingOptions o = options();
  work.ceilings = {kit::copy_ceiling(static_cast<std::size_t>(work.work_per_call), o)};
  const kit::Measurement m = kit::time_work(work, o);
  CHECK(m.guarded);
  CHECK(m.verified_samples.size() == 4);
  CHECK(kit::implausibility(m) == "");  // a kernel that moves what a copy moves stays below 1.5 copies
}

TEST_CASE("harness: a work that skips repeated calls with the same arguments is caught") {
  DoublingCase test;
  const float* last_in = nullptr;
  float* last_out = nullptr;
  const kit::GuardedRun run = kit::run_guarded(test.work([&] {
    if (test.d_in.data() == last_in && test.d_out.data() == last_out) return;  // "already done"
    last_in = test.d_in.data();
    last_out = test.d_out.data();
    test.honest();
  }),
                                               options());
  CHECK(contains(run.failure, "double_kernel: warm-up call 2 of 2 left 1000003 of 1000003 elements of out unwritten"));
  CHECK(contains(run.failure, "Every call must do the whole work"));
}

TEST_CASE("harness: a work that computes on every third call only is caught") {
  DoublingCase test;
  int calls = 0;
  const kit::GuardedRun run = kit::run_guarded(test.work([&] {
    if (calls++ % 3 == 0) test.honest();
  }),
                                               options());
  CHECK(contains(run.failure, "warm-up call 2 of 2 left 1000003 of 1000003 elements of out unwritten"));
}

TEST_CASE("harness: a work that computes only on the last call is caught") {
  DoublingCase test;
  const kit::TimingOptions o = options();
  int calls = 0;
  const kit::GuardedRun run = kit::run_guarded(test.work([&] {
    if (++calls == o.warmup + o.repeats) test.honest();
  }),
                                               o);
  CHECK(contains(run.failure, "warm-up call 1 of 2 left 1000003 of 1000003 elements of out unwritten"));
  CHECK(test.verified == 0);
}

TEST_CASE("harness: a work that restores an output kept from its first call is caught") {
  DoublingCase test;
  kit::DeviceBuffer<float> cache(kCount);
  bool cached = false;
  const kit::GuardedRun run = kit::run_guarded(test.work([&] {
    if (cached) {
      CUDA_CHECK(cudaMemcpyAsync(test.d_out.data(), cache.data(), cache.bytes(), cudaMemcpyDeviceToDevice));
      return;
    }
    test.honest();
    CUDA_CHECK(cudaMemcpyAsync(cache.data(), test.d_out.data(), cache.bytes(), cudaMemcpyDeviceToDevice));
    cached = true;
  }),
                                               options());
  // Every output was written, but with the first call's result: the first verified call catches it.
  CHECK(contains(run.failure, "double_kernel: the output of timed call "));
  CHECK(contains(run.failure, "is wrong"));
  CHECK(contains(run.failure, "not return one kept from an earlier call"));
  CHECK(test.verified == 1);
}

TEST_CASE("harness: a rate above the margin times a bound ceiling is flagged") {
  DoublingCase test(std::size_t{1} << 26);
  kit::TimedWork work = test.work([&] { test.honest(); });
  const kit::TimingOptions o = options();
  const kit::Ceiling copy = kit::copy_ceiling(static_cast<std::size_t>(work.work_per_call), o);
  const kit::GuardedRun run = kit::run_guarded(work, o);
  REQUIRE(run.failure == "");
  // What the whole measurement cost (the class bench reads it): at least its samples, each a call's time or less.
  double sampled_s = 0.0;
  for (const double sample : run.timing.samples_s) sampled_s += sample;
  CHECK(run.timing.took_s >= sampled_s);
  // ... and where it went: each call clocked and checked, the parts within the whole.
  const kit::Timing::Cost& cost = run.timing.cost;
  CHECK(cost.clocked_s >= sampled_s);
  CHECK(cost.verify_s > 0.0);
  CHECK(cost.set_up_s > 0.0);
  CHECK(cost.refresh_s + cost.sets_s + cost.set_up_s + cost.clocked_s + cost.after_s + cost.verify_s + cost.path_s <=
        run.timing.took_s);
  // The same run, claiming to move 4 times the bytes it moved (as a call that does a quarter of the work would).
  kit::Measurement m{"double_kernel", run.timing, 4.0 * work.work_per_call, kit::RateUnit::GBps};
  m.ceilings = {copy};
  m.ceiling_margin = o.ceiling_margin;
  CHECK(contains(kit::implausibility(m), "faster than the hardware allows in this process"));
  m.work_per_run = work.work_per_call;
  CHECK(kit::implausibility(m) == "");
}

// Over 2^28 multiply-adds: every element against cuBLAS on the GPU, whole lines against the CPU.
// C is cuBLAS's own product of the inputs, which passes; then one element at a time is moved by
// two whole products' worth, far outside the bound (about 0.02 here): one where only the GPU's
// comparison sees it (unless its row or column was drawn for the CPU), one in the last row and
// one in the middle row and first column, which the CPU compares. Each must be found, alone, and
// named by (row, col).
TEST_CASE("harness: a timed matrix product is checked in full on the device, and one wrong element is found") {
  const int m = 1000, k = 700, n = 1100;
  const kit::Rng a(59), b(61);
  kit::DeviceBuffer<float> d_a(static_cast<std::size_t>(m) * k), d_b(static_cast<std::size_t>(k) * n),
      d_c(static_cast<std::size_t>(m) * n);
  kit::fill_matmul_inputs(d_a.data(), d_b.data(), m, k, n, a, b);
  kit::cublas_matmul(d_a.data(), d_b.data(), d_c.data(), m, k, n);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::string source;
  CHECK(kit::detail::matmul_mismatches_on_device(d_c.data(), m, k, n, a, b, 1.0, &source).ok());
  CHECK(contains(source, "cuBLAS, and a double-precision CPU product in "));

  for (const std::pair<int, int>& place : {std::pair{123, 457}, std::pair{m - 1, 77}, std::pair{m / 2, 0}}) {
    const int row = place.first, col = place.second;
    INFO("(row " << row << ", col " << col << ")");
    float* element = d_c.data() + static_cast<std::size_t>(row) * n + col;
    float right = 0.0f;
    CUDA_CHECK(cudaMemcpy(&right, element, sizeof(float), cudaMemcpyDeviceToHost));
    const float wrong = right + 0.5f;
    CUDA_CHECK(cudaMemcpy(element, &wrong, sizeof(float), cudaMemcpyHostToDevice));
    const kit::detail::MismatchLog log =
        kit::detail::matmul_mismatches_on_device(d_c.data(), m, k, n, a, b, 1.0, &source);
    CHECK(log.count() == 1);
    CHECK(contains(log.message("result", {"", "", static_cast<std::size_t>(n)}),
                   "(row " + std::to_string(row) + ", col " + std::to_string(col) + "): "));
    CUDA_CHECK(cudaMemcpy(element, &right, sizeof(float), cudaMemcpyHostToDevice));
  }

  // A small product is compared in full on the CPU.
  kit::fill_matmul_inputs(d_a.data(), d_b.data(), 64, 64, 64, a, b);
  kit::cublas_matmul(d_a.data(), d_b.data(), d_c.data(), 64, 64, 64);
  CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(kit::detail::matmul_mismatches_on_device(d_c.data(), 64, 64, 64, a, b, 1.0, &source).ok());
  CHECK(source == "a double-precision CPU product");
}
