// Lab 11 checks shared by the public and the hidden tests: inputs, device buffers with guard
// zones, and the comparisons with the CPU reference (histogram_reference.hpp). Counts are
// integers: every check is exact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "histogram.cuh"
#include "histogram_reference.hpp"
#include "kit/kit.cuh"

namespace histogram_checks {

using Bytes = std::vector<std::uint8_t>;

// One of the three byte histograms, as the tests see it.
struct ByteKernel {
  std::string name;  // the launch function, as the test names say it
  void (*launch)(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins);
  std::string look_at;
};

inline ByteKernel global() {
  return {"launch_histogram_global", launch_histogram_global,
          "histogram_global_kernel and launch_histogram_global in histogram.cu"};
}
inline ByteKernel shared() {
  return {"launch_histogram_shared", launch_histogram_shared,
          "histogram_shared_kernel, count_four_bytes and launch_histogram_shared in histogram.cu"};
}
inline ByteKernel warp_aggregated() {
  return {"launch_histogram_warp_aggregated", launch_histogram_warp_aggregated,
          "histogram_warp_aggregated_kernel, add_warp_aggregated and launch_histogram_warp_aggregated in "
          "histogram.cu"};
}

inline const std::string kLookAtFloats =
    "count_value, histogram_floats_kernel and launch_histogram_floats in histogram.cu";
inline const std::string kLookAtFloatRange =
    "count_value: a value counts only if lo <= v < hi (hi itself, infinities and NaN do not), and a value just "
    "below hi whose bin comes out as `bins` belongs in bin bins - 1";
inline const std::string kLookAtGuard =
    "the counters a launch function sets and the kernel writes: only the first `bins` (256 for bytes) exist";
// What a count of one too many means, added to every check's hint.
inline const std::string kGuardHint =
    " (the tests put the byte 171, or for floats the value lo, before and after the input: a count one too high "
    "in those bins means a read outside it)";

// A count of the whole input, for the failure message.
inline std::string count_text(std::size_t n) { return "n = " + std::to_string(n); }

// ---------------------------------------------------------------------------------------------
// Inputs.

inline Bytes random_bytes(std::size_t n, const std::string& stream = "bytes") {
  return kit::Rng::for_case(stream).uniform_bytes(n);
}

// A large input: `period` random bytes (a prime number of them) repeated, so that a
// gigabyte-scale input is made in good time while no two 16-byte vectors at a power-of-two
// distance are alike.
inline Bytes repeated_bytes(std::size_t n, std::size_t period) {
  const Bytes base = random_bytes(std::min(n, period), "period");
  Bytes data(n);
  for (std::size_t first = 0; first < n; first += base.size())
    std::memcpy(data.data() + first, base.data(), std::min(base.size(), n - first));
  return data;
}

// Floats into `bins` bins over [lo, hi): each value at least float_edge_margin of a bin's width
// away from the edges of its bin (lab.toml explains why), its bin uniform at random.
inline std::vector<float> random_floats(std::size_t n, float lo, float hi, int bins,
                                        const std::string& stream = "floats") {
  const std::vector<int> bin = kit::Rng::for_case(stream + " bins").uniform_ints(n, 0, bins - 1);
  const double margin = kit::param_double("float_edge_margin");
  const std::vector<double> within = kit::Rng::for_case(stream).uniform_doubles(n, margin, 1.0 - margin);
  const double width = (static_cast<double>(hi) - lo) / bins;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(lo + (bin[i] + within[i]) * width);
  return values;
}

// ---------------------------------------------------------------------------------------------
// Device memory.

// An input in device memory between two guard zones of input_guard_bytes filled with `fill`
// (kit::GuardedInput): a kernel that reads before the start or past the end counts a value that
// is not there.
template <class T>
kit::GuardedInput<T> guarded_input(const std::vector<T>& host, T fill) {
  const auto guard_bytes = static_cast<std::size_t>(kit::param_int("input_guard_bytes"));
  return kit::GuardedInput<T>(host, (guard_bytes + sizeof(T) - 1) / sizeof(T), fill);
}

// Counters in device memory followed by a guard zone, all poisoned before each call.
class GuardedCounters {
 public:
  explicit GuardedCounters(std::size_t bins)
      : bins_(bins), buffer_(bins + static_cast<std::size_t>(kit::param_int("counter_guard"))) {}
  unsigned* data() { return buffer_.data(); }
  void poison() { buffer_.poison(); }
  // Compares the counters with `expected` and checks the guard zone is untouched.
  bool check(const std::vector<unsigned>& expected, const std::string& input, const std::string& look_at) const {
    const std::vector<unsigned> all = buffer_.download();
    const std::vector<unsigned> counters(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(bins_));
    const std::vector<unsigned> past_end(all.begin() + static_cast<std::ptrdiff_t>(bins_), all.end());
    const bool right = kit::expect_equal(counters, expected, {input, look_at + kGuardHint});
    const bool clean = kit::expect_guard_untouched(past_end, bins_, {input, kLookAtGuard});
    return right && clean;
  }

