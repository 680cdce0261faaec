// Lab 01 checks shared by the public and the hidden tests: inputs, the CPU
// reference and the comparisons.
#pragma once

#include <string>
#include <vector>

#include "kit/device_check.cuh"
#include "kit/kit.cuh"
#include "vector_add.cuh"

namespace vector_add_checks {

inline const std::string kLookAt = "vector_add_kernel, launch_vector_add and vector_add in vector_add.cu";
inline const std::string kLookAtGuard =
    "the bounds check in vector_add_kernel: a thread whose index is n or more must not write";

struct Inputs {
  std::vector<float> a, b;
  std::vector<double> sum;  // the CPU reference, exact in double
};

constexpr float kInputLow = -1.0f, kInputHigh = 1.0f;

// a and b from the test case's "a" and "b" streams, or from the given ones (a
// timing call's, whose numbers kit::fill_uniform_floats also writes on the GPU).
inline Inputs make_inputs(std::size_t n, const kit::Rng& a = kit::Rng::for_case("a"),
                          const kit::Rng& b = kit::Rng::for_case("b")) {
  Inputs in{a.uniform_floats(n, kInputLow, kInputHigh), b.uniform_floats(n, kInputLow, kInputHigh),
            std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) in.sum[i] = static_cast<double>(in.a[i]) + in.b[i];
  return in;
}

// A float addition returns the exact sum rounded once, so it lies within half
// a unit in the last place of the double sum; rel_tol (lab.toml) allows one unit.
inline kit::Tolerance tolerance() { return {kit::param_double("rel_tol"), 0.0}; }

// The whole round trip through vector_add on host arrays.
inline void check_round_trip(int n, const std::string& input) {
  const Inputs in = make_inputs(n);
  std::vector<float> c = kit::poisoned_vector<float>(n);
  vector_add(in.a.data(), in.b.data(), c.data(), n);
  kit::expect_close(c, in.sum, tolerance(), {input, kLookAt});
}

// launch_vector_add on device vectors, with a poisoned guard zone after c that
// a kernel without its bounds check writes into.
inline void check_launch(int n, const std::string& input) {
  const Inputs in = make_inputs(n);
  kit::DeviceBuffer<float> d_a(in.a), d_b(in.b);
  kit::GuardedBuffer<float> d_c(n, static_cast<std::size_t>(kit::param_int("guard_elements")));
  launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());
  kit::expect_close(d_c.download(), in.sum, tolerance(), {input, kLookAt});
  d_c.expect_guard_untouched({input, kLookAtGuard});
}

// Element i of a + b, with a and b the numbers of two random streams, in double (exact), on the
// GPU or the CPU.
struct SumAt {
  kit::UniformFloatAt a, b;
  __host__ __device__ double operator()(std::size_t i) const { return static_cast<double>(a(i)) + b(i); }
};
inline SumAt sum_of(const kit::Rng& a, const kit::Rng& b) {
  return {kit::UniformFloatAt(a, kInputLow, kInputHigh), kit::UniformFloatAt(b, kInputLow, kInputHigh)};
}

// launch_vector_add on device vectors of a size where the grid's shape matters, a and b
// written on the GPU: every element of c must be written (the poison check, on the GPU) and
// right (compared on the GPU, kit::expect_close_on_device), and nothing may land in the guard
// zone after c.
inline void check_launch_on_device(int n, const std::string& input) {
  const kit::Rng a = kit::Rng::for_case("a"), b = kit::Rng::for_case("b");
  kit::DeviceBuffer<float> d_a(n), d_b(n);
  kit::GuardedBuffer<float> d_c(n, static_cast<std::size_t>(kit::param_int("guard_elements")));
  kit::fill_uniform_floats(d_a.data(), n, a, kInputLow, kInputHigh);
  kit::fill_uniform_floats(d_b.data(), n, b, kInputLow, kInputHigh);
  launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::size_t unwritten = kit::count_unwritten(kit::Output::device("c", d_c.data(), n));
  CHECK_MESSAGE(unwritten == 0, input << ": " << unwritten << " of the " << n << " elements of c were never written "
                                      << "(they still hold the poison the test put there before the launch). Does the "
                                         "grid cover every element? That takes over a million blocks here; a grid's "
                                         "x dimension allows 2^31 - 1 blocks, its y and z only 65535.\nLook at: "
                                      << kLookAt);
  kit::expect_close_on_device(d_c.data(), static_cast<std::size_t>(n), sum_of(a, b), tolerance(), {input, kLookAt});
  d_c.expect_guard_untouched({input, kLookAtGuard});
}

// launch_vector_add on vectors of exactly n elements, each in an allocation of
// its own, for compute-sanitizer's memcheck, which reports any access past the
// end of one (a guard zone would hide reads there).
inline void check_launch_exact(int n, const std::string& input) {
  const Inputs in = make_inputs(n);
  kit::DeviceBuffer<float> d_a(in.a), d_b(in.b), d_c(n);
  d_c.poison();
  launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());
  kit::expect_close(d_c.download(), in.sum, tolerance(), {input, kLookAt});
}

}  // namespace vector_add_checks
