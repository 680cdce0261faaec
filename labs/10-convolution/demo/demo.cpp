// Lab 10 demo: convolves a picture with a few classic filters using your convolution.cu, and
// writes what came out as PNG (to look at) and PGM (the plain format the demo also reads).
//
//   10-convolution-demo <output folder> [picture.pgm or picture.ppm]
//
// Without a picture it makes one. `make 10-convolution-demo` runs it with the output folder
// build/10-convolution/demo. (The picture files are lab 02's: labs/02-picture-kernel/demo/.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "convolution.cuh"
#include "kit/cuda_check.cuh"
#include "kit/device.hpp"
#include "kit/device_buffer.cuh"
#include "picture_files.hpp"
#include "tests/convolution_reference.hpp"

namespace {

using picture_files::Picture;
using Bytes = std::vector<std::uint8_t>;

constexpr int kSampleWidth = 768, kSampleHeight = 512;

// A filter to show, and how to turn its (possibly negative) output into a gray byte.
struct DemoFilter {
  std::string name;
  int radius;
  std::vector<float> weights;
  std::function<float(float)> to_gray;  // output value -> brightness in [0, 1]
};

float as_is(float v) { return v; }
float magnitude(float v) { return std::fabs(v); }
float around_middle(float v) { return 0.5f + 0.5f * v; }  // negative darker than mid-gray, positive lighter

std::vector<DemoFilter> demo_filters() {
  std::vector<DemoFilter> filters;
  // Gaussian blur, sigma 2.5, the largest radius: weights that add up to 1 keep the brightness.
  {
    const int r = kMaxFilterRadius, side = 2 * r + 1;
    std::vector<float> w(side * side);
    double total = 0.0;
    for (int dy = -r; dy <= r; ++dy)
      for (int dx = -r; dx <= r; ++dx) {
        w[(dy + r) * side + dx + r] = std::exp(-(dx * dx + dy * dy) / (2 * 2.5f * 2.5f));
        total += w[(dy + r) * side + dx + r];
      }
    for (float& v : w) v = static_cast<float>(v / total);
    filters.push_back({"gaussian_r7", r, w, as_is});
  }
  // Motion blur: one row of 15 equal weights, a horizontal smear.
  {
    const int r = kMaxFilterRadius, side = 2 * r + 1;
    std::vector<float> w(side * side, 0.0f);
    for (int dx = 0; dx < side; ++dx) w[r * side + dx] = 1.0f / side;
    filters.push_back({"motion_r7", r, w, as_is});
  }
  filters.push_back({"sharpen_r1", 1, {0, -1, 0, -1, 5, -1, 0, -1, 0}, as_is});
  // Laplacian: zero on flat areas, large at edges whatever their direction.
  filters.push_back({"edges_r1", 1, {-1, -1, -1, -1, 8, -1, -1, -1, -1}, magnitude});
  // Sobel in x: how fast brightness changes from left to right; vertical edges light or dark.
  filters.push_back({"sobel_x_r1", 1, {-1, 0, 1, -2, 0, 2, -1, 0, 1}, around_middle});
  return filters;
}

// Gray shapes with sharp edges, fine detail and smooth parts: a gradient, a disc, a ring, a
// square turned 45 degrees, stripes of several widths and a checkerboard.
std::vector<float> sample_picture(int width, int height) {
  std::vector<float> picture(static_cast<std::size_t>(width) * height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const float u = static_cast<float>(x) / width, v = static_cast<float>(y) / height;
      float value = 0.15f + 0.35f * u;  // a left-to-right gradient
      const float dx = x - 0.22f * width, dy = y - 0.35f * height, d = std::sqrt(dx * dx + dy * dy);
      if (d < 0.16f * height) value = 0.95f;                              // a disc
      if (std::fabs(d - 0.24f * height) < 0.015f * height) value = 0.9f;  // a ring round it
      if (std::fabs(x - 0.6f * width) + std::fabs(y - 0.35f * height) < 0.2f * height) value = 0.05f;  // a diamond
      if (v > 0.7f && u < 0.5f) value = (x / (1 + static_cast<int>(u * 16))) % 2 ? 0.9f : 0.1f;  // stripes, 1 to 8 px
      if (v > 0.7f && u >= 0.5f) value = ((x / 8) + (y / 8)) % 2 ? 0.8f : 0.2f;                  // a checkerboard
      picture[static_cast<std::size_t>(y) * width + x] = value;
    }
  return picture;
}

std::vector<float> to_floats(const Picture& picture) {
  std::vector<float> gray(static_cast<std::size_t>(picture.width) * picture.height);
  for (std::size_t p = 0; p < gray.size(); ++p) {
    float sum = 0.0f;
    for (int c = 0; c < picture.channels; ++c) sum += picture.bytes[p * picture.channels + c];
    gray[p] = sum / (255.0f * picture.channels);
  }
  return gray;
}

Picture to_picture(const std::vector<float>& values, int width, int height,
                   const std::function<float(float)>& to_gray) {
  Picture picture{width, height, 1, Bytes(values.size())};
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = to_gray(values[i]);
    picture.bytes[i] = std::isfinite(v) ? static_cast<std::uint8_t>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f) : 0;
  }
  return picture;
}

