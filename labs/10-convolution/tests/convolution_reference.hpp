// Lab 10 CPU reference, used by the tests and by the demo. Plain C++: no GPU, no test framework.
#pragma once

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace convolution_reference {

// The expected value of some output pixels, and for each the sum of |weight| x |pixel| over its
// window, which the rounding error of a float computation is bounded by.
struct Expected {
  std::vector<double> value;
  std::vector<double> magnitude;
};

// The convolution, as convolution.cuh defines it, of the picture `in` (width x height, row by
// row) with `filter` (radius r), at every pixel of the listed rows, one row after the other. In
// double: a product of two floats is exact in double (48 significant bits of the 53), and a sum
// of at most 225 of them is off by far less than float's rounding (2^-53 against 2^-24).
inline Expected convolve_rows(const std::vector<float>& in, int width, int height, const std::vector<float>& filter,
                              int radius, const std::vector<int>& rows) {
  const int side = 2 * radius + 1;
  if (radius < 0 || filter.size() != static_cast<std::size_t>(side) * side)
    throw std::invalid_argument("convolve_rows: a filter of radius " + std::to_string(radius) + " has " +
                                std::to_string(side * side) + " weights, not " + std::to_string(filter.size()));
  if (in.size() != static_cast<std::size_t>(width) * height)
    throw std::invalid_argument("convolve_rows: the picture does not hold width x height pixels");
  Expected out{std::vector<double>(rows.size() * width), std::vector<double>(rows.size() * width)};
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int y = rows[r];
    for (int x = 0; x < width; ++x) {
      double value = 0.0, magnitude = 0.0;
      for (int dy = -radius; dy <= radius; ++dy) {
        if (y + dy < 0 || y + dy >= height) continue;  // outside the picture: 0
        for (int dx = -radius; dx <= radius; ++dx) {
          if (x + dx < 0 || x + dx >= width) continue;
          const double weight = filter[(dy + radius) * side + dx + radius];
          const double pixel = in[static_cast<std::size_t>(y + dy) * width + x + dx];
          value += weight * pixel;
          magnitude += std::fabs(weight * pixel);
        }
      }
      out.value[r * width + x] = value;
      out.magnitude[r * width + x] = magnitude;
    }
  }
  return out;
}

// Every row of the picture.
inline Expected convolve(const std::vector<float>& in, int width, int height, const std::vector<float>& filter,
                         int radius) {
  std::vector<int> rows(height);
  for (int y = 0; y < height; ++y) rows[y] = y;
  return convolve_rows(in, width, height, filter, radius, rows);
}

// γ_k = k u / (1 - k u), u = 2^-24: however a float sum of k products is computed (in any
// order, with or without fused multiply-adds), it lies within γ_k · Σ |weight| |pixel| of the
// exact sum (N. J. Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., 2002, §3.1).
inline double float_sum_gamma(int terms) {
  const double ku = terms * 0x1.0p-24;
  return ku / (1.0 - ku);
}

// The smallest n' >= n whose only prime factors are 2, 3, 5 and 7: the transform sizes cuFFT
// computes fastest (its documentation recommends them), used to pad a picture for the
// FFT-based convolution.
inline int next_fft_size(int n) {
  for (int m = n > 1 ? n : 1;; ++m) {
    int rest = m;
    for (const int p : {2, 3, 5, 7})
      while (rest % p == 0) rest /= p;
    if (rest == 1) return m;
  }
}

}  // namespace convolution_reference
