// Lab 05 public tests: the ones you can run yourself (make 05-reduction).
#include "reduction_checks.cuh"

using namespace reduction_checks;

// Step 1: interleaved pairs.
TEST_CASE("launch_reduce_interleaved: one element (n = 1)") { check_one_element(interleaved()); }
TEST_CASE("launch_reduce_interleaved: a prime length that is not a multiple of the block size") {
  check_prime_length(interleaved());
}
TEST_CASE("launch_reduce_interleaved: mixed-sign values that nearly cancel") { check_cancelling(interleaved()); }
TEST_CASE("launch_reduce_interleaved: a large array of 2^28 + 3 elements") { check_large(interleaved()); }

// Step 2: sequential addressing.
TEST_CASE("launch_reduce_sequential: one element (n = 1)") { check_one_element(sequential()); }
TEST_CASE("launch_reduce_sequential: a prime length that is not a multiple of the block size") {
  check_prime_length(sequential());
}
TEST_CASE("launch_reduce_sequential: mixed-sign values that nearly cancel") { check_cancelling(sequential()); }
TEST_CASE("launch_reduce_sequential: a large array of 2^28 + 3 elements") { check_large(sequential()); }

// Step 3: add while loading, grid-stride.
TEST_CASE("launch_reduce_grid_stride: one element (n = 1)") { check_one_element(grid_stride()); }
TEST_CASE("launch_reduce_grid_stride: a prime length that is not a multiple of the block size") {
  check_prime_length(grid_stride());
}
TEST_CASE("launch_reduce_grid_stride: mixed-sign values that nearly cancel") { check_cancelling(grid_stride()); }
TEST_CASE("launch_reduce_grid_stride: a large array of 2^28 + 3 elements") { check_large(grid_stride()); }

// Step 4: float4 loads, warp shuffles, one atomicAdd per block.
TEST_CASE("launch_reduce_warp_shuffle: one element (n = 1)") { check_one_element(warp_shuffle()); }
TEST_CASE("launch_reduce_warp_shuffle: a prime length that is not a multiple of the block size") {
  check_prime_length(warp_shuffle());
}
TEST_CASE("launch_reduce_warp_shuffle: mixed-sign values that nearly cancel") { check_cancelling(warp_shuffle()); }
TEST_CASE("launch_reduce_warp_shuffle: a large array of 2^28 + 3 elements") { check_large(warp_shuffle()); }

// Integers: exact, and back on the host.
TEST_CASE("sum_ints: one element and a prime length summed exactly") {
  if (!check_ints(small_signed_ints(1, "one"), "n = 1", kLookAtInts)) return;
  const auto n = static_cast<std::size_t>(kit::param_int("int_prime_n"));
  check_ints(small_signed_ints(n), "n = " + std::to_string(n) + ", a prime, values in [-1000, 1000]", kLookAtInts);
}

TEST_CASE("sum_ints: a sum far beyond the int32 range") {
  const auto n = static_cast<std::size_t>(kit::param_int("int_wide_n"));
  check_ints(kit::Rng::for_case("x").uniform_ints(n, 1 << 29, 1 << 30),
             "n = " + std::to_string(n) + ", values in [2^29, 2^30]: any two of them overflow an int32",
             "the type of every partial sum in reduce_ints_kernel and warp_sum: each must be 64 bits");
}

// Timing: each step against thrust::reduce and a device-to-device copy.
TEST_CASE("reduction timing: launch_reduce_interleaved on 2^28 floats" * KIT_TIMING) { time_step(interleaved()); }
TEST_CASE("reduction timing: launch_reduce_sequential on 2^28 floats" * KIT_TIMING) { time_step(sequential()); }
TEST_CASE("reduction timing: launch_reduce_grid_stride on 2^28 floats" * KIT_TIMING) { time_step(grid_stride()); }
TEST_CASE("reduction timing: launch_reduce_warp_shuffle on 2^28 floats" * KIT_TIMING) { time_step(warp_shuffle()); }
