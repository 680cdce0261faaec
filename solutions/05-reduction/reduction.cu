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
  // BEGIN SOLUTION
  // TODO: load this thread's element into shared memory (zero when it lies past the
  //       end of the array, so the tree can add without checking), then run the tree:
  //       at stride s = 1, 2, 4, ... the threads whose index is a multiple of 2s add
  //       the element s places to their right. Each level reads what the previous
  //       level wrote, in other warps too. Thread 0 writes the block's sum. n may
  //       pass 2^31, so the element's index needs 64 bits.
  __shared__ float partial[kBlockSize];
  const unsigned tid = threadIdx.x;
  // 64 bits, so that arrays longer than 2^31 elements work.
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + tid;
  partial[tid] = i < n ? in[i] : 0.0f;  // a zero changes no sum
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    // The active threads are spread over every warp, so every warp runs every
    // level with most of its lanes idle: the divergence step 2 removes.
    if (tid % (2 * s) == 0) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
  // END SOLUTION
}

// Step 2, sequential addressing: the same job as reduce_interleaved_kernel, but
// at each level the first half of the still-active threads adds the second
// half: with 256 threads, threads 0-127 add elements 128-255, then threads 0-63
// add elements 64-127, and so on. [14 pts]
// May assume and must not: as reduce_interleaved_kernel.
__global__ void reduce_sequential_kernel(const float* in, std::int64_t n, float* block_sums) {
  // BEGIN SOLUTION
  // TODO: load one element per thread as in step 1, then halve the number of active
  //       threads at every level, keeping them packed at the low thread indices so
  //       that whole warps either work or sit out until fewer than 32 threads remain.
  //       Thread 0 writes the block's sum.
  __shared__ float partial[kBlockSize];
  const unsigned tid = threadIdx.x;
  // blockIdx.x * blockDim.x in 32 bits wraps round past 2^31 elements: widen first.
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + tid;
  partial[tid] = i < n ? in[i] : 0.0f;  // threads past the end hold zeros
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    // Threads 0 .. s-1 each add an element s places away: conflict-free, since
    // consecutive threads touch consecutive banks.
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
  // END SOLUTION
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
  // BEGIN SOLUTION
  // TODO: while more than kBlockSize values are left, launch `kernel` with one block of
  //       kBlockSize threads per kBlockSize values (rounded up), writing its partial
  //       sums to a part of d_partials that no pass has used yet; those partial sums
  //       are the next pass's input. Finish with one block that writes *d_sum. Check
  //       every launch with CUDA_CHECK_LAUNCH().
  const float* source = d_in;
  std::int64_t count = n;
  float* destination = d_partials;
  while (count > kBlockSize) {
    const std::int64_t blocks = (count + kBlockSize - 1) / kBlockSize;
    kernel<<<static_cast<unsigned>(blocks), kBlockSize>>>(source, count, destination);
    CUDA_CHECK_LAUNCH();
    source = destination;  // the next pass reads this pass's partial sums
    count = blocks;
    destination += blocks;  // and writes past them, never over what it reads
  }
  kernel<<<1, kBlockSize>>>(source, count, d_sum);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
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
  // BEGIN SOLUTION
  // TODO: add this thread's elements into a register while loading them (a grid-stride
  //       loop: consecutive threads read consecutive elements, so every warp's loads
  //       are coalesced; the index and the stride need 64 bits, as n may pass 2^31),
  //       then combine the block's sums in shared memory as in step 2; thread 0 writes
  //       the block's sum.
  __shared__ float partial[kBlockSize];
  const unsigned tid = threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  float sum = 0.0f;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + tid; i < n; i += stride) sum += in[i];
  partial[tid] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
  // END SOLUTION
}

