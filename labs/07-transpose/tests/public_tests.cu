// Lab 07 public tests: the ones you can run yourself (make 07-transpose).
// The same five checks for each of the three versions, then one timing case each.
#include "transpose_checks.cuh"

using namespace transpose_checks;

namespace {

// Non-square shapes: a transpose that mixes up rows and columns (a wrong
// stride, a swapped grid or a swapped bounds check) still passes square ones.
void whole_tiles(const Version& v) { check_shapes(v, "whole_tile_shapes", "a non-square matrix, sides multiples of 32,"); }

// One row or one column: a grid that is too small in either direction, or that
// rounds a dimension below one tile down to zero, shows up here.
void thin(const Version& v) { check_shapes(v, "thin_shapes", "a single row or column,"); }

// Tiles on the right and bottom edges hang over the matrix.
void ragged(const Version& v) { check_shapes(v, "ragged_shapes", "sides not a multiple of the tile size,"); }

void large(const Version& v) {
  const int rows = static_cast<int>(kit::param_int("large_rows"));
  const int cols = static_cast<int>(kit::param_int("large_cols"));
  check_transpose(v, rows, cols, "a large matrix " + shape(rows, cols));
}

// Writes past the end of the output land in a poisoned guard zone.
void guarded(const Version& v) { check_shapes(v, "ragged_shapes", "sides not a multiple of the tile size,", guard_elements()); }

}  // namespace

TEST_CASE("transpose_naive: rectangular matrices of whole tiles") { whole_tiles(kNaive); }
TEST_CASE("transpose_naive: a single row and a single column") { thin(kNaive); }
TEST_CASE("transpose_naive: sizes not a multiple of the tile") { ragged(kNaive); }
TEST_CASE("transpose_naive: a large matrix") { large(kNaive); }
TEST_CASE("transpose_naive: nothing written past the end of the output") { guarded(kNaive); }

TEST_CASE("transpose_tiled: rectangular matrices of whole tiles") { whole_tiles(kTiled); }
TEST_CASE("transpose_tiled: a single row and a single column") { thin(kTiled); }
TEST_CASE("transpose_tiled: sizes not a multiple of the tile") { ragged(kTiled); }
TEST_CASE("transpose_tiled: a large matrix") { large(kTiled); }
TEST_CASE("transpose_tiled: nothing written past the end of the output") { guarded(kTiled); }

TEST_CASE("transpose_padded: rectangular matrices of whole tiles") { whole_tiles(kPadded); }
TEST_CASE("transpose_padded: a single row and a single column") { thin(kPadded); }
TEST_CASE("transpose_padded: sizes not a multiple of the tile") { ragged(kPadded); }
TEST_CASE("transpose_padded: a large matrix") { large(kPadded); }
TEST_CASE("transpose_padded: nothing written past the end of the output") { guarded(kPadded); }

TEST_CASE("transpose timing: naive kernel on a large matrix" * KIT_TIMING) { time_version(kNaive); }
TEST_CASE("transpose timing: tiled kernel on a large matrix" * KIT_TIMING) { time_version(kTiled); }
TEST_CASE("transpose timing: padded kernel on a large matrix" * KIT_TIMING) { time_version(kPadded); }
