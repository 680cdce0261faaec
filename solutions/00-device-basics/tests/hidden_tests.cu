// Lab 00 hidden tests: run by the grader only. Each targets a mistake students make.
#include "device_basics_checks.cuh"

using namespace device_basics_checks;

namespace {

// The judge's own timing of a launch, the yardstick of the hidden timing tests: the same kernel
// (its copy in this program), the same launches, one pair of events around the timed ones.
// Kept out of the public checks, where it would be the answer to time_kernel_ms.
double judge_event_ms(const KernelLaunch& launch, float* d_data, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) {
    launch_lab_kernel(launch, d_data, nullptr);
    CUDA_CHECK_LAUNCH();
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < repeats; ++i) launch_lab_kernel(launch, d_data, nullptr);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / repeats;
}

// time_kernel_ms on `launch`, against the judge's own timing of the same launches. A call
// before the measured one, with the counter then reset, loads the kernel's code in the
// student's process first (CUDA loads a kernel at its first launch), as the judge's warm-up
// launch does in its own: with no warm-up, the first launch would time the loading too.
void check_against_judge(const KernelLaunch& launch, float* d_data, int warmup, int repeats) {
  const std::string input = describe(launch, warmup, repeats);
  call_time_kernel_ms(launch, d_data, 1, 1);
  const TimedCall call = call_time_kernel_ms(launch, d_data, warmup, repeats);
  expect_launch_count(call, warmup, repeats, input);
  launch_lab_kernel(launch, d_data, nullptr);  // the judge's own first launch, untimed
  CUDA_CHECK(cudaDeviceSynchronize());
  const double judge_ms = judge_event_ms(launch, d_data, warmup, repeats);
  expect_time(call.ms, judge_ms, "the test's own CUDA events time one launch at", input);
}

}  // namespace

// A program may see several GPUs; each is asked by its own number.
TEST_CASE("query_device (hidden): every visible GPU") {
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  for (int device = devices - 1; device >= 0; --device) {
    check_properties(device);
    check_worked_out(device);
  }
}

// A block that is not a whole number of warps: warp and lane come from threadIdx.x, not from
// the index over the grid.
TEST_CASE("record_places (hidden): block sizes that are not a multiple of the warp") {
  const int count = static_cast<int>(kit::param_int("places_count"));
  for (const auto block : kit::param_ints("places_block_sizes"))
    check_places(count, static_cast<int>(block),
                 std::to_string(count) + " threads in blocks of " + std::to_string(block));
}

// Run under compute-sanitizer's memcheck (hidden.toml): any access outside the places fails,
// even one past the guard zone the other tests watch.
TEST_CASE("record_places (hidden): no access outside the places (compute-sanitizer memcheck)") {
  const int block = static_cast<int>(kit::param_int("sanitizer_block_size"));
  for (const auto count : kit::param_ints("sanitizer_counts"))
    check_places_exact(static_cast<int>(count), block,
                       std::to_string(count) + " threads in blocks of " + std::to_string(block) +
                           " on places of exactly that many");
}

// No warm-up at all, one timed launch, one block per SM: the loop bounds, and a clock that
// starts before the only launch.
TEST_CASE("time_kernel_ms (hidden): one timed launch and no warm-up") {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const KernelLaunch launch{LabKernel::kSpin, attribute(cudaDevAttrMultiProcessorCount, device), 64, 0,
                            static_cast<int>(kit::param_int("short_spin_us"))};
  kit::DeviceBuffer<float> d_data(1);
  check_against_judge(launch, d_data.data(), 0, 1);
  const TimedCall call = call_time_kernel_ms(launch, d_data.data(), 0, 1);
  expect_time(call.ms, launch.rounds / 1000.0, "each launch waits", describe(launch, 0, 1));
}

// A kernel whose time the GPU's memory sets, over a quarter of a gigabyte and many blocks:
// no known answer, so the judge times it itself.
TEST_CASE("time_kernel_ms (hidden): a memory-bound kernel against the test's own events") {
  const int n = static_cast<int>(kit::param_int("scale_n"));
  const int block = 256;
  const KernelLaunch launch{LabKernel::kScale, (n + block - 1) / block, block, n, 1};
  kit::DeviceBuffer<float> d_data(static_cast<std::size_t>(n));
  CUDA_CHECK(cudaMemset(d_data.data(), 0, d_data.bytes()));  // 0 stays finite under x = 0.999 x + 0.001
  check_against_judge(launch, d_data.data(), static_cast<int>(kit::param_int("warmup_launches")),
                      static_cast<int>(kit::param_int("scale_timed_launches")));
}

// Every block size a kernel allows, 1 to its limit: partly filled warps, and sizes where the
// limit on blocks, threads, registers or shared memory per SM takes over.
TEST_CASE("occupancy_sweep (hidden): every block size from 1 to each kernel's limit") {
  for (const auto& named : kLabKernels) {
    std::vector<int> sizes;
    for (int size = 1; size <= runtime_attributes(named.kernel).maxThreadsPerBlock; ++size) sizes.push_back(size);
    check_sweep(named, 0, sizes);
  }
}

// Dynamic shared memory taken from the SM for every block, beside the kernel's own.
TEST_CASE("occupancy_sweep (hidden): dynamic shared memory per block") {
  for (const auto& named : kLabKernels) {
    const auto sizes = allowed_block_sizes(named.kernel, kit::param_ints("mixed_block_sizes"));
    for (const auto bytes : allowed_dynamic_shared(named.kernel, kit::param_ints("dynamic_shared_bytes")))
      check_sweep(named, bytes, sizes);
  }
}

TEST_CASE("choose_block_size (hidden): a block size limit and dynamic shared memory") {
  for (const auto& named : kLabKernels)
    for (const auto bytes : allowed_dynamic_shared(named.kernel, kit::param_ints("dynamic_shared_bytes")))
      for (const auto limit : kit::param_ints("block_size_limits")) check_choice(named, bytes, static_cast<int>(limit));
}
