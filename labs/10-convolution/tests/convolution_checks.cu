// Lab 10's checks that run on the GPU: counting the outputs of a timed call that are not finite,
// which on the CPU would mean copying a quarter of a gigabyte for each checked call while the
// whole class waits for the GPU.
#include "convolution_checks.cuh"

namespace convolution_checks {
namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;  // a grid-stride loop over this many blocks per SM keeps memory busy

// Counts the elements that are not finite into *result: a per-thread count, a warp sum, one
// atomic per warp.
__global__ void count_not_finite_kernel(const float* data, std::size_t count, unsigned long long* result) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    mine += isfinite(data[i]) ? 0 : 1;
  for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_down_sync(0xFFFFFFFFu, mine, offset);
  if (threadIdx.x % 32 == 0 && mine > 0) atomicAdd(result, mine);
}

}  // namespace

std::size_t count_not_finite(const float* d_data, std::size_t count) {
  if (count == 0) return 0;
  const std::size_t most = static_cast<std::size_t>(kit::device_info().multiprocessors) * kBlocksPerSm;
  const std::size_t needed = (count + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(std::max<std::size_t>(1, std::min(needed, most)));
  kit::DeviceBuffer<unsigned long long> result(1);
  CUDA_CHECK(cudaMemset(result.data(), 0, result.bytes()));
  count_not_finite_kernel<<<blocks, kThreads>>>(d_data, count, result.data());
  CUDA_CHECK_LAUNCH();
  return static_cast<std::size_t>(result.download()[0]);
}

}  // namespace convolution_checks
