// Lab 05 hidden tests: run by the grader only. Each targets a mistake students make.
#include "reduction_checks.cuh"

using namespace reduction_checks;

namespace {

// Off-by-one bounds, block counts rounded the wrong way, a float4 tail that is
// lost or read twice, a pass too few: all show right at the edges.
void check_edges(const Step& step) {
  const std::string look_at = step.look_at +
                              ": the bounds check where elements are loaded (threads past n add nothing), "
                              "the number of blocks (rounded up), the elements that fill no float4, and the "
                              "passes that combine the blocks' partial sums";
  for (const auto n : kit::param_ints("boundary_ns")) {
    const auto x = signed_integers(static_cast<std::size_t>(n), "n" + std::to_string(n));
    if (!check_step(step, x, "n = " + std::to_string(n) + ", next to a multiple of a block size or of 4", look_at))
      return;
  }
}

// A missing or misplaced barrier loses a race only now and then: many blocks,
// several runs, and an input whose sum must be exact, so one lost race shows.
void check_races(const Step& step) {
  const auto n = static_cast<std::size_t>(kit::param_int("race_n"));
  const auto repeats = static_cast<int>(kit::param_int("race_repeats"));
  check_step(step, signed_integers(n),
             "n = " + std::to_string(n) + ", many blocks, summed " + std::to_string(repeats) + " times", 
             "the __syncthreads() barriers in " + step.kernel +
                 ": what one warp writes to shared memory, another may read only after a barrier both passed",
             repeats);
}

// x[i] = 1 + (i / period) % 3 where i is a multiple of `period`, 0 elsewhere,
// plus 4 at the very end: every nonzero value lies on its own, so an element
// read twice, skipped, or read from the wrong place changes the sum.
__global__ void fill_sparse_pattern_kernel(float* x, std::int64_t n, std::int64_t period) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] = (i % period == 0 ? static_cast<float>(1 + (i / period) % 3) : 0.0f) + (i == n - 1 ? 4.0f : 0.0f);
}

constexpr int kFillBlocks = 4096;
constexpr int kFillThreads = 256;

// Past 2^31 elements every index needs 64 bits. The input (8 GiB) is made on the
// GPU; its sum follows from the pattern.
void check_huge(const Step& step) {
  const auto n = static_cast<std::int64_t>(kit::param_int("huge_n"));
  const auto period = static_cast<std::int64_t>(kit::param_int("huge_period"));
  auto d_in = guarded_input<float>(static_cast<std::size_t>(n));
  fill_sparse_pattern_kernel<<<kFillBlocks, kFillThreads>>>(d_in.data(), n, period);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());

  Expected expected;
  for (std::int64_t m = 0; m * period < n; ++m) expected.sum += 1 + m % 3;
  expected.sum += 4;
  expected.abs_sum = expected.sum;  // all values are >= 0
  check_step_on_device(step, d_in.data(), n, expected,
                       "n = " + std::to_string(n) + " (more than 2^31), mostly zeros",
                       "index arithmetic in " + step.name + " and its kernels: past 2^31 elements, "
                           "blockIdx.x * blockDim.x, a grid-stride index and n itself need 64 bits (std::int64_t); "
                           "an int or unsigned wraps round");
}

// Under compute-sanitizer (hidden.toml says which tool): each step once per length, on
// buffers of exactly their sizes. memcheck: no read outside d_in, no write outside *d_sum and
// d_partials, also none whose value never reaches the sum. racecheck: no thread reads a
// shared-memory word another wrote before a barrier both passed, or overwrites one another may
// still read.
void check_sanitized(const Step& step, const std::string& look_at) {
  for (const auto n : kit::param_ints("sanitizer_ns"))
    if (!check_step_exact(step, signed_integers(static_cast<std::size_t>(n), "n" + std::to_string(n)),
                          "n = " + std::to_string(n), look_at))
      return;
}

std::string look_at_bounds(const Step& step) {
  return step.look_at +
         ": every load of d_in checks its index against n first, and every pass writes only "
         "inside d_partials (partials_capacity(n) floats) or *d_sum";
}

std::string look_at_barriers(const Step& step) {
  return "the __syncthreads() barriers in " + step.kernel +
         ": between one level of the tree writing shared memory and the next level reading it";
}

}  // namespace

TEST_CASE("launch_reduce_interleaved (hidden): lengths next to multiples of block and vector widths") {
  check_edges(interleaved());
}
TEST_CASE("launch_reduce_interleaved (hidden): many blocks summed repeatedly to expose shared-memory races") {
  check_races(interleaved());
}
TEST_CASE("launch_reduce_interleaved (hidden): more than 2^31 elements needing 64-bit indices") {
  check_huge(interleaved());
}

