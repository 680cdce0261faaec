// Lab 11 public tests: the ones you can run yourself (make 11-histogram).
#include <cmath>
#include <limits>

#include "cub_peer.cuh"
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
  check_floats(random_floats(n, lo, hi, bins), lo, hi, bins, count_text(n) + " (2^28 + 3) random values");
}

// ---- Timing ----------------------------------------------------------------------------------

namespace {

// Times `kernel` on 2^28 bytes, first uniform at random, then all of one value, each against
// cub::DeviceHistogram on the same bytes and a device-to-device copy of as many bytes; checks
// the timed code's counts after each.
void time_bytes(const ByteKernel& kernel, const std::string& uniform_measurement,
                const std::string& one_value_measurement) {
  const auto n = static_cast<std::int64_t>(kit::param_int("timing_n"));
  const auto options = kit::TimingOptions::from_params();
  const Bytes uniform = random_bytes(static_cast<std::size_t>(n)), skewed = one_value(static_cast<std::size_t>(n));
  const struct {
    std::string measurement, what;
    const Bytes& data;
  } inputs[] = {{uniform_measurement, "2^28 random bytes", uniform},
                {one_value_measurement, "2^28 bytes all equal to " + std::to_string(skewed[0]), skewed}};

  for (const auto& input : inputs) {
    const kit::DeviceBuffer<std::uint8_t> d_data(input.data);
    kit::DeviceBuffer<unsigned> d_bins(kByteBins);  // the output, poisoned before the checked run
    const std::vector<unsigned> expected = histogram_reference::byte_counts(input.data);
    // The timed call. It sets every counter itself and does not change its input, so nothing
    // needs refreshing between calls.
    const auto work = [&] { kernel.launch(d_data.data(), n, d_bins.data()); };
    // The check of a timed output.
    const auto verify = [&] {
      return kit::expect_equal(d_bins.download(), expected, {"the timing input, " + input.what, kernel.look_at});
    };

    kit::Measurement m{input.measurement, kit::time_device_work(work, options), static_cast<double>(n),
                       kit::RateUnit::GBps};  // every byte read once
    m.ceilings.push_back(cub_byte_histogram_ceiling(d_data.data(), n, expected, options));
    m.ceilings.push_back(kit::copy_ceiling(static_cast<std::size_t>(n), options));
    kit::report(m);

    d_bins.poison();  // the timed code must also be right
    work();
    CUDA_CHECK(cudaDeviceSynchronize());
    if (!verify()) return;
  }
}

}  // namespace

TEST_CASE("histogram timing: global atomics on 2^28 bytes uniform and all of one value" * KIT_TIMING) {
  time_bytes(global(), "histogram_global", "one_value_global");
}

TEST_CASE("histogram timing: shared-memory counters on 2^28 bytes uniform and all of one value" * KIT_TIMING) {
  time_bytes(shared(), "histogram_shared", "one_value_shared");
}

TEST_CASE("histogram timing: warp-aggregated counters on 2^28 bytes uniform and all of one value" * KIT_TIMING) {
  time_bytes(warp_aggregated(), "histogram_warp_aggregated", "one_value_warp_aggregated");
}

TEST_CASE("histogram timing: floats into bins" * KIT_TIMING) {
  const auto n = static_cast<std::int64_t>(kit::param_int("timing_float_n"));
  const float lo = static_cast<float>(kit::param_double("float_lo")),
              hi = static_cast<float>(kit::param_double("float_hi"));
  const int bins = static_cast<int>(kit::param_int("timing_float_bins"));
  const std::vector<float> values = random_floats(static_cast<std::size_t>(n), lo, hi, bins);
  const std::vector<unsigned> expected = histogram_reference::float_counts(values, lo, hi, bins);
  const kit::DeviceBuffer<float> d_values(values);
  kit::DeviceBuffer<unsigned> d_bins(static_cast<std::size_t>(bins));  // the output, poisoned before the checked run
  const auto options = kit::TimingOptions::from_params();
  const double bytes = static_cast<double>(n) * sizeof(float);  // every value read once

  // The timed call: it sets every counter and leaves its input alone, so nothing needs refreshing.
  const auto work = [&] { launch_histogram_floats(d_values.data(), n, lo, hi, bins, d_bins.data()); };
  // The check of a timed output.
  const auto verify = [&] {
    return kit::expect_equal(d_bins.download(), expected,
                             {"the timing input, " + count_text(static_cast<std::size_t>(n)) + " random values in " +
                                  std::to_string(bins) + " bins",
                              kLookAtFloats});
  };

  kit::Measurement m{"histogram_floats", kit::time_device_work(work, options), bytes, kit::RateUnit::GBps};
  m.ceilings.push_back(cub_float_histogram_ceiling(d_values.data(), n, lo, hi, bins, expected, options));
  m.ceilings.push_back(kit::copy_ceiling(static_cast<std::size_t>(bytes), options));
  kit::report(m);

  d_bins.poison();  // the timed code must also be right
  work();
  CUDA_CHECK(cudaDeviceSynchronize());
  verify();
}
