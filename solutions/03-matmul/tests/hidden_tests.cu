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

// Run under compute-sanitizer's memcheck (hidden.toml): A, B and C each in an allocation of
// exactly its size, so that any read or write past one of them is reported, also a read whose
// value never reaches C (a thread past the last row or column that still adds up its products).
TEST_CASE("matmul (hidden): no read or write outside the three matrices (compute-sanitizer memcheck)") {
  for (const Shape& shape : shapes_param("sanitizer_shapes")) {
    const kit::MatmulInputs in = kit::make_matmul_inputs(shape.m, shape.k, shape.n);
    kit::DeviceBuffer<float> d_a(in.a), d_b(in.b), d_c(static_cast<std::size_t>(shape.m) * shape.n);
    d_c.poison();
    launch_matmul(d_a.data(), d_b.data(), d_c.data(), shape.m, shape.k, shape.n);
    CUDA_CHECK(cudaDeviceSynchronize());
    if (!kit::expect_matmul(d_c.download(), expected_for(in),
                            {"matrices of exactly their size, " + in.shape(), kLookAt}))
      return;
  }
}
