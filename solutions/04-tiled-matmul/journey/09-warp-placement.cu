// GEMM journey, step 9: step 8's kernel with its threads placed by warp, 4 x 8 threads to a warp.
//
// Step 8 numbers its 16 x 16 threads row by row, so a warp is 2 rows of 16 threads. For each k, the warp's reads of
// the shared tiles then touch 2 distinct float4s of A (32 bytes) and 16 of B (256 bytes): one 128-byte wavefront for
// A and two for B per load. Placing each warp over 4 rows x 8 columns of threads instead asks 4 float4s of A and 8
// of B, one wavefront each: a third fewer shared-memory wavefronts for the same multiply-adds, which is what
// cuBLAS's and CUTLASS's SIMT kernels do with their warp tiles. Nothing else changes: every thread still owns the
// same 8 x 8 pieces of C it owned in step 8, only a different thread owns them.
//
// Measured on an H100 (2026-11-28, docs/gpu-runs/2026-11-28-h100-steps-journeys.md): no gain. The journey timed it
// at 0.85 of cuBLAS, as step 8; the sweep (docs/gpu-runs/scripts/gemm_sweep.cu) at 0.863 against 0.886 for warps
// of 2 x 16. Shared-memory wavefronts were not what held step 8 back. The step stays as that lesson: a change
// that helps another kernel is measured here before it is kept.
//
// Graded as a [[right]] variant of the reference (hidden.toml); timed by `python3 -m grader journey`.
#include <cstddef>
#include <cstdint>

