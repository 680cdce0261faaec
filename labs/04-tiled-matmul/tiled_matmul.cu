// Your file for lab 04-tiled-matmul: fill in every TODO below (the handout: labs/04-tiled-matmul/README.md).
// Only tiled_matmul.cu is taken when you are graded: the tests and headers are not yours to change.

#include <cstdint>

#include "kit/cuda_check.cuh"
#include "tiled_matmul.cuh"

// ---------------------------------------------------------------------------
// Core part: tiles in shared memory
// ---------------------------------------------------------------------------

// A block computes a kTile x kTile tile of C and walks along K in steps of kTile.
// Each step it stages a kTile x kTile tile of A and one of B in shared memory:
// 2 x 4 KiB, and every value staged is used kTile times.
constexpr int kTile = 32;
// Each thread computes kRowsPerThread elements of one column of the C tile,
// kBlockRows rows apart, so a value of B read from shared memory feeds
// kRowsPerThread multiply-adds from a register. (1 is the textbook kernel.)
constexpr int kRowsPerThread = 4;
// The block is kTile threads across (x: columns, one warp per row of threads,
// so loads of a tile row are coalesced) by kBlockRows down (y: rows).
constexpr int kBlockRows = kTile / kRowsPerThread;
static_assert(kTile % kRowsPerThread == 0, "the rows of a tile split evenly among the threads of a column");
static_assert(kTile * kBlockRows % 32 == 0 && kTile * kBlockRows <= 1024,
              "a block is a whole number of warps, and at most 1024 threads");

// C = A·B, one kTile x kTile tile of C per block, through shared memory.
// May assume: blockDim is (kTile, kBlockRows); blockIdx.x counts tiles across
// the columns of C and blockIdx.y tiles down its rows; a is m x k, b is k x n
// and c is m x n, row-major, in device memory; any m, k, n >= 1.
// Must not: read outside a and b, write outside c, or place a __syncthreads()
// where some threads of the block do not reach it. [all the core correctness points]
__global__ void tiled_matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
  // TODO: declare one kTile x kTile shared-memory tile for A and one for B. For each step
  //       along K (round the number of steps up: the last tile may be partial):
  //       1. each thread copies its kRowsPerThread elements of the A tile and of the B tile
  //          from global memory, storing 0 for any element outside A or B, so that partial
  //          tiles add nothing to the sums;
  //       2. wait until the whole block has written both tiles;
  //       3. add the kTile products of this step to each of the thread's kRowsPerThread sums,
  //          reading only shared memory;
  //       4. wait until the whole block is done reading, before the next step overwrites them.
  //       Finally write each sum whose row and column lie inside C.
}

// Launches tiled_matmul_kernel with one block per kTile x kTile tile of C.
void launch_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  // TODO: launch tiled_matmul_kernel with kTile x kBlockRows threads per block and one block
  //       per tile of C: enough in x to cover the n columns and in y to cover the m rows
  //       (round up), then check the launch with CUDA_CHECK_LAUNCH().
}

// ---------------------------------------------------------------------------
// Extra credit: register tiling
// ---------------------------------------------------------------------------

// A block computes a kBlockM x kBlockN tile of C, stepping along K by kBlockK.
constexpr int kBlockM = 128;
constexpr int kBlockN = 128;
constexpr int kBlockK = 8;
// Each thread keeps a kThreadM x kThreadN block of C in registers: per value of
// k it reads kThreadM values of A and kThreadN of B from shared memory and does
// kThreadM x kThreadN multiply-adds with them.
constexpr int kThreadM = 8;
constexpr int kThreadN = 8;
constexpr int kRegThreads = (kBlockM / kThreadM) * (kBlockN / kThreadN);  // 256
static_assert(kBlockM * kBlockK == 4 * kRegThreads && kBlockK * kBlockN == 4 * kRegThreads,
              "each thread loads exactly one float4 of the A tile and one of the B tile per step");

// C = A·B, one kBlockM x kBlockN tile of C per block of kRegThreads threads,
// kThreadM x kThreadN elements of it per thread.
// May assume: blockDim is (kRegThreads); blockIdx.x counts tiles across the
// columns of C and blockIdx.y tiles down its rows; any m, k, n >= 1. float4
// accesses need 16-byte alignment: only when k and n are multiples of 4 (and
// the pointers are 16-byte aligned) do rows of A, B and C start on one.
// Must not: read outside a and b, or write outside c. [extra credit: 6 points + 10 for speed]
// __launch_bounds__ promises at most kRegThreads threads per block and asks for
// two blocks per SM: at most 128 registers per thread, enough for 64 sums.
__global__ void __launch_bounds__(kRegThreads, 2)
    register_tiled_matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
  // TODO: (extra credit) give each thread a kThreadM x kThreadN block of sums in registers.
  //       Stage the A tile (kBlockM x kBlockK) transposed and the B tile (kBlockK x kBlockN)
  //       in shared memory, twice each (double buffering): while the block computes from one
  //       copy, load the next step's tiles from global memory into registers and store them
  //       into the other copy afterwards, so the loads' latency hides behind the arithmetic.
  //       Use float4 global loads and stores where rows are 16-byte aligned, single floats
  //       elsewhere; zero-fill whatever lies outside A or B; write only inside C.
}

// Launches register_tiled_matmul_kernel with one block of kRegThreads threads per
// kBlockM x kBlockN tile of C.
void launch_register_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  // TODO: (extra credit) launch register_tiled_matmul_kernel with kRegThreads threads per
  //       block and one block per kBlockM x kBlockN tile of C (round up in both directions),
  //       then check the launch with CUDA_CHECK_LAUNCH().
}
