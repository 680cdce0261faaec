// Lab 02 demo: runs the three kernels of your picture_kernel.cu on a picture and writes what
// they made, as PNG (to look at) and PPM / PGM (the plain format the demo also reads).
//
//   02-picture-kernel-demo <output folder> [picture.ppm or picture.pgm]
//
// Without a picture it makes one. `make 02-picture-kernel-demo` runs it with the output folder
// build/02-picture-kernel/demo.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "demo/picture_files.hpp"
#include "kit/cuda_check.cuh"
#include "kit/device.hpp"
#include "kit/device_buffer.cuh"
#include "picture_kernel.cuh"
#include "tests/picture_reference.hpp"

namespace {

using picture_files::Picture;
using Bytes = std::vector<std::uint8_t>;

constexpr float kScaleFactor = 0.5f;        // part 1: half as bright
constexpr int kBlurRadii[] = {2, 8, 24};    // part 3: a little, clearly, and a lot
constexpr int kSampleWidth = 768, kSampleHeight = 512;

float mix(float a, float b, float t) { return a + (b - a) * t; }

// A landscape at sunset: a sky from blue to orange, a sun, two ranges of hills, a lake with
// ripples, and along the bottom a strip of test patches (black, white, red, green, blue),
// one-pixel stripes and a fine checkerboard, which show what the blur does to sharp edges.
Picture sample_picture(int width, int height) {
  Picture picture{width, height, 3, Bytes(static_cast<std::size_t>(width) * height * 3)};
  const float horizon = 0.72f, strip = 0.88f;
  auto sky = [&](float v, float* rgb) {
    const float t = std::pow(std::min(v / horizon, 1.0f), 1.5f);
    rgb[0] = mix(30, 250, t), rgb[1] = mix(60, 150, t), rgb[2] = mix(140, 70, t);
  };
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const float u = static_cast<float>(x) / width, v = static_cast<float>(y) / height;
      float rgb[3];
      sky(v, rgb);
      const float dx = (u - 0.68f) * width / height, dy = v - 0.40f, d = std::sqrt(dx * dx + dy * dy);
      if (d < 0.07f) {
        rgb[0] = 255, rgb[1] = 225, rgb[2] = 120;  // the sun
      } else if (d < 0.25f) {
        const float glow = (1 - d / 0.25f) * (1 - d / 0.25f);
        rgb[0] += (255 - rgb[0]) * glow, rgb[1] += (200 - rgb[1]) * glow * 0.7f;
      }
      if (v > 0.50f + 0.06f * std::sin(6.3f * u + 1) + 0.025f * std::sin(19 * u))  // far hills
        rgb[0] = 95, rgb[1] = 80, rgb[2] = 125;
      if (v > 0.60f + 0.05f * std::sin(4.1f * u + 2) + 0.02f * std::sin(27 * u)) {  // near hills
        const float shade = 1.2f - v;
        rgb[0] = 45 * shade, rgb[1] = 125 * shade, rgb[2] = 55 * shade;
      }
      if (v > horizon) {  // the lake mirrors the sky, darker, with ripples
        sky(2 * horizon - v, rgb);
        const float ripple = 0.75f + 0.12f * std::sin(v * 900 + 3 * std::sin(u * 40));
        for (float& c : rgb) c *= ripple;
      }
      if (v > strip) {
        const int patch = x * 10 / width;  // ten patches along the strip
        static const float colours[5][3] = {{0, 0, 0}, {255, 255, 255}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
        if (patch < 5) {
          for (int c = 0; c < 3; ++c) rgb[c] = colours[patch][c];
        } else if (patch < 7) {
          const float c = x % 2 ? 255 : 0;  // one-pixel stripes
          rgb[0] = rgb[1] = rgb[2] = c;
        } else {
          const float c = ((x / 4) + (y / 4)) % 2 ? 230 : 20;  // a checkerboard of 4 x 4 squares
          rgb[0] = rgb[1] = rgb[2] = c;
        }
      }
      for (int c = 0; c < 3; ++c)
        picture.bytes[(static_cast<std::size_t>(y) * width + x) * 3 + c] =
            static_cast<std::uint8_t>(std::clamp(rgb[c], 0.0f, 255.0f) + 0.5f);
    }
  }
  return picture;
}

// A gray picture as colour, so a PGM input works too.
Picture as_colour(const Picture& picture) {
  if (picture.channels == 3) return picture;
  Picture colour{picture.width, picture.height, 3, Bytes(picture.bytes.size() * 3)};
  for (std::size_t p = 0; p < picture.bytes.size(); ++p)
    for (int c = 0; c < 3; ++c) colour.bytes[3 * p + c] = picture.bytes[p];
  return colour;
}

