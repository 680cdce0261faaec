// Lab 11 public tests: the ones you can run yourself (make 11-histogram).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "cub_peer.cuh"
#include "kit/device_count.cuh"
#include "histogram_checks.cuh"

using namespace histogram_checks;

// ---- Parts 1 to 3: bytes ---------------------------------------------------------------------

TEST_CASE("launch_histogram_global: one byte (n = 1)") { check_one_byte(global()); }
TEST_CASE("launch_histogram_global: a prime length not a multiple of the block or the vector width") {
  check_prime_length(global());
}
TEST_CASE("launch_histogram_global: bytes that all have one value") { check_one_value(global()); }
TEST_CASE("launch_histogram_global: a large input of 2^28 + 3 bytes") { check_large(global()); }

TEST_CASE("launch_histogram_shared: one byte (n = 1)") { check_one_byte(shared()); }
TEST_CASE("launch_histogram_shared: a prime length not a multiple of the block or the vector width") {
  check_prime_length(shared());
}
TEST_CASE("launch_histogram_shared: bytes that all have one value") { check_one_value(shared()); }
TEST_CASE("launch_histogram_shared: a large input of 2^28 + 3 bytes") { check_large(shared()); }

TEST_CASE("launch_histogram_warp_aggregated: one byte (n = 1)") { check_one_byte(warp_aggregated()); }
TEST_CASE("launch_histogram_warp_aggregated: a prime length not a multiple of the block or the vector width") {
  check_prime_length(warp_aggregated());
}
TEST_CASE("launch_histogram_warp_aggregated: bytes that all have one value") { check_one_value(warp_aggregated()); }
TEST_CASE("launch_histogram_warp_aggregated: a large input of 2^28 + 3 bytes") { check_large(warp_aggregated()); }

// ---- Part 4: floats --------------------------------------------------------------------------

TEST_CASE("launch_histogram_floats: values spread over 100 bins") {
  const auto n = static_cast<std::size_t>(kit::param_int("float_n"));
  const float lo = static_cast<float>(kit::param_double("float_lo")),
              hi = static_cast<float>(kit::param_double("float_hi"));
  const int bins = static_cast<int>(kit::param_int("float_bins"));
  check_floats(random_floats(n, lo, hi, bins), lo, hi, bins, count_text(n) + " random values inside the range");
}

TEST_CASE("launch_histogram_floats: values at the bounds and outside the range") {
  // Over [-1, 1) in 10 bins of 0.2. Values in float: -1 - 0 = 1 exactly and 0.5 + 1 = 1.5, so
  // these bins are exact whichever way the bin is computed; just below 1, (v + 1) rounds to 2
  // in float, which must still count in the last bin.
  const float lo = -1.0f, hi = 1.0f;
  const int bins = 10;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {lo,
                                      std::nextafter(hi, 0.0f),
                                      hi,
                                      std::nextafter(lo, -2.0f),
                                      -inf,
                                      inf,
                                      std::nanf(""),
                                      0.0f,
                                      0.5f,
                                      -0.95f,
                                      1e30f,
                                      -1e30f};
  // The special values at the start, in the middle and at the end of random ones in the range,
  // so that they meet both the 16-byte loads and the last n % 4 values.
  std::vector<float> values = random_floats(static_cast<std::size_t>(kit::param_int("float_bounds_n")), lo, hi, bins);
  values.insert(values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), special.begin(), special.end());
  values.insert(values.begin(), special.begin(), special.end());
  values.insert(values.end(), special.begin(), special.end());
  check_floats(values, lo, hi, bins,
               count_text(values.size()) +
                   " values, among them lo, the largest float below hi, hi, the largest below lo, infinities, NaN, "
                   "0 and 1e30",
               kLookAtFloatRange);
}

TEST_CASE("launch_histogram_floats: one bin and the largest number of bins") {
  const auto n = static_cast<std::size_t>(kit::param_int("float_n"));
  // One bin over [0, 1), and values outside it too.
  std::vector<float> values = random_floats(n, -1.0f, 2.0f, 3, "one bin");
  if (!check_floats(values, 0.0f, 1.0f, 1, count_text(n) + " random values in [-1, 2)")) return;
  const float lo = static_cast<float>(kit::param_double("float_lo")),
              hi = static_cast<float>(kit::param_double("float_hi"));
  check_floats(random_floats(n, lo, hi, kMaxFloatBins, "most bins"), lo, hi, kMaxFloatBins,
               count_text(n) + " random values inside the range");
}

TEST_CASE("launch_histogram_floats: a large input of 2^28 + 3 values") {
  const auto n = static_cast<std::size_t>(kit::param_int("large_n"));
  const float lo = static_cast<float>(kit::param_double("float_lo")),
              hi = static_cast<float>(kit::param_double("float_hi"));
  const int bins = static_cast<int>(kit::param_int("float_bins"));
  check_floats_made_on_device(n, ValueAt(kit::Rng::for_case("floats bins"), kit::Rng::for_case("floats"), lo, hi, bins),
                              hi, count_text(n) + " (2^28 + 3) random values");
}