 private:
  std::size_t bins_;
  kit::DeviceBuffer<unsigned> buffer_;
};

// ---------------------------------------------------------------------------------------------
// The checks.

// Runs `kernel` on the bytes of d_data, `repeats` times on freshly poisoned counters, and checks
// every result. Returns false at the first wrong one.
inline bool check_bytes_on_device(const ByteKernel& kernel, const std::uint8_t* d_data, std::int64_t n,
                                  const std::vector<unsigned>& expected, const std::string& input,
                                  const std::string& look_at, int repeats = 1) {
  GuardedCounters d_bins(kByteBins);
  for (int run = 1; run <= repeats; ++run) {
    d_bins.poison();
    kernel.launch(d_data, n, d_bins.data());
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string text =
        repeats > 1 ? input + " (run " + std::to_string(run) + " of " + std::to_string(repeats) + ")" : input;
    if (!d_bins.check(expected, text, look_at)) return false;
  }
  return true;
}

// `data` uploaded between guard zones of the byte 171 (the poison), then checked.
inline bool check_bytes(const ByteKernel& kernel, const Bytes& data, const std::string& input,
                        const std::string& look_at, int repeats = 1) {
  const auto d_data = guarded_input(data, kit::poison_value<std::uint8_t>());
  return check_bytes_on_device(kernel, d_data.data(), d_data.size(),
                               histogram_reference::byte_counts(data, histogram_reference::threads_for(data.size())),
                               input, look_at, repeats);
}

// launch_histogram_floats on `values`, between guard zones of the value lo (which counts in bin
// 0, so a read outside the input shows).
inline bool check_floats(const std::vector<float>& values, float lo, float hi, int bins, const std::string& input,
                         const std::string& look_at = kLookAtFloats) {
  const auto d_values = guarded_input(values, lo);
  GuardedCounters d_bins(static_cast<std::size_t>(bins));
  d_bins.poison();
  launch_histogram_floats(d_values.data(), d_values.size(), lo, hi, bins, d_bins.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_bins.check(
      histogram_reference::float_counts(values, lo, hi, bins, histogram_reference::threads_for(values.size())),
      input + ", " + std::to_string(bins) + " bins over [" + std::to_string(lo) + ", " + std::to_string(hi) + ")",
      look_at);
}

// ---- What the public and hidden tests share --------------------------------------------------

inline void check_one_byte(const ByteKernel& kernel) { check_bytes(kernel, random_bytes(1), "n = 1", kernel.look_at); }

inline void check_prime_length(const ByteKernel& kernel) {
  const auto n = static_cast<std::size_t>(kit::param_int("prime_n"));
  check_bytes(kernel, random_bytes(n),
              count_text(n) + " random bytes, a prime: not a multiple of the block size or of 16", kernel.look_at);
}

inline void check_one_value(const ByteKernel& kernel) {
  const auto n = static_cast<std::size_t>(kit::param_int("one_value_n"));
  const Bytes data = kit::one_value_bytes(n);
  check_bytes(kernel, data, count_text(n) + " bytes all equal to " + std::to_string(data[0]), kernel.look_at);
}

inline void check_large(const ByteKernel& kernel) {
  const auto n = static_cast<std::size_t>(kit::param_int("large_n"));
  check_bytes(kernel, random_bytes(n), count_text(n) + " (2^28 + 3) random bytes", kernel.look_at);
}

// The input as used for the memory checker: in a buffer of exactly n bytes and counters of
// exactly `bins`, so that any access outside them is an access outside an allocation.
inline bool check_exact_bytes(const ByteKernel& kernel, const Bytes& data, const std::string& input) {
  kit::DeviceBuffer<std::uint8_t> d_data(data);
  kit::DeviceBuffer<unsigned> d_bins(kByteBins);
  d_bins.poison();
  kernel.launch(d_data.data(), static_cast<std::int64_t>(data.size()), d_bins.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  return kit::expect_equal(d_bins.download(), histogram_reference::byte_counts(data),
                           {input + ", in buffers of exactly its size", kernel.look_at});
}

}  // namespace histogram_checks
