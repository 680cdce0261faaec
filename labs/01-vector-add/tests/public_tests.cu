// Lab 01 public tests: the ones you can run yourself (make 01-vector-add).
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

TEST_CASE("vector add timing: kernel on device-resident vectors" * KIT_TIMING) {
  const int n = static_cast<int>(kit::param_int("timing_n"));
  const Inputs in = make_inputs(n);
  kit::DeviceBuffer<float> d_a(in.a), d_b(in.b), d_c(n);
  const auto options = kit::TimingOptions::from_params();
  const double bytes = 3.0 * n * sizeof(float);  // read a and b, write c

  kit::Measurement kernel{
      "vector_add_kernel",
      kit::time_device_work([&] { launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n); }, options), bytes,
      kit::RateUnit::GBps};
  kernel.ceilings.push_back(kit::copy_ceiling(static_cast<std::size_t>(bytes), options));
  kit::report(kernel);

  d_c.poison();  // the timed code must also be right
  launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n);
  kit::expect_close(d_c.download(), in.sum, tolerance(), {"the timing vector, n = " + std::to_string(n), kLookAt});
}

TEST_CASE("vector add timing: host function with its copies over PCIe" * KIT_TIMING) {
  const int n = static_cast<int>(kit::param_int("timing_n"));
  const Inputs in = make_inputs(n);
  std::vector<float> c = kit::poisoned_vector<float>(n);
  kit::TimingOptions options = kit::TimingOptions::from_params();
  options.repeats = static_cast<int>(kit::param_int("host_timing_repeats"));
  options.batch = 1;

  kit::Measurement host{"vector_add_host",
                        kit::time_device_work([&] { vector_add(in.a.data(), in.b.data(), c.data(), n); }, options),
                        3.0 * n * sizeof(float), kit::RateUnit::GBps};
  kit::report(host);
  kit::expect_close(c, in.sum, tolerance(), {"the timing vector, n = " + std::to_string(n), kLookAt});
}