// ---- Timing ----------------------------------------------------------------------------------

namespace {

// Counters start as 0xFFFFFFFF before every timed call (0xFF bytes): no correct count can hold
// it, since a count is at most the number of inputs, 2^28 bytes or 2^26 floats here, far below
// 2^32 - 1. So a counter the call left alone shows, even one whose count is 0.
constexpr int kCounterFill = 0xFF;

// The counts of rng.uniform_bytes(count, 0, 255), made again and counted on the GPU: a histogram
// depends on every byte, and counting a quarter of a gigabyte on the CPU for every verified call
// took a tenth of a second of every core while the class waited for the GPU.
std::vector<unsigned> uniform_byte_counts(const kit::Rng& rng, std::size_t count) {
  return kit::count_bins_on_device(count, kByteBins, StreamByteBin{StreamByte{rng.seed()}});
}

// Times `kernel` on 2^28 bytes, first uniform at random, then all of one value, each against
// cub::DeviceHistogram (a peer: on bytes of one value a good kernel beats it) and a
// device-to-device copy of as many bytes (a bound: the work reads every byte). Every call gets
// new bytes, written on the GPU; the harness checks that all 256 counters are written each time
// and compares them with the expected counts after calls chosen at random: for uniform bytes made
// again from the generator and counted on the GPU, for bytes of one value known without counting. A fast kernel
// takes a fraction of a millisecond, so the harness may make several sets of the bytes and
// counters and time several calls in a row, each on its own set.
void time_bytes(const ByteKernel& kernel, const std::string& uniform_measurement,
                const std::string& one_value_measurement, const kit::TimingOptions& options) {
  const auto n = static_cast<std::int64_t>(kit::param_int("timing_n"));
  const auto count = static_cast<std::size_t>(n);
  const std::string look_at = kernel.look_at;

  // `fill` writes a call's bytes into the set's data.
  const auto time = [&](const std::string& measurement, kit::Ceiling peer,
                        const std::function<void(const kit::Call&, std::uint8_t*)>& fill,
                        const std::function<std::vector<unsigned>(const kit::Call&)>& expected,
                        const std::function<std::string(const kit::Call&)>& what) {
    kit::TimedWork work;
    work.name = measurement;
    work.work_per_call = static_cast<double>(n);  // every byte read once
    work.ceilings = {std::move(peer), kit::copy_ceiling(count, options)};
    work.look_at = look_at;
    work.sets_from([&] {
      const auto d_data = kit::shared_device_buffer<std::uint8_t>(count);
      const auto d_bins = kit::shared_device_buffer<unsigned>(kByteBins);
      kit::WorkSet set;
      set.call = [=, &kernel] { kernel.launch(d_data->data(), n, d_bins->data()); };
      set.outputs = {kit::Output::device("d_bins", d_bins->data(), kByteBins, kCounterFill)};
      set.refresh = [=, &fill](const kit::Call& call) { fill(call, d_data->data()); };
      set.verify = [=, &expected, &what](const kit::Call& call) {
        return kit::expect_equal(d_bins->download(), expected(call),
                                 {"the timing input, " + what(call) + ", made for " + call.name(), look_at});
      };
      return set;
    });
    kit::time_work(work, options);
  };

  // Uniform bytes, new ones from the call's own random stream. The peer's bytes are gone before
  // the sets are made. Each peer is timed once a program (static): graded, the timing cases of the
  // three kernels run in one program, and each case timing them again took 0.15 s of every
  // student's time alone on the GPU. With the lab's usual options, whichever case comes first.
  const auto uniform_peer = [&] {
    static const kit::Ceiling peer = [&] {
      const kit::Rng cub_bytes = kit::Rng::for_case("cub bytes");
      kit::DeviceBuffer<std::uint8_t> d_data(count);
      kit::fill_uniform_bytes(d_data.data(), count, cub_bytes, 0, 255);
      return cub_byte_histogram_ceiling(d_data.data(), n, uniform_byte_counts(cub_bytes, count),
                                        kit::TimingOptions::from_params());
    }();
    return peer;
  };
  if (kit::measured(uniform_measurement))
    time(
        uniform_measurement, uniform_peer(),
        [&](const kit::Call& call, std::uint8_t* data) {
          kit::fill_uniform_bytes(data, count, call.rng("bytes"), 0, 255);
        },
        [&](const kit::Call& call) { return uniform_byte_counts(call.rng("bytes"), count); },
        [](const kit::Call&) { return std::string("2^28 random bytes"); });

  // Bytes all of one value, in [1, 254] as kit::one_value_bytes draws it; a different value for every
  // call (consecutive ones from a random start), so the counts of an earlier call are wrong.
  const int start = kit::Rng::for_case("value").uniform_ints(1, 0, 253)[0];
  const auto value = [&](int index) { return 1 + (start + index) % 254; };
  const auto one_value_counts = [&](int byte) {
    std::vector<unsigned> counts(kByteBins, 0u);
    counts[static_cast<std::size_t>(byte)] = static_cast<unsigned>(n);
    return counts;
  };
  const auto one_value_peer = [&] {
    static const kit::Ceiling peer = [&] {
      kit::DeviceBuffer<std::uint8_t> d_data(count);
      CUDA_CHECK(cudaMemset(d_data.data(), value(0), count));
      return cub_byte_histogram_ceiling(d_data.data(), n, one_value_counts(value(0)), kit::TimingOptions::from_params());
    }();
    return peer;
  };
  if (kit::measured(one_value_measurement))  // class grading skips those worth no points (kit::measured)
    time(
        one_value_measurement, one_value_peer(),
        [&](const kit::Call& call, std::uint8_t* data) { CUDA_CHECK(cudaMemset(data, value(call.index), count)); },
        [&](const kit::Call& call) { return one_value_counts(value(call.index)); },
        [&](const kit::Call& call) { return "2^28 bytes all equal to " + std::to_string(value(call.index)); });
}

}  // namespace

