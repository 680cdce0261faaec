#include <algorithm>
#include <cstdint>

#include "histogram.cuh"
#include "kit/cuda_check.cuh"

// Threads per block of every kernel: a multiple of the 32-thread warp.
constexpr int kBlockSize = 256;
// The privatized kernels (parts 2 to 4) launch at most this many blocks per SM: 8 blocks of 256
// threads fill an H100 SM's 2048 thread slots. Each block then counts a long stretch of the
// input, so its counters are zeroed and added to d_bins once per block, not once per 256 values.
constexpr int kBlocksPerSm = 8;
// Every lane of a warp takes part in a warp-wide instruction.
constexpr unsigned kFullMask = 0xffffffffu;

// The grid of a privatized kernel whose threads each take `per_thread` values at a time: enough
// blocks to fill the GPU (kBlocksPerSm per SM; an H100 has 132 SMs), and fewer when n is small,
// since a block with nothing to count only costs time.
unsigned privatized_grid(std::int64_t n, int per_thread) {
  int device = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t fill = static_cast<std::int64_t>(multiprocessors) * kBlocksPerSm;
  const std::int64_t needed = (n + static_cast<std::int64_t>(kBlockSize) * per_thread - 1) / (kBlockSize * per_thread);
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(fill, needed)));
}

// ---------------------------------------------------------------------------------------------
// Part 1: global atomics.
// ---------------------------------------------------------------------------------------------

// One thread per byte: adds 1 to the byte's counter in global memory.
// [11 points with the hidden tests, and 3 for speed]
// May assume: bins holds 256 counters, set to 0 before the kernel runs.
// Must not: read data past n.
__global__ void histogram_global_kernel(const std::uint8_t* data, std::int64_t n, unsigned* bins) {
  // BEGIN SOLUTION
  // TODO: compute this thread's index in 64 bits (n may pass 2^31, where an int wraps round:
  //       widen blockIdx.x before multiplying), and if it is below n add 1 to the counter of
  //       its byte with atomicAdd: other threads add to the same counters at the same time.
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[data[i]], 1u);
  // END SOLUTION
}

