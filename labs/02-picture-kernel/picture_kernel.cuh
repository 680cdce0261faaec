// Lab 02: picture kernels. The functions the tests and the demo call; you write them in
// picture_kernel.cu.
//
// Every picture is stored row by row (row-major): the pixel in column x of row y is element
// y * width + x. A colour picture interleaves three bytes per pixel, red, green, blue, so
// pixel p's colour is rgb[3p], rgb[3p + 1], rgb[3p + 2].
//
// For all three functions: the pointers are device memory from cudaMalloc; input and output
// do not overlap; 1 <= width, 1 <= height, width * height < 2^31 and height <= 1,000,000.
// Each function configures and launches its kernel and nothing else: no allocation, no
// copies, no synchronization.
#pragma once

#include <cstdint>

// Part 1. d_out = factor * d_in, pixel by pixel, for a width x height picture of floats.
void launch_scale_picture(const float* d_in, float* d_out, int width, int height, float factor);

// Part 2. Colour to grayscale, with the ITU-R BT.601 luma weights rounded to the nearest
// integer (halves up), in exact integer arithmetic:
//   d_gray[p] = (299 * R + 587 * G + 114 * B + 500) / 1000
// where R, G, B are pixel p's three bytes in d_rgb. A result within 1 of this passes the tests.
void launch_rgb_to_gray(const std::uint8_t* d_rgb, std::uint8_t* d_gray, int width, int height);

// Part 3. Box blur of radius `radius` >= 0: each output pixel is the mean of the input pixels
// in the (2 * radius + 1) x (2 * radius + 1) square centred on it that lie inside the picture.
// Near edges and corners that square holds fewer pixels, and the mean divides by how many it
// holds. Rounded to the nearest integer (halves up): (sum + count / 2) / count; a result within
// 1 of this passes the tests. radius may exceed the picture's size: the square then covers all
// of it. May assume: a window holds at most 2^23 pixels, so its sum fits a 32-bit integer.
void launch_box_blur(const std::uint8_t* d_in, std::uint8_t* d_out, int width, int height, int radius);