TEST_CASE("launch_reduce_sequential (hidden): lengths next to multiples of block and vector widths") {
  check_edges(sequential());
}
TEST_CASE("launch_reduce_sequential (hidden): many blocks summed repeatedly to expose shared-memory races") {
  check_races(sequential());
}
TEST_CASE("launch_reduce_sequential (hidden): more than 2^31 elements needing 64-bit indices") {
  check_huge(sequential());
}

TEST_CASE("launch_reduce_grid_stride (hidden): lengths next to multiples of block and vector widths") {
  check_edges(grid_stride());
}
TEST_CASE("launch_reduce_grid_stride (hidden): many blocks summed repeatedly to expose shared-memory races") {
  check_races(grid_stride());
}
TEST_CASE("launch_reduce_grid_stride (hidden): more than 2^31 elements needing 64-bit indices") {
  check_huge(grid_stride());
}

TEST_CASE("launch_reduce_warp_shuffle (hidden): lengths next to multiples of block and vector widths") {
  check_edges(warp_shuffle());
}
TEST_CASE("launch_reduce_warp_shuffle (hidden): many blocks summed repeatedly to expose shared-memory races") {
  check_races(warp_shuffle());
}
TEST_CASE("launch_reduce_warp_shuffle (hidden): more than 2^31 elements needing 64-bit indices") {
  check_huge(warp_shuffle());
}

TEST_CASE("sum_ints (hidden): lengths next to multiples of block sizes") {
  for (const auto n : kit::param_ints("boundary_ns")) {
    if (!check_ints(small_signed_ints(static_cast<std::size_t>(n), "n" + std::to_string(n)),
                    "n = " + std::to_string(n) + ", next to a multiple of a block size",
                    kLookAtInts + ": the bounds of the loop that loads the ints, and the number of blocks"))
      return;
  }
}

// The kernel runs for hundreds of microseconds; a host that reads the sum
// without waiting for it reads an unfinished one.
TEST_CASE("sum_ints (hidden): a large array whose sum is read only after the kernel finished") {
  const auto n = static_cast<std::size_t>(kit::param_int("early_read_n"));
  check_ints(kit::Rng::for_case("x").uniform_ints(n, 1, 1000), "n = " + std::to_string(n) + ", a large array",
             "sum_ints: a kernel launch returns at once, before the kernel has run; the host must wait for the GPU "
             "(cudaDeviceSynchronize, or a cudaMemcpy of the result, which waits) before it reads the sum");
}

TEST_CASE("launch_reduce_interleaved (hidden): no read or write outside its buffers (compute-sanitizer memcheck)") {
  check_sanitized(interleaved(), look_at_bounds(interleaved()));
}
TEST_CASE("launch_reduce_interleaved (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  check_sanitized(interleaved(), look_at_barriers(interleaved()));
}
TEST_CASE("launch_reduce_sequential (hidden): no read or write outside its buffers (compute-sanitizer memcheck)") {
  check_sanitized(sequential(), look_at_bounds(sequential()));
}
TEST_CASE("launch_reduce_sequential (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  check_sanitized(sequential(), look_at_barriers(sequential()));
}
TEST_CASE("launch_reduce_grid_stride (hidden): no read or write outside its buffers (compute-sanitizer memcheck)") {
  check_sanitized(grid_stride(), look_at_bounds(grid_stride()));
}
TEST_CASE("launch_reduce_grid_stride (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  check_sanitized(grid_stride(), look_at_barriers(grid_stride()));
}
TEST_CASE("launch_reduce_warp_shuffle (hidden): no read or write outside its buffers (compute-sanitizer memcheck)") {
  check_sanitized(warp_shuffle(), look_at_bounds(warp_shuffle()));
}
TEST_CASE("launch_reduce_warp_shuffle (hidden): no shared-memory race (compute-sanitizer racecheck)") {
  check_sanitized(warp_shuffle(), look_at_barriers(warp_shuffle()));
}

TEST_CASE("sum_ints (hidden): no read outside d_in (compute-sanitizer memcheck)") {
  for (const auto n : kit::param_ints("sanitizer_ns")) {
    const std::vector<int> x = small_signed_ints(static_cast<std::size_t>(n), "n" + std::to_string(n));
    kit::DeviceBuffer<int> d_in(x);  // exactly n ints: memcheck reports a read past them
    long long expected = 0;
    for (const int v : x) expected += v;
    const long long got = sum_ints(d_in.data(), static_cast<std::int64_t>(n));
    if (!kit::expect_equal(std::vector<long long>{got}, std::vector<long long>{expected},
                           {"n = " + std::to_string(n) + ", in an array of exactly n ints",
                            kLookAtInts + ": the bounds of the loop that loads the ints"}))
      return;
  }
}