// Step 3: the first pass sums d_in block by block into d_partials, a second pass
// of one block sums those partial sums into *d_sum. [with the kernel above]
void launch_reduce_grid_stride(const float* d_in, std::int64_t n, float* d_sum, float* d_partials) {
  // BEGIN SOLUTION
  // TODO: launch kGridStrideBlocksPerSm blocks per SM (multiprocessor_count()), enough
  //       to fill the GPU once, but no more blocks than the array has kBlockSize-element
  //       pieces; then let one block sum the blocks' partial sums into *d_sum (when the
  //       first pass has one block, it can write *d_sum itself). Check every launch.
  const std::int64_t pieces = (n + kBlockSize - 1) / kBlockSize;
  const std::int64_t fill = static_cast<std::int64_t>(multiprocessor_count()) * kGridStrideBlocksPerSm;
  const int blocks = static_cast<int>(std::min(pieces, fill));
  if (blocks == 1) {
    reduce_grid_stride_kernel<<<1, kBlockSize>>>(d_in, n, d_sum);
    CUDA_CHECK_LAUNCH();
    return;
  }
  reduce_grid_stride_kernel<<<blocks, kBlockSize>>>(d_in, n, d_partials);
  CUDA_CHECK_LAUNCH();
  reduce_grid_stride_kernel<<<1, kBlockSize>>>(d_partials, blocks, d_sum);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------
// Step 4: vector loads, several sums in flight, a warp-shuffle finish.

// The sum of `value` over the 32 lanes of a warp, returned in lane 0 (the other
// lanes return partial sums). All 32 lanes must call it together. [part of step 4]
template <class T>
__device__ T warp_sum(T value) {
  // BEGIN SOLUTION
  // TODO: add the lanes' values in log2(32) = 5 steps with __shfl_down_sync, which
  //       reads another lane's register directly: no shared memory and no barrier.
  // SKELETON: return value;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) value += __shfl_down_sync(kFullMask, value, offset);
  return value;
  // END SOLUTION
}

// Step 4. Each thread adds its share of in[0, n) (a grid-stride loop over float4
// vectors), the block combines its threads' sums with warp_sum, and one thread
// per block adds the block's sum to *sum with atomicAdd. [14 pts]
// May assume: blockDim.x == kBlockSize; in is 16-byte aligned; *sum is zero
// before the launch; any number of blocks.
// Must not: read in[n] or beyond.
__global__ void reduce_warp_shuffle_kernel(const float* in, std::int64_t n, float* sum) {
  // BEGIN SOLUTION
  // TODO: 1. add this thread's share with 16-byte loads (float4), keeping
  //          kAccumulators independent partial sums so that that many loads are in
  //          flight at once; the last n % 4 elements, which fill no float4, are added
  //          by a few threads of the grid;
  //       2. sum each warp with warp_sum, pass the warp sums through shared memory to
  //          the first warp (after a barrier), and sum them there with warp_sum;
  //       3. one thread adds the block's sum to *sum.
  const float4* in4 = reinterpret_cast<const float4*>(in);
  const std::int64_t vectors = n / 4;
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;

  float partial[kAccumulators] = {};
  std::int64_t v = thread;
  // kAccumulators independent loads per trip: none waits for another.
  for (; v + (kAccumulators - 1) * stride < vectors; v += kAccumulators * stride) {
#pragma unroll
    for (int k = 0; k < kAccumulators; ++k) {
      const float4 x = in4[v + k * stride];
      partial[k] += (x.x + x.y) + (x.z + x.w);
    }
  }
  for (; v < vectors; v += stride) {
    const float4 x = in4[v];
    partial[0] += (x.x + x.y) + (x.z + x.w);
  }
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < kAccumulators; ++k) total += partial[k];
  if (thread < n - vectors * 4) total += in[vectors * 4 + thread];  // the tail after the last whole float4

  total = warp_sum(total);
  __shared__ float warp_sums[kWarpsPerBlock];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if (lane == 0) warp_sums[warp] = total;
  __syncthreads();  // the first warp reads every warp's sum
  if (warp == 0) {
    total = lane < kWarpsPerBlock ? warp_sums[lane] : 0.0f;
    total = warp_sum(total);
    if (lane == 0) atomicAdd(sum, total);
  }
  // END SOLUTION
}

