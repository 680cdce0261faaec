// Lab 10 CPU reference, used by the tests and by the demo. Plain C++: no GPU, no test framework.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/parallel.hpp"

namespace convolution_reference {

// The expected value of some output pixels, and for each the sum of |weight| x |pixel| over its
// window, which the rounding error of a float computation is bounded by.
struct Expected {
  std::vector<double> value;
  std::vector<double> magnitude;
};

// Below this much work (multiply-adds, or random pixels made) a thread costs more than it saves:
// a quarter of a millisecond or more, far above a thread's start.
inline constexpr double kWorkPerThread = 1 << 18;

// The convolution, as convolution.cuh defines it, of a width x height picture with `filter`
// (radius r) at every pixel of output row y, into value[0, width) and magnitude[0, width).
// row_of(yy) gives input row yy (its `width` pixels), for the rows y - r .. y + r inside the
// picture; the taps that fall outside it weigh a 0 and are left out. In double: a product of two
// floats is exact in double (48 significant bits of the 53), and a sum of at most 225 of them
// is off by far less than float's rounding (2^-53 against 2^-24).
template <class RowOf>
void convolve_row(const RowOf& row_of, int width, int height, const std::vector<float>& filter, int radius, int y,
                  double* value, double* magnitude) {
  const int side = 2 * radius + 1;
  const int dy_first = std::max(-radius, -y), dy_last = std::min(radius, height - 1 - y);
  std::vector<const float*> in(static_cast<std::size_t>(side), nullptr);
  for (int dy = dy_first; dy <= dy_last; ++dy) in[dy + radius] = row_of(y + dy);
  for (int x = 0; x < width; ++x) {
    const int dx_first = std::max(-radius, -x), dx_last = std::min(radius, width - 1 - x);
    double sum = 0.0, abs_sum = 0.0;
    for (int dy = dy_first; dy <= dy_last; ++dy) {
      const float* pixels = in[dy + radius] + x;
      const float* weights = filter.data() + (dy + radius) * side + radius;
      for (int dx = dx_first; dx <= dx_last; ++dx) {
        const double product = static_cast<double>(weights[dx]) * pixels[dx];
        sum += product;
        abs_sum += std::fabs(product);
      }
    }
    value[x] = sum;
    magnitude[x] = abs_sum;
  }
}

// convolve_row for each of the listed rows, one after the other in the result, on every core.
template <class RowOf>
Expected convolve_rows_of(const RowOf& row_of, int width, int height, const std::vector<float>& filter, int radius,
                          const std::vector<int>& rows) {
  const int side = 2 * radius + 1;
  if (radius < 0 || filter.size() != static_cast<std::size_t>(side) * side)
    throw std::invalid_argument("convolve_rows: a filter of radius " + std::to_string(radius) + " has " +
                                std::to_string(side * side) + " weights, not " + std::to_string(filter.size()));
  for (const int y : rows) {
    if (y < 0 || y >= height)
      throw std::invalid_argument("convolve_rows: row " + std::to_string(y) + " is outside a picture of " +
                                  std::to_string(height) + " rows");
    // Every row its window reads, asked for here first: a row_of that cannot give one throws on
    // this thread, not on a worker, where the exception would end the program.
    for (int yy = std::max(0, y - radius); yy <= std::min(height - 1, y + radius); ++yy) row_of(yy);
  }
  const auto row = static_cast<std::size_t>(width);
  Expected out{std::vector<double>(rows.size() * row), std::vector<double>(rows.size() * row)};
  kit::parallel_for(rows.size(), static_cast<double>(rows.size()) * width * side * side, kWorkPerThread, [&](std::size_t r) {
    convolve_row(row_of, width, height, filter, radius, rows[r], &out.value[r * row], &out.magnitude[r * row]);
  });
  return out;
}

// The listed rows of the convolution of the picture `in` (width x height, row by row).
inline Expected convolve_rows(const std::vector<float>& in, int width, int height, const std::vector<float>& filter,
                              int radius, const std::vector<int>& rows) {
  if (in.size() != static_cast<std::size_t>(width) * height)
    throw std::invalid_argument("convolve_rows: the picture does not hold width x height pixels");
  const auto row_of = [&](int y) { return in.data() + static_cast<std::size_t>(y) * width; };
  return convolve_rows_of(row_of, width, height, filter, radius, rows);
}

// Every row of the picture.
inline Expected convolve(const std::vector<float>& in, int width, int height, const std::vector<float>& filter,
                         int radius) {
  std::vector<int> rows(height);
  for (int y = 0; y < height; ++y) rows[y] = y;
  return convolve_rows(in, width, height, filter, radius, rows);
}

// The rows of a width x height picture that the windows of some output rows read (y - r .. y + r
// of each, inside the picture), made by pixel(i), i = y * width + x, and none of the others: a
// check of a few dozen rows of a quarter-gigabyte picture then makes a few megabytes of it.
class PictureRows {
 public:
  template <class Pixel>
  PictureRows(int width, int height, int radius, const std::vector<int>& rows, const Pixel& pixel)
      : width_(width), height_(height), slot_(static_cast<std::size_t>(height), kNotMade) {
    std::vector<int> made;
    for (const int y : rows) {
      if (y < 0 || y >= height)
        throw std::invalid_argument("PictureRows: row " + std::to_string(y) + " is outside a picture of " +
                                    std::to_string(height) + " rows");
      for (int yy = std::max(0, y - radius); yy <= std::min(height - 1, y + radius); ++yy)
        if (slot_[yy] == kNotMade) {
          slot_[yy] = made.size();
          made.push_back(yy);
        }
    }
    const auto row = static_cast<std::size_t>(width);
    pixels_.resize(made.size() * row);
    kit::parallel_for(made.size(), static_cast<double>(pixels_.size()), kWorkPerThread, [&](std::size_t k) {
      const std::size_t first = static_cast<std::size_t>(made[k]) * row;
      for (std::size_t x = 0; x < row; ++x) pixels_[k * row + x] = pixel(first + x);
    });
  }

  int width() const { return width_; }
  int height() const { return height_; }
  // Row y (width pixels); throws std::out_of_range for a row that no listed row's window reads.
  const float* row(int y) const {
    if (y < 0 || y >= height_ || slot_[y] == kNotMade)
      throw std::out_of_range("PictureRows: row " + std::to_string(y) + " was not made");
    return pixels_.data() + slot_[y] * static_cast<std::size_t>(width_);
  }

 private:
  static constexpr std::size_t kNotMade = static_cast<std::size_t>(-1);
  int width_, height_;
  std::vector<std::size_t> slot_;  // for each row of the picture, its place in pixels_, or kNotMade
  std::vector<float> pixels_;
};

// The listed rows of the convolution of the rows made in `in` (which must hold their windows).
inline Expected convolve_rows(const PictureRows& in, const std::vector<float>& filter, int radius,
                              const std::vector<int>& rows) {
  return convolve_rows_of([&](int y) { return in.row(y); }, in.width(), in.height(), filter, radius, rows);
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
