// Lab 10: 2D convolution. The functions the tests and the demo call; you write them in
// convolution.cu.
//
// A picture is width x height floats stored row by row: pixel (x, y), column x of row y, is
// element y * width + x. A filter of radius r is a square of (2r + 1) x (2r + 1) weights, also
// row by row: the weight of tap (dx, dy), for -r <= dx, dy <= r, is
//     filter[(dy + r) * (2r + 1) + (dx + r)].
//
// Convolving a picture `in` with a filter of radius r gives the picture
//     out(x, y) = sum over -r <= dy <= r and -r <= dx <= r of  filter(dx, dy) * in(x + dx, y + dy)
// where a pixel outside the picture counts as 0 (zero padding: the picture lies on black).
// (Mathematicians would call this a correlation, because the filter is not mirrored; image
// processing and neural-network libraries call it a convolution, and so do we.)
//
// For every function: 1 <= width <= 32768, 1 <= height <= 32768, width * height < 2^31;
// 0 <= radius <= kMaxFilterRadius; the pointers are device memory from cudaMalloc, and in and
// out do not overlap. The launch functions configure and launch a kernel and nothing else: no
// allocation, no copies, no synchronization.
#pragma once

constexpr int kMaxFilterRadius = 7;
constexpr int kMaxFilterSide = 2 * kMaxFilterRadius + 1;         // 15
constexpr int kMaxFilterTaps = kMaxFilterSide * kMaxFilterSide;  // 225 weights, 900 bytes

// Part 1. Copies the (2 radius + 1)^2 weights of h_filter (host memory) into the filter in
// constant memory that both kernels read. Every launch after it uses this filter, until the
// next call. h_filter may be changed or freed as soon as the call returns.
void upload_filter(const float* h_filter, int radius);

// Part 2. d_out = d_in convolved with the uploaded filter of radius `radius`: one thread per
// output pixel, reading its window straight from global memory.
void launch_convolve_naive(const float* d_in, float* d_out, int width, int height, int radius);

// Part 3. The same result, each block first staging its tile of the picture, with the halo of
// `radius` pixels around it, in shared memory.
void launch_convolve_tiled(const float* d_in, float* d_out, int width, int height, int radius);
