// Your file for lab 07-transpose: fill in every TODO below (the handout: labs/07-transpose/README.md).
// Only transpose.cu is taken when you are graded: the tests and headers are not yours to change.

#include "kit/cuda_check.cuh"
#include "transpose.cuh"

// A block works on one kTileDim x kTileDim tile of the input. 32 = the warp
// size: one warp spans a whole tile row, so a warp's 32 loads of that row are
// 128 consecutive bytes, a single fully used memory transaction.
constexpr int kTileDim = 32;
// Threads per block: kTileDim x kBlockRows = 32 x 8 = 256. Each thread moves
// kTileDim / kBlockRows = 4 elements of its tile, kBlockRows rows apart, so it
// has 4 independent loads in flight instead of 1: memory latency is hidden by
// having many bytes on the way, and 8 rows of threads give that with few threads.
constexpr int kBlockRows = 8;
static_assert(kTileDim % kBlockRows == 0, "each thread must move a whole number of tile rows");

// ---------------------------------------------------------------------------
// Part 1: naive transpose. [26 pts: 22 correctness, 4 performance]
// ---------------------------------------------------------------------------

// out(c, r) = in(r, c), straight from global memory to global memory (no
// shared memory): reading along a row of `in` means writing down a column of
// `out`, so one of the two cannot be coalesced. That cost is what Part 1 measures.
// May assume: the sizes promised in transpose.cuh, and the launch you write below.
// Must not: touch any element outside the rows x cols input or the cols x rows output.
__global__ void transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  // TODO: copy this block's tile element by element, each thread its kTileDim / kBlockRows
  //       elements: in(r, c) goes to out(c, r). Check both r < rows and c < cols before
  //       touching memory: the grid is rounded up to whole tiles, so tiles on the right and
  //       bottom edges hang over the matrix.
}

// Launches transpose_naive_kernel over the whole matrix. [tested with the kernel]
void launch_transpose_naive(const float* d_in, float* d_out, int rows, int cols) {
  // TODO: launch transpose_naive_kernel with kTileDim x kBlockRows threads per block and
  //       one block per kTileDim x kTileDim tile of the input, enough tiles across and down
  //       to cover every column and every row (round up), then check the launch with
  //       CUDA_CHECK_LAUNCH().
}

// ---------------------------------------------------------------------------
// Part 2: tiled transpose through shared memory. [30 pts: 24 correctness, 6 performance]
// ---------------------------------------------------------------------------

// out = transpose(in), staged through a kTileDim x kTileDim tile in shared memory
// so that both the global reads and the global writes are coalesced: a warp
// reads along a row of `in` and writes along a row of `out`; the turn from rows
// to columns happens in shared memory, where a strided access is cheap.
// Leave the tile unpadded here: Part 3 measures what the padding buys.
// May assume: the sizes promised in transpose.cuh, and the launch you write below.
// Must not: touch any element outside the two matrices, or read a tile element
// before the whole tile is in shared memory.
__global__ void transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  // TODO: 1. load this block's input tile into a shared kTileDim x kTileDim array, each warp
  //          reading along input rows (coalesced), only elements inside the matrix;
  //       2. wait until the whole tile is loaded: a thread will next read elements that
  //          other warps wrote;
  //       3. write the tile to its mirrored place in `out`, each warp writing along an output
  //          row (coalesced), so it reads the tile down a column; only elements inside `out`.
}

// Launches transpose_tiled_kernel over the whole matrix. [tested with the kernel]
void launch_transpose_tiled(const float* d_in, float* d_out, int rows, int cols) {
  // TODO: launch transpose_tiled_kernel with one block per tile of the input, as in
  //       launch_transpose_naive, then check the launch.
}

// ---------------------------------------------------------------------------
// Part 3: tiled transpose with a padded tile. [34 pts: 24 correctness, 10 performance]
// ---------------------------------------------------------------------------

// The same as transpose_tiled_kernel, with the shared tile one column wider than
// the data it holds, so that the 32 elements of a tile column lie in 32
// different banks and a warp reads a column in one pass instead of 32.
// May assume: the sizes promised in transpose.cuh, and the launch you write below.
// Must not: touch any element outside the two matrices, or read a tile element
// before the whole tile is in shared memory.
__global__ void transpose_padded_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  // TODO: as transpose_tiled_kernel, with a shared tile of kTileDim rows of kTileDim + 1
  //       floats: the extra, unused column shifts each tile row by one bank, so the 32
  //       elements of a column fall in 32 different banks.
}

// Launches transpose_padded_kernel over the whole matrix. [tested with the kernel]
void launch_transpose_padded(const float* d_in, float* d_out, int rows, int cols) {
  // TODO: launch transpose_padded_kernel with one block per tile of the input, as in
  //       launch_transpose_naive, then check the launch.
}
