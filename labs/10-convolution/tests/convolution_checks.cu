// Lab 10's checks that run on the GPU: counting the outputs of a timed call that are not finite,
// and comparing every pixel with the reference, which on the CPU would mean copying and convolving
// a quarter of a gigabyte for each checked call while the whole class waits for the GPU.
#include "convolution_checks.cuh"

#include "kit/device_count.cuh"

namespace convolution_checks {
namespace {

struct NotFinite {
  const float* data;
  __device__ bool operator()(std::size_t i) const { return !isfinite(data[i]); }
};

// Whether output pixel i is farther from the convolution in double than `units` times the sum of
// the magnitudes of its products: convolution_reference::convolve_row's arithmetic, in its order
// (a product of two floats is exact in double, so fused or not, every step rounds as the CPU's).
// The row's taps are counted from the first one inside the picture, in a loop left rolled: nvcc
// 13.0 at -O3 compiled the CPU's form (dx from max(-r, -x) to min(r, width - 1 - x)) into code that
// added taps past the picture's right edge (an H100 run on 2026-11-27; right at -G).
struct WrongPixel {
  const float* got;
  const float* picture;  // the judge's own copy of the input
  const float* filter;   // (2 radius + 1)^2 weights, row by row
  int width, height, radius;
  double units;
  __device__ bool operator()(std::size_t i) const {
    const int y = static_cast<int>(i / static_cast<std::size_t>(width));
    const int x = static_cast<int>(i - static_cast<std::size_t>(y) * width);
    const int side = 2 * radius + 1;
    const int dy_first = max(-radius, -y), dy_last = min(radius, height - 1 - y);
    const int dx_first = max(-radius, -x), taps = min(radius, width - 1 - x) - dx_first + 1;
    double sum = 0.0, abs_sum = 0.0;
    for (int dy = dy_first; dy <= dy_last; ++dy) {
      const float* pixels = picture + static_cast<std::size_t>(y + dy) * width + (x + dx_first);
      const float* weights = filter + (dy + radius) * side + (radius + dx_first);
#pragma unroll 1
      for (int k = 0; k < taps; ++k) {
        const double product = static_cast<double>(weights[k]) * pixels[k];
        sum += product;
        abs_sum += fabs(product);
      }
    }
    return !(fabs(static_cast<double>(got[i]) - sum) <= units * abs_sum);
  }
};

// WrongPixel at the pixels `positions` (device memory) lists: index j stands for pixel positions[j].
struct WrongPixelAt {
  const std::size_t* positions;
  WrongPixel wrong;
  __device__ bool operator()(std::size_t j) const { return wrong(positions[j]); }
};

// `find(wrong)` with the WrongPixel of d_out: the picture made again in the judge's own device
// memory, with the runner stopped while that copy exists.
template <class Find>
kit::Found with_wrong_pixel(const float* d_out, const kit::Rng& picture, float low, float high, const Size& size,
                            const std::vector<float>& filter, int radius, double units, const Find& find) {
  const std::size_t pixels = size.pixels();
  const kit::remote::JudgeAlone alone("the check of the picture");
  kit::DeviceBuffer<float> d_picture(pixels);
  kit::fill_uniform_floats(d_picture.data(), pixels, picture, low, high);
  const kit::DeviceBuffer<float> d_filter(filter);
  return find(WrongPixel{d_out, d_picture.data(), d_filter.data(), size.width, size.height, radius, units});
}

}  // namespace

kit::Found find_wrong_pixels(const float* d_out, const kit::Rng& picture, float low, float high, const Size& size,
                             const std::vector<float>& filter, int radius, double units) {
  return with_wrong_pixel(d_out, picture, low, high, size, filter, radius, units,
                          [&](const WrongPixel& wrong) { return kit::find_where(size.pixels(), wrong); });
}

kit::Found find_wrong_pixels_at(const float* d_out, const kit::Rng& picture, float low, float high, const Size& size,
                                const std::vector<float>& filter, int radius, double units,
                                const std::vector<std::size_t>& positions) {
  if (positions.empty()) return {0, kit::kNotFound};
  const kit::DeviceBuffer<std::size_t> d_positions(positions);
  kit::Found found = with_wrong_pixel(d_out, picture, low, high, size, filter, radius, units, [&](const WrongPixel& wrong) {
    return kit::find_where(positions.size(), WrongPixelAt{d_positions.data(), wrong});
  });
  if (found.count > 0) found.first = positions[found.first];
  return found;
}

std::size_t count_not_finite(const float* d_data, std::size_t count) {
  return kit::count_where(count, NotFinite{d_data});
}

}  // namespace convolution_checks