// Sets d_bins to 0, then launches histogram_global_kernel over n bytes.
void launch_histogram_global(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins) {
  // BEGIN SOLUTION
  // TODO: set the 256 counters to 0 (cudaMemsetAsync counts bytes), then launch
  //       histogram_global_kernel with kBlockSize threads per block and enough blocks for n
  //       bytes (round up), and check the launch with CUDA_CHECK_LAUNCH().
  CUDA_CHECK(cudaMemsetAsync(d_bins, 0, kByteBins * sizeof(unsigned)));  // the kernel adds to them
  const std::int64_t blocks = (n + kBlockSize - 1) / kBlockSize;
  histogram_global_kernel<<<static_cast<unsigned>(blocks), kBlockSize>>>(d_data, n, d_bins);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Part 2: privatized counters in shared memory.
// ---------------------------------------------------------------------------------------------

// Adds the four bytes of `word` to the block's counters.
__device__ void count_four_bytes(unsigned* counters, unsigned word) {
  // BEGIN SOLUTION
  // TODO: add 1 to the shared counter of each of the word's four bytes (bits 0-7, 8-15,
  //       16-23, 24-31), with atomicAdd: other threads of the block count into the same ones.
  atomicAdd(&counters[word & 0xffu], 1u);
  atomicAdd(&counters[(word >> 8) & 0xffu], 1u);
  atomicAdd(&counters[(word >> 16) & 0xffu], 1u);
  atomicAdd(&counters[word >> 24], 1u);
  // END SOLUTION
}

// Each block counts its share of the bytes into its own 256 counters in shared memory, then
// adds them to bins: 256 global atomics per block instead of one per byte, and the shared
// ones are far cheaper. [13 points with the hidden tests, and 10 for speed]
// May assume: data is 16-byte aligned; bins holds 256 counters, set to 0 before the kernel runs.
// Must not: read data past n.
__global__ void histogram_shared_kernel(const std::uint8_t* data, std::int64_t n, unsigned* bins) {
  // BEGIN SOLUTION
  // TODO: 1. set the block's shared counters to 0, and wait until all are;
  //       2. count the bytes, a grid-stride loop over 16 bytes (a uint4) at a time, and the
  //          last n % 16 bytes one by one;
  //       3. wait until the whole block has counted, then add each nonzero shared counter to
  //          its counter in bins (other blocks add to the same ones: atomically).
  __shared__ unsigned counters[kByteBins];
  for (int b = threadIdx.x; b < kByteBins; b += blockDim.x) counters[b] = 0;
  __syncthreads();  // every counter is 0 before any thread counts

  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t vectors = n / 16;
  const uint4* data16 = reinterpret_cast<const uint4*>(data);
  // Consecutive threads read consecutive 16-byte vectors: a warp reads 512 contiguous bytes.
  for (std::int64_t v = thread; v < vectors; v += threads) {
    const uint4 q = data16[v];
    count_four_bytes(counters, q.x);
    count_four_bytes(counters, q.y);
    count_four_bytes(counters, q.z);
    count_four_bytes(counters, q.w);
  }
  // The last n % 16 bytes, one by one.
  for (std::int64_t i = vectors * 16 + thread; i < n; i += threads) atomicAdd(&counters[data[i]], 1u);
  __syncthreads();  // the block's counts are complete before they are added up

  for (int b = threadIdx.x; b < kByteBins; b += blockDim.x)
    if (counters[b] != 0) atomicAdd(&bins[b], counters[b]);  // other blocks add to the same counters
  // END SOLUTION
}

// Sets d_bins to 0, then launches histogram_shared_kernel over n bytes.
void launch_histogram_shared(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins) {
  // BEGIN SOLUTION
  // TODO: set the 256 counters to 0, then launch histogram_shared_kernel on
  //       privatized_grid(n, 16) blocks of kBlockSize threads, and check the launch.
  CUDA_CHECK(cudaMemsetAsync(d_bins, 0, kByteBins * sizeof(unsigned)));  // every block adds its counts
  histogram_shared_kernel<<<privatized_grid(n, 16), kBlockSize>>>(d_data, n, d_bins);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Part 3: privatized and warp-aggregated.
// ---------------------------------------------------------------------------------------------

// Called by all 32 lanes of a warp together, each with a bin (kByteBins for "nothing to
// count"): adds to counters[bin], once per distinct bin, the number of lanes holding it.
__device__ void add_warp_aggregated(unsigned* counters, unsigned bin) {
  // BEGIN SOLUTION
  // TODO: find the lanes that hold the same bin as this one (__match_any_sync gives them as a
  //       mask of lanes); let the lowest of them (__ffs) add their number (__popc) to the
  //       counter, unless the bin is kByteBins.
  const unsigned peers = __match_any_sync(kFullMask, bin);
  const int leader = __ffs(peers) - 1;  // the lowest lane holding this bin
  if (static_cast<int>(threadIdx.x % 32) == leader && bin < kByteBins) atomicAdd(&counters[bin], __popc(peers));
  // END SOLUTION
}

// Part 2's kernel, with every shared atomic made by add_warp_aggregated: when many lanes of a
// warp hold the same byte (a skewed input, at worst all one value), one addition replaces up
// to 32 that would wait for each other on one counter.
// [13 points with the hidden tests, and 9 for speed]
// May assume: data is 16-byte aligned; bins holds 256 counters, set to 0 before the kernel runs.
// Must not: read data past n; call add_warp_aggregated from part of a warp only.
__global__ void histogram_warp_aggregated_kernel(const std::uint8_t* data, std::int64_t n, unsigned* bins) {
  // BEGIN SOLUTION
  // TODO: as in histogram_shared_kernel, but every lane of a warp must call
  //       add_warp_aggregated the same number of times: run each loop while the warp's first
  //       lane has work (the same test for all 32), and let lanes past the end pass kByteBins.
  __shared__ unsigned counters[kByteBins];
  for (int b = threadIdx.x; b < kByteBins; b += blockDim.x) counters[b] = 0;
  __syncthreads();  // zeroed before anyone counts

  const int lane = threadIdx.x % 32;
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t vectors = n / 16;
  const uint4* data16 = reinterpret_cast<const uint4*>(data);
  // warp_first is the same in all 32 lanes, so the warp stays together through the loop.
  for (std::int64_t warp_first = thread - lane; warp_first < vectors; warp_first += threads) {
    const std::int64_t v = warp_first + lane;
    const bool valid = v < vectors;
    const uint4 q = valid ? data16[v] : make_uint4(0, 0, 0, 0);
    const unsigned words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 16; ++k)
      add_warp_aggregated(counters, valid ? (words[k / 4] >> (8 * (k % 4))) & 0xffu : kByteBins);
  }
  // The last n % 16 bytes, fewer than a warp: the first warp of the grid takes them together.
  if (blockIdx.x == 0 && threadIdx.x < 32) {
    const std::int64_t i = vectors * 16 + lane;
    add_warp_aggregated(counters, i < n ? data[i] : kByteBins);
  }
  __syncthreads();  // all counted before the counters are added up

  for (int b = threadIdx.x; b < kByteBins; b += blockDim.x)
    if (counters[b] != 0) atomicAdd(&bins[b], counters[b]);  // one addition per counter and block
  // END SOLUTION
}

// Sets d_bins to 0, then launches histogram_warp_aggregated_kernel over n bytes.
void launch_histogram_warp_aggregated(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins) {
  // BEGIN SOLUTION
  // TODO: as launch_histogram_shared, with histogram_warp_aggregated_kernel.
  CUDA_CHECK(cudaMemsetAsync(d_bins, 0, kByteBins * sizeof(unsigned)));  // blocks add their aggregated counts
  histogram_warp_aggregated_kernel<<<privatized_grid(n, 16), kBlockSize>>>(d_data, n, d_bins);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Part 4: floats into bins.
// ---------------------------------------------------------------------------------------------

// Adds 1 to the counter of v's bin, if v lies in [lo, hi); scale = bins / (hi - lo).
__device__ void count_value(unsigned* counters, float v, float lo, float hi, float scale, int bins) {
  // BEGIN SOLUTION
  // TODO: leave out v unless lo <= v < hi (a comparison with NaN is false, so NaN is left out
  //       too); compute its bin as (v - lo) * scale, no larger than bins - 1 (rounding can give
  //       bins for v just below hi), and add 1 to that counter atomically.
  if (v >= lo && v < hi) {
    const int bin = min(static_cast<int>((v - lo) * scale), bins - 1);
    atomicAdd(&counters[bin], 1u);
  }
  // END SOLUTION
}

// Part 2's design for floats, with `bins` counters in dynamic shared memory (the launch gives
// their size). [17 points with the hidden tests, and 5 for speed]
// May assume: values is 16-byte aligned; bins holds `bins` counters, set to 0 before the kernel
// runs; 1 <= bins <= kMaxFloatBins.
// Must not: read values past n, or write a counter past bins - 1.
__global__ void histogram_floats_kernel(const float* values, std::int64_t n, float lo, float hi, int bins,
                                        unsigned* out) {
  // BEGIN SOLUTION
  // TODO: as histogram_shared_kernel, with `bins` counters in the dynamic shared array below,
  //       4 floats (a float4) at a time and the last n % 4 one by one, each through
  //       count_value.
  extern __shared__ unsigned counters[];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) counters[b] = 0;
  __syncthreads();  // zeroed before counting

  const float scale = bins / (hi - lo);
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t vectors = n / 4;
  const float4* values4 = reinterpret_cast<const float4*>(values);
  for (std::int64_t v = thread; v < vectors; v += threads) {
    const float4 q = values4[v];
    count_value(counters, q.x, lo, hi, scale, bins);
    count_value(counters, q.y, lo, hi, scale, bins);
    count_value(counters, q.z, lo, hi, scale, bins);
    count_value(counters, q.w, lo, hi, scale, bins);
  }
  for (std::int64_t i = vectors * 4 + thread; i < n; i += threads)
    count_value(counters, values[i], lo, hi, scale, bins);
  __syncthreads();  // all counted before adding up

  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    if (counters[b] != 0) atomicAdd(&out[b], counters[b]);  // out[b]: only b < bins
  }
  // END SOLUTION
}

// Sets the `bins` counters of d_bins to 0, then launches histogram_floats_kernel over n floats.
void launch_histogram_floats(const float* d_values, std::int64_t n, float lo, float hi, int bins, unsigned* d_bins) {
  // BEGIN SOLUTION
  // TODO: set the `bins` counters to 0, then launch histogram_floats_kernel on
  //       privatized_grid(n, 4) blocks of kBlockSize threads, with bins * sizeof(unsigned) bytes
  //       of dynamic shared memory (the third launch parameter), and check the launch.
  CUDA_CHECK(cudaMemsetAsync(d_bins, 0, bins * sizeof(unsigned)));
  histogram_floats_kernel<<<privatized_grid(n, 4), kBlockSize, bins * sizeof(unsigned)>>>(d_values, n, lo, hi, bins,
                                                                                          d_bins);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}
