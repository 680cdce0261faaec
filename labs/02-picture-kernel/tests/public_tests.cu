// Lab 02 public tests: the ones you can run yourself (make 02-picture-kernel).
#include "picture_checks.cuh"

using namespace picture_checks;

// ---- Part 1: scale ---------------------------------------------------------------------------

TEST_CASE("scale_picture: the classic 76x62 picture on 16x16 blocks") {
  const Size size = size_param("classic_size");
  check_scale(size, size.describe() + ", covered by 5 x 4 blocks that stick out past the right and bottom edges");
}

TEST_CASE("scale_picture: one pixel and pictures one pixel wide or tall") {
  for (const Size& size : size_list("line_sizes")) check_scale(size, size.describe());
}

TEST_CASE("scale_picture: nothing written past the last row") {
  const Size size = size_param("scale_guard_size");
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
  const Size size = size_param("gray_small_size");
  check_gray(size, size.describe());
}

TEST_CASE("rgb_to_gray: one pixel and pictures one pixel wide or tall") {
  for (const Size& size : size_list("line_sizes")) check_gray(size, size.describe());
}

TEST_CASE("rgb_to_gray: a large picture") {
  const Size size = size_param("gray_large_size");
  check_gray(size, size.describe("large"));
}

TEST_CASE("rgb_to_gray: nothing written past the end") {
  const Size size = size_param("gray_guard_size");
  check_gray(size, size.describe() + ", not a multiple of any block size");
}

// ---- Part 3: box blur ------------------------------------------------------------------------

TEST_CASE("box_blur: radius 0 leaves the picture unchanged") {
  const Size size = size_param("blur_small_size");
  check_blur(size, 0, size.describe());
}

TEST_CASE("box_blur: radius 1 on a small non-square picture") {
  const Size size = size_param("blur_small_size");
  check_blur(size, 1, size.describe());
}

TEST_CASE("box_blur: edges and corners average only the pixels inside the picture") {
  const Size size = size_param("blur_edge_size");
  // A picture of one gray value blurs to the same value everywhere, edges and corners included.
  const int value = kit::Rng::for_case("constant").uniform_ints(1, 100, 255)[0];
  const Bytes constant(size.pixels(), static_cast<std::uint8_t>(value));
  for (const int radius : int_list("blur_radii")) {
    if (!check_blur_of(constant, size, radius, size.describe() + " of one constant gray value", kLookAtBlurEdges))
      return;
    if (!check_blur(size, radius, size.describe() + " of random grays", kLookAtBlurEdges)) return;
  }
}

TEST_CASE("box_blur: a radius larger than the picture averages all of it") {
  const Size size = size_param("blur_past_size");
  for (const int radius : int_list("blur_past_radii"))
    if (!check_blur(size, radius, size.describe() + ", every window covering the whole picture", kLookAtBlurEdges))
      return;
}

TEST_CASE("box_blur: one pixel and pictures one pixel wide or tall") {
  const int radius = static_cast<int>(kit::param_int("blur_line_radius"));
  for (const Size& size : size_list("line_sizes"))
    if (!check_blur(size, radius, size.describe())) return;
}

TEST_CASE("box_blur: nothing written past the end") {
  const Size size = size_param("blur_guard_size");
  check_blur(size, static_cast<int>(kit::param_int("blur_guard_radius")),
             size.describe() + ": the last blocks have threads past the right and bottom edges");
}

// ---- Timing ----------------------------------------------------------------------------------

TEST_CASE("rgb_to_gray timing: a picture far larger than the L2 cache" * KIT_TIMING) {
  const Size size = size_param("timing_gray_size");
  const std::size_t n = size.pixels();
  const Bytes rgb = random_bytes("colours", 3 * n);
  kit::DeviceBuffer<std::uint8_t> d_rgb(rgb), d_gray(n);
  const auto options = kit::TimingOptions::from_params();
  const double bytes = 4.0 * static_cast<double>(n);  // read 3 bytes per pixel, write 1

  kit::Measurement kernel{
      "rgb_to_gray_kernel",
      kit::time_device_work([&] { launch_rgb_to_gray(d_rgb.data(), d_gray.data(), size.width, size.height); }, options),
      bytes, kit::RateUnit::GBps};
  kernel.ceilings.push_back(kit::copy_ceiling(static_cast<std::size_t>(bytes), options));
  kit::report(kernel);

  d_gray.poison();  // the timed code must also be right
  launch_rgb_to_gray(d_rgb.data(), d_gray.data(), size.width, size.height);
  expect_bytes_near(d_gray.download(), picture_reference::gray(rgb),
                    {"the timing picture, " + size.describe(), kLookAtGray, static_cast<std::size_t>(size.width)});
}

TEST_CASE("box_blur timing: a picture far larger than the L2 cache" * KIT_TIMING) {
  const Size size = size_param("timing_blur_size");
  const int radius = static_cast<int>(kit::param_int("timing_blur_radius"));
  const std::size_t n = size.pixels();
  const Bytes picture = random_bytes("gray", n);
  kit::DeviceBuffer<std::uint8_t> d_in(picture), d_out(n);
  const auto options = kit::TimingOptions::from_params();
  const double bytes = 2.0 * static_cast<double>(n);  // read 1 byte per pixel, write 1: the least any blur moves

  kit::Measurement kernel{
      "box_blur_kernel",
      kit::time_device_work([&] { launch_box_blur(d_in.data(), d_out.data(), size.width, size.height, radius); },
                            options),
      bytes, kit::RateUnit::GBps};
  kernel.ceilings.push_back(kit::copy_ceiling(static_cast<std::size_t>(bytes), options));
  kit::report(kernel);

  d_out.poison();
  launch_box_blur(d_in.data(), d_out.data(), size.width, size.height, radius);
  expect_bytes_near(d_out.download(), picture_reference::box_blur(picture, size.width, size.height, radius),
                    {"the timing picture, " + size.describe() + ", radius " + std::to_string(radius), kLookAtBlur,
                     static_cast<std::size_t>(size.width)});
}
