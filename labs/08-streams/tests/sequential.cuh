// The baseline the pipeline is timed against: the same work, one chunk at a
// time, on the legacy default stream, each step waiting for the one before
// (your window kernel runs in your code's process: the steps here wait for it there).
// The timing test runs it twice: with pageable host memory (std::vector) and
// with page-locked memory. It uses your launch_apply_window; the rest is here.
#pragma once

#include <cufft.h>

#include <algorithm>
#include <cstddef>

#include "kit/kit.cuh"
#include "kit/remote.hpp"
#include "streams.cuh"

namespace streams_checks {

class SequentialBaseline {
 public:
  // One device buffer as large as the budget allows, and one plan for it.
  SequentialBaseline(int n, std::size_t budget_bytes)
      : n_(n), chunk_signals_(std::max<std::size_t>(1, budget_bytes / (static_cast<std::size_t>(n) * sizeof(cufftComplex)))) {
    CUDA_CHECK(cudaMalloc(&d_chunk_, chunk_signals_ * n * sizeof(cufftComplex)));
    if (cufftPlan1d(&plan_, n, CUFFT_C2C, static_cast<int>(chunk_signals_)) != CUFFT_SUCCESS) {
      cudaFree(d_chunk_);
      throw kit::CudaError("the sequential baseline could not make its cuFFT plan");
    }
  }
  ~SequentialBaseline() {
    cufftDestroy(plan_);
    cudaFree(d_chunk_);
  }
  SequentialBaseline(const SequentialBaseline&) = delete;
  SequentialBaseline& operator=(const SequentialBaseline&) = delete;

  // cudaMemcpy waits for the work queued before it and returns when its copy
  // is done (from pageable memory: once the data is staged), so nothing here
  // overlaps: copy in, window, transform, copy out, chunk after chunk.
  void run(const cufftComplex* h_in, cufftComplex* h_out, std::size_t signals) {
    const std::size_t n = static_cast<std::size_t>(n_);
    for (std::size_t first = 0; first < signals; first += chunk_signals_) {
      const std::size_t count = std::min(chunk_signals_, signals - first);
      const std::size_t bytes = count * n * sizeof(cufftComplex);
      CUDA_CHECK(cudaMemcpy(d_chunk_, h_in + first * n, bytes, cudaMemcpyHostToDevice));
      // From pageable memory cudaMemcpy returns once the data is staged, and the window, in your code's
      // process, does not queue behind this process's copy: it must have landed.
      CUDA_CHECK(cudaDeviceSynchronize());
      launch_apply_window(d_chunk_, count, n_, nullptr);  // nullptr: the legacy default stream
      // The window runs in your code's process: the transform here waits for it there.
      kit::remote::synchronize(nullptr);
      CUFFT_CHECK(cufftExecC2C(plan_, d_chunk_, d_chunk_, CUFFT_FORWARD));
      CUDA_CHECK(cudaMemcpy(h_out + first * n, d_chunk_, bytes, cudaMemcpyDeviceToHost));
    }
  }

 private:
  int n_;
  std::size_t chunk_signals_;
  cufftComplex* d_chunk_ = nullptr;
  cufftHandle plan_ = 0;
};

}  // namespace streams_checks
