// Your file for lab 11-histogram: fill in every TODO below (the handout: labs/11-histogram/README.md).
// Only histogram.cu is taken when you are graded: the tests and headers are not yours to change.

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
  // TODO: compute this thread's index in 64 bits (n may pass 2^31, where an int wraps round:
  //       widen blockIdx.x before multiplying), and if it is below n add 1 to the counter of
  //       its byte with atomicAdd: other threads add to the same counters at the same time.
}

// Sets d_bins to 0, then launches histogram_global_kernel over n bytes.
void launch_histogram_global(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins) {
  // TODO: set the 256 counters to 0 (cudaMemsetAsync counts bytes), then launch
  //       histogram_global_kernel with kBlockSize threads per block and enough blocks for n
  //       bytes (round up), and check the launch with CUDA_CHECK_LAUNCH().
}

// ---------------------------------------------------------------------------------------------
// Part 2: privatized counters in shared memory.
// ---------------------------------------------------------------------------------------------

// Adds the four bytes of `word` to the block's counters.
__device__ void count_four_bytes(unsigned* counters, unsigned word) {
  // TODO: add 1 to the shared counter of each of the word's four bytes (bits 0-7, 8-15,
  //       16-23, 24-31), with atomicAdd: other threads of the block count into the same ones.
}

// Each block counts its share of the bytes into its own 256 counters in shared memory, then
// adds them to bins: 256 global atomics per block instead of one per byte, and the shared
// ones are far cheaper. [13 points with the hidden tests, and 10 for speed]
// May assume: data is 16-byte aligned; bins holds 256 counters, set to 0 before the kernel runs.
// Must not: read data past n.
__global__ void histogram_shared_kernel(const std::uint8_t* data, std::int64_t n, unsigned* bins) {
  // TODO: 1. set the block's shared counters to 0, and wait until all are;
  //       2. count the bytes, a grid-stride loop over 16 bytes (a uint4) at a time, and the
  //          last n % 16 bytes one by one;
  //       3. wait until the whole block has counted, then add each nonzero shared counter to
  //          its counter in bins (other blocks add to the same ones: atomically).
}

// Sets d_bins to 0, then launches histogram_shared_kernel over n bytes.
void launch_histogram_shared(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins) {
  // TODO: set the 256 counters to 0, then launch histogram_shared_kernel on
  //       privatized_grid(n, 16) blocks of kBlockSize threads, and check the launch.
}

// ---------------------------------------------------------------------------------------------
// Part 3: privatized and warp-aggregated.
// ---------------------------------------------------------------------------------------------

// Called by all 32 lanes of a warp together, each with a bin (kByteBins for "nothing to
// count"): adds to counters[bin], once per distinct bin, the number of lanes holding it.
__device__ void add_warp_aggregated(unsigned* counters, unsigned bin) {
  // TODO: find the lanes that hold the same bin as this one (__match_any_sync gives them as a
  //       mask of lanes); let the lowest of them (__ffs) add their number (__popc) to the
  //       counter, unless the bin is kByteBins.
}

// Part 2's kernel, with every shared atomic made by add_warp_aggregated: when many lanes of a
// warp hold the same byte (a skewed input, at worst all one value), one addition replaces up
// to 32 that would wait for each other on one counter.
// [13 points with the hidden tests, and 9 for speed]
// May assume: data is 16-byte aligned; bins holds 256 counters, set to 0 before the kernel runs.
// Must not: read data past n; call add_warp_aggregated from part of a warp only.
__global__ void histogram_warp_aggregated_kernel(const std::uint8_t* data, std::int64_t n, unsigned* bins) {
  // TODO: as in histogram_shared_kernel, but every lane of a warp must call
  //       add_warp_aggregated the same number of times: run each loop while the warp's first
  //       lane has work (the same test for all 32), and let lanes past the end pass kByteBins.
}

// Sets d_bins to 0, then launches histogram_warp_aggregated_kernel over n bytes.
void launch_histogram_warp_aggregated(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins) {
  // TODO: as launch_histogram_shared, with histogram_warp_aggregated_kernel.
}

// ---------------------------------------------------------------------------------------------
// Part 4: floats into bins.
// ---------------------------------------------------------------------------------------------

// Adds 1 to the counter of v's bin, if v lies in [lo, hi); scale = bins / (hi - lo).
__device__ void count_value(unsigned* counters, float v, float lo, float hi, float scale, int bins) {
  // TODO: leave out v unless lo <= v < hi (a comparison with NaN is false, so NaN is left out
  //       too); compute its bin as (v - lo) * scale, no larger than bins - 1 (rounding can give
  //       bins for v just below hi), and add 1 to that counter atomically.
}

// Part 2's design for floats, with `bins` counters in dynamic shared memory (the launch gives
// their size). [17 points with the hidden tests, and 5 for speed]
// May assume: values is 16-byte aligned; bins holds `bins` counters, set to 0 before the kernel
// runs; 1 <= bins <= kMaxFloatBins.
// Must not: read values past n, or write a counter past bins - 1.
__global__ void histogram_floats_kernel(const float* values, std::int64_t n, float lo, float hi, int bins,
                                        unsigned* out) {
  // TODO: as histogram_shared_kernel, with `bins` counters in the dynamic shared array below,
  //       4 floats (a float4) at a time and the last n % 4 one by one, each through
  //       count_value.
}

// Sets the `bins` counters of d_bins to 0, then launches histogram_floats_kernel over n floats.
void launch_histogram_floats(const float* d_values, std::int64_t n, float lo, float hi, int bins, unsigned* d_bins) {
  // TODO: set the `bins` counters to 0, then launch histogram_floats_kernel on
  //       privatized_grid(n, 4) blocks of kBlockSize threads, with bins * sizeof(unsigned) bytes
  //       of dynamic shared memory (the third launch parameter), and check the launch.
}
