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
// 50 MB L2. cuBLAS is timed on the same matrices in the same process. Every
// timed call gets new A and B, written on the GPU from its own random streams;
// the harness checks that C is written in full each time and compares it with
// the reference after calls chosen at random.
TEST_CASE("matmul timing: 4096x4096 matrices against cuBLAS" * KIT_TIMING) {
  const int size = static_cast<int>(kit::param_int("timing_n"));
  const std::size_t elements = static_cast<std::size_t>(size) * size;
  kit::DeviceBuffer<float> d_a(elements), d_b(elements), d_c(elements);
  const auto options = kit::TimingOptions::from_params();

  kit::TimedWork work;
  work.name = "matmul_kernel";
  work.call = [&] { launch_matmul(d_a.data(), d_b.data(), d_c.data(), size, size, size); };
  work.work_per_call = 2.0 * size * size * static_cast<double>(size);
  work.unit = kit::RateUnit::GFLOPs;
  work.outputs = {kit::Output::device("C", d_c.data(), elements)};
  work.refresh = [&](const kit::Call& call) {
    kit::fill_matmul_inputs(d_a.data(), d_b.data(), size, size, size, call.rng("A"), call.rng("B"));
  };
  kit::fill_matmul_inputs(d_a.data(), d_b.data(), size, size, size, kit::Rng::for_case("A"), kit::Rng::for_case("B"));
  work.ceilings = {kit::cublas_matmul_ceiling(d_a.data(), d_b.data(), d_c.data(), size, size, size, options)};
  work.verify = [&](const kit::Call& call) {
    const kit::MatmulInputs in = kit::make_matmul_inputs(size, size, size, call.rng("A"), call.rng("B"));
    return kit::expect_matmul(d_c.download(), expected_for(in),
                              {"the timing matrices, " + in.shape() + ", inputs of " + call.name(), kLookAt});
  };
  work.look_at = kLookAt;
  kit::time_work(work, options);
}
