// Lab 02 public tests: the ones you can run yourself (make 02-picture-kernel).
#include "picture_checks.cuh"

using namespace picture_checks;

// ---- Part 1: scale ---------------------------------------------------------------------------

TEST_CASE("scale_picture: the classic 76x62 picture on 16x16 blocks") {
  const Size size = kit::picture_size("classic_size");
  check_scale(size, size.describe() + ", covered by 5 x 4 blocks that stick out past the right and bottom edges");
}

TEST_CASE("scale_picture: one pixel and pictures one pixel wide or tall") {
  for (const Size& size : kit::picture_sizes("line_sizes")) check_scale(size, size.describe());
}

TEST_CASE("scale_picture: nothing written past the last row") {
  const Size size = kit::picture_size("scale_guard_size");
  check_scale(size, size.describe() + ": the last row of blocks has threads below the picture");
}

// ---- Part 2: grayscale -----------------------------------------------------------------------

TEST_CASE("rgb_to_gray: black white and the pure primary colours") {
  // One row of 7 pixels: black, white, red, green, blue, and two mixes.
  const Bytes rgb = {0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 128, 0, 12, 200, 90};
  const Size size{7, 1};
  check_gray_of(rgb, size, "one row of 7 pixels: black, white, pure red, pure green, pure blue, orange, teal",
                kLookAtGrayColours);
}

TEST_CASE("rgb_to_gray: a small non-square picture") {
  const Size size = kit::picture_size("gray_small_size");
  check_gray(size, size.describe());
}

TEST_CASE("rgb_to_gray: one pixel and pictures one pixel wide or tall") {
  for (const Size& size : kit::picture_sizes("line_sizes")) check_gray(size, size.describe());
}

TEST_CASE("rgb_to_gray: a large picture") {
  const Size size = kit::picture_size("gray_large_size");
  check_gray(size, size.describe("large"));
}

TEST_CASE("rgb_to_gray: nothing written past the end") {
  const Size size = kit::picture_size("gray_guard_size");
  check_gray(size, size.describe() + ", not a multiple of any block size");
}

// ---- Part 3: box blur ------------------------------------------------------------------------

TEST_CASE("box_blur: radius 0 leaves the picture unchanged") {
  const Size size = kit::picture_size("blur_small_size");
  check_blur(size, 0, size.describe());
}

TEST_CASE("box_blur: radius 1 on a small non-square picture") {
  const Size size = kit::picture_size("blur_small_size");
  check_blur(size, 1, size.describe());
}

TEST_CASE("box_blur: edges and corners average only the pixels inside the picture") {
  const Size size = kit::picture_size("blur_edge_size");
  // A picture of one gray value blurs to the same value everywhere, edges and corners included.
  const int value = kit::Rng::for_case("constant").uniform_ints(1, 100, 255)[0];
  const Bytes constant(size.pixels(), static_cast<std::uint8_t>(value));
  for (const int radius : kit::param_int_list("blur_radii")) {
    if (!check_blur_of(constant, size, radius, size.describe() + " of one constant gray value", kLookAtBlurEdges))
      return;
    if (!check_blur(size, radius, size.describe() + " of random grays", kLookAtBlurEdges)) return;
  }
}

TEST_CASE("box_blur: a radius larger than the picture averages all of it") {
  const Size size = kit::picture_size("blur_past_size");
  for (const int radius : kit::param_int_list("blur_past_radii"))
    if (!check_blur(size, radius, size.describe() + ", every window covering the whole picture", kLookAtBlurEdges))
      return;
}

TEST_CASE("box_blur: one pixel and pictures one pixel wide or tall") {
  const int radius = static_cast<int>(kit::param_int("blur_line_radius"));
  for (const Size& size : kit::picture_sizes("line_sizes"))
    if (!check_blur(size, radius, size.describe())) return;
}

TEST_CASE("box_blur: nothing written past the end") {
  const Size size = kit::picture_size("blur_guard_size");
  check_blur(size, static_cast<int>(kit::param_int("blur_guard_radius")),
             size.describe() + ": the last blocks have threads past the right and bottom edges");
}

