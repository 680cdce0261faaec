#include "cub_peer.cuh"

#include <cub/device/device_histogram.cuh>

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kit/check.hpp"
#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"

namespace {

const std::string kYardstick = "the cub::DeviceHistogram yardstick (a problem of the lab, not of your code)";

// Runs `histogram(temp, temp_bytes)` once to learn how much scratch memory CUB wants, then
// times it with that scratch allocated once, so that no allocation is timed; checks the
// counters it leaves in d_counters; returns the median time.
template <class Histogram>
double time_cub(Histogram histogram, unsigned* d_counters, const std::vector<unsigned>& expected,
                const kit::TimingOptions& options) {
  std::size_t temp_bytes = 0;
  CUDA_CHECK(histogram(nullptr, temp_bytes));
  kit::DeviceBuffer<char> temp(temp_bytes);
  const kit::Timing timing = kit::time_device_work([&] { CUDA_CHECK(histogram(temp.data(), temp_bytes)); }, options);

  // The yardstick must do the same job: its counters, from a poisoned start, against the CPU's.
  CUDA_CHECK(cudaMemset(d_counters, kit::poison_byte<unsigned>(), expected.size() * sizeof(unsigned)));
  CUDA_CHECK(histogram(temp.data(), temp_bytes));
  std::vector<unsigned> got(expected.size());
  CUDA_CHECK(cudaMemcpy(got.data(), d_counters, got.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  kit::expect_equal(got, expected, {kYardstick, "labs/11-histogram/tests/cub_peer.cu"});
  return timing.median_s;
}

int sample_count(std::int64_t n) {
  if (n > INT_MAX) throw std::invalid_argument("the CUB yardstick takes at most 2^31 - 1 samples");
  return static_cast<int>(n);
}

}  // namespace

kit::Ceiling cub_byte_histogram_ceiling(const std::uint8_t* d_data, std::int64_t n,
                                        const std::vector<unsigned>& expected, const kit::TimingOptions& options) {
  kit::DeviceBuffer<unsigned> d_counters(256);
  const int samples = sample_count(n);
  // 257 levels 0, 1, ..., 256: bin b holds the bytes equal to b.
  const double seconds = time_cub(
      [&](void* temp, std::size_t& temp_bytes) {
        return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d_data, d_counters.data(), 257, 0, 256, samples);
      },
      d_counters.data(), expected, options);
  return {"cub::DeviceHistogram", static_cast<double>(n) / seconds / 1e9};
}

kit::Ceiling cub_float_histogram_ceiling(const float* d_values, std::int64_t n, float lo, float hi, int bins,
                                         const std::vector<unsigned>& expected, const kit::TimingOptions& options) {
  kit::DeviceBuffer<unsigned> d_counters(static_cast<std::size_t>(bins));
  const int samples = sample_count(n);
  const double seconds = time_cub(
      [&](void* temp, std::size_t& temp_bytes) {
        return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d_values, d_counters.data(), bins + 1, lo, hi,
                                                   samples);
      },
      d_counters.data(), expected, options);
  return {"cub::DeviceHistogram of the floats", static_cast<double>(n) * sizeof(float) / seconds / 1e9};
}
