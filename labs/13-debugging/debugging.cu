// Your file for lab 13-debugging: find and fix the bugs below (the handout: labs/13-debugging/README.md).
// Only debugging.cu is taken when you are graded: the tests and headers are not yours to change.

#include <algorithm>
#include <cstdint>
#include <cstdio>  // printf, in a kernel too: see the handout's "Print from one block"

#include "debugging.cuh"
#include "kit/cuda_check.cuh"

// Five functions from earlier labs, each with one bug: a wrong line, or a missing one. The tests
// that fail name the function; the handout's "Tools" section says how to find the line. Change
// as little as you can: the bug is one line, and so is its fix.

// ---------------------------------------------------------------------------------------------
// Bug 1, from lab 01: vector add.
// ---------------------------------------------------------------------------------------------

// Threads per block: eight warps.
constexpr int kAddBlock = 256;

// One thread per element: c[i] = a[i] + b[i].
// May assume: a, b and c hold n floats each. Must not: touch any element at index n or past it.
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) c[i] = a[i] + b[i];
}

// TODO (bug 1): some tests say that memory past the end of c was written. Find the line that does
// it and fix it. [17 pts: 10 public, 7 hidden; and a sentence in ANSWERS.md]
void launch_vector_add(const float* d_a, const float* d_b, float* d_c, int n) {
  const int blocks = (n + kAddBlock - 1) / kAddBlock;
  vector_add_kernel<<<blocks, kAddBlock>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Bug 2, from lab 05: a sum, four floats (one float4) at a time.
// ---------------------------------------------------------------------------------------------

// Threads per block: a power of two, as the tree in shared memory halves it step by step.
constexpr int kReduceBlock = 256;
// At most this many blocks, each thread striding over the input: more would add atomics, not speed.
constexpr int kReduceMaxBlocks = 1024;
static_assert((kReduceBlock & (kReduceBlock - 1)) == 0, "the tree halves the block down to one thread");

// Every thread adds up its share of the input, a float4 at a time (one 16-byte load for four
// floats); the block adds its threads' sums in shared memory; thread 0 adds the block's sum to *sum.
// May assume: in holds n floats and is 16-byte aligned; *sum is 0 before the launch.
// Must not: read past in[n - 1].
__global__ void reduce_sum_kernel(const float* in, int n, float* sum) {
  __shared__ float partial[kReduceBlock];
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = gridDim.x * blockDim.x;
  const int quads = n / 4;  // whole float4s in the input
  const float4* in4 = reinterpret_cast<const float4*>(in);
  float mine = 0.0f;
  for (int q = first; q < quads; q += stride) {
    const float4 v = in4[q];
    mine += (v.x + v.y) + (v.z + v.w);
  }
  partial[threadIdx.x] = mine;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

// TODO (bug 2): the sum is wrong for some lengths and right for others. Find out which lengths
// (try small ones), then the line. [17 pts: 10 public, 7 hidden; and a sentence in ANSWERS.md]
void launch_reduce_sum(const float* d_in, int n, float* d_sum) {
  CUDA_CHECK(cudaMemset(d_sum, 0, sizeof(float)));  // the blocks add their sums to it
  const int per_block = 4 * kReduceBlock;           // floats a block's threads load in one step
  const int blocks = std::min((n + per_block - 1) / per_block, kReduceMaxBlocks);
  reduce_sum_kernel<<<blocks, kReduceBlock>>>(d_in, n, d_sum);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Bug 3, from lab 11: a histogram of bytes in global memory.
// ---------------------------------------------------------------------------------------------

// Threads per block: eight warps.
constexpr int kHistogramBlock = 256;

// One thread per byte: the thread adds 1 to the counter of its byte's value.
// May assume: data holds n bytes; bins holds kHistogramBins counters, all 0 before the launch.
// Must not: lose a count, or touch memory outside data and bins.
__global__ void histogram_kernel(const std::uint8_t* data, int n, unsigned* bins) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) bins[data[i]] += 1;
}

// TODO (bug 3): some counts come out too low. Find out which inputs lose counts (try few bytes
// of one value), then the line. [17 pts: 10 public, 7 hidden; and a sentence in ANSWERS.md]
void launch_histogram(const std::uint8_t* d_data, int n, unsigned* d_bins) {
  CUDA_CHECK(cudaMemset(d_bins, 0, kHistogramBins * sizeof(unsigned)));  // every count starts at 0
  const int blocks = (n + kHistogramBlock - 1) / kHistogramBlock;
  histogram_kernel<<<blocks, kHistogramBlock>>>(d_data, n, d_bins);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Bug 4, from lab 04: a matrix product through tiles in shared memory.
// ---------------------------------------------------------------------------------------------

// A block computes one kMatmulTile x kMatmulTile tile of C, one element per thread, and walks
// along k a tile at a time: it stages a tile of A and a tile of B in shared memory, where each
// staged value is read kMatmulTile times.
constexpr int kMatmulTile = 16;

// C = A·B, tile by tile.
// May assume: blockDim is (kMatmulTile, kMatmulTile); blockIdx.x counts tiles across the
// columns of C and blockIdx.y tiles down its rows.
// Must not: read outside a and b, or write outside c.
__global__ void tiled_matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
  __shared__ float a_part[kMatmulTile][kMatmulTile];
  __shared__ float b_part[kMatmulTile][kMatmulTile];
  const int tx = threadIdx.x;  // the column of the C tile this thread computes
  const int ty = threadIdx.y;  // its row
  const int row = blockIdx.y * kMatmulTile + ty;
  const int col = blockIdx.x * kMatmulTile + tx;
  float acc = 0.0f;
  for (int base = 0; base < k; base += kMatmulTile) {
    // Each thread stages one entry of each tile; entries outside A or B are staged as 0, so a
    // partial tile at the end of k adds nothing.
    a_part[ty][tx] = (row < m && base + tx < k) ? a[row * k + base + tx] : 0.0f;
    b_part[ty][tx] = (base + ty < k && col < n) ? b[(base + ty) * n + col] : 0.0f;
    __syncthreads();  // both tiles are staged before anyone reads them
    for (int j = 0; j < kMatmulTile; ++j) {
      acc += a_part[ty][j] * b_part[tx][j];
    }
    __syncthreads();  // everyone has read the tiles before the next step stages new ones
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

// TODO (bug 4): nearly every element of C is wrong, yet nothing is read or written out of bounds.
// Look at the numbers of a product small enough to work out by hand, then at what one thread
// reads. [17 pts: 10 public, 7 hidden; and a sentence in ANSWERS.md]
void launch_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  const dim3 threads(kMatmulTile, kMatmulTile);
  const dim3 tiles((n + kMatmulTile - 1) / kMatmulTile, (m + kMatmulTile - 1) / kMatmulTile);
  tiled_matmul_kernel<<<tiles, threads>>>(d_a, d_b, d_c, m, k, n);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Bug 5, from lab 07: a transpose through a tile in shared memory.
// ---------------------------------------------------------------------------------------------

// A block moves one kTransposeTile x kTransposeTile tile; a warp spans one tile row, so its loads
// of a row of `in` and its stores of a row of `out` are each one contiguous run of 128 bytes.
constexpr int kTransposeTile = 32;
// Threads per block: kTransposeTile x kTransposeRows; each thread moves kTransposeTile /
// kTransposeRows elements, kTransposeRows rows apart.
constexpr int kTransposeRows = 8;
static_assert(kTransposeTile % kTransposeRows == 0, "each thread moves a whole number of tile rows");

// out = transpose(in): the block copies its tile of `in` into shared memory row by row, then
// writes it out column by column to the mirrored place in `out`.
// May assume: blockDim is (kTransposeTile, kTransposeRows); blockIdx.x counts tiles across the
// columns of `in` and blockIdx.y tiles down its rows.
// Must not: touch anything outside the two matrices.
__global__ void transpose_tiled_kernel(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[kTransposeTile][kTransposeTile];
  const int in_col = blockIdx.x * kTransposeTile + threadIdx.x;
  const int in_row = blockIdx.y * kTransposeTile + threadIdx.y;
  for (int dy = 0; dy < kTransposeTile; dy += kTransposeRows)
    if (in_col < cols && in_row + dy < rows) tile[threadIdx.y + dy][threadIdx.x] = in[(in_row + dy) * cols + in_col];
  const int out_col = blockIdx.y * kTransposeTile + threadIdx.x;  // a row of `in` is a column of `out`
  const int out_row = blockIdx.x * kTransposeTile + threadIdx.y;
  for (int dy = 0; dy < kTransposeTile; dy += kTransposeRows)
    if (out_col < rows && out_row + dy < cols)
      out[(out_row + dy) * rows + out_col] = tile[threadIdx.x][threadIdx.y + dy];
}

// TODO (bug 5): small matrices come out right; a large one comes out wrong, and not always in
// the same places. [17 pts: 10 public, 7 hidden; and a sentence in ANSWERS.md]
void launch_transpose_tiled(const float* d_in, float* d_out, int rows, int cols) {
  const dim3 threads(kTransposeTile, kTransposeRows);
  const dim3 tiles((cols + kTransposeTile - 1) / kTransposeTile, (rows + kTransposeTile - 1) / kTransposeTile);
  transpose_tiled_kernel<<<tiles, threads>>>(d_in, d_out, rows, cols);
  CUDA_CHECK_LAUNCH();
}
