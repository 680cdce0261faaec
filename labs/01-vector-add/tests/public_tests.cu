// Lab 01 public tests: the ones you can run yourself (make 01-vector-add).
#include <algorithm>

#include "kit/remote.hpp"
#include "vector_add_checks.cuh"

using namespace vector_add_checks;

TEST_CASE("vector_add: one element (n = 1)") { check_round_trip(1, "n = 1"); }

TEST_CASE("vector_add: a small vector of a few blocks") {
  const int n = static_cast<int>(kit::param_int("small_n"));
  check_round_trip(n, "n = " + std::to_string(n));
}

TEST_CASE("vector_add: length not a multiple of the block size") {
  const int n = static_cast<int>(kit::param_int("odd_n"));
  check_round_trip(n, "n = " + std::to_string(n) + ", not a multiple of any block size");
}

TEST_CASE("vector_add: a large vector") {
  const int n = static_cast<int>(kit::param_int("large_n"));
  check_round_trip(n, "n = " + std::to_string(n));
}

TEST_CASE("launch_vector_add: device vectors with nothing written past the end") {
  const int n = static_cast<int>(kit::param_int("odd_n"));
  check_launch(n, "n = " + std::to_string(n) + " on device vectors");
}

// Every timed call gets new a and b, written on the GPU from its own random
// streams; the harness checks that c is written in full each time and, after
// calls chosen at random, compares every element of c with the sum on the GPU
// (kit::expect_close_on_device: on the CPU, 2^26 elements would take a second
// per checked call). A call takes a fraction of a millisecond, so the harness
// may make several sets of a, b and c and time several calls in a row, each on
// its own set.
TEST_CASE("vector add timing: kernel on device-resident vectors" * KIT_TIMING) {
  const int n = static_cast<int>(kit::param_int("timing_n"));
  const auto count = static_cast<std::size_t>(n);
  const auto options = kit::TimingOptions::from_params();
  const std::string input = "the timing vector, n = " + std::to_string(n);

  kit::TimedWork work;
  work.name = "vector_add_kernel";
  work.work_per_call = 3.0 * n * sizeof(float);  // read a and b, write c
  work.ceilings = {kit::copy_ceiling(static_cast<std::size_t>(work.work_per_call), options)};
  work.look_at = kLookAt;
  work.sets_from([&] {
    const auto a = kit::shared_device_buffer<float>(count), b = kit::shared_device_buffer<float>(count),
               c = kit::shared_device_buffer<float>(count);
    kit::WorkSet set;
    set.call = [=] { launch_vector_add(a->data(), b->data(), c->data(), n); };
    set.outputs = {kit::Output::device("c", c->data(), count)};
    set.refresh = [=](const kit::Call& call) {
      kit::fill_uniform_floats(a->data(), count, call.rng("a"), kInputLow, kInputHigh);
      kit::fill_uniform_floats(b->data(), count, call.rng("b"), kInputLow, kInputHigh);
    };
    set.verify = [=](const kit::Call& call) {
      return kit::expect_close_on_device(c->data(), count, sum_of(call.rng("a"), call.rng("b")), tolerance(),
                                         {input + ", inputs of " + call.name(), kLookAt});
    };
    return set;
  });
  kit::time_work(work, options);
}

// The same on host arrays: new ones before every call, made on the CPU. The arrays are pageable, like
// a program's own; graded, they are memory your code's process maps as well, so the clock holds your
// function's copies over PCIe and not the arrays' trip between the grader's process and yours.
TEST_CASE("vector add timing: host function with its copies over PCIe" * KIT_TIMING) {
  const int n = static_cast<int>(kit::param_int("timing_n"));
  const auto count = static_cast<std::size_t>(n);
  kit::remote::SharedHostBuffer<float> a(count, false), b(count, false), c(count, false);
  kit::TimingOptions options = kit::TimingOptions::from_params();
  options.repeats = static_cast<int>(kit::param_int("host_timing_repeats"));
  const std::string input = "the timing vector, n = " + std::to_string(n);

  kit::TimedWork work;
  work.name = "vector_add_host";
  work.call = [&] { vector_add(a.data(), b.data(), c.data(), n); };
  work.work_per_call = 3.0 * n * sizeof(float);
  work.outputs = {kit::Output::host("c", c.data(), count)};
  work.refresh = [&](const kit::Call& call) {
    const std::vector<float> new_a = call.rng("a").uniform_floats(count, kInputLow, kInputHigh),
                             new_b = call.rng("b").uniform_floats(count, kInputLow, kInputHigh);
    std::copy(new_a.begin(), new_a.end(), a.data());
    std::copy(new_b.begin(), new_b.end(), b.data());
  };
  work.verify = [&](const kit::Call& call) {
    return kit::expect_close(std::vector<float>(c.data(), c.data() + count),
                             make_inputs(count, call.rng("a"), call.rng("b")).sum, tolerance(),
                             {input + ", inputs of " + call.name(), kLookAt});
  };
  work.look_at = kLookAt;
  kit::time_work(work, options);
}
