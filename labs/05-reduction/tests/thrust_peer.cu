#include "thrust_peer.cuh"

#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

#include <cstddef>

#include "kit/device_buffer.cuh"

namespace {

// Thrust asks for temporary device memory on every call. Handing it the same
// buffer each time (grown when it asks for more) keeps cudaMalloc and cudaFree
// out of the timing, so what is timed is the reduction and the copy of its result.
class ReusedScratch {
 public:
  using value_type = char;
  char* allocate(std::ptrdiff_t bytes) {
    if (static_cast<std::size_t>(bytes) > buffer_.size()) buffer_ = kit::DeviceBuffer<char>(static_cast<std::size_t>(bytes));
    return buffer_.data();
  }
  void deallocate(char*, std::size_t) {}

 private:
  kit::DeviceBuffer<char> buffer_{0};
};

}  // namespace

kit::Ceiling thrust_reduce_ceiling(const float* d_in, std::int64_t n, const kit::TimingOptions& options) {
  ReusedScratch scratch;
  float h_sum = 0.0f;
  const kit::Timing timing = kit::time_device_work(
      [&] { h_sum = thrust::reduce(thrust::cuda::par(scratch), d_in, d_in + n, 0.0f); }, options);
  return {"thrust::reduce", static_cast<double>(n) * sizeof(float) / timing.median_s / 1e9};
}
