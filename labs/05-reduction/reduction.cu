// Your file for lab 05-reduction: fill in every TODO below (the handout: labs/05-reduction/README.md).
// Only reduction.cu is taken when you are graded: the tests and headers are not yours to change.

#include <algorithm>
#include <cstdint>

#include "kit/cuda_check.cuh"
#include "reduction.cuh"

// Launch constants. (`inline` only tells the compiler not to warn while a
// constant is still unused.)
//
// Threads per block for every kernel in this file. A power of two, because the
// trees in shared memory halve it level by level; 256 threads are 8 warps.
inline constexpr int kBlockSize = 256;
inline constexpr int kWarpSize = 32;
inline constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;
// Every lane of the warp takes part in each shuffle.
inline constexpr unsigned kFullMask = 0xffffffffu;
// Step 3 launches this many blocks per SM: 8 blocks of 256 threads fill the
// 2048 thread slots of an H100 SM, so as many loads as possible are in flight.
inline constexpr int kGridStrideBlocksPerSm = 8;
// Step 4 launches this many blocks per SM (steps 4 and sum_ints). Each thread
// keeps kAccumulators 16-byte loads in flight, so half the thread slots already
// hold more bytes in flight than the memory system needs to stay busy.
inline constexpr int kShuffleBlocksPerSm = 4;
// Independent partial sums per thread in step 4: a load feeding one of them can
// be in flight while the others are being added to.
inline constexpr int kAccumulators = 4;

