// Lab 10 hidden tests: run by the grader only. Each targets a mistake students make.
#include "convolution_checks.cuh"

using namespace convolution_checks;

namespace {

const std::string kLookAtNaiveGrid =
    "launch_convolve_naive: the number of blocks in each direction must round up, and convolve_naive_kernel must "
    "leave out the threads past the right and bottom edges";
const std::string kLookAtAxes =
    "x (columns, threadIdx.x) runs along a row up to width, y (rows) down the picture up to height, the pixel is "
    "y * width + x, and each bounds check compares with the right one of the two";
const std::string kLookAtBarrier =
    "convolve_tiled_kernel: every thread must wait (__syncthreads) until the whole tile is loaded before any "
    "window is read from it";

}  // namespace

// ---- Part 2 ----------------------------------------------------------------------------------

// Wrong grid rounding and a guard on one side only show up right at block edges.
TEST_CASE("convolve_naive (hidden): sizes one either side of block multiples at several radii") {
  for (const Size& size : kit::picture_sizes("boundary_sizes"))
    for (const int radius : kit::param_int_list("hidden_radii"))
      if (!check_random(naive(), size, radius, size.describe() + ", next to a multiple of common block sizes",
                        kLookAtNaiveGrid))
        return;
}

// Swapped x and y (an index x * width + y, or a bound compared with the wrong side) can pass on
// square pictures; here width and height differ, both ways round.
TEST_CASE("convolve_naive (hidden): non-square pictures in both orientations") {
  const int radius = int_param("non_square_radius");
  for (const Size& size : kit::picture_sizes("non_square_sizes"))
    if (!check_random(naive(), size, radius, size.describe() + ", not square", naive().look_at + ": " + kLookAtAxes))
      return;
}

// ---- Part 3 ----------------------------------------------------------------------------------

// Every radius has a kernel of its own, and a tile's edges meet the picture's edges differently
// at each: every radius on sizes either side of multiples of the tile, both ways round.
TEST_CASE("convolve_tiled (hidden): sizes one either side of tile multiples at every radius") {
  for (const Size& size : kit::picture_sizes("tile_boundary_sizes"))
    for (int radius = 0; radius <= kMaxFilterRadius; ++radius)
      if (!check_random(tiled(), size, radius, size.describe() + ", next to a multiple of common tile sizes",
                        kLookAtTileEdges))
        return;
}

// A missing barrier lets a warp read the tile before other warps have loaded their part of it:
// wrong in some tiles, some of the time. Many tiles, several times over.
TEST_CASE("convolve_tiled (hidden): many tiles convolved repeatedly to expose shared-memory races") {
  const Size size = kit::picture_size("race_size");
  check_random(tiled(), size, int_param("race_radius"), size.describe(), kLookAtBarrier, int_param("race_repeats"));
}

// ---- Under the memory and race checkers (hidden.toml names the tool for each) -----------------

TEST_CASE("convolution (hidden): both kernels on a tiny awkward picture in exact-size buffers") {
  const Size size = kit::picture_size("tiny_size");
  const int radius = int_param("tiny_radius");
  check_exact_buffers(naive(), size, radius, size.describe("tiny"));
  check_exact_buffers(tiled(), size, radius, size.describe("tiny"));
}

TEST_CASE("convolve_tiled (hidden): a tiny awkward picture for the shared-memory race checker") {
  const Size size = kit::picture_size("race_check_size");
  check_exact_buffers(tiled(), size, int_param("race_check_radius"), size.describe("small"));
}
