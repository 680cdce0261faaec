// Lab 04 hidden tests: run by the grader only. Each targets a mistake students make.
#include "tiled_matmul_checks.cuh"

using namespace tiled_matmul_checks;

// A missing zero-fill, a step count rounded down, or a guard missing in one
// dimension shows right at a tile edge; each dimension is moved on its own so
// the message names the one at fault.
TEST_CASE("tiled_matmul (hidden): sizes one either side of tile multiples in each dimension") {
  check_all(kTiled, "edge_m_shapes", "M one either side of a multiple of common tile sizes (K and N stay whole)",
            kLookAtEdges);
  check_all(kTiled, "edge_k_shapes", "K one either side of a multiple of common tile sizes (M and N stay whole)",
            kLookAtEdges);
  check_all(kTiled, "edge_n_shapes", "N one either side of a multiple of common tile sizes (M and K stay whole)",
            kLookAtEdges);
}

// Thousands of blocks, many steps along K, several runs: a block whose warps
// read a tile before it is complete, or overwrite it while others still read
// it, gets a wrong sum somewhere.
TEST_CASE("tiled_matmul (hidden): repeated large products where a missing barrier shows") {
  const int runs = static_cast<int>(kit::param_int("hidden_race_runs"));
  for (const Shape& shape : shapes_param("race_shapes"))
    check_product(kTiled, shape, "a large product with many blocks and many steps along K", kLookAtBarriers, runs);
}

TEST_CASE("tiled_matmul (hidden): tall and wide shapes and single rows or columns") {
  check_all(kTiled, "tall_wide_shapes", "tall or wide (M and N far apart), or a single row or column of C",
            kLookAtTiled);
}

TEST_CASE("tiled_matmul (hidden): no writes outside C at awkward sizes") {
  check_all(kTiled, "guard_shapes", "partial tiles in one or both directions, with a guard zone after C", kLookAtGuard);
}

TEST_CASE("tiled_matmul (hidden): a large non-square product checked against cuBLAS") {
  check_product(kTiled, shape_param("large_nonsquare_shape"), "large and non-square, no size a multiple of 32",
                kLookAtTiled);
}

TEST_CASE("register_tiled_matmul (hidden extra credit): awkward sizes and no writes outside C") {
  check_all(kRegisterTiled, "register_hidden_shapes",
            "sizes around the block tile, K or N odd, single rows and columns, with a guard zone after C",
            kLookAtRegisterEdges);
}

// ---- Under compute-sanitizer (hidden.toml says which tool) ----------------------------------
// One product per shape on matrices of exactly their size. memcheck: every read and write stays
// inside A, B and C, also a tile entry read from past the end and then never used (a row of A
// below the last, multiplied only into rows of C that are not stored). racecheck: no thread
// reads a tile entry before the barrier that follows its store, and none overwrites an entry
// before the barrier that follows its last read.

TEST_CASE("tiled_matmul (hidden): no read or write outside the three matrices (compute-sanitizer memcheck)") {
  for (const Shape& shape : shapes_param("sanitizer_shapes"))
    if (!check_product_exact(kTiled, shape, kLookAtEdges)) return;
}

TEST_CASE("tiled_matmul (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  for (const Shape& shape : shapes_param("sanitizer_shapes"))
    if (!check_product_exact(kTiled, shape, kLookAtBarriers)) return;
}

TEST_CASE(
    "register_tiled_matmul (hidden extra credit): no read or write outside the three matrices (compute-sanitizer "
    "memcheck)") {
  for (const Shape& shape : shapes_param("sanitizer_register_shapes"))
    if (!check_product_exact(kRegisterTiled, shape, kLookAtRegisterEdges)) return;
}

TEST_CASE("register_tiled_matmul (hidden extra credit): no shared-memory race (compute-sanitizer racecheck)") {
  for (const Shape& shape : shapes_param("sanitizer_register_shapes"))
    if (!check_product_exact(kRegisterTiled, shape, kLookAtRegister)) return;
}
