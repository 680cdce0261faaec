// Lab 02 checks shared by the public and the hidden tests: inputs, buffers with guard zones,
// and the comparisons with the CPU reference (picture_reference.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kit/kit.cuh"
#include "kit/picture.hpp"
#include "picture_kernel.cuh"
#include "picture_reference.hpp"

namespace picture_checks {

using Bytes = std::vector<std::uint8_t>;

inline const std::string kLookAtScale = "scale_picture_kernel and launch_scale_picture in picture_kernel.cu";
inline const std::string kLookAtScaleGuard =
    "the bounds check in scale_picture_kernel: a thread whose column is width or more, or whose row is "
    "height or more, must not write";
inline const std::string kLookAtGray = "rgb_to_gray_kernel and launch_rgb_to_gray in picture_kernel.cu";
inline const std::string kLookAtGrayColours =
    "the colour indices and the weights in rgb_to_gray_kernel: pixel p's red, green and blue are bytes "
    "3p, 3p + 1 and 3p + 2";
inline const std::string kLookAtGrayGuard =
    "the bounds check in rgb_to_gray_kernel: no thread may write at or past pixel width * height";
inline const std::string kLookAtBlur = "box_blur_kernel and launch_box_blur in picture_kernel.cu";
inline const std::string kLookAtBlurEdges =
    "the count in box_blur_kernel: near an edge or a corner the window holds fewer pixels, so divide by "
    "how many of them lie inside the picture, not by (2 radius + 1)^2";
inline const std::string kLookAtBlurGuard =
    "the bounds check in box_blur_kernel: a thread whose column is width or more, or whose row is height "
    "or more, must not write";

using Size = kit::PictureSize;

// Elements after each output (and after each input, so that an unguarded thread reads
// defined memory): enough rows for any block that sticks out past the bottom edge.
inline std::size_t guard_size(const Size& size) {
  return static_cast<std::size_t>(kit::param_int("guard_rows")) * static_cast<std::size_t>(size.width) +
         static_cast<std::size_t>(kit::param_int("guard_extra"));
}

// The tests' random pictures, a fresh stream for each size and kind of input.
inline std::vector<float> random_float_picture(const Size& size) {
  return kit::Rng::for_case("float picture " + size.text()).uniform_floats(size.pixels(), 0.0f, 1.0f);
}
inline Bytes random_bytes(const std::string& what, std::size_t count) {
  return kit::Rng::for_case(what).uniform_bytes(count);
}

namespace detail {

// Logs each got[i] more than byte_abs_tol away from expected[i], as the pixel at place(i) of the
// picture; a size mismatch is logged once instead. Bytes, where kit::detail::log_outside would
// need the expected pixels as doubles: eight times the memory, on pictures of 33 million pixels.
template <class Place>
void log_bytes_outside(const Bytes& got, const Bytes& expected, Place place, kit::detail::MismatchLog& log) {
  const int tolerance = static_cast<int>(kit::param_int("byte_abs_tol"));
  if (got.size() != expected.size()) {
    log.add(0, false, [&] {
      return std::pair{std::to_string(expected.size()) + " pixels", std::to_string(got.size()) + " pixels"};
    });
    return;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const int difference = static_cast<int>(got[i]) - static_cast<int>(expected[i]);
    if (difference > tolerance || difference < -tolerance)
      log.add(place(i), kit::is_poison(got[i]), [&] {
        return std::pair{std::to_string(expected[i]), kit::detail::show(got[i])};
      });
  }
}

}  // namespace detail

// Every byte of `got` within byte_abs_tol of `expected`.
inline bool expect_bytes_near(const Bytes& got, const Bytes& expected, const kit::CaseContext& context) {
  kit::detail::MismatchLog log(expected.size());
  detail::log_bytes_outside(got, expected, [](std::size_t i) { return i; }, log);
  return log.report("result", context);
}

// expect_bytes_near for a picture of `pixels` pixels checked at `positions` only: got[i] and
// expected[i] are its pixels at positions[i], and a mismatch is reported at its place in the
// whole picture (as kit::expect_close_at does for floats).
inline bool expect_bytes_near_at(const Bytes& got, const Bytes& expected, const std::vector<std::size_t>& positions,
                                 std::size_t pixels, const kit::CaseContext& context) {
  kit::detail::MismatchLog log(positions.size(), pixels);
  detail::log_bytes_outside(got, expected, [&](std::size_t i) { return positions.at(i); }, log);
  return log.report("result", context);
}

// A byte picture of `pixels` pixels in device memory compared with expected_pixel(p), the CPU
// reference for pixel p, at check_samples positions drawn at random and at both ends, read on
// the GPU: for a timed call's output, too large to make again and compare in full while the
// class waits for the GPU (kit::sample_positions says why a sample is enough; the poison check
// still covers every pixel).
template <class ExpectedPixel>
bool expect_bytes_near_at_samples(const std::uint8_t* d_picture, std::size_t pixels, ExpectedPixel expected_pixel,
                                  const kit::CaseContext& context) {
  const auto positions = kit::sample_positions(pixels, static_cast<std::size_t>(kit::param_int("check_samples")));
  Bytes expected(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) expected[i] = expected_pixel(positions[i]);
  return expect_bytes_near_at(kit::gather(d_picture, positions), expected, positions, pixels, context);
}

// The bytes in [low, high] of the stream `rng`: fill writes the first `count` of them on the GPU,
// and byte i is made again on the CPU on its own (Rng::uniform_byte_at), so a check makes only
// the input bytes that its sampled pixels need.
struct StreamBytes {
  kit::Rng rng;
  int low = 0, high = 255;
  void fill(std::uint8_t* d_out, std::size_t count) const { kit::fill_uniform_bytes(d_out, count, rng, low, high); }
  std::uint8_t operator()(std::size_t i) const { return rng.uniform_byte_at(i, low, high); }
};

// Every byte of a guard zone still holds `fill` (the second run's fill; the first run's is the
// poison, checked by kit::expect_guard_untouched).
inline bool expect_fill_kept(const Bytes& guard, int fill, std::size_t first_index, const kit::CaseContext& context) {
  kit::detail::MismatchLog log(guard.size());
  for (std::size_t i = 0; i < guard.size(); ++i)
    if (guard[i] != fill)
      log.add(first_index + i, false, [&] {
        return std::pair{"untouched (still " + std::to_string(fill) + ", past the end)", std::to_string(guard[i])};
      });
  return log.report("memory past the end of the output", context);
}

// Runs `launch(d_out)` on a byte output of size.pixels() followed by a guard zone, and checks
// the picture against `expected` and that the guard is untouched. Twice: first with the output
// and guard filled with the poison (171), then with second_fill (84), because 171 is a valid
// gray, so one fill alone would hide an unwritten pixel whose right value is near 171.
template <class Launch>
bool check_byte_output(Launch&& launch, const Bytes& expected, const Size& size, const std::string& input,
                       const std::string& look_at, const std::string& look_at_guard) {
  const std::size_t n = size.pixels();
  kit::DeviceBuffer<std::uint8_t> d_out(n + guard_size(size));
  const int fills[2] = {kit::poison_byte<std::uint8_t>(), static_cast<int>(kit::param_int("second_fill"))};
  for (int run = 0; run < 2; ++run) {
    CUDA_CHECK(cudaMemset(d_out.data(), fills[run], d_out.bytes()));
    launch(d_out.data());
    CUDA_CHECK(cudaDeviceSynchronize());
    const Bytes all = d_out.download();
    const Bytes picture(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    const Bytes past_end(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
    const std::string fill = std::to_string(fills[run]);
    const std::string text = run == 0 ? input
                                      : input + ", run again on an output filled with " + fill +
                                            " instead of the poison 171 (a pixel that still shows " + fill +
                                            " was never written)";
    bool ok = expect_bytes_near(picture, expected, {text, look_at, static_cast<std::size_t>(size.width)});
    const kit::CaseContext guard_context{text, look_at_guard, static_cast<std::size_t>(size.width)};
    ok = (run == 0 ? kit::expect_guard_untouched(past_end, n, guard_context)
                   : expect_fill_kept(past_end, fills[run], n, guard_context)) &&
         ok;
    if (!ok) return false;  // one report is enough
  }
  return true;
}

// ---- Part 1 ----------------------------------------------------------------------------------

// launch_scale_picture on a random picture (NaN-poisoned output, guard zones after both).
inline bool check_scale(const Size& size, const std::string& input, const std::string& look_at = kLookAtScale) {
  const std::size_t n = size.pixels(), guard = guard_size(size);
  std::vector<float> in = random_float_picture(size);
  const float factor = kit::Rng::for_case("factor " + size.text()).uniform_floats(1, 0.25f, 4.0f)[0];
  const std::vector<double> expected = picture_reference::scale(in, factor);
  in.resize(n + guard, 1.0f);  // finite, so that an unguarded write past the end cannot look like poison
  kit::DeviceBuffer<float> d_in(in), d_out(n + guard);
  d_out.poison();
  launch_scale_picture(d_in.data(), d_out.data(), size.width, size.height, factor);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> all = d_out.download();
  const std::vector<float> picture(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
  const std::vector<float> past_end(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
  const auto row = static_cast<std::size_t>(size.width);
  const bool ok = kit::expect_close(picture, expected, {kit::param_double("scale_rel_tol"), 0.0}, {input, look_at, row});
  return kit::expect_guard_untouched(past_end, n, {input, kLookAtScaleGuard, row}) && ok;
}

// ---- Part 2 ----------------------------------------------------------------------------------

// launch_rgb_to_gray on the given colour bytes (3 per pixel).
inline bool check_gray_of(const Bytes& rgb, const Size& size, const std::string& input,
                          const std::string& look_at = kLookAtGray) {
  const Bytes expected = picture_reference::gray(rgb);
  Bytes padded = rgb;
  padded.resize(rgb.size() + 3 * guard_size(size), 0);  // defined bytes for unguarded reads past the end
  kit::DeviceBuffer<std::uint8_t> d_rgb(padded);
  return check_byte_output([&](std::uint8_t* d_gray) { launch_rgb_to_gray(d_rgb.data(), d_gray, size.width, size.height); },
                           expected, size, input, look_at, kLookAtGrayGuard);
}

// launch_rgb_to_gray on random colours.
inline bool check_gray(const Size& size, const std::string& input, const std::string& look_at = kLookAtGray) {
  return check_gray_of(random_bytes("colours " + size.text(), 3 * size.pixels()), size, input, look_at);
}

// ---- Part 3 ----------------------------------------------------------------------------------

// launch_box_blur on the given gray picture.
inline bool check_blur_of(const Bytes& picture, const Size& size, int radius, const std::string& input,
                          const std::string& look_at = kLookAtBlur) {
  const Bytes expected = picture_reference::box_blur(picture, size.width, size.height, radius);
  Bytes padded = picture;
  padded.resize(picture.size() + guard_size(size), 0);
  kit::DeviceBuffer<std::uint8_t> d_in(padded);
  const std::string text = input + ", radius " + std::to_string(radius);
  return check_byte_output(
      [&](std::uint8_t* d_out) { launch_box_blur(d_in.data(), d_out, size.width, size.height, radius); }, expected,
      size, text, look_at, kLookAtBlurGuard);
}

// launch_box_blur on a random gray picture.
inline bool check_blur(const Size& size, int radius, const std::string& input, const std::string& look_at = kLookAtBlur) {
  return check_blur_of(random_bytes("gray " + size.text(), size.pixels()), size, radius, input, look_at);
}

}  // namespace picture_checks
