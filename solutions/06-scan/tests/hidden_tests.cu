// Lab 06 hidden tests: run by the grader only. Each targets a mistake students make.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "scan_checks.cuh"

using namespace scan_checks;

namespace {

std::string n_is(long long n) { return "n = " + std::to_string(n); }

}  // namespace

// ---------------------------------------------------------------------------
// Parts 1 and 2: races and missing barriers, section edges
// ---------------------------------------------------------------------------

// A race on shared memory or a missing barrier shows only when the warps of a
// block drift apart. Thousands of blocks sharing the SMs, several times over
// with fresh inputs, make that all but certain.
TEST_CASE("kogge_stone_scan (hidden): thousands of sections at once with fresh inputs each time") {
  const int n = static_cast<int>(kit::param_int("many_sections_n"));
  const auto runs = kit::param_int("section_runs");
  for (int run = 1; run <= runs; ++run)
    if (!check_kogge_stone(n,
                           n_is(n) + ", thousands of sections at once, run " + std::to_string(run) + " of " +
                               std::to_string(runs) +
                               " (a wrong result that comes and goes is a race: "
                               "a barrier missing, or a step reading the buffer it writes)",
                           "run " + std::to_string(run)))
      break;
}

TEST_CASE("kogge_stone_scan (hidden): lengths one either side of multiples of the section size") {
  for (const auto m : kit::param_ints("section_multiples"))
    for (const long long n : {m * kKoggeStoneSection - 1, m * kKoggeStoneSection + 1})
      if (!check_kogge_stone(static_cast<int>(n), n_is(n) + ", next to a multiple of the section size")) return;
}

TEST_CASE("work_efficient_scan (hidden): thousands of sections at once with fresh inputs each time") {
  const int n = static_cast<int>(kit::param_int("many_sections_n"));
  const auto runs = kit::param_int("section_runs");
  for (int run = 1; run <= runs; ++run)
    if (!check_work_efficient(n,
                              n_is(n) + ", thousands of sections at once, run " + std::to_string(run) + " of " +
                                  std::to_string(runs) +
                                  " (a wrong result that comes and goes is a race: "
                                  "a barrier missing between two levels of the tree)",
                              "run " + std::to_string(run)))
      break;
}

TEST_CASE("work_efficient_scan (hidden): lengths one either side of multiples of the section size") {
  for (const auto m : kit::param_ints("section_multiples"))
    for (const long long n : {m * kWorkEfficientSection - 1, m * kWorkEfficientSection + 1})
      if (!check_work_efficient(static_cast<int>(n), n_is(n) + ", next to a multiple of the section size")) return;
}

// ---------------------------------------------------------------------------
// Part 3
// ---------------------------------------------------------------------------

// 2^e - 1, 2^e and 2^e + 1 straddle the tile edges of every power-of-two tile
// size, whatever size the solution picked.
TEST_CASE("inclusive_scan and exclusive_scan (hidden): integers at lengths one either side of every power of two") {
  const auto max_power = kit::param_int("max_power");
  for (const Kind kind : {Kind::Inclusive, Kind::Exclusive})
    for (int e = 1; e <= max_power; ++e)
      for (const long long n : {(1LL << e) - 1, 1LL << e, (1LL << e) + 1})
        if (!check_int_scan(static_cast<int>(n), kind, n_is(n) + ", next to 2^" + std::to_string(e))) return;
}

TEST_CASE("inclusive_scan and exclusive_scan (hidden): prime lengths") {
  for (const Kind kind : {Kind::Inclusive, Kind::Exclusive})
    for (const auto n : kit::param_ints("prime_ns"))
      if (!check_int_scan(static_cast<int>(n), kind, n_is(n) + ", a prime")) return;
}

TEST_CASE("inclusive_scan and exclusive_scan (hidden): nothing written past the end and the input unchanged") {
  for (const Kind kind : {Kind::Inclusive, Kind::Exclusive})
    for (const auto n : kit::param_ints("guard_ns")) {
      const std::string input = n_is(n) + " on device arrays, " + kind_name(kind) + " scan of ints";
      const std::vector<int> x = int_inputs(n, "guard " + std::to_string(n));
      kit::DeviceBuffer<int> d_in(x);
      kit::GuardedBuffer<int> d_out(static_cast<std::size_t>(n), guard_elements());
      launch_whole_scan(kind, d_in.data(), d_out.data(), static_cast<int>(n));
      CUDA_CHECK(cudaDeviceSynchronize());
      bool ok = kit::expect_equal(d_out.download(), int_reference(x, kind), {input, kLookAtScan});
      ok = d_out.expect_guard_untouched({input, kLookAtScanGuard}) && ok;
      ok = kit::expect_equal(d_in.download(), x,
                             {input + ": the input array after the scan", "a scan must leave its input as it was"}) &&
           ok;
      if (!ok) return;
    }
}

