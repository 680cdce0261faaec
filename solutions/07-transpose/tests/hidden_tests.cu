// Lab 07 hidden tests: run by the grader only. Each targets a mistake students make.
#include "transpose_checks.cuh"

using namespace transpose_checks;

namespace {

// Shapes one either side of multiples of 32 and 64, primes and thin strips, in
// both orientations: an off-by-one bound, a bound checked in one dimension
// only, a bound checked against the input's shape instead of the output's, a
// grid rounded down, or edge tiles skipped. A guard zone after the output
// catches writes past its end.
void edges(const Version& v) {
  check_shapes(v, "edge_shapes", "a matrix whose sides straddle multiples of the tile size,", guard_elements());
}

// Up to 65535 on a side (the largest the header allows): a grid built from the
// wrong dimension, or with one block per element in y, runs out of blocks here.
void long_thin(const Version& v) { check_shapes(v, "long_shapes", "a long thin matrix,", guard_elements()); }

// Edge tiles on both sides of a matrix of 33.6 million elements with prime sides: a
// wrong stride or a swapped bound shows all over it. On device memory, every element
// compared on the GPU: a round trip through host memory, checked on the CPU, is most of
// a second of every student's grading per version and tests nothing more about the tiles.
void large_prime(const Version& v) {
  const int rows = static_cast<int>(kit::param_int("prime_rows"));
  const int cols = static_cast<int>(kit::param_int("prime_cols"));
  check_transpose_on_device(v, rows, cols, "a large non-square matrix with prime sides " + shape(rows, cols));
}

}  // namespace

TEST_CASE("transpose_naive (hidden): many shapes around tile edges with nothing written past the end") {
  edges(kNaive);
}
TEST_CASE("transpose_naive (hidden): long thin matrices up to 65535 on a side") { long_thin(kNaive); }
TEST_CASE("transpose_naive (hidden): a large non-square matrix with prime sides") { large_prime(kNaive); }

TEST_CASE("transpose_tiled (hidden): many shapes around tile edges with nothing written past the end") {
  edges(kTiled);
}
TEST_CASE("transpose_tiled (hidden): long thin matrices up to 65535 on a side") { long_thin(kTiled); }
TEST_CASE("transpose_tiled (hidden): a large non-square matrix with prime sides") { large_prime(kTiled); }
TEST_CASE("transpose_tiled (hidden): the whole tile is loaded before any thread reads it") { check_barrier(kTiled); }

TEST_CASE("transpose_padded (hidden): many shapes around tile edges with nothing written past the end") {
  edges(kPadded);
}
TEST_CASE("transpose_padded (hidden): long thin matrices up to 65535 on a side") { long_thin(kPadded); }
TEST_CASE("transpose_padded (hidden): a large non-square matrix with prime sides") { large_prime(kPadded); }
TEST_CASE("transpose_padded (hidden): the whole tile is loaded before any thread reads it") { check_barrier(kPadded); }

// Under compute-sanitizer (hidden.toml says which tool): each version once per shape, on
// matrices of exactly their size. memcheck: no read or write outside the two matrices, also a
// tile row loaded from below the input and never stored. racecheck: no thread reads a tile
// element before the barrier that follows its store.
TEST_CASE("transpose_naive (hidden): no read or write outside the matrices (compute-sanitizer memcheck)") {
  check_shapes(kNaive, "sanitizer_shapes", "in buffers of exactly its size,", 0);
}
TEST_CASE("transpose_tiled (hidden): no read or write outside the matrices (compute-sanitizer memcheck)") {
  check_shapes(kTiled, "sanitizer_shapes", "in buffers of exactly its size,", 0);
}
TEST_CASE("transpose_tiled (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  check_shapes(kTiled, "sanitizer_shapes", "in buffers of exactly its size,", 0);
}
TEST_CASE("transpose_padded (hidden): no read or write outside the matrices (compute-sanitizer memcheck)") {
  check_shapes(kPadded, "sanitizer_shapes", "in buffers of exactly its size,", 0);
}
TEST_CASE("transpose_padded (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  check_shapes(kPadded, "sanitizer_shapes", "in buffers of exactly its size,", 0);
}
