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

}  // namespace

// ---- Part 1 ----------------------------------------------------------------------------------

// Swapped x and y (the grid sized the wrong way round, or x * width + y as the index) can pass
// on square pictures; here width and height differ, both ways round.
TEST_CASE("scale_picture (hidden): non-square pictures in both orientations") {
  for (const Size& size : size_list("non_square_sizes"))
    if (!check_scale(size, size.describe() + ", not square", kLookAtScaleAxes)) return;
}

// Wrong grid rounding and a guard on one side only show up right at block edges.
TEST_CASE("scale_picture (hidden): sizes one either side of block multiples") {
  for (const Size& size : size_list("boundary_sizes"))
    if (!check_scale(size, size.describe() + ", next to a multiple of common block sizes", kLookAtScaleGrid)) return;
}

TEST_CASE("scale_picture (hidden): a large picture") {
  const Size size = size_param("scale_large_size");
  check_scale(size, size.describe("large"));
}

// ---- Part 2 ----------------------------------------------------------------------------------

TEST_CASE("rgb_to_gray (hidden): sizes one either side of block multiples") {
  for (const Size& size : size_list("boundary_sizes"))
    if (!check_gray(size, size.describe() + ", next to a multiple of common block sizes", kLookAtGrayGrid)) return;
  for (const Size& size : size_list("non_square_sizes"))
    if (!check_gray(size, size.describe() + ", not square", kLookAtGrayGrid)) return;
}

// Over 33 million pixels and 100 MB of colour: 32-bit byte offsets are still enough, but a
// grid limited to 65535 blocks in one dimension is not.
TEST_CASE("rgb_to_gray (hidden): a very large picture") {
  const Size size = size_param("gray_very_large_size");
  check_gray(size, size.describe("very large"));
}

// ---- Part 3 ----------------------------------------------------------------------------------

TEST_CASE("box_blur (hidden): non-square pictures at several radii") {
  for (const Size& size : size_list("non_square_sizes"))
    for (const int radius : int_list("hidden_blur_radii"))
      if (!check_blur(size, radius, size.describe() + ", not square", kLookAtBlurAxes)) return;
}

// A window larger than a shared-memory tile that only holds a small border.
TEST_CASE("box_blur (hidden): a wide window on a mid-size picture") {
  const Size size = size_param("blur_wide_size");
  check_blur(size, static_cast<int>(kit::param_int("blur_wide_radius")), size.describe() + " with a wide window");
}

TEST_CASE("box_blur (hidden): sizes next to block multiples and a large picture") {
  for (const Size& size : size_list("boundary_sizes"))
    for (const int radius : {1, 2})
      if (!check_blur(size, radius, size.describe() + ", next to a multiple of common block sizes")) return;
  const Size large = size_param("blur_large_size");
  check_blur(large, static_cast<int>(kit::param_int("blur_large_radius")), large.describe("large"));
}
