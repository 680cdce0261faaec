// Lab 03 hidden tests: run by the grader only. Each targets a mistake students make.
#include "matmul_checks.cuh"

using namespace matmul_checks;

namespace {

void check_all(const std::string& key, const std::string& kind) {
  for (const Shape& shape : shapes_param(key)) check_product(shape, kind);
}

}  // namespace

// A grid rounded down, or a guard missing or off by one, shows right at a block
// edge; each dimension is moved on its own so the message names the one at fault.
TEST_CASE("matmul (hidden): sizes one either side of block multiples in each dimension") {
  check_all("edge_m_shapes", "M one either side of a multiple of common block heights (K and N stay even)");
  check_all("edge_n_shapes", "N one either side of a multiple of common block widths (M and K stay even)");
  check_all("edge_k_shapes", "K next to a power of two (M and N stay even)");
}

// The more M and N differ, the further a swapped row and column lands.
TEST_CASE("matmul (hidden): tall and wide shapes where a swapped row and column fail") {
  check_all("tall_wide_shapes", "tall or wide: M and N far apart");
}

TEST_CASE("matmul (hidden): single rows and single columns (M = 1 or N = 1)") {
  check_all("vector_shapes", "a single row (M = 1) or a single column (N = 1) of C");
}

TEST_CASE("matmul (hidden): no writes outside C at awkward sizes") {
  check_all("guard_shapes", "partial blocks in one or both directions, with a guard zone after C");
}

TEST_CASE("matmul (hidden): a large non-square product checked against cuBLAS") {
  check_product(shape_param("large_nonsquare_shape"), "large and non-square, no size a multiple of 32");
}
