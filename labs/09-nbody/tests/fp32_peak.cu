// A bound for the timing report, measured in the same process: how many FP32
// fused multiply-adds per second this GPU sustains, counted as 2 flops each.
#include "nbody_checks.cuh"

namespace {

constexpr int kPeakBlockSize = 256;
constexpr int kPeakThreadsPerSm = 2048;  // the most resident threads per SM since Volta
// Independent FMA chains per thread: each FMA waits about 4 cycles for the one
// before it in its chain, so a warp needs several chains to issue every cycle.
constexpr int kPeakChains = 8;
constexpr int kPeakIterations = 16384;  // per thread: 131072 FMAs, about a millisecond on an H100
constexpr int kPeakUnroll = 16;        // keeps the loop's counter and branch to 2% of the instructions

__global__ void fma_peak_kernel(float* out, float b, float c, int iterations) {
  float x[kPeakChains];
#pragma unroll
  for (int k = 0; k < kPeakChains; ++k) x[k] = static_cast<float>(threadIdx.x + k);
#pragma unroll kPeakUnroll
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int k = 0; k < kPeakChains; ++k) x[k] = fmaf(x[k], b, c);
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kPeakChains; ++k) sum += x[k];
  // Never true (every chain tends to c / (1 - b) > 0), but the compiler cannot
  // know that, so it must do every FMA.
  if (sum == -1.0f) out[blockIdx.x] = sum;
}

}  // namespace

kit::Ceiling nbody_checks::fp32_fma_ceiling(const kit::TimingOptions& options) {
  const int blocks = kit::device_info().multiprocessors * (kPeakThreadsPerSm / kPeakBlockSize);
  kit::DeviceBuffer<float> out(static_cast<std::size_t>(blocks));
  const kit::Timing timing = kit::time_device_work(
      [&] {
        fma_peak_kernel<<<blocks, kPeakBlockSize>>>(out.data(), 0.999f, 0.001f, kPeakIterations);
        CUDA_CHECK_LAUNCH();
      },
      options);
  const double flops = 2.0 * kPeakChains * kPeakIterations * static_cast<double>(blocks) * kPeakBlockSize;
  return {"FP32 FMA peak", flops / timing.median_s / 1e9, true};
}
