// GEMM journey, step 2: 1D register blocking.
//
// Step 1 is the core part's tiled kernel: every multiply-add there reads one of its operands from
// shared memory. Here each thread computes kColumnRows elements of one column of C, so a value of
// B read from shared memory feeds kColumnRows multiply-adds from registers.
//
// The self-check grades it as a [[right]] variant of the reference (solutions/04-tiled-matmul/
// hidden.toml): this file takes the place of the reference's extra-credit part, and every
// untimed test of the extra credit runs on it. `python3 -m grader journey` times it.
#include "kit/cuda_check.cuh"
#include "tiled_matmul.cuh"

// A block computes a kBlockM x kBlockN tile of C, stepping along K by kBlockK.
constexpr int kBlockM = 64;
constexpr int kBlockN = 64;
constexpr int kBlockK = 8;
constexpr int kColumnRows = 8;  // rows of C per thread, all in one column
constexpr int kRegThreads = kBlockM * kBlockN / kColumnRows;  // 512
static_assert(kBlockM * kBlockK == kRegThreads && kBlockK * kBlockN == kRegThreads,
              "each thread loads one element of the A tile and one of the B tile per step");

// C = A·B, one kBlockM x kBlockN tile per block of kRegThreads threads; any m, k, n >= 1.
__global__ void __launch_bounds__(kRegThreads)
    register_tiled_matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
  __shared__ float a_tile[kBlockM][kBlockK];  // a_tile[mm][kk] = A[row0 + mm][k0 + kk]
  __shared__ float b_tile[kBlockK][kBlockN];  // b_tile[kk][nn] = B[k0 + kk][col0 + nn]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBlockM;
  const int col0 = blockIdx.x * kBlockN;
  // Loads: a warp reads 4 rows x 8 floats of A and 32 consecutive floats of a row of B.
  const int a_row = tid / kBlockK, a_col = tid % kBlockK;
  const int b_row = tid / kBlockN, b_col = tid % kBlockN;
  // Sums: a warp holds 32 neighbouring columns of the same kColumnRows rows, so its a_tile reads are
  // broadcasts and its b_tile reads hit 32 different banks.
  const int my_col = tid % kBlockN;
  const int my_row = (tid / kBlockN) * kColumnRows;

  float sum[kColumnRows] = {};
  for (int k0 = 0; k0 < k; k0 += kBlockK) {
    // Zero-fill whatever lies outside A or B, so a partial tile adds nothing.
    const int ar = row0 + a_row, ac = k0 + a_col;
    const int br = k0 + b_row, bc = col0 + b_col;
    a_tile[a_row][a_col] = (ar < m && ac < k) ? a[ar * k + ac] : 0.0f;
    b_tile[b_row][b_col] = (br < k && bc < n) ? b[br * n + bc] : 0.0f;
    __syncthreads();  // both tiles are complete before anyone reads them
#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      const float b_value = b_tile[kk][my_col];
#pragma unroll
      for (int i = 0; i < kColumnRows; ++i) sum[i] += a_tile[my_row + i][kk] * b_value;
    }
    __syncthreads();  // everyone is done reading before the next step overwrites the tiles
  }

  const int col = col0 + my_col;
#pragma unroll
  for (int i = 0; i < kColumnRows; ++i) {
    const int row = row0 + my_row + i;
    if (row < m && col < n) c[row * n + col] = sum[i];
  }
}

void launch_register_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  const dim3 grid((n + kBlockN - 1) / kBlockN, (m + kBlockM - 1) / kBlockM);
  register_tiled_matmul_kernel<<<grid, kRegThreads>>>(d_a, d_b, d_c, m, k, n);
  CUDA_CHECK_LAUNCH();
}
