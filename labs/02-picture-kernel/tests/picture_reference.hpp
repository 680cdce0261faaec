// Lab 02 CPU references, used by the tests and by the demo. Plain C++: no GPU, no test framework.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace picture_reference {

using Bytes = std::vector<std::uint8_t>;

// Part 1 in double: each product is exact there (two 24-bit significands need 48 bits).
inline std::vector<double> scale(const std::vector<float>& in, float factor) {
  std::vector<double> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = static_cast<double>(in[i]) * factor;
  return out;
}

// Part 2, exactly as the header defines it: BT.601 luma in thousandths, rounded halves up.
inline std::uint8_t luma(unsigned red, unsigned green, unsigned blue) {
  return static_cast<std::uint8_t>((299 * red + 587 * green + 114 * blue + 500) / 1000);
}

// Pixel p's gray, from the colours given byte by byte: colour(i) is byte i of the interleaved
// colours. Both the whole picture (gray) and the few pixels a timed call is checked at use it.
template <class Colour>
std::uint8_t gray_pixel(const Colour& colour, std::size_t p) {
  return luma(colour(3 * p), colour(3 * p + 1), colour(3 * p + 2));
}

inline Bytes gray(const Bytes& rgb) {
  const auto colour = [&](std::size_t i) { return rgb[i]; };
  Bytes out(rgb.size() / 3);
  for (std::size_t p = 0; p < out.size(); ++p) out[p] = gray_pixel(colour, p);
  return out;
}

// Part 3 for the pixel in column x of row y: the mean of its window, the pixels of the
// (2r + 1) x (2r + 1) square centred on it that lie inside the picture, rounded halves up.
// window_sum(x0, y0, x1, y1) gives the sum of the input pixels in columns [x0, x1) of rows
// [y0, y1). The one definition of the window, its count and the rounding: box_blur takes the
// sums from a summed-area table, box_blur_pixel adds the window up.
template <class WindowSum>
std::uint8_t blurred_pixel(int width, int height, int radius, long long x, long long y, const WindowSum& window_sum) {
  const long long r = radius;
  const long long x0 = std::max(x - r, 0LL), x1 = std::min(x + r, width - 1LL) + 1;
  const long long y0 = std::max(y - r, 0LL), y1 = std::min(y + r, height - 1LL) + 1;
  const std::uint32_t sum = window_sum(x0, y0, x1, y1);
  const auto count = static_cast<std::uint32_t>((x1 - x0) * (y1 - y0));
  return static_cast<std::uint8_t>((static_cast<std::uint64_t>(sum) + count / 2) / count);
}

// The whole picture, every window's sum from a summed-area table S, where S(x, y) is the sum of
// the pixels above and left of (x, y): O(1) per pixel whatever the radius. S is kept in unsigned
// 32-bit arithmetic, which wraps around past 2^32 on large pictures; a window's sum, as
// S(x1, y1) - S(x0, y1) - S(x1, y0) + S(x0, y0), is still right modulo 2^32, and the true sum
// is below 2^32 (the header allows windows of up to 2^23 pixels), so it comes out exact.
inline Bytes box_blur(const Bytes& in, int width, int height, int radius) {
  const std::size_t w = static_cast<std::size_t>(width), h = static_cast<std::size_t>(height);
  std::vector<std::uint32_t> table((w + 1) * (h + 1), 0);
  for (std::size_t y = 0; y < h; ++y) {
    std::uint32_t row = 0;
    for (std::size_t x = 0; x < w; ++x) {
      row += in[y * w + x];
      table[(y + 1) * (w + 1) + x + 1] = table[y * (w + 1) + x + 1] + row;
    }
  }
  const auto at = [&](long long tx, long long ty) { return table[ty * (width + 1LL) + tx]; };
  const auto window_sum = [&](long long x0, long long y0, long long x1, long long y1) {
    return at(x1, y1) - at(x0, y1) - at(x1, y0) + at(x0, y0);
  };
  Bytes out(w * h);
  for (long long y = 0; y < height; ++y)
    for (long long x = 0; x < width; ++x) out[y * w + x] = blurred_pixel(width, height, radius, x, y, window_sum);
  return out;
}

// One pixel, from the input given pixel by pixel: pixel(i) is input pixel i, row-major. Adds
// its window up, (2r + 1)^2 pixels at most: for checking a few pixels of a picture too large to
// make again and blur in full (a timed call's). The sum is exact: at most 2^23 pixels of 255.
template <class Pixel>
std::uint8_t box_blur_pixel(const Pixel& pixel, int width, int height, int radius, long long x, long long y) {
  return blurred_pixel(width, height, radius, x, y, [&](long long x0, long long y0, long long x1, long long y1) {
    std::uint32_t sum = 0;
    for (long long wy = y0; wy < y1; ++wy)
      for (long long wx = x0; wx < x1; ++wx) sum += pixel(static_cast<std::size_t>(wy * width + wx));
    return sum;
  });
}

}  // namespace picture_reference
