// Lab 03 public tests: the ones you can run yourself (make 03-matmul).
#include "matmul_checks.cuh"

using namespace matmul_checks;

TEST_CASE("matmul: square 64x64 matrices") { check_product("square_shape", "square matrices"); }

TEST_CASE("matmul: non-square 33x65 times 65x17") {
  check_product("nonsquare_shape", "non-square: M, K and N all differ, so a swapped row and column index fails");
}

TEST_CASE("matmul: sizes that are not a multiple of the block") {
  check_product("odd_shape", "M not a multiple of the block height, N not a multiple of its width");
}

TEST_CASE("matmul: inner dimension K = 1") {
  check_product("outer_shape", "K = 1: every element is a single product a[row][0] * b[0][col]");
}

TEST_CASE("matmul: nothing written outside C") {
  check_product("guard_shape", "partial blocks in both directions, with a guard zone after C");
}

TEST_CASE("matmul: large 1024x1024 matrices checked against cuBLAS") {
  check_product("large_shape", "large square matrices");
}

// cuBLAS is timed on the same matrices in the same process. Every timed call
// gets new A and B; the harness checks that C is written in full each time and
// compares it with the reference after calls chosen at random
// (kit::time_square_matmul).
TEST_CASE("matmul timing: 4096x4096 matrices against cuBLAS" * KIT_TIMING) {
  kit::time_square_matmul("matmul_kernel", launch_matmul, static_cast<int>(kit::param_int("timing_n")), kLookAt);
}
