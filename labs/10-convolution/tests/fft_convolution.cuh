// The library peer of lab 10: the same convolution computed with cuFFT, by the convolution
// theorem, timed in the same process as the student's kernels. Its cost hardly depends on the
// filter's radius, while a direct convolution does (2r + 1)^2 multiply-adds per pixel, so it is
// the yardstick for large filters. Kept in a file of its own so that only one test source
// includes cuFFT.
#pragma once

#include <cufft.h>

#include <vector>

#include "kit/device_buffer.cuh"

// Zero padding turns the FFT's circular convolution into the one convolution.cuh defines: the
// picture is placed in the corner of a padded_width x padded_height array of zeros, with
// padded_width >= width + r and padded_height >= height + r, so that no window that wraps round
// the array's edge can reach a pixel of the picture.
class FftConvolution {
 public:
  // Plans the transforms and computes the filter's spectrum (once, in double precision, then
  // rounded to float): the part of the work that does not depend on the picture.
  FftConvolution(int width, int height, const std::vector<float>& filter, int radius);
  ~FftConvolution();
  FftConvolution(const FftConvolution&) = delete;
  FftConvolution& operator=(const FftConvolution&) = delete;

  // d_out = d_in convolved with the filter (width x height, row by row): copy the picture into
  // the padded array, transform it, multiply by the filter's spectrum, transform back, copy the
  // picture's part out. Enqueued on the default stream; nothing is synchronized.
  void run(const float* d_in, float* d_out);

  int padded_width() const { return padded_width_; }
  int padded_height() const { return padded_height_; }

 private:
  int width_, height_, padded_width_, padded_height_;
  kit::DeviceBuffer<float> padded_, result_;
  kit::DeviceBuffer<cufftComplex> spectrum_, filter_spectrum_;
  cufftHandle forward_ = 0, inverse_ = 0;
};
