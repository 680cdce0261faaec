// Lab 13 hidden tests: run by the grader only. Each checks a fix on inputs the public tests do not
// try, and the compute-sanitizer ones check what no result shows.
#include "debugging_checks.cuh"

using namespace debugging_checks;

// Bug 1: every length next to a multiple of a block size, where a guard or a grid that is off by
// one shows; then a large one.
TEST_CASE("launch_vector_add (hidden): lengths one either side of multiples of common block sizes") {
  for (const auto n : kit::param_ints("add_boundary_ns"))
    if (!check_add(static_cast<int>(n), length(n) + ", next to a multiple of a block size")) return;
}

// Under memcheck (hidden.toml), on vectors of exactly their length: a read past the end fails
// here even when no result shows it.
TEST_CASE("launch_vector_add (hidden): no read or write outside the vectors (compute-sanitizer memcheck)") {
  note_sanitizer("memcheck");
  for (const auto n : kit::param_ints("add_sanitizer_ns"))
    if (!check_add_exact(static_cast<int>(n), length(n) + " on vectors of exactly n elements")) return;
}

// Bug 2: lengths either side of multiples of 4 and of a block's floats, up to the longest whose
// sum is still exact.
TEST_CASE("launch_reduce_sum (hidden): lengths next to multiples of the vector width and the block") {
  for (const auto n : kit::param_ints("reduce_boundary_ns"))
    if (!check_sum(static_cast<int>(n), length(n) + ", next to a multiple of 4 or of a block's floats")) return;
}

TEST_CASE("launch_reduce_sum (hidden): no read outside the input (compute-sanitizer memcheck)") {
  note_sanitizer("memcheck");
  for (const auto n : kit::param_ints("reduce_sanitizer_ns"))
    if (!check_sum_exact(static_cast<int>(n), length(n) + " in an input of exactly n floats")) return;
}

// Bug 3: few values, so the lanes of every warp share them, at lengths around block sizes.
TEST_CASE("launch_histogram (hidden): lengths around block sizes of bytes from few values") {
  const int values = static_cast<int>(kit::param_int("histogram_few_values"));
  for (const auto n : kit::param_ints("histogram_boundary_ns"))
    if (!check_histogram(kit::few_value_bytes(static_cast<std::size_t>(n), values),
                         length(n) + " bytes of " + std::to_string(values) + " values"))
      return;
}

TEST_CASE("launch_histogram (hidden): a large input of bytes from a narrow range") {
  const int n = static_cast<int>(kit::param_int("histogram_large_n"));
  const int low = static_cast<int>(kit::param_int("histogram_narrow_low"));
  const int high = static_cast<int>(kit::param_int("histogram_narrow_high"));
  check_histogram(kit::Rng::for_case("narrow").uniform_bytes(n, low, high),
                  length(n) + " bytes from " + std::to_string(low) + " to " + std::to_string(high));
}

// Bug 4.
TEST_CASE("launch_tiled_matmul (hidden): sides one either side of multiples of the tile") {
  check_matmul_shapes("matmul_boundary_shapes", "next to a multiple of a tile");
}

TEST_CASE("launch_tiled_matmul (hidden): no read or write outside the matrices (compute-sanitizer memcheck)") {
  note_sanitizer("memcheck");
  check_matmul_shapes("matmul_sanitizer_shapes", "in buffers of exactly its size", true);
}

TEST_CASE("launch_tiled_matmul (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  note_sanitizer("racecheck");
  check_matmul_shapes("matmul_sanitizer_shapes", "in buffers of exactly its size", true);
}

// Bug 5: the other orientation, and more shapes under racecheck.
TEST_CASE("launch_transpose_tiled (hidden): a large matrix with more rows than columns launched repeatedly") {
  const int rows = static_cast<int>(kit::param_int("transpose_large_rows_hidden"));
  const int cols = static_cast<int>(kit::param_int("transpose_large_cols_hidden"));
  check_transpose(rows, cols, static_cast<int>(kit::param_int("transpose_repeats")),
                  "a large matrix " + shape_text(rows, cols) + " with more rows than columns");
}

TEST_CASE("launch_transpose_tiled (hidden): other shapes with no shared-memory race (compute-sanitizer racecheck)") {
  note_sanitizer("racecheck");
  check_transpose_shapes("transpose_race_shapes_hidden");
}
