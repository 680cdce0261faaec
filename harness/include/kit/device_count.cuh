// Counting, on the GPU, the elements of a device array that meet a condition: how the tests check
// outputs too large to copy to the host for every checked call (the poison left in a timed call's
// output, a product's elements outside their bound, pictures' values that are not finite). And
// counting elements into bins, each made on the GPU where it is counted: a timing check's
// histogram of a gigabyte of generated input, without the input or a pass of every CPU core.
#pragma once

#include <cstddef>
#include <vector>

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

// Counters per block in shared memory (kMostSharedBins at most), added to the global ones at the
// end; one global atomic per element where there are more bins than that.
constexpr int kMostSharedBins = 8192;

template <class BinAt>
__global__ void count_bins_kernel(std::size_t count, int bins, BinAt bin_at, unsigned* counts) {
  extern __shared__ unsigned block_counts[];
  const bool shared = bins <= kMostSharedBins;
  if (shared)
    for (int b = threadIdx.x; b < bins; b += blockDim.x) block_counts[b] = 0;
  __syncthreads();
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int bin = bin_at(i);
    if (bin >= 0 && bin < bins) atomicAdd(shared ? &block_counts[bin] : &counts[bin], 1u);
  }
  __syncthreads();
  if (shared)
    for (int b = threadIdx.x; b < bins; b += blockDim.x)
      if (block_counts[b] > 0) atomicAdd(&counts[b], block_counts[b]);
}

}  // namespace detail

// The counts in `bins` bins of bin_at(0), ..., bin_at(count - 1) (a bin outside [0, bins) counts
// nowhere), each element made and counted on the GPU. `bin_at` is a functor with a
// `__device__ int operator()(std::size_t i) const`; to stand for an input the CPU makes, it must
// make element i with the same functions the CPU does (kit/random.hpp's detail generators). Counts
// are exact whatever the order (integer adds). Waits for the GPU.
template <class BinAt>
std::vector<unsigned> count_bins_on_device(std::size_t count, int bins, const BinAt& bin_at) {
  if (bins <= 0) return {};
  DeviceBuffer<unsigned> counts(static_cast<std::size_t>(bins));
  CUDA_CHECK(cudaMemset(counts.data(), 0, counts.bytes()));
  if (count > 0) {
    const std::size_t shared_bytes = bins <= detail::kMostSharedBins ? counts.bytes() : 0;
    detail::count_bins_kernel<<<detail::grid_for(count), detail::kGridStrideBlock, shared_bytes>>>(
        count, bins, bin_at, counts.data());
    CUDA_CHECK_LAUNCH();
  }
  return counts.download();
}

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
