// Lab 06 checks shared by the public and the hidden tests: inputs, the CPU
// references, the float tolerance and the comparisons.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "scan.cuh"

namespace scan_checks {

inline const std::string kLookAtKoggeStone = "kogge_stone_scan_kernel and launch_kogge_stone_scan in scan.cu";
inline const std::string kLookAtWorkEfficient = "work_efficient_scan_kernel and launch_work_efficient_scan in scan.cu";
inline const std::string kLookAtScan =
    "launch_scan, tile_sum_kernel, tile_scan_kernel and warp_inclusive_scan in scan.cu";
inline const std::string kLookAtKoggeStoneGuard =
    "the bounds check on the store in kogge_stone_scan_kernel: an element at index n or beyond does not exist";
inline const std::string kLookAtWorkEfficientGuard =
    "the bounds check on the stores in work_efficient_scan_kernel: an element at index n or beyond does not exist";
inline const std::string kLookAtScanGuard =
    "the bounds checks where tile_scan_kernel (or anything else in launch_scan) stores: an element at index n or "
    "beyond does not exist and must not be written";

enum class Kind { Inclusive, Exclusive };

inline std::string kind_name(Kind kind) { return kind == Kind::Inclusive ? "inclusive" : "exclusive"; }

// Integer inputs: small values of both signs, so that no prefix sum comes near
// the int range even for n = 2^31 - 1 (a sum of n of them stays within a few
// hundred thousand of 0 times sqrt(n)), and every mistake changes a result.
constexpr int kIntLow = -100;
constexpr int kIntHigh = 100;
// Float inputs: both signs, so sums stay small and a float result is not
// dominated by one huge prefix.
constexpr float kFloatLow = -1.0f;
constexpr float kFloatHigh = 1.0f;

inline std::vector<int> int_inputs(std::size_t n, const std::string& stream = "in") {
  return kit::Rng::for_case(stream).uniform_ints(n, kIntLow, kIntHigh);
}

inline std::vector<float> float_inputs(std::size_t n, const std::string& stream = "in") {
  return kit::Rng::for_case(stream).uniform_floats(n, kFloatLow, kFloatHigh);
}

// The exact scan of integers (summed in 64 bits; the inputs keep it in int range).
inline std::vector<int> int_reference(const std::vector<int>& x, Kind kind) {
  std::vector<int> out(x.size());
  long long sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (kind == Kind::Inclusive) sum += x[i];
    out[i] = static_cast<int>(sum);
    if (kind == Kind::Exclusive) sum += x[i];
  }
  return out;
}

// The float reference: each output's sum in double (exact but for a last-bit
// rounding at the largest n, far below the tolerance), and beside it the sum of
// the magnitudes of the inputs up to and including that element, which the
// tolerance scales with. section > 0: every section of that many elements is
// scanned on its own (parts 1 and 2); 0: one scan of the whole array.
struct FloatReference {
  std::vector<double> sum;
  std::vector<double> magnitude;
};

inline FloatReference float_reference(const std::vector<float>& x, Kind kind, std::size_t section = 0) {
  FloatReference ref{std::vector<double>(x.size()), std::vector<double>(x.size())};
  double sum = 0.0, magnitude = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (section > 0 && i % section == 0) sum = magnitude = 0.0;
    if (kind == Kind::Inclusive) sum += x[i];
    ref.sum[i] = sum;
    if (kind == Kind::Exclusive) sum += x[i];
    magnitude += std::fabs(static_cast<double>(x[i]));
    ref.magnitude[i] = magnitude;
  }
  return ref;
}

// A float sum computed along a tree in which every input passes through at most
// d additions is within gamma_d = d*u / (1 - d*u) times the sum of the inputs'
// magnitudes of the exact sum, u = 2^-24 for float (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., section 4.2). d is the lab's
// float_path_additions: lab.toml says why it bounds every correct design here.
inline double path_gamma() {
  const double d = kit::param_double("float_path_additions");
  const double u = std::ldexp(1.0, -24);
  return d * u / (1.0 - d * u);
}

inline bool expect_float_scan(const std::vector<float>& got, const FloatReference& ref,
                              const kit::CaseContext& context) {
  const double gamma = path_gamma();
  return kit::expect_within(
      got, ref.sum, [&](std::size_t i) { return gamma * ref.magnitude[i]; }, context);
}

// Poisoned elements after every output: more than a whole section or tile of most designs.
inline std::size_t guard_elements() { return static_cast<std::size_t>(kit::param_int("guard_elements")); }

