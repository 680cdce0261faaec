// Lab 01 hidden tests: run by the grader only. Each targets a mistake students make.
#include "vector_add_checks.cuh"

using namespace vector_add_checks;

// Wrong grid rounding and block-size assumptions show up right at block edges.
TEST_CASE("vector_add (hidden): lengths one either side of multiples of common block sizes") {
  for (const auto n : kit::param_ints("boundary_ns")) {
    INFO("n = " << n);
    check_round_trip(static_cast<int>(n), "n = " + std::to_string(n) + ", next to a multiple of a block size");
  }
}

TEST_CASE("vector_add (hidden): prime lengths") {
  for (const auto n : kit::param_ints("prime_ns"))
    check_round_trip(static_cast<int>(n), "n = " + std::to_string(n) + ", a prime");
}

TEST_CASE("launch_vector_add (hidden): no writes past the end at many lengths") {
  for (const auto n : kit::param_ints("boundary_ns"))
    check_launch(static_cast<int>(n), "n = " + std::to_string(n) + " on device vectors");
}

// More than 2^28 elements: over a million blocks of 256, far beyond the 65535
// limit of gridDim.y, so a grid sized from the wrong dimension fails here. On
// device vectors, every element compared on the GPU: a round trip through host
// arrays, checked on the CPU, took 6 s of every student's grading, and tested
// nothing more about the grid.
TEST_CASE("vector_add (hidden): a very large vector") {
  const int n = static_cast<int>(kit::param_int("very_large_n"));
  check_launch_on_device(n, "a very large vector, n = " + std::to_string(n) + " on device vectors");
}

// Run under compute-sanitizer's memcheck (hidden.toml): any read or write outside
// the three vectors fails, also one whose value never reaches c.
TEST_CASE("vector_add (hidden): no read or write outside the vectors (compute-sanitizer memcheck)") {
  for (const auto n : kit::param_ints("sanitizer_ns")) {
    check_launch_exact(static_cast<int>(n), "n = " + std::to_string(n) + " on device vectors of exactly n elements");
    check_round_trip(static_cast<int>(n), "n = " + std::to_string(n));
  }
}