TEST_CASE("histogram timing: global atomics on 2^28 bytes uniform and all of one value" * KIT_TIMING) {
  kit::TimingOptions long_calls = kit::TimingOptions::from_params();  // fewer of them (lab.toml says why)
  long_calls.warmup = static_cast<int>(kit::param_int("global_timing_warmup"));
  long_calls.repeats = static_cast<int>(kit::param_int("global_timing_repeats"));
  time_bytes(global(), "histogram_global", "one_value_global", long_calls);
}

TEST_CASE("histogram timing: shared-memory counters on 2^28 bytes uniform and all of one value" * KIT_TIMING) {
  time_bytes(shared(), "histogram_shared", "one_value_shared", kit::TimingOptions::from_params());
}

TEST_CASE("histogram timing: warp-aggregated counters on 2^28 bytes uniform and all of one value" * KIT_TIMING) {
  time_bytes(warp_aggregated(), "histogram_warp_aggregated", "one_value_warp_aggregated",
             kit::TimingOptions::from_params());
}

// Every timed call gets new floats, made on the GPU from the call's own random streams (ValueAt:
// a bin, and a place within it at least float_edge_margin of the bin's width from its edges), and
// made and counted again on the GPU for the reference (ValueBin, by the CPU reference's bin_of).
TEST_CASE("histogram timing: floats into bins" * KIT_TIMING) {
  const auto n = static_cast<std::int64_t>(kit::param_int("timing_float_n"));
  const auto count = static_cast<std::size_t>(n);
  const float lo = static_cast<float>(kit::param_double("float_lo")),
              hi = static_cast<float>(kit::param_double("float_hi"));
  const int bins = static_cast<int>(kit::param_int("timing_float_bins"));
  const auto options = kit::TimingOptions::from_params();
  const double bytes = static_cast<double>(n) * sizeof(float);  // every value read once
  const std::string input = "the timing input, " + count_text(count) + " random values in " + std::to_string(bins) +
                            " bins over [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
  const auto value_at = [&](const kit::Rng& bin, const kit::Rng& within) { return ValueAt(bin, within, lo, hi, bins); };
  const auto expected_counts = [&](const kit::Rng& bin, const kit::Rng& within) {
    return kit::count_bins_on_device(count, bins, ValueBin{value_at(bin, within), hi});
  };

  kit::TimedWork work;
  work.name = "histogram_floats";
  work.work_per_call = bytes;
  {  // the peer's values, gone before the sets are made
    const kit::Rng cub_bin = kit::Rng::for_case("cub bins"), cub_within = kit::Rng::for_case("cub within");
    kit::DeviceBuffer<float> d_values(count);
    kit::make_on_device(d_values.data(), count, value_at(cub_bin, cub_within));
    work.ceilings = {cub_float_histogram_ceiling(d_values.data(), n, lo, hi, bins,
                                                 expected_counts(cub_bin, cub_within), options),  // a peer
                     kit::copy_ceiling(static_cast<std::size_t>(bytes), options)};  // a bound: every value is read
  }
  work.look_at = kLookAtFloats;
  // A call takes a fraction of a millisecond, so the harness may make several sets of the values
  // and counters and time several calls in a row, each on its own set.
  work.sets_from([&] {
    const auto d_values = kit::shared_device_buffer<float>(count);
    const auto d_bins = kit::shared_device_buffer<unsigned>(static_cast<std::size_t>(bins));
    kit::WorkSet set;
    set.call = [=] { launch_histogram_floats(d_values->data(), n, lo, hi, bins, d_bins->data()); };
    set.outputs = {kit::Output::device("d_bins", d_bins->data(), static_cast<std::size_t>(bins), kCounterFill)};
    set.refresh = [=, &value_at](const kit::Call& call) {
      kit::make_on_device(d_values->data(), count, value_at(call.rng("bins"), call.rng("within")));
    };
    set.verify = [=, &expected_counts](const kit::Call& call) {
      return kit::expect_equal(d_bins->download(), expected_counts(call.rng("bins"), call.rng("within")),
                               {input + ", made for " + call.name(), kLookAtFloats});
    };
    return set;
  });
  kit::time_work(work, options);
}
