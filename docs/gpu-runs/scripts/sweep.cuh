// What issue 20's probes share: inputs made from a hash of their index, the median of timed runs and the check of
// a result against a bound; CUDA calls are checked by the harness's CUDA_CHECK, which throws kit::CudaError naming
// the call, the file and the line (each probe's main prints it). sweeps.sh builds them with the harness.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kit/cuda_check.cuh"


// What a probe's main returns when a CUDA call failed: the harness's message (call, file, line), printed after
// what the probe printed so far, which returning from main flushes.
inline int failed(const std::exception& error) {
  std::fprintf(stderr, "%s\n", error.what());
  return 1;
}

constexpr int kWarmup = 3;
constexpr int kRepeats = 20;

// 32 well-mixed bits from an element's index and a seed: the same inputs on every run, made on the GPU.
__device__ inline unsigned hashed(std::size_t i, unsigned seed) {
  unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed ^ static_cast<unsigned>(i >> 32) * 40503u;
  x ^= x >> 16, x *= 2246822519u, x ^= x >> 13, x *= 3266489917u, x ^= x >> 16;
  return x;
}

// A value in [-1, 1) from hashed's bits.
__device__ inline float uniform_from(unsigned bits) {
  return static_cast<float>(bits >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

// The median time of kRepeats calls of `launch`, each bracketed by CUDA events, after kWarmup untimed calls.
template <class Launch>
double median_ms(Launch launch) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmup; ++i) launch();
  CUDA_CHECK(cudaGetLastError());
  std::vector<float> ms(kRepeats);
  for (float& t : ms) {
    CUDA_CHECK(cudaEventRecord(start));
    launch();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return 0.5 * (ms[kRepeats / 2 - 1] + ms[kRepeats / 2]);
}

// Adds to *wrong how many elements of `got` lie farther from `want` than `units` times `bound`, each in double;
// NaN counts as wrong, so an element never written (poisoned with NaN) is caught too.
template <class Want, class Bound>
__global__ void count_outside(const float* got, const Want* want, const Bound* bound, std::size_t count, double units,
                              unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    mine += !(fabs(static_cast<double>(got[i]) - want[i]) <= units * bound[i]);
  if (mine) atomicAdd(wrong, mine);
}
