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

// 137 GFLOP with A, B and C at 64 MiB each: far beyond launch overhead and the
// 50 MB L2. cuBLAS is timed on the same matrices in the same process.
TEST_CASE("matmul timing: 4096x4096 matrices against cuBLAS" * KIT_TIMING) {
  const int size = static_cast<int>(kit::param_int("timing_n"));
  const kit::MatmulInputs in = kit::make_matmul_inputs(size, size, size);
  kit::DeviceBuffer<float> d_a(in.a), d_b(in.b), d_c(static_cast<std::size_t>(size) * size);
  const auto options = kit::TimingOptions::from_params();

  kit::Measurement kernel{
      "matmul_kernel",
      kit::time_device_work([&] { launch_matmul(d_a.data(), d_b.data(), d_c.data(), size, size, size); }, options),
      in.flops(), kit::RateUnit::GFLOPs};
  kernel.ceilings.push_back(kit::cublas_matmul_ceiling(d_a.data(), d_b.data(), d_c.data(), size, size, size, options));
  kit::report(kernel);

  d_c.poison();  // the timed code must also be right
  launch_matmul(d_a.data(), d_b.data(), d_c.data(), size, size, size);
  kit::expect_matmul(d_c.download(), expected_for(in), {"the timing matrices, " + in.shape(), kLookAt});
}