// The number of streaming multiprocessors (SMs) of the current GPU: 132 on an
// H100. Grid-stride kernels size their grid from it.
int multiprocessor_count() {
  int device = 0;
  int count = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// ---------------------------------------------------------------------------
// Steps 1 and 2: one element per thread, a tree in shared memory per block.

// Step 1, interleaved pairs. Block b sums in[b * kBlockSize ...] (kBlockSize
// elements, fewer in the last block) into block_sums[b]: first each even thread
// adds its right neighbour, then every 4th thread adds the element 2 to its
// right, then every 8th adds the one 4 to its right, and so on. [14 pts]
// May assume: blockDim.x == kBlockSize; the grid has one block per kBlockSize
// elements, rounded up.
// Must not: read in[n] or beyond.
__global__ void reduce_interleaved_kernel(const float* in, std::int64_t n, float* block_sums) {
  // TODO: load this thread's element into shared memory (zero when it lies past the
  //       end of the array, so the tree can add without checking), then run the tree:
  //       at stride s = 1, 2, 4, ... the threads whose index is a multiple of 2s add
  //       the element s places to their right. Each level reads what the previous
  //       level wrote, in other warps too. Thread 0 writes the block's sum. n may
  //       pass 2^31, so the element's index needs 64 bits.
}

// Step 2, sequential addressing: the same job as reduce_interleaved_kernel, but
// at each level the first half of the still-active threads adds the second
// half: with 256 threads, threads 0-127 add elements 128-255, then threads 0-63
// add elements 64-127, and so on. [14 pts]
// May assume and must not: as reduce_interleaved_kernel.
__global__ void reduce_sequential_kernel(const float* in, std::int64_t n, float* block_sums) {
  // TODO: load one element per thread as in step 1, then halve the number of active
  //       threads at every level, keeping them packed at the low thread indices so
  //       that whole warps either work or sit out until fewer than 32 threads remain.
  //       Thread 0 writes the block's sum.
}

// A kernel with the shape of steps 1 and 2: block b writes the sum of its share
// of in[0, n) to block_sums[b].
using BlockSumKernel = void (*)(const float* in, std::int64_t n, float* block_sums);

// Sums d_in[0, n) into *d_sum with `kernel`, pass after pass: the first pass
// leaves one partial sum per block in d_partials, the next pass sums those, and
// so on, until one block is enough and writes *d_sum. [used by steps 1 and 2]
// May assume: the contract of the launch_reduce_* functions in reduction.cuh.
// Must not: synchronize; a pass must not overwrite partial sums still to be read.
void sum_block_by_block(BlockSumKernel kernel, const float* d_in, std::int64_t n, float* d_sum,
                        float* d_partials) {
  // TODO: while more than kBlockSize values are left, launch `kernel` with one block of
  //       kBlockSize threads per kBlockSize values (rounded up), writing its partial
  //       sums to a part of d_partials that no pass has used yet; those partial sums
  //       are the next pass's input. Finish with one block that writes *d_sum. Check
  //       every launch with CUDA_CHECK_LAUNCH().
}

// Steps 1 and 2 as the tests call them (given): your sum_block_by_block with your kernel.
void launch_reduce_interleaved(const float* d_in, std::int64_t n, float* d_sum, float* d_partials) {
  sum_block_by_block(reduce_interleaved_kernel, d_in, n, d_sum, d_partials);
}

void launch_reduce_sequential(const float* d_in, std::int64_t n, float* d_sum, float* d_partials) {
  sum_block_by_block(reduce_sequential_kernel, d_in, n, d_sum, d_partials);
}

// ---------------------------------------------------------------------------
// Step 3: add while loading, many elements per thread.

// Step 3. Thread t of the grid (t = blockIdx.x * blockDim.x + threadIdx.x) adds
// in[t], in[t + T], in[t + 2T], ... where T = gridDim.x * blockDim.x is the
// number of threads in the grid, then the block combines its threads' sums as
// in step 2 and writes block_sums[blockIdx.x]. [14 pts]
// May assume: blockDim.x == kBlockSize; any number of blocks, even one.
// Must not: read in[n] or beyond.
__global__ void reduce_grid_stride_kernel(const float* in, std::int64_t n, float* block_sums) {
  // TODO: add this thread's elements into a register while loading them (a grid-stride
  //       loop: consecutive threads read consecutive elements, so every warp's loads
  //       are coalesced; the index and the stride need 64 bits, as n may pass 2^31),
  //       then combine the block's sums in shared memory as in step 2; thread 0 writes
  //       the block's sum.
}

// Step 3: the first pass sums d_in block by block into d_partials, a second pass
// of one block sums those partial sums into *d_sum. [with the kernel above]
void launch_reduce_grid_stride(const float* d_in, std::int64_t n, float* d_sum, float* d_partials) {
  // TODO: launch kGridStrideBlocksPerSm blocks per SM (multiprocessor_count()), enough
  //       to fill the GPU once, but no more blocks than the array has kBlockSize-element
  //       pieces; then let one block sum the blocks' partial sums into *d_sum (when the
  //       first pass has one block, it can write *d_sum itself). Check every launch.
}

// ---------------------------------------------------------------------------
// Step 4: vector loads, several sums in flight, a warp-shuffle finish.

// The sum of `value` over the 32 lanes of a warp, returned in lane 0 (the other
// lanes return partial sums). All 32 lanes must call it together. [part of step 4]
template <class T>
__device__ T warp_sum(T value) {
  // TODO: add the lanes' values in log2(32) = 5 steps with __shfl_down_sync, which
  //       reads another lane's register directly: no shared memory and no barrier.
  return value;
}

// Step 4. Each thread adds its share of in[0, n) (a grid-stride loop over float4
// vectors), the block combines its threads' sums with warp_sum, and one thread
// per block adds the block's sum to *sum with atomicAdd. [14 pts]
// May assume: blockDim.x == kBlockSize; in is 16-byte aligned; *sum is zero
// before the launch; any number of blocks.
// Must not: read in[n] or beyond.
__global__ void reduce_warp_shuffle_kernel(const float* in, std::int64_t n, float* sum) {
  // TODO: 1. add this thread's share with 16-byte loads (float4), keeping
  //          kAccumulators independent partial sums so that that many loads are in
  //          flight at once; the last n % 4 elements, which fill no float4, are added
  //          by a few threads of the grid;
  //       2. sum each warp with warp_sum, pass the warp sums through shared memory to
  //          the first warp (after a barrier), and sum them there with warp_sum;
  //       3. one thread adds the block's sum to *sum.
}

// Step 4: one launch of reduce_warp_shuffle_kernel; d_partials is not needed.
void launch_reduce_warp_shuffle(const float* d_in, std::int64_t n, float* d_sum, float* d_partials) {
  // TODO: the blocks add into *d_sum, so it must hold zero first (cudaMemsetAsync keeps
  //       it on the default stream, in order with the kernel). Launch
  //       kShuffleBlocksPerSm blocks per SM, but no more than there are kBlockSize-float4
  //       pieces of the array (and at least one). Check the launch.
}

// ---------------------------------------------------------------------------
// Integers: an exact sum, returned to the host.

// Like reduce_warp_shuffle_kernel, for ints, in 64-bit integer arithmetic: each
// block adds its sum to *sum with one atomicAdd. [with sum_ints: 10 pts]
// May assume: blockDim.x == kBlockSize; *sum is zero before the launch.
// Must not: read in[n] or beyond.
__global__ void reduce_ints_kernel(const int* in, std::int64_t n, unsigned long long* sum) {
  // TODO: a grid-stride loop of plain int loads is enough here. Keep every sum in 64
  //       bits: two ints near 2^30 already add up past 2^31. CUDA's 64-bit atomicAdd
  //       takes unsigned long long; adding a negative sum's two's-complement bits
  //       gives the right signed result, because the addition wraps modulo 2^64.
}

// The exact sum of d_in[0, n), returned to the host. Allocates what it needs
// and frees it again. [with reduce_ints_kernel]
long long sum_ints(const int* d_in, std::int64_t n) {
  // TODO: give the kernel a zeroed 64-bit sum in memory it can add to (device or
  //       managed memory), launch reduce_ints_kernel as in step 4 (kShuffleBlocksPerSm
  //       blocks per SM, no more than the array needs), and return the sum. A kernel
  //       launch returns before the kernel has run: the host may look at the sum only
  //       after waiting for the GPU. Free what you allocated.
  return 0;
}