// Step 4: one launch of reduce_warp_shuffle_kernel; d_partials is not needed.
void launch_reduce_warp_shuffle(const float* d_in, std::int64_t n, float* d_sum, float* d_partials) {
  // BEGIN SOLUTION
  // TODO: the blocks add into *d_sum, so it must hold zero first (cudaMemsetAsync keeps
  //       it on the default stream, in order with the kernel). Launch
  //       kShuffleBlocksPerSm blocks per SM, but no more than there are kBlockSize-float4
  //       pieces of the array (and at least one). Check the launch.
  const std::int64_t pieces = std::max<std::int64_t>(1, (n / 4 + kBlockSize - 1) / kBlockSize);
  const std::int64_t fill = static_cast<std::int64_t>(multiprocessor_count()) * kShuffleBlocksPerSm;
  const int blocks = static_cast<int>(std::min(pieces, fill));
  CUDA_CHECK(cudaMemsetAsync(d_sum, 0, sizeof(float)));
  reduce_warp_shuffle_kernel<<<blocks, kBlockSize>>>(d_in, n, d_sum);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------
// Integers: an exact sum, returned to the host.

// Like reduce_warp_shuffle_kernel, for ints, in 64-bit integer arithmetic: each
// block adds its sum to *sum with one atomicAdd. [with sum_ints: 10 pts]
// May assume: blockDim.x == kBlockSize; *sum is zero before the launch.
// Must not: read in[n] or beyond.
__global__ void reduce_ints_kernel(const int* in, std::int64_t n, unsigned long long* sum) {
  // BEGIN SOLUTION
  // TODO: a grid-stride loop of plain int loads is enough here. Keep every sum in 64
  //       bits: two ints near 2^30 already add up past 2^31. CUDA's 64-bit atomicAdd
  //       takes unsigned long long; adding a negative sum's two's-complement bits
  //       gives the right signed result, because the addition wraps modulo 2^64.
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  long long acc = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc += in[i];
  acc = warp_sum(acc);
  __shared__ long long warp_totals[kWarpsPerBlock];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if (lane == 0) warp_totals[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < kWarpsPerBlock ? warp_totals[lane] : 0;
    acc = warp_sum(acc);
    if (lane == 0) atomicAdd(sum, static_cast<unsigned long long>(acc));
  }
  // END SOLUTION
}

// The exact sum of d_in[0, n), returned to the host. Allocates what it needs
// and frees it again. [with reduce_ints_kernel]
long long sum_ints(const int* d_in, std::int64_t n) {
  // BEGIN SOLUTION
  // TODO: give the kernel a zeroed 64-bit sum in memory it can add to (device or
  //       managed memory), launch reduce_ints_kernel as in step 4 (kShuffleBlocksPerSm
  //       blocks per SM, no more than the array needs), and return the sum. A kernel
  //       launch returns before the kernel has run: the host may look at the sum only
  //       after waiting for the GPU. Free what you allocated.
  // SKELETON: return 0;
  unsigned long long* sum = nullptr;
  CUDA_CHECK(cudaMallocManaged(&sum, sizeof(unsigned long long)));
  *sum = 0;
  const std::int64_t pieces = (n + kBlockSize - 1) / kBlockSize;
  const std::int64_t fill = static_cast<std::int64_t>(multiprocessor_count()) * kShuffleBlocksPerSm;
  reduce_ints_kernel<<<static_cast<int>(std::min(pieces, fill)), kBlockSize>>>(d_in, n, sum);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());  // until the kernel is done, *sum is unfinished
  const long long result = static_cast<long long>(*sum);
  CUDA_CHECK(cudaFree(sum));
  return result;
  // END SOLUTION
}
