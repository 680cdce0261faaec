// GEMM journey, step 4: 128-bit loads, and the A tile stored transposed.
//
// Step 3 moved every value with a 32-bit load, and read its kThreadM values of A down a column of
// the A tile, one load each. Here a thread moves a float4 (four floats, one 128-bit instruction)
// from global memory into each tile, and the A tile is stored transposed (k is its row), so the
// kThreadM values of A a thread needs for one k lie side by side and come in two float4 reads
// from shared memory, as the B values do. Fewer load instructions leave more issue slots to the
// multiply-adds.
//
// A float4 access must be 16-byte aligned: only when k and n are multiples of 4 and the matrices
// start on 16 bytes does every row of A, B and C start on one. Otherwise the same kernel takes
// the same four values one float at a time.
//
// Graded as a [[right]] variant of the reference (hidden.toml); timed by `python3 -m grader journey`.
#include <cstdint>

#include "kit/cuda_check.cuh"
#include "tiled_matmul.cuh"

constexpr int kBlockM = 128;
constexpr int kBlockN = 128;
constexpr int kBlockK = 8;
constexpr int kThreadM = 8;
constexpr int kThreadN = 8;
constexpr int kThreadsAcross = kBlockN / kThreadN;                  // 16
constexpr int kRegThreads = (kBlockM / kThreadM) * kThreadsAcross;  // 256
static_assert(kBlockM * kBlockK == 4 * kRegThreads && kBlockK * kBlockN == 4 * kRegThreads,
              "each thread loads one float4 of the A tile and one of the B tile per step");
// Pad each row of the transposed A tile by 4 floats: the transposing stores of a warp then land
// in 32 different banks (132 mod 32 = 4), and every row still starts on 16 bytes.
constexpr int kATilePitch = kBlockM + 4;

// Four floats of row `row` of a rows x cols matrix, from column `col`; zeros outside it.
// vector_ok: cols is a multiple of 4 and x is 16-byte aligned, so the float4 is wholly in or out.
__device__ __forceinline__ float4 load_four(const float* x, int rows, int cols, int row, int col, bool vector_ok) {
  if (vector_ok) {
    return (row < rows && col < cols) ? *reinterpret_cast<const float4*>(x + row * cols + col)
                                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  const bool in = row < rows;
  return make_float4((in && col + 0 < cols) ? x[row * cols + col + 0] : 0.0f,
                     (in && col + 1 < cols) ? x[row * cols + col + 1] : 0.0f,
                     (in && col + 2 < cols) ? x[row * cols + col + 2] : 0.0f,
                     (in && col + 3 < cols) ? x[row * cols + col + 3] : 0.0f);
}

// C = A·B, one kBlockM x kBlockN tile per block, kThreadM x kThreadN of it per thread; any m, k, n >= 1.
__global__ void __launch_bounds__(kRegThreads)
    register_tiled_matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
  __shared__ __align__(16) float a_tile[kBlockK][kATilePitch];  // a_tile[kk][mm] = A[row0 + mm][k0 + kk]
  __shared__ __align__(16) float b_tile[kBlockK][kBlockN];      // b_tile[kk][nn] = B[k0 + kk][col0 + nn]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBlockM;
  const int col0 = blockIdx.x * kBlockN;
  const std::uintptr_t addresses =
      reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) | reinterpret_cast<std::uintptr_t>(c);
  const bool vector_ok = k % 4 == 0 && n % 4 == 0 && addresses % 16 == 0;

  // This thread's float4 of the A tile (row tid / 2, columns (tid % 2) * 4...) and of the B tile.
  const int a_load_row = tid / (kBlockK / 4), a_load_col = (tid % (kBlockK / 4)) * 4;
  const int b_load_row = tid / (kBlockN / 4), b_load_col = (tid % (kBlockN / 4)) * 4;
  const int my_row = (tid / kThreadsAcross) * kThreadM;
  const int my_col = (tid % kThreadsAcross) * kThreadN;

  float sum[kThreadM][kThreadN] = {};
  for (int k0 = 0; k0 < k; k0 += kBlockK) {
    const float4 a4 = load_four(a, m, k, row0 + a_load_row, k0 + a_load_col, vector_ok);
    const float4 b4 = load_four(b, k, n, k0 + b_load_row, col0 + b_load_col, vector_ok);
    a_tile[a_load_col + 0][a_load_row] = a4.x;  // transposed: k becomes the row
    a_tile[a_load_col + 1][a_load_row] = a4.y;
    a_tile[a_load_col + 2][a_load_row] = a4.z;
    a_tile[a_load_col + 3][a_load_row] = a4.w;
    *reinterpret_cast<float4*>(&b_tile[b_load_row][b_load_col]) = b4;
    __syncthreads();  // both tiles are complete before anyone reads them
#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      // Two 128-bit shared-memory reads for the 8 values of A, two for those of B.
      float a_frag[kThreadM], b_frag[kThreadN];
#pragma unroll
      for (int q = 0; q < kThreadM; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&a_tile[kk][my_row + q]);
        a_frag[q] = v.x, a_frag[q + 1] = v.y, a_frag[q + 2] = v.z, a_frag[q + 3] = v.w;
      }
#pragma unroll
      for (int q = 0; q < kThreadN; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&b_tile[kk][my_col + q]);
        b_frag[q] = v.x, b_frag[q + 1] = v.y, b_frag[q + 2] = v.z, b_frag[q + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < kThreadM; ++i)
#pragma unroll
        for (int j = 0; j < kThreadN; ++j) sum[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();  // everyone is done reading before the next step overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < kThreadM; ++i) {
    const int row = row0 + my_row + i;
    if (row >= m) continue;
#pragma unroll
    for (int q = 0; q < kThreadN; q += 4) {
      const int col = col0 + my_col + q;
      if (vector_ok && col < n) {  // n is a multiple of 4: all four columns are inside C
        *reinterpret_cast<float4*>(c + row * n + col) =
            make_float4(sum[i][q], sum[i][q + 1], sum[i][q + 2], sum[i][q + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < n) c[row * n + col + j] = sum[i][q + j];
      }
    }
  }
}

void launch_register_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  const dim3 grid((n + kBlockN - 1) / kBlockN, (m + kBlockM - 1) / kBlockM);
  register_tiled_matmul_kernel<<<grid, kRegThreads>>>(d_a, d_b, d_c, m, k, n);
  CUDA_CHECK_LAUNCH();
}
