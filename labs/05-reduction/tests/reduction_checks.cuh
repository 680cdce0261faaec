// Lab 05 checks shared by the public and the hidden tests: inputs, the tolerance and the
// comparisons with the CPU reference (reduction_reference.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "kit/device_count.cuh"
#include "kit/kit.cuh"
#include "reduction.cuh"
#include "reduction_reference.hpp"
#include "thrust_peer.cuh"

namespace reduction_checks {

// One of the four float reductions, as the tests see it.
struct Step {
  std::string name;         // the launch function, as the test names say it
  std::string kernel;       // its kernel in reduction.cu
  std::string measurement;  // its timing's name in lab.toml
  void (*launch)(const float* d_in, std::int64_t n, float* d_sum, float* d_partials);
  std::string look_at;
};

inline Step interleaved() {
  return {"launch_reduce_interleaved", "reduce_interleaved_kernel", "reduce_interleaved", launch_reduce_interleaved,
          "reduce_interleaved_kernel and sum_block_by_block in reduction.cu"};
}
inline Step sequential() {
  return {"launch_reduce_sequential", "reduce_sequential_kernel", "reduce_sequential", launch_reduce_sequential,
          "reduce_sequential_kernel and sum_block_by_block in reduction.cu"};
}
inline Step grid_stride() {
  return {"launch_reduce_grid_stride", "reduce_grid_stride_kernel", "reduce_grid_stride", launch_reduce_grid_stride,
          "reduce_grid_stride_kernel and launch_reduce_grid_stride in reduction.cu"};
}
inline Step warp_shuffle() {
  return {"launch_reduce_warp_shuffle", "reduce_warp_shuffle_kernel", "reduce_warp_shuffle",
          launch_reduce_warp_shuffle,
          "reduce_warp_shuffle_kernel, warp_sum and launch_reduce_warp_shuffle in reduction.cu"};
}

inline const std::string kLookAtInts = "reduce_ints_kernel, warp_sum and sum_ints in reduction.cu";
// What a NaN sum means, added to every float check's hint.
inline const std::string kNanHint =
    " (a sum of nan means something NaN was added: the tests put NaN before and after d_in and into"
    " d_partials, so look for reads outside d_in[0, n) and for partial sums read before they were written)";

inline std::string show_number(double value) {
  std::ostringstream text;
  text.precision(3);
  text << value;
  return text.str();
}

// ---------------------------------------------------------------------------
// The CPU reference (reduction_reference.hpp) and the tolerance.

using reduction_reference::exact_in_float;
using reduction_reference::Expected;
using reduction_reference::expected_sum;
using reduction_reference::kFloatExactIntegers;

// |computed - exact| <= gamma_D * sum(|x_i|), gamma_D = D u / (1 - D u), u = 2^-24,
// where D bounds how many additions any one element passes through (lab.toml
// explains the choice of D; the handout's "Tolerance" section too).
inline double allowed_error(std::int64_t n, const Expected& e) {
  if (exact_in_float(e)) return 0.0;
  const double count = static_cast<double>(n);
  const double depth = std::min(count - 1.0, std::ceil(std::log2(count)) +
                                                 std::ceil(count / kit::param_double("fp_serial_threads")) +
                                                 kit::param_double("fp_extra_depth"));
  const double du = depth * 0x1.0p-24;
  return du / (1.0 - du) * e.abs_sum;
}

// ---------------------------------------------------------------------------
// Inputs.

// Nonzero whole numbers in [-m, -1] and [1, m], m = min(1000, 2^24 / n) but at
// least 1: for n <= 2^24 their sum is exact in float in any order, and every
// element changes it, so a skipped or doubled element shows.
inline std::vector<float> signed_integers(std::size_t n, const std::string& stream = "x") {
  const auto m = static_cast<int>(std::clamp<std::int64_t>(static_cast<std::int64_t>(kFloatExactIntegers) /
                                                               static_cast<std::int64_t>(n), 1, 1000));
  const std::vector<int> k = kit::Rng::for_case(stream).uniform_ints(n, 0, 2 * m - 1);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(k[i] < m ? k[i] - m : k[i] - m + 1);
  return x;
}

// Mostly zeros, with +1 or -1 at one place in 64 each: about n / 32 nonzero
// values, few enough (for n up to 2^28 and more) that the sum is exact in float.
// Element i, from a uniform float in [0, 64) of the case's stream "x".
struct SparseSignAt {
  kit::UniformFloatAt value;
  __device__ float operator()(std::size_t i) const {
    const float v = value(i);
    return v < 1.0f ? 1.0f : (v < 2.0f ? -1.0f : 0.0f);
  }
};

// Values that cancel: h values from [-1000, 1000], then one or two from [-1, 1],
// then the first h again, negated, in reverse order. The exact sum is that of the
// one or two in the middle, far smaller than the rounding errors of the partial sums on the
// way, which is why the tolerance scales with sum(|x_i|) and not with the sum.
inline std::vector<float> cancelling(std::size_t n) {
  std::vector<float> x = kit::Rng::for_case("small").uniform_floats(n, -1.0f, 1.0f);
  const std::size_t h = (n - 1) / 2;
  const std::vector<float> big = kit::Rng::for_case("big").uniform_floats(h, -1000.0f, 1000.0f);
  for (std::size_t j = 0; j < h; ++j) {
    x[j] = big[j];
    x[n - 1 - j] = -big[j];
  }
  return x;
}

// ---------------------------------------------------------------------------
// Device memory.

// An input in device memory between two poisoned guard zones of guard_elements (kit::GuardedInput):
// a kernel that reads before the start or past the end adds NaN (floats) or -1414812757 (ints,
// 0xABABABAB), and the sum shows it.
template <class T>
kit::GuardedInput<T> guarded_input(const std::vector<T>& host) {
  return kit::GuardedInput<T>(host, static_cast<std::size_t>(kit::param_int("guard_elements")));
}
template <class T>
kit::GuardedInput<T> guarded_input(std::size_t n) {
  return kit::GuardedInput<T>(n, static_cast<std::size_t>(kit::param_int("guard_elements")));
}

// Runs `step` on d_in[0, n) `repeats` times, each time on a freshly poisoned
// *d_sum and d_partials, each with a guard zone after it, and checks each
// result and both guards. Returns false at the first wrong one.
inline bool check_step_on_device(const Step& step, const float* d_in, std::int64_t n, const Expected& expected,
                                 const std::string& input, const std::string& look_at, int repeats = 1) {
  kit::GuardedBuffer<float> d_sum(1, static_cast<std::size_t>(kit::param_int("sum_guard_elements")));
  kit::GuardedBuffer<float> d_partials(static_cast<std::size_t>(partials_capacity(n)),
                                       static_cast<std::size_t>(kit::param_int("partials_guard_elements")));
  const double allowed = allowed_error(n, expected);
  const std::string what =
      input + (allowed == 0.0 ? "; whole numbers, so the sum must be exact"
                              : "; allowed error " + show_number(allowed) + " (Tolerance, in the handout)");
  for (int run = 1; run <= repeats; ++run) {
    d_sum.poison();
    d_partials.poison();
    step.launch(d_in, n, d_sum.data(), d_partials.data());
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string context =
        repeats > 1 ? what + " (run " + std::to_string(run) + " of " + std::to_string(repeats) + ")" : what;
    const bool right = kit::expect_within(d_sum.download(), std::vector<double>{expected.sum},
                                          [&](std::size_t) { return allowed; }, {context, look_at + kNanHint});
    const bool clean =
        d_sum.expect_guard_untouched({context, step.name + ": the sum goes to d_sum[0], nothing after it"});
    const bool partials_clean = d_partials.expect_guard_untouched(
        {context, step.name + ": d_partials holds partials_capacity(n) floats, and nothing after them is yours"});
    if (!right || !clean || !partials_clean) return false;
  }
  return true;
}

// `step` once on d_in, *d_sum and d_partials of exactly their sizes, each an
// allocation of its own, for compute-sanitizer (no guard zones: memcheck sees
// an access past an end only where nothing is allocated).
inline bool check_step_exact(const Step& step, const std::vector<float>& x, const std::string& input,
                             const std::string& look_at) {
  const auto n = static_cast<std::int64_t>(x.size());
  kit::DeviceBuffer<float> d_in(x), d_sum(1), d_partials(static_cast<std::size_t>(partials_capacity(n)));
  d_sum.poison();
  d_partials.poison();
  step.launch(d_in.data(), n, d_sum.data(), d_partials.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  const Expected expected = expected_sum(x);
  const double allowed = allowed_error(n, expected);
  return kit::expect_within(d_sum.download(), std::vector<double>{expected.sum}, [&](std::size_t) { return allowed; },
                            {input + ", in buffers of exactly their sizes", look_at});
}

// Uploads x between guard zones and checks `step` on it.
inline bool check_step(const Step& step, const std::vector<float>& x, const std::string& input,
                       const std::string& look_at, int repeats = 1) {
  auto d_in = guarded_input(x);
  return check_step_on_device(step, d_in.data(), static_cast<std::int64_t>(x.size()), expected_sum(x), input,
                              look_at, repeats);
}

// ---------------------------------------------------------------------------
// The public checks of a step, one per test case.

inline void check_one_element(const Step& step) {
  check_step(step, signed_integers(1), "n = 1", step.look_at);
}

inline void check_prime_length(const Step& step) {
  const auto n = static_cast<std::size_t>(kit::param_int("prime_n"));
  check_step(step, signed_integers(n),
             "n = " + std::to_string(n) + ", a prime: not a multiple of the block size or of 4", step.look_at);
}

inline void check_cancelling(const Step& step) {
  const auto n = static_cast<std::size_t>(kit::param_int("cancel_n"));
  check_step(step, cancelling(n),
             "n = " + std::to_string(n) + ", large values of both signs that cancel, so the sum is small",
             step.look_at);
}

// The 1 GiB input is made on the GPU, between its guard zones, and its sum worked out there by the
// same function object (it is exact: whole numbers, and sum(|x_i|) far below 2^24), instead of
// making it on the CPU, adding it up and copying it over for each of four steps.
inline void check_large(const Step& step) {
  const auto n = static_cast<std::size_t>(kit::param_int("large_n"));
  const SparseSignAt element_at{kit::UniformFloatAt(kit::Rng::for_case("x"), 0.0f, 64.0f)};
  auto d_in = guarded_input<float>(n);
  kit::make_on_device(d_in.data(), n, element_at);
  const kit::Sums sums = kit::sums_on_device(n, element_at);
  check_step_on_device(step, d_in.data(), static_cast<std::int64_t>(n), Expected{sums.sum, sums.abs_sum, true},
                       "n = " + std::to_string(n) + " (2^28 + 3), mostly zeros and some +1 and -1", step.look_at);
}

// ---------------------------------------------------------------------------
// Integers.

inline bool check_ints(const std::vector<int>& x, const std::string& input, const std::string& look_at) {
  auto d_in = guarded_input(x);
  long long expected = 0;
  for (const int v : x) expected += v;
  const long long got = sum_ints(d_in.data(), static_cast<std::int64_t>(x.size()));
  return kit::expect_equal(std::vector<long long>{got}, std::vector<long long>{expected}, {input, look_at});
}

// Nonzero ints in [-1000, -1] and [1, 1000].
inline std::vector<int> small_signed_ints(std::size_t n, const std::string& stream = "x") {
  std::vector<int> x = kit::Rng::for_case(stream).uniform_ints(n, -1000, 999);
  for (int& v : x) v += v >= 0 ? 1 : 0;
  return x;
}

// ---------------------------------------------------------------------------
// Timing.

// thrust::reduce and a device-to-device copy of n floats, the yardsticks of every step, measured
// once a program: graded, the four timing cases run in one program, and measuring them again for
// each case took 0.15 s of every student's time alone on the GPU.
inline const std::vector<kit::Ceiling>& timing_ceilings(std::int64_t n, const kit::TimingOptions& options) {
  static const std::vector<kit::Ceiling> ceilings = [&] {
    const auto count = static_cast<std::size_t>(n);
    auto d_in = guarded_input<float>(count);
    kit::fill_uniform_floats(d_in.data(), count, kit::Rng::for_case("x"), 0.0f, 1.0f);
    return std::vector<kit::Ceiling>{thrust_reduce_ceiling(d_in.data(), n, options),
                                     kit::copy_ceiling(count * sizeof(float), options)};
  }();
  return ceilings;
}

// Times `step` on 2^28 random floats against thrust::reduce and a device-to-device
// copy of as many bytes. Every timed call gets new values, written on the GPU
// from its own random stream; the harness checks that *d_sum is written each
// time and compares it with the sum of that stream, made again and added up in
// double on the GPU, after calls chosen at random. A fast
// step takes well under a millisecond, so the harness may make several sets of
// the buffers and time several calls in a row, each on its own set.
inline void time_step(const Step& step) {
  const auto n = static_cast<std::int64_t>(kit::param_int("timing_n"));
  const auto count = static_cast<std::size_t>(n);
  const auto guard = static_cast<std::size_t>(kit::param_int("guard_elements"));
  constexpr float kLow = 0.0f, kHigh = 1.0f;
  const auto options = kit::TimingOptions::from_params();
  const double bytes = static_cast<double>(n) * sizeof(float);  // every element is read once

  kit::TimedWork work;
  work.name = step.measurement;
  work.work_per_call = bytes;
  work.ceilings = timing_ceilings(n, options);
  work.look_at = step.look_at;
  work.sets_from([&] {
    const auto d_in = std::make_shared<kit::GuardedInput<float>>(count, guard);
    const auto d_sum = kit::shared_device_buffer<float>(1);
    const auto d_partials = kit::shared_device_buffer<float>(static_cast<std::size_t>(partials_capacity(n)));
    kit::WorkSet set;
    // The call leaves its sum on the device, where the student's code writes it. Bringing it to
    // the host inside the clock, as thrust::reduce does, would put GPU work of the judge's own
    // between two of the runner's calls, and time a switch of the GPU between the two processes.
    set.call = [=, &step] { step.launch(d_in->data(), n, d_sum->data(), d_partials->data()); };
    set.outputs = {kit::Output::device("*d_sum", d_sum->data(), 1)};
    set.refresh = [=](const kit::Call& call) {
      kit::fill_uniform_floats(d_in->data(), count, call.rng("x"), kLow, kHigh);
    };
    set.verify = [=, &step](const kit::Call& call) {
      // The call's input made again from its random stream and added up on the GPU, in double (the
      // harness's test checks those sums against the CPU's): whatever the runner left in d_in, and
      // in a millisecond, where the CPU took a tenth of a second of every core. Random values in
      // [0, 1) are no whole numbers, so the tolerance is never zero here.
      const kit::Sums made = kit::sums_on_device(count, kit::UniformFloatAt(call.rng("x"), kLow, kHigh));
      const Expected expected{made.sum, made.abs_sum, false};
      const double allowed = allowed_error(n, expected);
      return kit::expect_within(
          d_sum->download(), std::vector<double>{expected.sum}, [&](std::size_t) { return allowed; },
          {"the timing array, n = " + std::to_string(n) + " random values in [0, 1) of " + call.name() +
               "; allowed error " + show_number(allowed) + " (Tolerance, in the handout)",
           step.look_at + kNanHint});
    };
    return set;
  });
  kit::time_work(work, options);
}

}  // namespace reduction_checks
