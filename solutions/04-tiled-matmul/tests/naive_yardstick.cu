// The naive kernel, timed beside the tiled ones so the timing report can say
// how much tiling gained. It is lab 03's solution, so it lives here, with the
// hidden tests, and the student release reports no naive comparison.
#include "tiled_matmul_checks.cuh"

namespace {

// One thread per element of C, x along a row of C so that a warp reads 32
// consecutive floats of B (coalesced) and one broadcast value of A.
constexpr int kNaiveBlockCols = 32;
constexpr int kNaiveBlockRows = 8;

__global__ void naive_matmul_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                    int m, int k, int n) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < m && col < n) {
    float sum = 0.0f;
    for (int i = 0; i < k; ++i) sum += a[row * k + i] * b[i * n + col];
    c[row * n + col] = sum;
  }
}

void launch_naive_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  const dim3 block(kNaiveBlockCols, kNaiveBlockRows);
  const dim3 grid((n + kNaiveBlockCols - 1) / kNaiveBlockCols, (m + kNaiveBlockRows - 1) / kNaiveBlockRows);
  naive_matmul_kernel<<<grid, block>>>(d_a, d_b, d_c, m, k, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace tiled_matmul_checks {

kit::Ceiling naive_matmul_ceiling(const float* d_a, const float* d_b, float* d_c, int m, int k, int n,
                                  const kit::TimingOptions& options) {
  const kit::Timing timing = kit::time_device_work([&] { launch_naive_matmul(d_a, d_b, d_c, m, k, n); }, options);
  return {"naive kernel", 2.0 * m * n * k / timing.median_s / 1e9};
}

}  // namespace tiled_matmul_checks
