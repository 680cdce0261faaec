// Lab 13: debugging. The functions the tests call; their code is in debugging.cu, where each one
// has exactly one bug for you to find and fix.
//
// Each is a kernel you wrote in an earlier lab (named below), as a student handed it in: it
// compiles, it runs, it does not crash, and some of its tests fail.
//
// For every function: the pointers point to device memory from cudaMalloc (so aligned to at least
// 256 bytes), each holding exactly the elements its contract names. The function only enqueues
// work on the default stream: no synchronization, no copies to the host (the tests copy the
// results back themselves).
#pragma once

#include <cstdint>

constexpr int kHistogramBins = 256;  // launch_histogram: one counter per byte value

// Bug 1, from lab 01. c[i] = a[i] + b[i] for 0 <= i < n. 1 <= n <= 2^30.
void launch_vector_add(const float* d_a, const float* d_b, float* d_c, int n);

// Bug 2, from lab 05. *d_sum = d_in[0] + d_in[1] + ... + d_in[n - 1], whatever *d_sum held
// before. 1 <= n <= 2^30.
void launch_reduce_sum(const float* d_in, int n, float* d_sum);

// Bug 3, from lab 11. d_bins[b] = the number of i < n with d_data[i] == b, for each of the
// kHistogramBins counters, whatever they held before. 1 <= n <= 2^30.
void launch_histogram(const std::uint8_t* d_data, int n, unsigned* d_bins);

// Bug 4, from lab 04. C = A·B, where A is m x k, B is k x n and C is m x n, each stored row by
// row (row-major). m, k, n >= 1, m < 2^19, and m x k, k x n and m x n below 2^31.
void launch_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n);

// Bug 5, from lab 07. out = the transpose of in: in is rows x cols and out is cols x rows, both
// row-major, so out[c * rows + r] = in[r * cols + c]. rows, cols >= 1, rows < 2^20 and
// rows x cols below 2^31.
void launch_transpose_tiled(const float* d_in, float* d_out, int rows, int cols);
