// Lab 08: streams. The functions the tests call; you write them in streams.cu.
//
// The job: a dataset of many signals, each `n` complex samples, lives in host
// memory and is larger than the device memory you may use. Every signal is
// multiplied by a Hann window and then Fourier-transformed (cuFFT, forward,
// unnormalised). The data goes through the GPU in chunks, and several CUDA
// streams keep the copy engines and the SMs busy at the same time.
#pragma once

#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>

#include "kit/cuda_check.cuh"
#include "kit/cufft.hpp"  // CUFFT_CHECK(...): wrap every cuFFT call in it, as CUDA calls in CUDA_CHECK

// ---------------------------------------------------------------------------
// Part 1: the window.
//
// Multiplies sample j of every signal by the periodic Hann window
//     w_j = sin^2(pi * j / n)   (= 0.5 - 0.5 cos(2 pi j / n)),   0 <= j < n,
// in place: `d_signals` holds `signals` signals of n complex samples one after
// the other in device memory. The work is queued on `stream` and the function
// returns without waiting for it. signals >= 1, n >= 1, signals * n < 2^31.
void launch_apply_window(cufftComplex* d_signals, std::size_t signals, int n, cudaStream_t stream);

// ---------------------------------------------------------------------------
// Part 2: host memory the copy engines can reach.
//
// Returns host memory for `count` complex samples that asynchronous copies can
// move without the CPU's help (page-locked), or throws. count >= 1.
cufftComplex* allocate_host_samples(std::size_t count);

// Frees memory returned by allocate_host_samples.
void free_host_samples(cufftComplex* h_samples);

// ---------------------------------------------------------------------------
// Part 3: the pipeline.

struct PipelineSetup {
  int signal_length = 1024;      // n: complex samples per signal, a power of two from 2 to 4096
  int streams = 4;               // how many CUDA streams to spread the chunks over, >= 1
  std::size_t budget_bytes = 0;  // all the device memory the pipeline may hold; at least
                                 // 32 signals per stream (plus cuFFT's work area, if any)
};

// What create_pipeline sets up and run_pipeline uses. You define it in streams.cu.
struct Pipeline;

// Creates the streams, the device buffers and the cuFFT plans for `setup`.
// Every byte of device memory the pipeline uses is allocated here, and all of
// it together (buffers and cuFFT work areas) stays within setup.budget_bytes.
Pipeline* create_pipeline(const PipelineSetup& setup);

// For each of `signals` signals (n = setup.signal_length samples each) in h_in:
// window it, transform it, and write its spectrum to the same place in h_out:
//     h_out[s*n + k] = sum_j w_j * h_in[s*n + j] * exp(-2 pi i j k / n).
// h_in and h_out come from allocate_host_samples and do not overlap. Writes the
// signals * n samples of h_out and nothing else. When it returns, every result
// is in h_out. signals >= 1, and may be far larger than fits in the budget.
void run_pipeline(Pipeline* pipeline, const cufftComplex* h_in, cufftComplex* h_out, std::size_t signals);

// Releases everything create_pipeline made.
void destroy_pipeline(Pipeline* pipeline);
