// Lab 00 public tests: the ones you can run yourself (make 00-device-basics).
#include "device_basics_checks.cuh"

using namespace device_basics_checks;

TEST_CASE("query_device: the first GPU's properties match the CUDA runtime's") { check_properties(0); }

TEST_CASE("query_device: warps per SM and peak bandwidth worked out from the properties") { check_worked_out(0); }

TEST_CASE("record_places: one block of one warp") {
  const int count = static_cast<int>(kit::param_int("one_warp_count"));
  check_places(count, count, std::to_string(count) + " threads in one block");
}

TEST_CASE("record_places: a partly empty last block and nothing written past the end") {
  const int count = static_cast<int>(kit::param_int("partial_count"));
  const int block = static_cast<int>(kit::param_int("partial_block_size"));
  check_places(count, block,
               std::to_string(count) + " threads in blocks of " + std::to_string(block) + ", the last one partly empty");
}

// kSpin's launches last spin_us each by the GPU's own clock, so the answer is known without
// timing anything here.
TEST_CASE("time_kernel_ms: a kernel that waits a known time") {
  check_spin_timing(static_cast<int>(kit::param_int("spin_us")), 1, static_cast<int>(kit::param_int("warmup_launches")),
                    static_cast<int>(kit::param_int("timed_launches")));
}

// More warm-up launches than timed ones: timing them too makes the answer three times too long.
TEST_CASE("time_kernel_ms: warm-up launches are run but left out of the time") {
  check_spin_timing(static_cast<int>(kit::param_int("spin_us")), 1,
                    static_cast<int>(kit::param_int("long_warmup_launches")),
                    static_cast<int>(kit::param_int("short_timed_launches")));
}

TEST_CASE("kernel_facts: what the compiler made of every lab kernel") {
  for (const auto& named : kLabKernels) check_kernel_facts(named);
}

TEST_CASE("occupancy_sweep: whole-warp block sizes for every lab kernel") {
  for (const auto& named : kLabKernels)
    check_sweep(named, 0, allowed_block_sizes(named.kernel, kit::param_ints("whole_warp_block_sizes")));
}

TEST_CASE("choose_block_size: no limit and no dynamic shared memory for every lab kernel") {
  for (const auto& named : kLabKernels) check_choice(named, 0, 0);
}
