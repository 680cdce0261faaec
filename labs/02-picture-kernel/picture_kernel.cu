// Your file for lab 02-picture-kernel: fill in every TODO below (the handout: labs/02-picture-kernel/README.md).
// Only picture_kernel.cu is taken when you are graded: the tests and headers are not yours to change.

#include <algorithm>
#include <cstdint>

#include "kit/cuda_check.cuh"
#include "picture_kernel.cuh"

// ---------------------------------------------------------------------------------------------
// Part 1: scale a float picture, one thread per pixel, on a 2D grid of 2D blocks.
// ---------------------------------------------------------------------------------------------

// Block shape: 16 x 16 = 256 threads. A warp is 32 consecutive threads in x, so with 16 in x
// it spans two rows of 16 pixels: two runs of 64 contiguous bytes, each a whole number of
// 32-byte memory sectors.
constexpr int kScaleBlockX = 16;  // threads per block along a row (x: columns)
constexpr int kScaleBlockY = 16;  // threads per block down the picture (y: rows)

// One thread per pixel: out = factor * in at (column x, row y). [22 points]
// May assume: in and out hold width * height floats, row by row.
// Must not: touch any element outside the picture (the grid sticks out past both edges).
__global__ void scale_picture_kernel(const float* in, float* out, int width, int height, float factor) {
  // TODO: give each thread one pixel: its column from the x parts of blockIdx, blockDim and
  //       threadIdx, its row from their y parts. Write out = factor * in for that pixel only
  //       when the column and the row both lie inside the picture: the grid is rounded up to
  //       whole blocks in both directions, so the last blocks stick out past the right and
  //       the bottom edges.
}

// Launches scale_picture_kernel over a width x height picture in device memory.
void launch_scale_picture(const float* d_in, float* d_out, int width, int height, float factor) {
  // TODO: launch scale_picture_kernel on blocks of kScaleBlockX x kScaleBlockY threads, with
  //       enough blocks in x to cover every column and in y to cover every row (round each
  //       division up), then check the launch with CUDA_CHECK_LAUNCH().
}

// ---------------------------------------------------------------------------------------------
// Part 2: colour to grayscale.
// ---------------------------------------------------------------------------------------------

// TODO: name the launch constants of rgb_to_gray_kernel here (threads per block, and anything
//       else that sets the grid), so that the kernel and launch_rgb_to_gray agree on them.

// Grayscale: gray[p] = (299 R + 587 G + 114 B + 500) / 1000 for every pixel p of the picture,
// whose colour is rgb[3p], rgb[3p + 1], rgb[3p + 2]. [28 points, and 3 for speed]
// May assume: rgb holds 3 * width * height bytes and gray width * height bytes.
// Must not: write any byte outside gray's width * height.
__global__ void rgb_to_gray_kernel(const std::uint8_t* rgb, std::uint8_t* gray, int width, int height) {
  // TODO: convert every pixel to its luma, by the formula in picture_kernel.cuh, guarding
  //       against threads past the last pixel. Pixel p's colour is the three bytes from 3p on,
  //       so the input is three times as long as the output. The kernel does one multiply-add
  //       per byte: its speed is set by memory traffic, so make neighbouring threads read and
  //       write neighbouring bytes.
}

// Launches rgb_to_gray_kernel over a width x height picture in device memory.
void launch_rgb_to_gray(const std::uint8_t* d_rgb, std::uint8_t* d_gray, int width, int height) {
  // TODO: launch rgb_to_gray_kernel with a grid that covers every pixel of the picture (round
  //       up), then check the launch with CUDA_CHECK_LAUNCH().
}

// ---------------------------------------------------------------------------------------------
// Part 3: box blur.
// ---------------------------------------------------------------------------------------------

// TODO: name the launch constants of box_blur_kernel here (block shape, and anything else that
//       sets the grid).

// Box blur: out = the mean of in over the part of each pixel's (2 radius + 1)^2 window that
// lies inside the picture, rounded to nearest. [34 points, and 3 for speed]
// May assume: radius >= 0; in and out hold width * height bytes and do not overlap.
// Must not: write any byte outside out's width * height.
__global__ void box_blur_kernel(const std::uint8_t* in, std::uint8_t* out, int width, int height, int radius) {
  // TODO: make each output pixel the mean of the input pixels inside both its window and the
  //       picture: sum those and divide by how many there are, which near the edges and
  //       corners is fewer than (2 radius + 1)^2. Guard the output in both directions. A radius
  //       far larger than the picture must not make a thread step through (2 radius + 1)^2
  //       window positions, most of them outside the picture.
}

// Launches box_blur_kernel over a width x height picture in device memory.
void launch_box_blur(const std::uint8_t* d_in, std::uint8_t* d_out, int width, int height, int radius) {
  // TODO: launch box_blur_kernel with a 2D grid that covers every pixel (round up in both
  //       directions), then check the launch with CUDA_CHECK_LAUNCH().
}
