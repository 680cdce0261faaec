// Lab 13 public tests: the ones you can run yourself (make 13-debugging). Each function's tests
// fail as it is handed out; once its bug is fixed, they pass.
#include "debugging_checks.cuh"

using namespace debugging_checks;

// Bug 1. With n = 1 the grid is one block of threads, all but one of them past the end.
TEST_CASE("launch_vector_add: one element (n = 1) and nothing written past the end") {
  check_add(1, length(1) + " on device vectors");
}

TEST_CASE("launch_vector_add: a prime length and nothing written past the end") {
  const int n = static_cast<int>(kit::param_int("add_prime_n"));
  check_add(n, length(n) + ", a prime: not a multiple of any block size");
}

// Bug 2.
TEST_CASE("launch_reduce_sum: one element (n = 1)") { check_sum(1, length(1)); }

TEST_CASE("launch_reduce_sum: a prime length") {
  const int n = static_cast<int>(kit::param_int("reduce_prime_n"));
  check_sum(n, length(n) + ", a prime");
}

// Bug 3.
TEST_CASE("launch_histogram: bytes that all have one value") {
  const int n = static_cast<int>(kit::param_int("histogram_prime_n"));
  check_histogram(kit::one_value_bytes(n), length(n) + " bytes, all of one value");
}

TEST_CASE("launch_histogram: random bytes of a prime length") {
  const int n = static_cast<int>(kit::param_int("histogram_prime_n"));
  check_histogram(kit::Rng::for_case("bytes").uniform_bytes(n), length(n) + " uniformly random bytes");
}

// Bug 4. A failure on a product of at most 4 x 4 shows the whole of A, B, A·B and C.
TEST_CASE("launch_tiled_matmul: small matrices you can multiply by hand") {
  check_matmul_shapes("matmul_by_hand_shapes", "small enough to multiply by hand");
}

TEST_CASE("launch_tiled_matmul: sides that are not multiples of the tile") {
  check_matmul_shapes("matmul_edge_shapes", "partial tiles on every edge");
}

// Bug 5. A race shows only in the launches where one warp of a block runs ahead of another:
// many blocks, several launches, every result checked.
TEST_CASE("launch_transpose_tiled: a large matrix with prime sides launched repeatedly") {
  const int rows = static_cast<int>(kit::param_int("transpose_large_rows"));
  const int cols = static_cast<int>(kit::param_int("transpose_large_cols"));
  check_transpose(rows, cols, static_cast<int>(kit::param_int("transpose_repeats")),
                  "a large matrix " + shape_text(rows, cols) + " with prime sides");
}

// Graded under compute-sanitizer's racecheck (lab.toml): small shapes, whose results a race
// rarely changes, but whose every unordered use of a shared-memory word racecheck reports.
TEST_CASE("launch_transpose_tiled: shapes around the tile edges with no shared-memory race (compute-sanitizer racecheck)") {
  note_sanitizer("racecheck");
  check_transpose_shapes("transpose_race_shapes");
}
