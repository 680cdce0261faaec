// Lab 06 checks shared by the public and the hidden tests: inputs, the CPU
// references, the float tolerance and the comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "kit/device_check.cuh"
#include "kit/kit.cuh"
#include "scan.cuh"
#include "scan_on_device.cuh"
#include "scan_reference.hpp"

namespace scan_checks {

inline const std::string kLookAtKoggeStone = "kogge_stone_scan_kernel and launch_kogge_stone_scan in scan.cu";
inline const std::string kLookAtWorkEfficient = "work_efficient_scan_kernel and launch_work_efficient_scan in scan.cu";
inline const std::string kLookAtWarpScan = "warp_inclusive_scan in scan.cu";
inline const std::string kLookAtTileScan = "tile_scan_kernel and launch_tile_scan in scan.cu";
inline const std::string kLookAtTileSums =
    "where tile_scan_kernel writes tile_sums: the sum of every element of the tile, written once per tile";
inline const std::string kLookAtAddOffsets = "add_offsets_kernel and launch_add_offsets in scan.cu";
inline const std::string kLookAtScan =
    "launch_scan (tile scans with their sums, the exclusive scan of the sums, the offsets added), tile_scan_kernel, "
    "add_offsets_kernel and warp_inclusive_scan in scan.cu";
inline const std::string kLookAtRegisterScan =
    "launch_register_tiled_scan, register_tile_sum_kernel, register_tile_scan_kernel and warp_inclusive_scan in "
    "scan.cu";
inline const std::string kLookAtKoggeStoneGuard =
    "the bounds check on the store in kogge_stone_scan_kernel: an element at index n or beyond does not exist";
inline const std::string kLookAtWorkEfficientGuard =
    "the bounds check on the stores in work_efficient_scan_kernel: an element at index n or beyond does not exist";
inline const std::string kLookAtScanGuard =
    "the bounds checks where tile_scan_kernel and add_offsets_kernel (or anything else in launch_scan) store: an "
    "element at index n or beyond does not exist and must not be written";
inline const std::string kLookAtRegisterScanGuard =
    "the bounds checks where register_tile_scan_kernel (or anything else in launch_register_tiled_scan) stores: an "
    "element at index n or beyond does not exist and must not be written";

using scan_reference::Kind;

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

// ---------------------------------------------------------------------------
// The CPU references (scan_reference.hpp), bound to the tests' input ranges.

using scan_reference::float_reference;
using scan_reference::FloatReference;
using scan_reference::FloatSums;
using scan_reference::int_reference;
using scan_reference::IntSums;
using scan_reference::reference_threads;
using scan_reference::scan_reference_at;

// The scans of the inputs that `rng` makes (those of int_inputs and float_inputs,
// and of kit::fill_uniform_ints / fill_uniform_floats on the GPU) at `positions`.
inline std::vector<int> int_reference_at(const kit::Rng& rng, std::size_t count,
                                         const std::vector<std::size_t>& positions, Kind kind) {
  return scan_reference_at<IntSums, std::vector<int>>(
      count, [&](std::size_t i) { return rng.uniform_int_at(i, kIntLow, kIntHigh); }, positions, kind,
      reference_threads(count));
}

inline FloatReference float_reference_at(const kit::Rng& rng, std::size_t count,
                                         const std::vector<std::size_t>& positions, Kind kind) {
  return scan_reference_at<FloatSums, FloatReference>(
      count, [&](std::size_t i) { return rng.uniform_float_at(i, kFloatLow, kFloatHigh); }, positions, kind,
      reference_threads(count));
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

// The error allowed at element k of `ref`: gamma_d times the sum of the magnitudes it adds up.
inline auto allowed_error(const FloatReference& ref) {
  return [&ref, gamma = path_gamma()](std::size_t k) { return gamma * ref.magnitude[k]; };
}

inline bool expect_float_scan(const std::vector<float>& got, const FloatReference& ref,
                              const kit::CaseContext& context) {
  return kit::expect_within(got, ref.sum, allowed_error(ref), context);
}

// The terms scan_on_device adds up for the inputs that `rng` makes: floats, and ints.
inline scan_on_device::FloatTerms float_terms(const kit::Rng& rng) {
  static_assert(kFloatLow == -1.0f && kFloatHigh == 1.0f,
                "scan_on_device's sums are exact for inputs in [-1, 1] only (scan_reference.hpp, FloatSums)");
  return {kit::UniformFloatAt(rng, kFloatLow, kFloatHigh)};
}
inline scan_on_device::IntTerms int_terms(const kit::Rng& rng) {
  return {rng.seed(), kIntLow, kit::detail::int_span(kIntLow, kIntHigh)};
}

// Reports the wrong elements of d_out that a comparison on the GPU found (`wrong`): the CPU
// reference makes the first few again, for the message and as a second opinion.
inline bool report_wrong_float_scan(const float* d_out, std::size_t size, Kind kind, const kit::Rng& rng,
                                    const kit::Found& wrong, const kit::CaseContext& context) {
  return kit::report_found_on_device(
      d_out, size, wrong,
      [&](const std::vector<float>& got, const std::vector<std::size_t>& positions, kit::detail::MismatchLog& log) {
        const FloatReference ref = float_reference_at(rng, size, positions, kind);
        kit::detail::log_outside(
            got, ref.sum, allowed_error(ref), [&](std::size_t i) { return positions[i]; }, log);
      },
      context);
}

inline bool report_wrong_int_scan(const int* d_out, std::size_t size, Kind kind, const kit::Rng& rng,
                                  const kit::Found& wrong, const kit::CaseContext& context) {
  return kit::report_found_on_device(
      d_out, size, wrong,
      [&](const std::vector<int>& got, const std::vector<std::size_t>& positions, kit::detail::MismatchLog& log) {
        const std::vector<int> ref = int_reference_at(rng, size, positions, kind);
        // Exact: an int and its difference from another are exact in double.
        kit::detail::log_outside(
            got, std::vector<double>(ref.begin(), ref.end()), [](std::size_t) { return 0.0; },
            [&](std::size_t i) { return positions[i]; }, log);
      },
      context);
}

// A scan of `size` elements in device memory, d_out, against the exact scan of the inputs that
// `rng` makes (those kit::fill_uniform_floats / fill_uniform_ints wrote), every element compared on
// the GPU (scan_on_device.cuh): floats within the same per-element tolerance as expect_float_scan,
// ints exactly. For outputs too large to make again on the CPU after every call: the hidden
// three-level scan's, and a timed call's found wrong where it was sampled.
inline bool expect_float_scan_on_device(const float* d_out, std::size_t size, Kind kind, const kit::Rng& rng,
                                        const kit::CaseContext& context) {
  const kit::Found wrong = scan_on_device::compare_scan<float, double2>(
      d_out, size, float_terms(rng), scan_on_device::FloatWrong{kind, path_gamma()});
  return wrong.count == 0 || report_wrong_float_scan(d_out, size, kind, rng, wrong, context);
}

inline bool expect_int_scan_on_device(const int* d_out, std::size_t size, Kind kind, const kit::Rng& rng,
                                      const kit::CaseContext& context) {
  const kit::Found wrong = scan_on_device::compare_scan<int, long long>(d_out, size, int_terms(rng),
                                                                       scan_on_device::IntWrong{kind});
  return wrong.count == 0 || report_wrong_int_scan(d_out, size, kind, rng, wrong, context);
}

// A timed call's output, compared at timing_check_elements positions drawn after the call, one in
// each of as many equal parts (kit::sample_positions says why that is enough, with the poison check
// that the timing makes on every element of every call): every element of a gigabyte, compared for
// each of a student's verified calls, held the GPU 0.68 s of each student's time alone on it. The
// hidden tests still compare every element of every output they grade. Where a compared element
// is wrong, every element is compared, for the report; should that find none, the report names the
// two comparisons' disagreement as the tests' fault (the CPU finds more than was counted).
inline std::vector<std::size_t> timing_check_positions(std::size_t size) {
  return kit::sample_positions(size, static_cast<std::size_t>(kit::param_int("timing_check_elements")));
}

inline bool expect_timed_float_scan(const float* d_out, std::size_t size, Kind kind, const kit::Rng& rng,
                                    const kit::CaseContext& context) {
  const scan_on_device::FloatWrong wrong_element{kind, path_gamma()};
  const kit::Found sampled = scan_on_device::compare_scan_at<float, double2>(
      d_out, timing_check_positions(size), float_terms(rng), wrong_element);
  if (sampled.count == 0) return true;
  const kit::Found every = scan_on_device::compare_scan<float, double2>(d_out, size, float_terms(rng), wrong_element);
  return report_wrong_float_scan(d_out, size, kind, rng, every.count > 0 ? every : sampled, context);
}

inline bool expect_timed_int_scan(const int* d_out, std::size_t size, Kind kind, const kit::Rng& rng,
                                  const kit::CaseContext& context) {
  const scan_on_device::IntWrong wrong_element{kind};
  const kit::Found sampled = scan_on_device::compare_scan_at<int, long long>(d_out, timing_check_positions(size),
                                                                            int_terms(rng), wrong_element);
  if (sampled.count == 0) return true;
  const kit::Found every = scan_on_device::compare_scan<int, long long>(d_out, size, int_terms(rng), wrong_element);
  return report_wrong_int_scan(d_out, size, kind, rng, every.count > 0 ? every : sampled, context);
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

// Which of the student's whole scans a check calls: part 3's multi-block scan, or the
// extra credit's register-tiled one.
enum class Design { MultiBlock, RegisterTiled };

inline const std::string& look_at(Design design) {
  return design == Design::MultiBlock ? kLookAtScan : kLookAtRegisterScan;
}
inline const std::string& look_at_guard(Design design) {
  return design == Design::MultiBlock ? kLookAtScanGuard : kLookAtRegisterScanGuard;
}

template <class T>
void launch_whole_scan(Kind kind, const T* d_in, T* d_out, int n, Design design = Design::MultiBlock) {
  if (design == Design::RegisterTiled) {
    if (kind == Kind::Inclusive)
      launch_register_tiled_inclusive_scan(d_in, d_out, n);
    else
      launch_register_tiled_exclusive_scan(d_in, d_out, n);
  } else if (kind == Kind::Inclusive) {
    launch_inclusive_scan(d_in, d_out, n);
  } else {
    launch_exclusive_scan(d_in, d_out, n);
  }
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

// Part 3, step by step, on integers (exact), each on its own.

constexpr int kWarpLanes = 32;

// launch_warp_scan: every run of 32 elements scanned on its own (inclusive).
inline bool check_warp_scan(int n, const std::string& input, std::size_t guard = guard_elements()) {
  const std::vector<int> x = int_inputs(n, "warp " + std::to_string(n));
  const std::string what =
      input + " (inclusive scan of each run of " + std::to_string(kWarpLanes) + " ints, one per lane of a warp)";
  const auto run =
      run_on_device(x, [](const int* d_in, int* d_out, int count) { launch_warp_scan(d_in, d_out, count); }, guard,
                    {what, "warp_scan_kernel stores only below n; look at " + kLookAtWarpScan});
  const auto ref = scan_reference::scan_reference<IntSums, std::vector<int>>(x, Kind::Inclusive, kWarpLanes);
  return kit::expect_equal(run.out, ref, {what, kLookAtWarpScan}) && run.guard_untouched;
}

inline std::size_t tile_count(int n) { return (static_cast<std::size_t>(n) + kScanTile - 1) / kScanTile; }

// launch_tile_scan: every tile scanned on its own, and the tile sums. `check_scan`
// false: only the sums are compared (the test that isolates them); true: only the scan.
inline bool check_tile_scan(int n, Kind kind, bool check_scan, const std::string& input,
                            std::size_t guard = guard_elements()) {
  const std::vector<int> x = int_inputs(n, "tile " + kind_name(kind) + " " + std::to_string(n));
  const std::string tiles = std::to_string(tile_count(n)) + " tile(s) of " + std::to_string(kScanTile);
  kit::DeviceBuffer<int> d_in(x);
  kit::GuardedBuffer<int> d_out(x.size(), guard), d_sums(tile_count(n), guard);
  launch_tile_scan(d_in.data(), d_out.data(), d_sums.data(), n, kind == Kind::Inclusive);
  CUDA_CHECK(cudaDeviceSynchronize());  // a fault inside a kernel surfaces here, in this test
  if (check_scan) {
    const std::string what = input + ", " + tiles + " (" + kind_name(kind) + " scan of each tile of ints on its own)";
    const auto ref = scan_reference::scan_reference<IntSums, std::vector<int>>(x, kind, kScanTile);
    const bool right = kit::expect_equal(d_out.download(), ref, {what, kLookAtTileScan});
    return d_out.expect_guard_untouched(
               {what,
                "the bounds check on tile_scan_kernel's store: an element at index n or beyond does not "
                "exist"}) &&
           right;
  }
  const std::string what =
      input + ", " + tiles + " (the sum of each tile of ints, from the " + kind_name(kind) + " tile scan)";
  std::vector<int> sums(tile_count(n), 0);
  for (std::size_t i = 0; i < x.size(); ++i) sums[i / kScanTile] += x[i];
  const bool right = kit::expect_equal(d_sums.download(), sums, {what, kLookAtTileSums});
  return d_sums.expect_guard_untouched(
             {what, "tile_scan_kernel writes one sum per tile: tile_sums has ceil(n / kScanTile) elements"}) &&
         right;
}

// launch_add_offsets: each tile's offset added to all of its elements. The offsets are
// large and differ from tile to tile, so an element given its neighbour tile's offset, or
// none, is off by thousands.
inline bool check_add_offsets(int n, const std::string& input, std::size_t guard = guard_elements()) {
  const std::vector<int> x = int_inputs(n, "offsets in " + std::to_string(n));
  const std::vector<int> offsets =
      kit::Rng::for_case("offsets " + std::to_string(n)).uniform_ints(tile_count(n), -1000000, 1000000);
  const std::string what = input + ", " + std::to_string(offsets.size()) + " tile(s) of " + std::to_string(kScanTile) +
                           " (each tile's offset added to its ints)";
  kit::DeviceBuffer<int> d_offsets(offsets);
  kit::GuardedBuffer<int> d_out(x, guard);
  launch_add_offsets(d_out.data(), d_offsets.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());  // a fault inside a kernel surfaces here, in this test
  std::vector<int> ref(x);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += offsets[i / kScanTile];
  const bool right = kit::expect_equal(d_out.download(), ref, {what, kLookAtAddOffsets});
  const bool offsets_kept = kit::expect_equal(
      d_offsets.download(), offsets, {what + ": the offsets after the call", "add_offsets_kernel only reads them"});
  return d_out.expect_guard_untouched(
             {what, "the bounds check in add_offsets_kernel: an element at index n or beyond does not exist"}) &&
         right && offsets_kept;
}

// The whole scan of n inputs that `rng` makes, written on the GPU, with every element compared
// there (expect_int_scan_on_device, expect_float_scan_on_device: an element never written is wrong
// there too); then the guard. For the lengths too large to make, copy and compare on the CPU in
// every submission's run: the three-level ones are a quarter of a gigabyte.
template <class T>
bool check_scan_on_device(int n, Kind kind, const kit::Rng& rng, const std::string& what, std::size_t guard,
                          Design design) {
  const auto count = static_cast<std::size_t>(n);
  kit::DeviceBuffer<T> d_in(count);
  kit::GuardedBuffer<T> d_out(count, guard);
  if constexpr (std::is_same_v<T, int>)
    kit::fill_uniform_ints(d_in.data(), count, rng, kIntLow, kIntHigh);
  else
    kit::fill_uniform_floats(d_in.data(), count, rng, kFloatLow, kFloatHigh);
  launch_whole_scan(kind, d_in.data(), d_out.data(), n, design);
  CUDA_CHECK(cudaDeviceSynchronize());  // a fault inside a kernel surfaces here, in this test
  const kit::CaseContext context{what, look_at(design)};
  bool right = false;
  if constexpr (std::is_same_v<T, int>)
    right = expect_int_scan_on_device(d_out.data(), count, kind, rng, context);
  else
    right = expect_float_scan_on_device(d_out.data(), count, kind, rng, context);
  return d_out.expect_guard_untouched({what, look_at_guard(design)}) && right;
}

// The whole scan on integers: exact, every element compared on the GPU.
inline bool check_int_scan(int n, Kind kind, const std::string& input, std::size_t guard = guard_elements(),
                           Design design = Design::MultiBlock) {
  return check_scan_on_device<int>(n, kind, kit::Rng::for_case("int " + kind_name(kind) + " " + std::to_string(n)),
                                   input + ", " + kind_name(kind) + " scan of ints", guard, design);
}

// The whole scan on floats: within the path tolerance.
inline std::string float_stream(int n, Kind kind) { return "float " + kind_name(kind) + " " + std::to_string(n); }

inline bool check_float_scan(int n, Kind kind, const std::string& input, std::size_t guard = guard_elements(),
                             Design design = Design::MultiBlock) {
  const std::vector<float> x = float_inputs(n, float_stream(n, kind));
  const std::string what = input + ", " + kind_name(kind) + " scan of floats";
  const auto run = run_on_device(x,
                                 [kind, design](const float* d_in, float* d_out, int count) {
                                   launch_whole_scan(kind, d_in, d_out, count, design);
                                 },
                                 guard, {what, look_at_guard(design)});
  return expect_float_scan(run.out, float_reference(x, kind), {what, look_at(design)}) && run.guard_untouched;
}

// check_float_scan for a length too large to make, copy and compare on the CPU in every
// submission's run: the same inputs, every element compared on the GPU.
inline bool check_float_scan_on_device(int n, Kind kind, const std::string& input,
                                       std::size_t guard = guard_elements(), Design design = Design::MultiBlock) {
  return check_scan_on_device<float>(n, kind, kit::Rng::for_case(float_stream(n, kind)),
                                     input + ", " + kind_name(kind) + " scan of floats", guard, design);
}

}  // namespace scan_checks
