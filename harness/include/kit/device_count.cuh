// Counting, on the GPU, the elements of a device array that meet a condition: how the tests check
// outputs too large to copy to the host for every checked call (the poison left in a timed call's
// output, a product's elements outside their bound, pictures' values that are not finite).
#pragma once

#include <cstddef>

#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"
#include "kit/grid_stride.cuh"

namespace kit {
namespace detail {

// A per-thread count, a warp sum, one atomic per warp.
template <class Condition>
__global__ void count_where_kernel(std::size_t count, Condition holds, unsigned long long* result) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    mine += holds(i) ? 1 : 0;
  for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_down_sync(0xFFFFFFFFu, mine, offset);
  if (threadIdx.x % 32 == 0 && mine > 0) atomicAdd(result, mine);
}

}  // namespace detail

// How many indices i in [0, count) `holds(i)` is true for. `holds` is a functor with a
// `__device__ bool operator()(std::size_t i) const` that reads device memory only.
template <class Condition>
std::size_t count_where(std::size_t count, const Condition& holds) {
  if (count == 0) return 0;
  DeviceBuffer<unsigned long long> result(1);
  CUDA_CHECK(cudaMemset(result.data(), 0, result.bytes()));
  detail::count_where_kernel<<<detail::grid_for(count), detail::kGridStrideBlock>>>(count, holds, result.data());
  CUDA_CHECK_LAUNCH();
  return static_cast<std::size_t>(result.download()[0]);
}

}  // namespace kit
