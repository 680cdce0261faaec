// Lab 11 hidden tests: run by the grader only. Each targets a mistake students make.
#include <sstream>

#include "histogram_checks.cuh"

using namespace histogram_checks;

namespace {

const std::string kLookAtBoundaries =
    ": the grid must round up, the 16-byte loads must stop at the last whole vector, and the last n % 16 bytes must "
    "each be counted once";
const std::string kLookAtBarriers =
    ": the block must wait (__syncthreads) until its counters are all 0 before counting, and until every thread has "
    "counted before adding them to d_bins; blocks add to d_bins at the same time, so atomically";
const std::string kLookAtIndices =
    ": past 2^31 bytes, 32-bit indices wrap round; compute indices and strides in std::int64_t";

void check_boundaries(const ByteKernel& kernel) {
  for (const auto n : kit::param_ints("boundary_ns"))
    if (!check_bytes(
            kernel, random_bytes(static_cast<std::size_t>(n)),
            count_text(static_cast<std::size_t>(n)) + " random bytes, next to a multiple of a block or vector size",
            kernel.look_at + kLookAtBoundaries))
      return;
}

// Blocks that count and add up at the same time, many times over: a missing barrier or a
// non-atomic update loses counts in some blocks, some of the time.
void check_races(const ByteKernel& kernel) {
  const auto n = static_cast<std::size_t>(kit::param_int("race_n"));
  check_bytes(kernel, kit::few_value_bytes(n, static_cast<int>(kit::param_int("race_values"))),
              count_text(n) + " bytes of a few values", kernel.look_at + kLookAtBarriers,
              static_cast<int>(kit::param_int("race_repeats")));
}

void check_huge(const ByteKernel& kernel) {
  const auto n = static_cast<std::size_t>(kit::param_int("huge_n"));
  check_bytes_made_on_device(
      kernel, n, StreamByte{kit::Rng::for_case("period").seed(), static_cast<std::uint64_t>(kit::param_int("huge_period"))},
      count_text(n) + " bytes, more than 2^31", kernel.look_at + kLookAtIndices);
}

// "lo hi bins; lo hi bins; ..." from the config.
struct FloatSetup {
  float lo, hi;
  int bins;
};
std::vector<FloatSetup> float_setups() {
  std::vector<FloatSetup> setups;
  std::istringstream list(kit::param_string("float_setups"));
  std::string item;
  while (std::getline(list, item, ';')) {
    std::istringstream fields(item);
    FloatSetup setup{};
    if (!(fields >> setup.lo >> setup.hi >> setup.bins))
      throw std::runtime_error("lab parameter 'float_setups' must hold 'lo hi bins' triples separated by ';'");
    setups.push_back(setup);
  }
  return setups;
}

}  // namespace

// ---- Part 1 ----------------------------------------------------------------------------------

TEST_CASE("launch_histogram_global (hidden): lengths next to multiples of block and vector widths") {
  check_boundaries(global());
}
TEST_CASE("launch_histogram_global (hidden): more than 2^31 bytes needing 64-bit indices") { check_huge(global()); }

// ---- Part 2 ----------------------------------------------------------------------------------

TEST_CASE("launch_histogram_shared (hidden): lengths next to multiples of block and vector widths") {
  check_boundaries(shared());
}
TEST_CASE("launch_histogram_shared (hidden): many blocks counted repeatedly to expose shared-memory races") {
  check_races(shared());
}
TEST_CASE("launch_histogram_shared (hidden): more than 2^31 bytes needing 64-bit indices") { check_huge(shared()); }

// ---- Part 3 ----------------------------------------------------------------------------------

TEST_CASE("launch_histogram_warp_aggregated (hidden): lengths next to multiples of block and vector widths") {
  check_boundaries(warp_aggregated());
}
TEST_CASE("launch_histogram_warp_aggregated (hidden): many blocks counted repeatedly to expose shared-memory races") {
  check_races(warp_aggregated());
}
TEST_CASE("launch_histogram_warp_aggregated (hidden): more than 2^31 bytes needing 64-bit indices") {
  check_huge(warp_aggregated());
}

// ---- Part 4 ----------------------------------------------------------------------------------

TEST_CASE("launch_histogram_floats (hidden): lengths next to multiples of block and vector widths") {
  const float lo = static_cast<float>(kit::param_double("float_lo")),
              hi = static_cast<float>(kit::param_double("float_hi"));
  const int bins = static_cast<int>(kit::param_int("float_bins"));
  for (const auto n : kit::param_ints("boundary_ns"))
    if (!check_floats(
            random_floats(static_cast<std::size_t>(n), lo, hi, bins), lo, hi, bins,
            count_text(static_cast<std::size_t>(n)) + " random values, next to a multiple of a block or vector size"))
      return;
}

TEST_CASE("launch_histogram_floats (hidden): ranges and bin counts of several sizes") {
  const auto n = static_cast<std::size_t>(kit::param_int("float_n"));
  for (const FloatSetup& setup : float_setups()) {
    // Values from a range one bin wider on each side, so that some fall outside.
    const float width = (setup.hi - setup.lo) / static_cast<float>(setup.bins);
    if (!check_floats(random_floats(n, setup.lo - width, setup.hi + width, setup.bins + 2), setup.lo, setup.hi,
                      setup.bins, count_text(n) + " random values, some outside the range"))
      return;
  }
}

// ---- Under the memory and race checkers (hidden.toml names the tool for each) -----------------

TEST_CASE("histogram (hidden): every kernel on a tiny awkward input in exact-size buffers") {
  const auto n = static_cast<std::size_t>(kit::param_int("tiny_n"));
  const Bytes data = random_bytes(n);
  for (const ByteKernel& kernel : {global(), shared(), warp_aggregated()})
    if (!check_exact_bytes(kernel, data, count_text(n) + " random bytes")) return;
  const float lo = static_cast<float>(kit::param_double("float_lo")),
              hi = static_cast<float>(kit::param_double("float_hi"));
  const int bins = static_cast<int>(kit::param_int("tiny_bins"));
  const std::vector<float> values = random_floats(n, lo, hi, bins);
  kit::DeviceBuffer<float> d_values(values);
  kit::DeviceBuffer<unsigned> d_bins(static_cast<std::size_t>(bins));
  d_bins.poison();
  launch_histogram_floats(d_values.data(), static_cast<std::int64_t>(n), lo, hi, bins, d_bins.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  kit::expect_equal(
      d_bins.download(), histogram_reference::float_counts(values, lo, hi, bins),
      {count_text(n) + " random values in " + std::to_string(bins) + " bins, in buffers of exactly their size",
       kLookAtFloats});
}

TEST_CASE("histogram (hidden): the shared-memory kernels on a small input for the race checker") {
  const auto n = static_cast<std::size_t>(kit::param_int("race_check_n"));
  const Bytes data = kit::few_value_bytes(n, static_cast<int>(kit::param_int("race_values")));
  for (const ByteKernel& kernel : {shared(), warp_aggregated()})
    if (!check_exact_bytes(kernel, data, count_text(n) + " bytes of a few values")) return;
}