template <class T>
struct DeviceRun {
  std::vector<T> out;
  bool guard_untouched;
};

// Runs `launch` on a device copy of `in` with a poisoned output followed by `guard` poisoned
// elements, returns the output and checks the guard (a failure is reported with
// `guard_context`). guard = 0 gives buffers of exactly n elements, for compute-sanitizer,
// whose memcheck sees an access past an end only where nothing is allocated.
template <class T, class Launch>
DeviceRun<T> run_on_device(const std::vector<T>& in, Launch launch, std::size_t guard,
                           const kit::CaseContext& guard_context) {
  kit::DeviceBuffer<T> d_in(in);
  kit::GuardedBuffer<T> d_out(in.size(), guard);
  launch(d_in.data(), d_out.data(), static_cast<int>(in.size()));
  CUDA_CHECK(cudaDeviceSynchronize());  // a fault inside a kernel surfaces here, in this test
  return {d_out.download(), d_out.expect_guard_untouched(guard_context)};
}

template <class T>
void launch_whole_scan(Kind kind, const T* d_in, T* d_out, int n) {
  if (kind == Kind::Inclusive)
    launch_inclusive_scan(d_in, d_out, n);
  else
    launch_exclusive_scan(d_in, d_out, n);
}

// The check_* functions return whether the output (and the guard after it) was
// right, so a test looping over many inputs can stop at the first failure instead
// of repeating it. `guard`: poisoned elements after the output; 0 for
// compute-sanitizer runs (see run_on_device).

// Part 1: the sectioned inclusive Kogge-Stone scan of n random floats.
inline bool check_kogge_stone(int n, const std::string& input, const std::string& stream = "in",
                              std::size_t guard = guard_elements()) {
  const std::vector<float> x = float_inputs(n, stream);
  const std::string what = input + " (inclusive scan of each section of " + std::to_string(kKoggeStoneSection) + ")";
  const auto run =
      run_on_device(x, [](const float* d_in, float* d_out, int count) { launch_kogge_stone_scan(d_in, d_out, count); },
                    guard, {what, kLookAtKoggeStoneGuard});
  return expect_float_scan(run.out, float_reference(x, Kind::Inclusive, kKoggeStoneSection),
                           {what, kLookAtKoggeStone}) &&
         run.guard_untouched;
}

// Part 2: the sectioned exclusive work-efficient scan of n random floats.
inline bool check_work_efficient(int n, const std::string& input, const std::string& stream = "in",
                                 std::size_t guard = guard_elements()) {
  const std::vector<float> x = float_inputs(n, stream);
  const std::string what = input + " (exclusive scan of each section of " + std::to_string(kWorkEfficientSection) + ")";
  const auto run = run_on_device(
      x, [](const float* d_in, float* d_out, int count) { launch_work_efficient_scan(d_in, d_out, count); }, guard,
      {what, kLookAtWorkEfficientGuard});
  return expect_float_scan(run.out, float_reference(x, Kind::Exclusive, kWorkEfficientSection),
                           {what, kLookAtWorkEfficient}) &&
         run.guard_untouched;
}

// Part 3 on integers: exact.
inline bool check_int_scan(int n, Kind kind, const std::string& input, std::size_t guard = guard_elements()) {
  const std::vector<int> x = int_inputs(n, "int " + kind_name(kind) + " " + std::to_string(n));
  const std::string what = input + ", " + kind_name(kind) + " scan of ints";
  const auto run =
      run_on_device(x, [kind](const int* d_in, int* d_out, int count) { launch_whole_scan(kind, d_in, d_out, count); },
                    guard, {what, kLookAtScanGuard});
  return kit::expect_equal(run.out, int_reference(x, kind), {what, kLookAtScan}) && run.guard_untouched;
}

// Part 3 on floats: within the path tolerance.
inline bool check_float_scan(int n, Kind kind, const std::string& input, std::size_t guard = guard_elements()) {
  const std::vector<float> x = float_inputs(n, "float " + kind_name(kind) + " " + std::to_string(n));
  const std::string what = input + ", " + kind_name(kind) + " scan of floats";
  const auto run = run_on_device(
      x, [kind](const float* d_in, float* d_out, int count) { launch_whole_scan(kind, d_in, d_out, count); }, guard,
      {what, kLookAtScanGuard});
  return expect_float_scan(run.out, float_reference(x, kind), {what, kLookAtScan}) && run.guard_untouched;
}

}  // namespace scan_checks
