// Counting, on the GPU, the elements of a device array that meet a condition: how the tests check
// outputs too large to copy to the host for every checked call (the poison left in a timed call's
// output, a product's elements outside their bound, pictures' values that are not finite). And
// counting elements into bins, or adding them up, each made on the GPU where it is counted: a
// check's histogram or sum of a gigabyte of generated input, without the input or a pass of every
// CPU core. Each holds a remote::JudgeAlone while it runs: no runner code runs beside a check.
#pragma once

#include <cstddef>
#include <vector>

#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"
#include "kit/grid_stride.cuh"
#include "kit/remote.hpp"

namespace kit {

// Where a condition holds: how many indices, and the first of them.
struct Found {
  unsigned long long count;
  unsigned long long first;  // kNotFound when count is 0
};
constexpr unsigned long long kNotFound = ~0ull;

namespace detail {

// A per-thread count and first index, a warp's sum and minimum, one pair of atomics per warp that
// found any.
template <class Condition>
__global__ void find_where_kernel(std::size_t count, Condition holds, Found* result) {
  unsigned long long mine = 0, first = kNotFound;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (holds(i)) {
      ++mine;
      if (i < first) first = i;
    }
  for (int offset = 16; offset > 0; offset /= 2) {
    mine += __shfl_down_sync(0xFFFFFFFFu, mine, offset);
    const unsigned long long other = __shfl_down_sync(0xFFFFFFFFu, first, offset);
    if (other < first) first = other;
  }
  if (threadIdx.x % 32 == 0 && mine > 0) {
    atomicAdd(&result->count, mine);
    atomicMin(&result->first, first);
  }
}

template <class T, class ElementAt>
__global__ void make_kernel(T* out, std::size_t count, ElementAt element_at) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = element_at(i);
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

// Each thread adds up its elements in double, each warp its threads' sums, then one thread its
// block's warps, in a fixed order: the same inputs give the same sums, bit for bit.
template <class ValueAt>
__global__ void sums_kernel(std::size_t count, ValueAt value_at, double2* block_sums) {
  double sum = 0.0, abs_sum = 0.0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double value = value_at(i);
    sum += value;
    abs_sum += fabs(value);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    abs_sum += __shfl_down_sync(0xFFFFFFFFu, abs_sum, offset);
  }
  __shared__ double2 warp_sums[kGridStrideBlock / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = make_double2(sum, abs_sum);
  __syncthreads();
  if (threadIdx.x != 0) return;
  double2 block = make_double2(0.0, 0.0);
  for (int warp = 0; warp < kGridStrideBlock / 32; ++warp) {
    block.x += warp_sums[warp].x;
    block.y += warp_sums[warp].y;
  }
  block_sums[blockIdx.x] = block;
}

}  // namespace detail

// Writes element_at(0), ..., element_at(count - 1) into d_out[0, count) on the GPU: an input as large
// as the GPU holds, made where it is used, by the very function object sums_on_device or
// count_bins_on_device then adds up or counts. Queued on the default stream.
template <class T, class ElementAt>
void make_on_device(T* d_out, std::size_t count, const ElementAt& element_at) {
  if (count == 0) return;
  detail::make_kernel<<<detail::grid_for(count), detail::kGridStrideBlock>>>(d_out, count, element_at);
  CUDA_CHECK_LAUNCH();
}

// A sum in double, and the sum of the absolute values that its rounding bound scales with.
struct Sums {
  double sum = 0.0;
  double abs_sum = 0.0;
};

// The Sums of value_at(0), ..., value_at(count - 1), each element made and added up on the GPU in
// double, never stored: a check's reference for a gigabyte of input in about a millisecond, where
// the CPU takes a tenth of a second of every core. `value_at` is a functor with a
// `__device__ float operator()(std::size_t i) const` (or double); to stand for an input the CPU
// makes, it must make element i as the CPU does (kit/random.hpp's detail generators). Double's
// rounding over a thread's few thousand additions and the tree above them stays many orders below
// any float tolerance. Waits for the GPU.
template <class ValueAt>
Sums sums_on_device(std::size_t count, const ValueAt& value_at) {
  if (count == 0) return {};
  const remote::JudgeAlone alone("the sum of the input");
  const unsigned blocks = detail::grid_for(count);
  DeviceBuffer<double2> block_sums(blocks);
  detail::sums_kernel<<<blocks, detail::kGridStrideBlock>>>(count, value_at, block_sums.data());
  CUDA_CHECK_LAUNCH();
  Sums total;
  for (const double2& block : block_sums.download()) {
    total.sum += block.x;
    total.abs_sum += block.y;
  }
  return total;
}

// The counts in `bins` bins of bin_at(0), ..., bin_at(count - 1) (a bin outside [0, bins) counts
// nowhere), each element made and counted on the GPU. `bin_at` is a functor with a
// `__device__ int operator()(std::size_t i) const`; to stand for an input the CPU makes, it must
// make element i with the same functions the CPU does (kit/random.hpp's detail generators). Counts
// are exact whatever the order (integer adds). Waits for the GPU.
template <class BinAt>
std::vector<unsigned> count_bins_on_device(std::size_t count, int bins, const BinAt& bin_at) {
  if (bins <= 0) return {};
  const remote::JudgeAlone alone("the count of the input");
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

// Where in [0, count) `holds(i)` is true: how many indices, and the first (the check of an output
// compared in full on the GPU, which reports its first wrong elements). `holds` is a functor with a
// `__device__ bool operator()(std::size_t i) const` that reads device memory only. Waits for the GPU.
template <class Condition>
Found find_where(std::size_t count, const Condition& holds) {
  const Found none{0, kNotFound};
  if (count == 0) return none;
  const remote::JudgeAlone alone("the check of the output");
  DeviceBuffer<Found> result(std::vector<Found>{none});
  detail::find_where_kernel<<<detail::grid_for(count), detail::kGridStrideBlock>>>(count, holds, result.data());
  CUDA_CHECK_LAUNCH();
  return result.download().front();
}

// How many indices i in [0, count) `holds(i)` is true for (find_where's count).
template <class Condition>
std::size_t count_where(std::size_t count, const Condition& holds) {
  return static_cast<std::size_t>(find_where(count, holds).count);
}

}  // namespace kit
