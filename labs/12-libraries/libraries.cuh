// Lab 12: libraries. The functions the tests call; you write them in libraries.cu.
//
// The job: an array of C microphones records frames, each n samples of every
// channel. For every frame the GPU
//   1. filters each channel:   y_c = (1/n) IDFT(H . DFT(x_c)),
//      with cuFFT (real-to-complex, then complex-to-real) and your kernel, which
//      multiplies every frequency bin k by the filter's response H_k;
//   2. mixes the channels into M beams:   b_m = sum_c W[m][c] y_c,
//      with one cuBLAS batched matrix product for all the frames of a batch;
//   3. scales each beam to unit RMS and reports the RMS it had:
//      rms_m = sqrt((1/n) sum_t b_m[t]^2),   out_m = b_m / rms_m,
//      with Thrust and CUB.
// The frames live in host memory and go through the GPU in batches, spread over
// several CUDA streams, so that copies and computation overlap (lab 08).
//
// Layouts: row-major, floats unless said otherwise.
//   frames    frames x C x n: channel c of frame f is [(f*C + c)*n, (f*C + c + 1)*n)
//   spectra   bins = n/2 + 1 complex values per channel (cuFFT's real-to-complex
//             output: the other bins of a real signal's spectrum are their mirror
//             images' complex conjugates), one channel after another
//   weights   M x C: weights[m*C + c]
//   beams     frames x M x n: beam m of frame f is [(f*M + m)*n, (f*M + m + 1)*n)
//   rms       frames x M: rms[f*M + m]
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>

#include "kit/cublas.hpp"      // CUBLAS_CHECK(...): wrap every cuBLAS call in it
#include "kit/cuda_check.cuh"  // CUDA_CHECK(...), CUDA_CHECK_LAUNCH(): every CUDA call and launch
#include "kit/cufft.hpp"       // CUFFT_CHECK(...): every cuFFT call

// ---------------------------------------------------------------------------
// Part 1: the filter, your one kernel.
//
// Multiplies bin k of every spectrum by scale * response[k], in place:
//     d_spectra[s*bins + k] = scale * d_response[k] * d_spectra[s*bins + k]
// (complex products) for 0 <= s < spectra, 0 <= k < bins. The work is queued
// on `stream` and the function returns without waiting for it.
// spectra >= 1, bins >= 1, spectra * bins < 2^31.
void launch_apply_response(cufftComplex* d_spectra, std::size_t spectra, int bins, const cufftComplex* d_response,
                           float scale, cudaStream_t stream);

// ---------------------------------------------------------------------------
// Part 2: beams, with cuBLAS.
//
// For every frame f < frames: beams_f = weights * channels_f, an M x C matrix
// times a C x n one, in the row-major layouts above (d_channels holds frames x
// C x n floats, d_weights M x C, d_beams frames x M x n), in single precision
// (never TensorFloat-32). The work is queued on the stream `handle` is bound
// to, which the caller chose: do not change it. Returns without waiting.
// 1 <= frames, channels, beams, n < 2^31.
void mix_beams(cublasHandle_t handle, const float* d_channels, const float* d_weights, float* d_beams,
               std::size_t frames, int channels, int beams, int n);

// ---------------------------------------------------------------------------
// Part 3: unit RMS, with Thrust and CUB.
//
// Bytes of device scratch memory that normalize_beams needs for up to `count`
// beams of n samples (at least 1). The caller allocates it once.
std::size_t normalize_scratch_bytes(std::size_t count, int n);

// For each of `count` beams of n samples, one after another in d_beams:
//     d_rms[beam] = sqrt((1/n) * sum over its samples of b^2),
// and every sample of the beam divided by it, in place. A beam whose RMS is 0
// (all its samples are 0) stays all zeros. d_scratch holds scratch_bytes >=
// normalize_scratch_bytes(count, n) bytes. The work is queued on `stream` and
// the function returns without waiting for it. count >= 1, 1 <= n < 2^24.
void normalize_beams(float* d_beams, float* d_rms, std::size_t count, int n, void* d_scratch, std::size_t scratch_bytes,
                     cudaStream_t stream);

// ---------------------------------------------------------------------------
// Part 4: the pipeline.

struct PipelineSetup {
  int samples = 4096;  // n, samples per channel in a frame: 2 <= n <= 65536
  int channels = 8;    // C >= 1
  int beams = 2;       // M >= 1
  // Host memory, read by create_pipeline only (the caller may free it afterwards):
  const float* weights = nullptr;          // M x C beam weights, row-major
  const cufftComplex* response = nullptr;  // n/2 + 1 bins of the filter; response[0] and, for even n,
                                           // response[n/2] are real, as for any real filter
  int streams = 4;                         // CUDA streams to spread the batches over, >= 1
  int frames_per_batch = 128;              // frames a stream carries at once, >= 1; the last batch may be short
};

// What create_pipeline sets up and run_pipeline uses. You define it in libraries.cu.
struct Pipeline;

// Creates everything run_pipeline needs for `setup`: streams, device buffers,
// cuFFT plans, cuBLAS handles, scratch memory, and a device copy of the weights
// and the response. Every allocation happens here.
Pipeline* create_pipeline(const PipelineSetup& setup);

// For each of `frames` frames in h_frames (frames x C x n floats): filter,
// mix and normalize as above, writing its beams to h_beams (frames x M x n)
// and their RMS to h_rms (frames x M). h_frames, h_beams and h_rms are
// page-locked host memory (cudaMallocHost) and do not overlap. Writes those
// outputs and nothing else; when it returns, every result is in place.
// frames >= 1, and may be far more than fit on the GPU at once.
void run_pipeline(Pipeline* pipeline, const float* h_frames, float* h_beams, float* h_rms, std::size_t frames);

// Releases everything create_pipeline made.
void destroy_pipeline(Pipeline* pipeline);
