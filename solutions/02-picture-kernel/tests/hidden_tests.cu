// Lab 02 hidden tests: run by the grader only. Each targets a mistake students make.
#include "picture_checks.cuh"

using namespace picture_checks;

namespace {

const std::string kLookAtScaleAxes =
    "scale_picture_kernel and launch_scale_picture: x (columns, threadIdx.x) runs along a row up to width, y "
    "(rows) down the picture up to height, the pixel is y * width + x, and the grid has enough blocks in x for "
    "the width and in y for the height";
const std::string kLookAtScaleGrid =
    "launch_scale_picture: the number of blocks in each direction must round up, so that a partial block "
    "covers the last columns and rows";
const std::string kLookAtGrayGrid =
    "launch_rgb_to_gray: the grid must round up to cover every pixel, and rgb_to_gray_kernel must guard "
    "the pixels past the end";
const std::string kLookAtBlurAxes =
    "box_blur_kernel and launch_box_blur: x (columns) up to width, y (rows) up to height, the pixel is "
    "y * width + x, and the window and its count use the right bound in each direction";

// ---- Runs for compute-sanitizer (hidden.toml says which tool) ---------------------------------
// Inputs and outputs of exactly the picture's size, each an allocation of its own: memcheck
// reports an access past an end only where nothing is allocated, so no guard zone or padding
// here. One run each, on a small picture, because the sanitizer slows kernels down many times.

bool scale_exact(const Size& size) {
  const std::vector<float> in = random_float_picture(size);
  const float factor = kit::Rng::for_case("factor").uniform_floats(1, 0.25f, 4.0f)[0];
  kit::DeviceBuffer<float> d_in(in), d_out(size.pixels());
  d_out.poison();
  launch_scale_picture(d_in.data(), d_out.data(), size.width, size.height, factor);
  CUDA_CHECK(cudaDeviceSynchronize());
  return kit::expect_close(
      d_out.download(), picture_reference::scale(in, factor), {kit::param_double("scale_rel_tol"), 0.0},
      {size.describe() + " in buffers of exactly its size", kLookAtScale, static_cast<std::size_t>(size.width)});
}

bool gray_exact(const Size& size) {
  const Bytes rgb = random_bytes("colours", 3 * size.pixels());
  kit::DeviceBuffer<std::uint8_t> d_rgb(rgb), d_gray(size.pixels());
  d_gray.poison();
  launch_rgb_to_gray(d_rgb.data(), d_gray.data(), size.width, size.height);
  CUDA_CHECK(cudaDeviceSynchronize());
  return expect_bytes_near(
      d_gray.download(), picture_reference::gray(rgb),
      {size.describe() + " in buffers of exactly its size", kLookAtGray, static_cast<std::size_t>(size.width)});
}

bool blur_exact(const Size& size, int radius) {
  const Bytes picture = random_bytes("gray", size.pixels());
  kit::DeviceBuffer<std::uint8_t> d_in(picture), d_out(size.pixels());
  d_out.poison();
  launch_box_blur(d_in.data(), d_out.data(), size.width, size.height, radius);
  CUDA_CHECK(cudaDeviceSynchronize());
  return expect_bytes_near(d_out.download(), picture_reference::box_blur(picture, size.width, size.height, radius),
                           {size.describe() + ", radius " + std::to_string(radius) + ", in buffers of exactly its size",
                            kLookAtBlur, static_cast<std::size_t>(size.width)});
}

}  // namespace

// ---- Part 1 ----------------------------------------------------------------------------------

// Swapped x and y (the grid sized the wrong way round, or x * width + y as the index) can pass
// on square pictures; here width and height differ, both ways round.
TEST_CASE("scale_picture (hidden): non-square pictures in both orientations") {
  for (const Size& size : kit::picture_sizes("non_square_sizes"))
    if (!check_scale(size, size.describe() + ", not square", kLookAtScaleAxes)) return;
}

// Wrong grid rounding and a guard on one side only show up right at block edges.
TEST_CASE("scale_picture (hidden): sizes one either side of block multiples") {
  for (const Size& size : kit::picture_sizes("boundary_sizes"))
    if (!check_scale(size, size.describe() + ", next to a multiple of common block sizes", kLookAtScaleGrid)) return;
}

TEST_CASE("scale_picture (hidden): a large picture") {
  const Size size = kit::picture_size("scale_large_size");
  check_scale(size, size.describe("large"));
}

// ---- Part 2 ----------------------------------------------------------------------------------

TEST_CASE("rgb_to_gray (hidden): sizes one either side of block multiples") {
  for (const Size& size : kit::picture_sizes("boundary_sizes"))
    if (!check_gray(size, size.describe() + ", next to a multiple of common block sizes", kLookAtGrayGrid)) return;
  for (const Size& size : kit::picture_sizes("non_square_sizes"))
    if (!check_gray(size, size.describe() + ", not square", kLookAtGrayGrid)) return;
}

// Over 33 million pixels and 100 MB of colour: 32-bit byte offsets are still enough, but a
// grid limited to 65535 blocks in one dimension is not.
TEST_CASE("rgb_to_gray (hidden): a very large picture") {
  const Size size = kit::picture_size("gray_very_large_size");
  check_gray(size, size.describe("very large"));
}

// ---- Part 3 ----------------------------------------------------------------------------------

TEST_CASE("box_blur (hidden): non-square pictures at several radii") {
  for (const Size& size : kit::picture_sizes("non_square_sizes"))
    for (const int radius : kit::param_int_list("hidden_blur_radii"))
      if (!check_blur(size, radius, size.describe() + ", not square", kLookAtBlurAxes)) return;
}

// A window larger than a shared-memory tile that only holds a small border.
TEST_CASE("box_blur (hidden): a wide window on a mid-size picture") {
  const Size size = kit::picture_size("blur_wide_size");
  check_blur(size, static_cast<int>(kit::param_int("blur_wide_radius")), size.describe() + " with a wide window");
}

TEST_CASE("box_blur (hidden): sizes next to block multiples and a large picture") {
  for (const Size& size : kit::picture_sizes("boundary_sizes"))
    for (const int radius : {1, 2})
      if (!check_blur(size, radius, size.describe() + ", next to a multiple of common block sizes")) return;
  const Size large = kit::picture_size("blur_large_size");
  check_blur(large, static_cast<int>(kit::param_int("blur_large_radius")), large.describe("large"));
}

// ---- Under compute-sanitizer -----------------------------------------------------------------

// memcheck: every read and write stays inside the pictures, also those no result shows (a tile
// border loaded from rows below the picture, say).
TEST_CASE("scale_picture (hidden): no read or write outside the pictures (compute-sanitizer memcheck)") {
  scale_exact(kit::picture_size("sanitizer_size"));
}

TEST_CASE("rgb_to_gray (hidden): no read or write outside the pictures (compute-sanitizer memcheck)") {
  gray_exact(kit::picture_size("sanitizer_size"));
}

TEST_CASE("box_blur (hidden): no read or write outside the pictures (compute-sanitizer memcheck)") {
  for (const int radius : kit::param_int_list("sanitizer_blur_radii"))
    if (!blur_exact(kit::picture_size("sanitizer_size"), radius)) return;
}

// racecheck: shared memory written by one thread is read by another only after a barrier.
TEST_CASE("rgb_to_gray (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  gray_exact(kit::picture_size("sanitizer_size"));
}

TEST_CASE("box_blur (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  for (const int radius : kit::param_int_list("sanitizer_blur_radii"))
    if (!blur_exact(kit::picture_size("sanitizer_size"), radius)) return;
}