// ---------------------------------------------------------------------------
// Under compute-sanitizer (hidden.toml says which tool): each scan once per
// length, on arrays of exactly n elements. memcheck: no read or write past an
// end, also a load whose value no output shows (an element past n loaded into a
// section and never stored). racecheck: every shared-memory value is read by
// another thread only after a barrier both passed, and overwritten only after
// every thread that reads it has passed one.
// ---------------------------------------------------------------------------

namespace {

void sanitized_kogge_stone() {
  for (const auto n : kit::param_ints("sanitizer_section_ns"))
    if (!check_kogge_stone(static_cast<int>(n), n_is(n) + " in arrays of exactly n elements", "in", 0)) return;
}

void sanitized_work_efficient() {
  for (const auto n : kit::param_ints("sanitizer_section_ns"))
    if (!check_work_efficient(static_cast<int>(n), n_is(n) + " in arrays of exactly n elements", "in", 0)) return;
}

void sanitized_scans(Design design = Design::MultiBlock) {
  for (const Kind kind : {Kind::Inclusive, Kind::Exclusive})
    for (const auto n : kit::param_ints("sanitizer_ns")) {
      const std::string input = n_is(n) + " in arrays of exactly n elements";
      if (!check_int_scan(static_cast<int>(n), kind, input, 0, design)) return;
      if (!check_float_scan(static_cast<int>(n), kind, input, 0, design)) return;
    }
}

}  // namespace

TEST_CASE("kogge_stone_scan (hidden): no read or write outside the arrays (compute-sanitizer memcheck)") {
  sanitized_kogge_stone();
}
TEST_CASE("kogge_stone_scan (hidden): no shared-memory race (compute-sanitizer racecheck)") { sanitized_kogge_stone(); }
TEST_CASE("work_efficient_scan (hidden): no read or write outside the arrays (compute-sanitizer memcheck)") {
  sanitized_work_efficient();
}
TEST_CASE("work_efficient_scan (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  sanitized_work_efficient();
}
TEST_CASE(
    "inclusive_scan and exclusive_scan (hidden): no read or write outside the arrays (compute-sanitizer memcheck)") {
  sanitized_scans();
}
TEST_CASE("inclusive_scan and exclusive_scan (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  sanitized_scans();
}
TEST_CASE(
    "register_tiled_scan (hidden extra credit): no read or write outside the arrays (compute-sanitizer memcheck)") {
  sanitized_scans(Design::RegisterTiled);
}
TEST_CASE("register_tiled_scan (hidden extra credit): no shared-memory race (compute-sanitizer racecheck)") {
  sanitized_scans(Design::RegisterTiled);
}

// Made on the GPU and compared there in full, element by element, with the exact scan: a quarter
// of a gigabyte made, copied and compared on the CPU would cost every submission about a second.
TEST_CASE("exclusive_scan (hidden): floats of a length that needs three levels") {
  const int n = static_cast<int>(kit::param_int("float_three_level_n"));
  check_float_scan_on_device(n, Kind::Exclusive, n_is(n) + ", more than (tile size)^2 for tiles of up to 8192");
}

// ---------------------------------------------------------------------------
// n = 2^31 - 1: index arithmetic past INT_MAX
// ---------------------------------------------------------------------------
// 8 GiB per array is too much to make, copy and scan on the host, so the data
// is made on the GPU from a hash of the index, and the output is checked there
// too: out is the inclusive scan of in exactly when out[0] = in[0] and
// out[i] = out[i-1] + in[i] (exclusive: out[0] = 0, out[i] = out[i-1] + in[i-1]).
// The first element that breaks this has all the elements before it right, so
// its correct value is known and can be shown.

namespace {

__host__ __device__ std::uint64_t mix64(std::uint64_t x) {  // SplitMix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__host__ __device__ int hashed_input(std::uint64_t seed, long long i) {
  const std::uint64_t span = kIntHigh - kIntLow + 1;
  return static_cast<int>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) % span) + kIntLow;
}

constexpr int kAuditBlocks = 2048;
constexpr int kAuditThreads = 256;

__global__ void fill_hashed_kernel(int* in, long long n, std::uint64_t seed) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    in[i] = hashed_input(seed, i);
}

struct Audit {
  unsigned long long broken;         // elements that are not the scan of the elements before them
  unsigned long long first_broken;   // the smallest such index (n when there is none)
  unsigned long long unwritten;      // output elements still holding the poison
  unsigned long long input_changed;  // input elements that no longer hold what was filled in
};