#include "kit/cuda_check.cuh"
#include "tiled_matmul.cuh"

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
//
// Journey step 8: kWhole says the launcher found every tile whole (m and n multiples of the block tile, k of
// kBlockK) and every row 16-byte aligned. That instance carries no edge test, no zero fill and no run-time
// float4 test: the same design, minus what the general case costs.
template <bool kWhole>
__global__ void __launch_bounds__(kRegThreads, 2)
    register_tiled_matmul_kernel(const float* a, const float* b, float* c, int m, int k, int n) {
  // Padding each row of the transposed A tile by 4 floats makes the transposing stores hit
  // 32 different banks (132 mod 32 = 4), and keeps every row 16-byte aligned for float4 reads.
  constexpr int kATilePitch = kBlockM + 4;
  __shared__ __align__(16) float a_tile[2][kBlockK][kATilePitch];  // a_tile[s][kk][mm] = A[row0 + mm][k0 + kk]
  __shared__ __align__(16) float b_tile[2][kBlockK][kBlockN];      // b_tile[s][kk][nn] = B[k0 + kk][col0 + nn]

  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBlockM;
  const int col0 = blockIdx.x * kBlockN;
  // float4 accesses are legal only if every row of A, B and C starts 16 bytes
  // after the previous one and the matrices themselves start on 16 bytes.
  const std::uintptr_t addresses =
      reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) | reinterpret_cast<std::uintptr_t>(c);
  const bool vector_ok = kWhole || (k % 4 == 0 && n % 4 == 0 && addresses % 16 == 0);

  // What this thread loads each step: one float4 of A (row tid / 2, columns
  // (tid % 2) * 4 ... + 3 of the tile; a warp reads 16 rows x 32 bytes) and one
  // float4 of B (row tid / 32, columns (tid % 32) * 4 ... + 3; a warp reads one
  // contiguous 512-byte row segment).
  const int a_load_row = tid / (kBlockK / 4);
  const int a_load_col = (tid % (kBlockK / 4)) * 4;
  const int b_load_row = tid / (kBlockN / 4);
  const int b_load_col = (tid % (kBlockN / 4)) * 4;

  // What this thread computes: rows thread_row*4 + {0..3} and 64 + thread_row*4 + {0..3}
  // of the tile, and the same for columns. Splitting the 8 x 8 block into 2 x 2 groups of
  // 4 x 4 makes the 8 threads of a row of a warp read 128 contiguous bytes of b_tile (no bank
  // conflicts) and store 128 contiguous bytes of each row of C (whole cache lines).
  constexpr int kHalfM = kBlockM / 2;
  constexpr int kHalfN = kBlockN / 2;
  // Journey step 9: the warps tile the 16 x 16 threads as 4 x 2 warps of 4 x 8 threads.
  constexpr int kWarpRows = 4, kWarpCols = 8;
  constexpr int kWarpsAcross = (kBlockN / kThreadN) / kWarpCols;  // 2
  const int warp = tid / 32, lane = tid % 32;
  const int thread_row = (warp / kWarpsAcross) * kWarpRows + lane / kWarpCols;  // 0..15
  const int thread_col = (warp % kWarpsAcross) * kWarpCols + lane % kWarpCols;  // 0..15

  float acc[kThreadM][kThreadN] = {};
  float4 a_next, b_next;  // the next step's share of the tiles, on its way from global memory

  auto load = [&](int k0) {
    const int a_r = row0 + a_load_row, a_c = k0 + a_load_col;
    const int b_r = k0 + b_load_row, b_c = col0 + b_load_col;
    if constexpr (kWhole) {
      a_next = *reinterpret_cast<const float4*>(a + static_cast<std::size_t>(a_r) * k + a_c);
      b_next = *reinterpret_cast<const float4*>(b + static_cast<std::size_t>(b_r) * n + b_c);
    } else if (vector_ok) {
      // k and n are multiples of 4, so a float4 is either wholly inside its matrix or wholly outside.
      a_next = (a_r < m && a_c < k) ? *reinterpret_cast<const float4*>(a + a_r * k + a_c)
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      b_next = (b_r < k && b_c < n) ? *reinterpret_cast<const float4*>(b + b_r * n + b_c)
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
      const bool a_row_in = a_r < m, b_row_in = b_r < k;
      a_next.x = (a_row_in && a_c + 0 < k) ? a[a_r * k + a_c + 0] : 0.0f;
      a_next.y = (a_row_in && a_c + 1 < k) ? a[a_r * k + a_c + 1] : 0.0f;
      a_next.z = (a_row_in && a_c + 2 < k) ? a[a_r * k + a_c + 2] : 0.0f;
      a_next.w = (a_row_in && a_c + 3 < k) ? a[a_r * k + a_c + 3] : 0.0f;
      b_next.x = (b_row_in && b_c + 0 < n) ? b[b_r * n + b_c + 0] : 0.0f;
      b_next.y = (b_row_in && b_c + 1 < n) ? b[b_r * n + b_c + 1] : 0.0f;
      b_next.z = (b_row_in && b_c + 2 < n) ? b[b_r * n + b_c + 2] : 0.0f;
      b_next.w = (b_row_in && b_c + 3 < n) ? b[b_r * n + b_c + 3] : 0.0f;
    }
  };
  auto store = [&](int s) {
    a_tile[s][a_load_col + 0][a_load_row] = a_next.x;  // transposed: k becomes the row
    a_tile[s][a_load_col + 1][a_load_row] = a_next.y;
    a_tile[s][a_load_col + 2][a_load_row] = a_next.z;
    a_tile[s][a_load_col + 3][a_load_row] = a_next.w;
    *reinterpret_cast<float4*>(&b_tile[s][b_load_row][b_load_col]) = b_next;
  };

  const int steps = (k + kBlockK - 1) / kBlockK;
  load(0);
  store(0);
  __syncthreads();  // tile 0 is complete
  for (int step = 0; step < steps; ++step) {
    const int s = step % 2;
    const bool more = step + 1 < steps;
    if (more) load((step + 1) * kBlockK);  // in flight while we compute below

#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      float a_frag[kThreadM], b_frag[kThreadN];
      const float4 a_lo = *reinterpret_cast<const float4*>(&a_tile[s][kk][thread_row * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&a_tile[s][kk][kHalfM + thread_row * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&b_tile[s][kk][thread_col * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&b_tile[s][kk][kHalfN + thread_col * 4]);
      a_frag[0] = a_lo.x, a_frag[1] = a_lo.y, a_frag[2] = a_lo.z, a_frag[3] = a_lo.w;
      a_frag[4] = a_hi.x, a_frag[5] = a_hi.y, a_frag[6] = a_hi.z, a_frag[7] = a_hi.w;
      b_frag[0] = b_lo.x, b_frag[1] = b_lo.y, b_frag[2] = b_lo.z, b_frag[3] = b_lo.w;
      b_frag[4] = b_hi.x, b_frag[5] = b_hi.y, b_frag[6] = b_hi.z, b_frag[7] = b_hi.w;
#pragma unroll
      for (int i = 0; i < kThreadM; ++i)
#pragma unroll
        for (int j = 0; j < kThreadN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }

    // The other copy was last read in the previous step, which ended with a
    // barrier, so it is free to overwrite.
    if (more) store(1 - s);
    __syncthreads();  // the next copy is complete, and this one is no longer read
  }

#pragma unroll
  for (int i = 0; i < kThreadM; ++i) {
    const int row = row0 + (i < 4 ? thread_row * 4 + i : kHalfM + thread_row * 4 + (i - 4));
    if (!kWhole && row >= m) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int col = col0 + half * kHalfN + thread_col * 4;
      const float* sums = &acc[i][half * 4];
      if (kWhole || (vector_ok && col < n)) {  // n is a multiple of 4: all four columns are inside C
        *reinterpret_cast<float4*>(c + row * n + col) = make_float4(sums[0], sums[1], sums[2], sums[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < n) c[row * n + col + j] = sums[j];
      }
    }
  }
}

// Launches register_tiled_matmul_kernel with one block of kRegThreads threads per
// kBlockM x kBlockN tile of C.
void launch_register_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  const dim3 grid((n + kBlockN - 1) / kBlockN, (m + kBlockM - 1) / kBlockM);
  const std::uintptr_t addresses = reinterpret_cast<std::uintptr_t>(d_a) | reinterpret_cast<std::uintptr_t>(d_b) |
                                   reinterpret_cast<std::uintptr_t>(d_c);
  const bool whole = m % kBlockM == 0 && n % kBlockN == 0 && k % kBlockK == 0 && addresses % 16 == 0;
  if (whole)
    register_tiled_matmul_kernel<true><<<grid, kRegThreads>>>(d_a, d_b, d_c, m, k, n);
  else
    register_tiled_matmul_kernel<false><<<grid, kRegThreads>>>(d_a, d_b, d_c, m, k, n);
  CUDA_CHECK_LAUNCH();
}
