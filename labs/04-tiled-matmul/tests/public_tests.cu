// Lab 04 public tests: the ones you can run yourself (make 04-tiled-matmul).
#include "tiled_matmul_checks.cuh"

using namespace tiled_matmul_checks;

// ---- Core part: tiled_matmul ----

TEST_CASE("tiled_matmul: square 128x128 matrices") {
  check_product(kTiled, shape_param("square_shape"), "square matrices, whole tiles", kLookAtTiled);
}

TEST_CASE("tiled_matmul: M one past a multiple of the tile") {
  check_product(kTiled, shape_param("m_edge_shape"), "M one past a multiple of the tile", kLookAtEdges);
}

TEST_CASE("tiled_matmul: K one past a multiple of the tile") {
  check_product(kTiled, shape_param("k_edge_shape"), "K one past a multiple of the tile: the last step is partial",
                kLookAtEdges);
}

TEST_CASE("tiled_matmul: N one past a multiple of the tile") {
  check_product(kTiled, shape_param("n_edge_shape"), "N one past a multiple of the tile", kLookAtEdges);
}

TEST_CASE("tiled_matmul: non-square 33x65 times 65x17") {
  check_product(kTiled, shape_param("nonsquare_shape"),
                "non-square: M, K and N all differ, so a swapped row and column index fails", kLookAtTiled);
}

TEST_CASE("tiled_matmul: matrices smaller than one tile and K = 1") {
  check_all(kTiled, "small_shapes", "smaller than one tile (K = 1 is a single product per element)", kLookAtEdges);
}

TEST_CASE("tiled_matmul: nothing written outside C") {
  check_product(kTiled, shape_param("guard_shape"), "partial tiles in both directions, with a guard zone after C",
                kLookAtGuard);
}

TEST_CASE("tiled_matmul: large 2048x2048 matrices checked against cuBLAS") {
  check_product(kTiled, shape_param("large_shape"), "large square matrices: 4096 blocks", kLookAtLarge,
                static_cast<int>(kit::param_int("race_runs")));
}

TEST_CASE("tiled matmul timing: 4096x4096 matrices against the naive kernel and cuBLAS" * KIT_TIMING) {
  time_product(launch_tiled_matmul, "tiled_matmul_kernel", true, kLookAtTiled);
}

// ---- Extra credit: register_tiled_matmul ----

TEST_CASE("register_tiled_matmul (extra credit): sizes around the 128x128 block tile") {
  check_all(kRegisterTiled, "register_tile_shapes", "sizes at and one either side of the 128x128 block tile",
            kLookAtRegisterEdges);
}

TEST_CASE("register_tiled_matmul (extra credit): K and N not multiples of 4") {
  check_all(kRegisterTiled, "register_unaligned_shapes",
            "K or N not a multiple of 4, so most rows of A, B or C do not start on 16 bytes", kLookAtRegisterEdges);
}

TEST_CASE("register_tiled_matmul (extra credit): large 2048x2048 matrices checked against cuBLAS") {
  check_product(kRegisterTiled, shape_param("large_shape"), "large square matrices", kLookAtRegister,
                static_cast<int>(kit::param_int("race_runs")));
}

// The extra-credit performance points also need a floor: a fraction of cuBLAS
// that a kernel without register tiling does not reach.
TEST_CASE("register-tiled matmul timing: 4096x4096 matrices against cuBLAS" * KIT_TIMING) {
  const kit::Measurement kernel =
      time_product(launch_register_tiled_matmul, "register_tiled_matmul_kernel", false, kLookAtRegister);
  const double fraction = kernel.rate() / kernel.ceilings.back().rate;
  const double floor = kit::param_double("extra_credit_min_cublas_fraction");
  CHECK_MESSAGE(fraction >= floor, "register_tiled_matmul_kernel reached "
                                       << fraction << " of cuBLAS; the extra-credit performance points need at least "
                                       << floor << " (extra_credit_min_cublas_fraction in lab.toml). Look at "
                                       << kLookAtRegister << ": does each thread compute a block of C in registers?");
}