void save_both(const std::string& folder, const std::string& name, const Picture& picture) {
  picture_files::save(folder + "/" + name + ".png", picture);
  picture_files::save(folder + "/" + name + ".pgm", picture);
  std::printf("  wrote %s/%s.png and %s.pgm\n", folder.c_str(), name.c_str(), name.c_str());
}

// One line on how a result compares with the CPU reference, within the tests' tolerance.
void report(const std::string& what, const std::vector<float>& got, const std::vector<float>& picture, int width,
            int height, const DemoFilter& filter) {
  const convolution_reference::Expected expected =
      convolution_reference::convolve(picture, width, height, filter.weights, filter.radius);
  const int side = 2 * filter.radius + 1;
  const double gamma = convolution_reference::float_sum_gamma(side * side);
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - expected.value[i]) <= gamma * expected.magnitude[i]) && wrong++ == 0) first = i;
  if (wrong == 0)
    std::printf("%s: matches the CPU reference\n", what.c_str());
  else
    std::printf(
        "%s: %zu of %zu pixels differ from the CPU reference; the first at (row %zu, col %zu): expected %g, "
        "got %g\n",
        what.c_str(), wrong, got.size(), first / width, first % width, expected.value[first], got[first]);
}

void run(const std::string& folder, const std::vector<float>& picture, int width, int height) {
  save_both(folder, "input", to_picture(picture, width, height, as_is));
  if (!kit::device_info().available)
    throw std::runtime_error("no CUDA GPU available (" + kit::device_info().why_not +
                             "): the demo runs your kernels, so it needs one");
  kit::DeviceBuffer<float> d_in(picture), d_out(picture.size());
  for (const DemoFilter& filter : demo_filters()) {
    upload_filter(filter.weights.data(), filter.radius);
    const std::pair<const char*, decltype(&launch_convolve_tiled)> kernels[] = {{"naive", launch_convolve_naive},
                                                                                {"tiled", launch_convolve_tiled}};
    for (const auto& [kernel, launch] : kernels) {
      // Outputs start as NaN, drawn black: a kernel that writes nothing leaves its picture black.
      d_out.poison();
      launch(d_in.data(), d_out.data(), width, height, filter.radius);
      CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<float> got = d_out.download();
      report(filter.name + ", " + kernel + " kernel", got, picture, width, height, filter);
      save_both(folder, filter.name + "_" + kernel, to_picture(got, width, height, filter.to_gray));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <output folder> [picture.pgm or picture.ppm]\n", argv[0]);
    return 2;
  }
  try {
    int width = kSampleWidth, height = kSampleHeight;
    std::vector<float> picture;
    if (argc == 3) {
      const Picture loaded = picture_files::load(argv[2]);
      width = loaded.width;
      height = loaded.height;
      picture = to_floats(loaded);
    } else {
      picture = sample_picture(width, height);
    }
    std::printf("Picture: %d x %d pixels%s\n", width, height, argc == 3 ? "" : " (generated)");
    std::filesystem::create_directories(argv[1]);
    run(argv[1], picture, width, height);
    std::printf("Open the .png files in any image viewer or browser.\n");
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "The demo stopped: %s\n", error.what());
    return 1;
  }
}