// ---- Timing ----------------------------------------------------------------------------------
//
// Every timed call gets a new picture, written on the GPU from its own random stream; the harness
// checks that the output is written in full each time and, after calls chosen at random, compares
// it with the CPU reference at pixels drawn at random, whose input bytes the CPU makes again from
// the stream. The poison check needs an output value that no correct pixel can hold: the timing
// pictures' bytes lie in [1 + byte_abs_tol, 254 - byte_abs_tol], so the exact gray or mean does
// too and every accepted result lies in [1, 254]; a pixel still holding 0 was never written.

namespace {

constexpr int kTimingFill = 0;

// A timed call's input bytes, from its stream `stream`: refresh writes them all on the GPU,
// verify makes again those that its sampled pixels need.
StreamBytes timing_bytes(const kit::Call& call, const std::string& stream) {
  const int tolerance = static_cast<int>(kit::param_int("byte_abs_tol"));
  return {call.rng(stream), 1 + tolerance, 254 - tolerance};
}

}  // namespace

// A call takes a fraction of a millisecond, so the harness may make several sets of the
// pictures and time several calls in a row, each on its own set.
TEST_CASE("rgb_to_gray timing: a picture far larger than the L2 cache" * KIT_TIMING) {
  const Size size = kit::picture_size("timing_gray_size");
  const std::size_t n = size.pixels();
  const auto options = kit::TimingOptions::from_params();

  kit::TimedWork work;
  work.name = "rgb_to_gray_kernel";
  work.work_per_call = 4.0 * static_cast<double>(n);  // read 3 bytes per pixel, write 1
  work.ceilings = {kit::copy_ceiling(static_cast<std::size_t>(work.work_per_call), options)};
  work.look_at = kLookAtGray;
  work.sets_from([&] {
    const auto rgb = kit::shared_device_buffer<std::uint8_t>(3 * n), gray = kit::shared_device_buffer<std::uint8_t>(n);
    kit::WorkSet set;
    set.call = [=] { launch_rgb_to_gray(rgb->data(), gray->data(), size.width, size.height); };
    set.outputs = {kit::Output::device("the gray picture", gray->data(), n, kTimingFill)};
    set.refresh = [=](const kit::Call& call) { timing_bytes(call, "colours").fill(rgb->data(), 3 * n); };
    set.verify = [=](const kit::Call& call) {
      const StreamBytes colours = timing_bytes(call, "colours");
      return expect_bytes_near_at_samples(gray->data(), n,
                                          [&](std::size_t p) { return picture_reference::gray_pixel(colours, p); },
                                          {"the timing picture, " + size.describe() + ", colours of " + call.name(),
                                           kLookAtGray, static_cast<std::size_t>(size.width)});
    };
    return set;
  });
  kit::time_work(work, options);
}

TEST_CASE("box_blur timing: a picture far larger than the L2 cache" * KIT_TIMING) {
  const Size size = kit::picture_size("timing_blur_size");
  const int radius = static_cast<int>(kit::param_int("timing_blur_radius"));
  const std::size_t n = size.pixels();
  const auto options = kit::TimingOptions::from_params();

  kit::TimedWork work;
  work.name = "box_blur_kernel";
  work.work_per_call = 2.0 * static_cast<double>(n);  // read 1 byte per pixel, write 1: the least any blur moves
  work.ceilings = {kit::copy_ceiling(static_cast<std::size_t>(work.work_per_call), options)};
  work.look_at = kLookAtBlur;
  work.sets_from([&] {
    const auto in = kit::shared_device_buffer<std::uint8_t>(n), out = kit::shared_device_buffer<std::uint8_t>(n);
    kit::WorkSet set;
    set.call = [=] { launch_box_blur(in->data(), out->data(), size.width, size.height, radius); };
    set.outputs = {kit::Output::device("the blurred picture", out->data(), n, kTimingFill)};
    set.refresh = [=](const kit::Call& call) { timing_bytes(call, "gray").fill(in->data(), n); };
    set.verify = [=](const kit::Call& call) {
      const StreamBytes picture = timing_bytes(call, "gray");
      const auto width = static_cast<std::size_t>(size.width);
      return expect_bytes_near_at_samples(
          out->data(), n,
          [&](std::size_t p) {
            return picture_reference::box_blur_pixel(picture, size.width, size.height, radius, p % width, p / width);
          },
          {"the timing picture, " + size.describe() + ", radius " + std::to_string(radius) + ", pixels of " +
               call.name(),
           kLookAtBlur, width});
    };
    return set;
  });
  kit::time_work(work, options);
}