std::uint8_t to_byte(float value) {  // [0, 1] to 0..255; NaN and negatives to black
  if (!(value > 0.0f)) return 0;
  return static_cast<std::uint8_t>(std::min(value, 1.0f) * 255.0f + 0.5f);
}

// One line on how a result compares with the CPU reference (within 1, as the tests accept).
void report(const std::string& what, const Bytes& got, const Bytes& expected, int width) {
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::abs(static_cast<int>(got[i]) - static_cast<int>(expected[i])) > 1 && wrong++ == 0) first = i;
  if (wrong == 0) {
    std::printf("%s: matches the CPU reference\n", what.c_str());
  } else {
    std::printf("%s: %zu of %zu pixels differ from the CPU reference; the first at (row %zu, col %zu): "
                "expected %d, got %d\n",
                what.c_str(), wrong, got.size(), first / width, first % width, expected[first], got[first]);
  }
}

void save_both(const std::string& folder, const std::string& name, const Picture& picture) {
  const std::string plain = picture.channels == 1 ? ".pgm" : ".ppm";
  picture_files::save(folder + "/" + name + ".png", picture);
  picture_files::save(folder + "/" + name + plain, picture);
  std::printf("  wrote %s/%s.png and %s%s\n", folder.c_str(), name.c_str(), name.c_str(), plain.c_str());
}

void run(const std::string& folder, const Picture& colour) {
  const int width = colour.width, height = colour.height;
  const std::size_t n = static_cast<std::size_t>(width) * height;
  save_both(folder, "input", colour);
  if (!kit::device_info().available)
    throw std::runtime_error("no CUDA GPU available (" + kit::device_info().why_not +
                             "): the demo runs your kernels, so it needs one");

  // Part 2 comes first: the other parts work on the gray picture. They get the CPU's gray, so
  // that each part's picture shows that part alone. Outputs start black (zero): a kernel that
  // writes nothing leaves its picture black.
  const Bytes gray = picture_reference::gray(colour.bytes);
  {
    kit::DeviceBuffer<std::uint8_t> d_rgb(colour.bytes), d_gray(n);
    CUDA_CHECK(cudaMemset(d_gray.data(), 0, d_gray.bytes()));
    launch_rgb_to_gray(d_rgb.data(), d_gray.data(), width, height);
    CUDA_CHECK(cudaDeviceSynchronize());
    const Bytes got = d_gray.download();
    report("part 2, rgb_to_gray", got, gray, width);
    save_both(folder, "gray", {width, height, 1, got});
  }
  {
    std::vector<float> light(n);
    for (std::size_t i = 0; i < n; ++i) light[i] = gray[i] / 255.0f;
    kit::DeviceBuffer<float> d_light(light), d_scaled(n);
    CUDA_CHECK(cudaMemset(d_scaled.data(), 0, d_scaled.bytes()));
    launch_scale_picture(d_light.data(), d_scaled.data(), width, height, kScaleFactor);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = d_scaled.download();
    Bytes got_bytes(n), expected_bytes(n);
    for (std::size_t i = 0; i < n; ++i) {
      got_bytes[i] = to_byte(got[i]);
      expected_bytes[i] = to_byte(light[i] * kScaleFactor);
    }
    report("part 1, scale_picture (factor " + std::to_string(kScaleFactor).substr(0, 3) + ")", got_bytes,
           expected_bytes, width);
    save_both(folder, "scaled", {width, height, 1, got_bytes});
  }
  kit::DeviceBuffer<std::uint8_t> d_gray(gray), d_blurred(n);
  for (const int radius : kBlurRadii) {
    CUDA_CHECK(cudaMemset(d_blurred.data(), 0, d_blurred.bytes()));
    launch_box_blur(d_gray.data(), d_blurred.data(), width, height, radius);
    CUDA_CHECK(cudaDeviceSynchronize());
    const Bytes got = d_blurred.download();
    report("part 3, box_blur radius " + std::to_string(radius), got,
           picture_reference::box_blur(gray, width, height, radius), width);
    save_both(folder, "blur_r" + std::to_string(radius), {width, height, 1, got});
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <output folder> [picture.ppm or picture.pgm]\n", argv[0]);
    return 2;
  }
  try {
    const Picture colour = argc == 3 ? as_colour(picture_files::load(argv[2])) : sample_picture(kSampleWidth, kSampleHeight);
    std::printf("Picture: %d x %d pixels%s\n", colour.width, colour.height, argc == 3 ? "" : " (generated)");
    std::filesystem::create_directories(argv[1]);
    run(argv[1], colour);
    std::printf("Open the .png files in any image viewer or browser.\n");
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "The demo stopped: %s\n", error.what());
    return 1;
  }
}
