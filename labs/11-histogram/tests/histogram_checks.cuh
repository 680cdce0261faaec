// Lab 11 checks shared by the public and the hidden tests: inputs, device buffers with guard
// zones, and the comparisons with the CPU reference (histogram_reference.hpp). Counts are
// integers: every check is exact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "histogram.cuh"
#include "histogram_reference.hpp"
#include "kit/device_count.cuh"
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

// Byte i of a stream's bytes in [0, 255], as kit::fill_uniform_bytes(..., 0, 255) writes them on the
// GPU and Rng::uniform_bytes(n, 0, 255) makes them on the CPU; with `period` > 0, the first `period`
// of them repeated (a prime number of them, so that no two 16-byte vectors at a power-of-two
// distance are alike). For inputs of a gigabyte and more, made and counted on the GPU.
struct StreamByte {
  std::uint64_t seed;
  std::uint64_t period = 0;
  KIT_HOST_DEVICE std::uint8_t operator()(std::size_t i) const {
    return static_cast<std::uint8_t>(kit::detail::uniform_int(kit::detail::random_bits(seed, period > 0 ? i % period : i),
                                                              0, kit::detail::int_span(0, 255)));
  }
};

// Its bin, for kit::count_bins_on_device.
struct StreamByteBin {
  StreamByte byte;
  __device__ int operator()(std::size_t i) const { return histogram_reference::byte_bin(byte(i)); }
};

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

// random_floats made on the GPU, for inputs of a gigabyte (a timed call's, the large test's): value
// i is `within` of the way across bin `bin`, with bin element i of the stream `bin_seed`'s ints in
// [0, bins - 1] and within element i of the stream `within_seed`'s floats in [margin, 1 - margin],
// as kit::fill_uniform_ints and _floats draw them.
struct ValueAt {
  std::uint64_t bin_seed, within_seed;
  int bins;
  float lo, margin;
  double width;
  ValueAt(const kit::Rng& bin, const kit::Rng& within, float lo, float hi, int bins)
      : bin_seed(bin.seed()), within_seed(within.seed()), bins(bins), lo(lo),
        margin(static_cast<float>(kit::param_double("float_edge_margin"))),
        width((static_cast<double>(hi) - lo) / bins) {}
  __device__ float operator()(std::size_t i) const {
    const int bin =
        kit::detail::uniform_int(kit::detail::random_bits(bin_seed, i), 0, kit::detail::int_span(0, bins - 1));
    const float within = kit::detail::uniform_float(kit::detail::random_bits(within_seed, i), margin,
                                                    static_cast<double>(1.0f - margin) - margin);
    return static_cast<float>(lo + (bin + static_cast<double>(within)) * width);
  }
};

// Value i's bin by the CPU reference's rule (bin_of), for kit::count_bins_on_device. The value is
// made again here, and may round differently in its last bit from the one written (the compiler
// may fuse the multiply and the add in one kernel and not the other); a last bit, below 3e-7 for
// |v| <= 2.5, moves no value across the margin (lab.toml's float_edge_margin of a bin's width).
struct ValueBin {
  ValueAt value;
  float hi;
  __device__ int operator()(std::size_t i) const {
    return histogram_reference::bin_of(value(i), value.lo, hi, value.bins);
  }
};

// ---------------------------------------------------------------------------------------------
// Device memory.

// An input in device memory between two guard zones of input_guard_bytes filled with `fill`
// (kit::GuardedInput): a kernel that reads before the start or past the end counts a value that
// is not there.
template <class T>
std::size_t input_guard() {  // elements
  const auto guard_bytes = static_cast<std::size_t>(kit::param_int("input_guard_bytes"));
  return (guard_bytes + sizeof(T) - 1) / sizeof(T);
}

template <class T>
kit::GuardedInput<T> guarded_input(const std::vector<T>& host, T fill) {
  return kit::GuardedInput<T>(host, input_guard<T>(), fill);
}

// n elements made by element_at on the GPU, between the same guard zones: an input of a gigabyte,
// with no gigabyte made on the host.
template <class T, class ElementAt>
kit::GuardedInput<T> guarded_input_made_on_device(std::size_t n, T fill, const ElementAt& element_at) {
  kit::GuardedInput<T> input(n, input_guard<T>(), fill);
  kit::make_on_device(input.data(), n, element_at);
  return input;
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

// n bytes made by `byte` on the GPU between guard zones of the byte 171 (the poison), counted there
// by the same function, then checked (check_bytes_on_device): a gigabyte made, counted and copied
// on the CPU would cost every submission seconds of every core.
inline bool check_bytes_made_on_device(const ByteKernel& kernel, std::size_t n, const StreamByte& byte,
                                       const std::string& input, const std::string& look_at) {
  const auto d_data = guarded_input_made_on_device(n, kit::poison_value<std::uint8_t>(), byte);
  return check_bytes_on_device(kernel, d_data.data(), static_cast<std::int64_t>(n),
                               kit::count_bins_on_device(n, kByteBins, StreamByteBin{byte}), input, look_at);
}

// launch_histogram_floats on the n values at d_values (between guard zones of the value lo, which
// counts in bin 0, so a read outside the input shows), against `expected`.
inline bool check_floats_on_device(const float* d_values, std::size_t n, float lo, float hi, int bins,
                                   const std::vector<unsigned>& expected, const std::string& input,
                                   const std::string& look_at) {
  GuardedCounters d_bins(static_cast<std::size_t>(bins));
  d_bins.poison();
  launch_histogram_floats(d_values, static_cast<std::int64_t>(n), lo, hi, bins, d_bins.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_bins.check(expected,
                      input + ", " + std::to_string(bins) + " bins over [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + ")",
                      look_at);
}

// check_floats_on_device on `values`, uploaded, against the CPU reference.
inline bool check_floats(const std::vector<float>& values, float lo, float hi, int bins, const std::string& input,
                         const std::string& look_at = kLookAtFloats) {
  const auto d_values = guarded_input(values, lo);
  return check_floats_on_device(
      d_values.data(), values.size(), lo, hi, bins,
      histogram_reference::float_counts(values, lo, hi, bins, histogram_reference::threads_for(values.size())), input,
      look_at);
}

// check_floats_on_device on n values made by `value` on the GPU and counted there: a gigabyte made,
// counted and copied on the CPU would cost every submission seconds of every core.
inline bool check_floats_made_on_device(std::size_t n, const ValueAt& value, float hi, const std::string& input) {
  const auto d_values = guarded_input_made_on_device(n, value.lo, value);
  return check_floats_on_device(d_values.data(), n, value.lo, hi, value.bins,
                                kit::count_bins_on_device(n, value.bins, ValueBin{value, hi}), input, kLookAtFloats);
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
  check_bytes_made_on_device(kernel, n, StreamByte{kit::Rng::for_case("bytes").seed()},
                             count_text(n) + " (2^28 + 3) random bytes", kernel.look_at);
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
