// Your file for lab 03-matmul: fill in every TODO below (the handout: labs/03-matmul/README.md).
// Only matmul.cu is taken when you are graded: the tests and headers are not yours to change.

#include "kit/cuda_check.cuh"
#include "matmul.cuh"

// Threads per block: x runs along a row of C (over the columns), y down a column
// (over the rows). A warp is 32 threads of consecutive threadIdx.x, so with
// kBlockCols = 32 it covers 32 neighbouring columns of one row: each step of
// the sum reads 32 consecutive floats of B (one 128-byte transaction) and a
// single value of A (broadcast to the warp). 32 x 8 = 256 threads per block.
constexpr int kBlockCols = 32;
constexpr int kBlockRows = 8;
static_assert(kBlockCols * kBlockRows % 32 == 0 && kBlockCols * kBlockRows <= 1024,
              "a block is a whole number of warps, and at most 1024 threads");

// One thread per element of C: c[row][col] = sum over i of a[row][i] * b[i][col].
// May assume: a is m x k, b is k x n and c is m x n, row-major, in device memory.
// Must not: read outside a and b, or write outside c. [all the correctness points]
__global__ void matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
  // TODO: find this thread's row (from the y indices) and column (from the x indices) of C;
  //       if both lie inside C, add up the k products of row `row` of A and column `col`
  //       of B in a float and write the sum to C. Rows of A are k floats apart, rows of B
  //       and C n floats apart. The grid is rounded up to whole blocks in both directions,
  //       so the last blocks hold threads past the last row or column: they must do nothing.
}

// Launches matmul_kernel with one thread per element of the m x n matrix C.
void launch_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  // TODO: launch matmul_kernel with kBlockCols x kBlockRows threads per block and enough
  //       blocks in x to cover the n columns and in y to cover the m rows (round each
  //       division up), then check the launch with CUDA_CHECK_LAUNCH().
}