// Sums in unsigned arithmetic: it wraps where a wrong output would overflow an int.
__global__ void audit_scan_kernel(const int* in, const int* out, long long n, std::uint64_t seed, bool inclusive,
                                  int poison, Audit* audit) {
  unsigned long long broken = 0, unwritten = 0, changed = 0, first = static_cast<unsigned long long>(n);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int x = hashed_input(seed, i);
    if (in[i] != x) ++changed;
    unsigned expected = 0;
    if (inclusive)
      expected = (i > 0 ? static_cast<unsigned>(out[i - 1]) : 0u) + static_cast<unsigned>(x);
    else if (i > 0)
      expected = static_cast<unsigned>(out[i - 1]) + static_cast<unsigned>(hashed_input(seed, i - 1));
    const int got = out[i];
    if (static_cast<unsigned>(got) != expected) {
      ++broken;
      if (static_cast<unsigned long long>(i) < first) first = i;
    }
    if (got == poison) ++unwritten;
  }
  // One atomic per thread, not per element: 2^31 atomics on one address would take seconds.
  if (broken > 0) {
    atomicAdd(&audit->broken, broken);
    atomicMin(&audit->first_broken, first);
  }
  if (unwritten > 0) atomicAdd(&audit->unwritten, unwritten);
  if (changed > 0) atomicAdd(&audit->input_changed, changed);
}

bool audit_huge_scan(Kind kind, long long n, const kit::DeviceBuffer<int>& d_in, kit::DeviceBuffer<int>& d_out,
                     std::uint64_t seed, Design design) {
  const std::string input = n_is(n) + " (the largest int), " + kind_name(kind) + " scan of ints";
  d_out.poison();
  launch_whole_scan(kind, d_in.data(), d_out.data(), static_cast<int>(n), design);
  CUDA_CHECK(cudaDeviceSynchronize());

  kit::DeviceBuffer<Audit> d_audit(std::vector<Audit>{{0, static_cast<unsigned long long>(n), 0, 0}});
  audit_scan_kernel<<<kAuditBlocks, kAuditThreads>>>(d_in.data(), d_out.data(), n, seed, kind == Kind::Inclusive,
                                                     kit::poison_value<int>(), d_audit.data());
  CUDA_CHECK_LAUNCH();
  const Audit audit = d_audit.download()[0];
  if (audit.broken == 0 && audit.input_changed == 0) return true;

  std::ostringstream message;
  message << "Wrong result for input: " << input << " (" << kit::seed_text() << ").\n";
  if (audit.broken > 0) {
    const long long i = static_cast<long long>(audit.first_broken);
    int before = 0, got = 0;
    if (i > 0) CUDA_CHECK(cudaMemcpy(&before, d_out.data() + i - 1, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&got, d_out.data() + i, sizeof(int), cudaMemcpyDeviceToHost));
    const unsigned base = static_cast<unsigned>(before);  // unsigned: a wrong `before` may be anything
    const int expected = static_cast<int>(kind == Kind::Inclusive
                                              ? base + static_cast<unsigned>(hashed_input(seed, i))
                                              : (i > 0 ? base + static_cast<unsigned>(hashed_input(seed, i - 1)) : 0u));
    message << audit.broken << " of " << n << " elements are not the previous output plus the input";
    if (audit.unwritten > 0) message << "; " << audit.unwritten << " were never written (they still hold the poison)";
    message << ".\nFirst wrong element (where: expected, got):\n  [" << i << "]: " << expected << ", "
            << (kit::is_poison(got) ? std::string("never written (poison)") : std::to_string(got)) << "\n";
  }
  if (audit.input_changed > 0)
    message << audit.input_changed << " elements of the input were changed: a scan must leave its input as it "
            << "was (does an index past INT_MAX wrap around to a negative one?).\n";
  message << "Look at: " << look_at(design) << ": every index and count that can pass INT_MAX (the last tile's "
          << "elements, n + tile size - 1 in the tile count) must be computed in 64 bits.";
  FAIL_CHECK(message.str());
  return false;
}

}  // namespace

namespace {

void check_huge_scans(Design design) {
  const long long n = kit::param_int("huge_n");
  const std::uint64_t seed = kit::Rng::for_case("huge").seed();
  kit::DeviceBuffer<int> d_in(n), d_out(n);
  fill_hashed_kernel<<<kAuditBlocks, kAuditThreads>>>(d_in.data(), n, seed);
  CUDA_CHECK_LAUNCH();
  if (audit_huge_scan(Kind::Inclusive, n, d_in, d_out, seed, design))
    audit_huge_scan(Kind::Exclusive, n, d_in, d_out, seed, design);
}

}  // namespace

TEST_CASE("inclusive_scan and exclusive_scan (hidden): integers at the largest int length 2147483647") {
  check_huge_scans(Design::MultiBlock);
}

TEST_CASE("register_tiled_scan (hidden extra credit): integers at the largest int length 2147483647") {
  check_huge_scans(Design::RegisterTiled);
}
