// Lab 13 checks shared by the public and the hidden tests: the inputs, the CPU reference of each
// function, and the comparisons. Every comparison is exact; lab.toml says why exact is right.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "debugging.cuh"
#include "kit/kit.cuh"

namespace debugging_checks {

inline const std::string kLookAtAdd = "bug 1: vector_add_kernel and launch_vector_add in debugging.cu";
inline const std::string kLookAtSum = "bug 2: reduce_sum_kernel and launch_reduce_sum in debugging.cu";
inline const std::string kLookAtHistogram = "bug 3: histogram_kernel and launch_histogram in debugging.cu";
inline const std::string kLookAtMatmul = "bug 4: tiled_matmul_kernel and launch_tiled_matmul in debugging.cu";
inline const std::string kLookAtTranspose = "bug 5: transpose_tiled_kernel and launch_transpose_tiled in debugging.cu";

inline std::size_t guard() { return static_cast<std::size_t>(kit::param_int("guard_elements")); }

inline std::string length(std::int64_t n) { return "n = " + std::to_string(n); }

// A test case graded under compute-sanitizer (its name says which tool) is about what the tool
// sees, not only the results: run without the tool (make 13-debugging runs the tests directly), it
// says how to run it under the tool. When graded, and in ctest, the tool is started on the process
// that runs your code (KIT_RUNNER_PREFIX), and this says nothing.
inline void note_sanitizer(const std::string& tool) {
  const char* prefix = std::getenv("KIT_RUNNER_PREFIX");
  if (prefix != nullptr && std::string(prefix).find("compute-sanitizer") != std::string::npos) return;
  MESSAGE("This test is graded under compute-sanitizer --tool "
          << tool << ": any report it makes fails the test, even when every result is right. To run the test so "
          << "yourself:\n  compute-sanitizer --tool " << tool
          << " build/13-debugging/13-debugging-tests --test-case=\"<the name of this test>\"\n"
          << "(\"ERROR SUMMARY: 0 errors\" at the end means the tool found nothing).");
}

// ---------------------------------------------------------------------------------------------
// Bug 1: vector add.

struct AddInputs {
  std::vector<float> a, b;
  std::vector<double> c;  // the CPU's answer
};

// a and b uniform in [-1, 1]. The sum of two such floats is exact in double, and rounding it to
// float once is what the GPU's one float addition does (IEEE round to nearest): the two agree bit
// for bit.
inline AddInputs add_inputs(int n) {
  AddInputs in{kit::Rng::for_case("a").uniform_floats(n, -1.0f, 1.0f),
               kit::Rng::for_case("b").uniform_floats(n, -1.0f, 1.0f), std::vector<double>(n)};
  for (int i = 0; i < n; ++i) in.c[i] = static_cast<float>(static_cast<double>(in.a[i]) + in.b[i]);
  return in;
}

// launch_vector_add on inputs followed by NaN (a read past their end makes a NaN result) and an
// output followed by a poisoned guard zone (a write past its end lands there).
inline bool check_add(int n, const std::string& input) {
  const AddInputs in = add_inputs(n);
  kit::GuardedInput<float> d_a(in.a, guard()), d_b(in.b, guard());
  kit::GuardedBuffer<float> d_c(n, guard());
  launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());
  const bool right = kit::expect_close(d_c.download(), in.c, {0.0, 0.0}, {input, kLookAtAdd});
  return d_c.expect_guard_untouched({input, kLookAtAdd + ": no thread may write c[i] for i >= n"}) && right;
}

// The same on vectors of exactly n elements, each an allocation of its own: compute-sanitizer's
// memcheck then reports any access past an end, which it sees only where nothing is allocated.
inline bool check_add_exact(int n, const std::string& input) {
  const AddInputs in = add_inputs(n);
  kit::DeviceBuffer<float> d_a(in.a), d_b(in.b), d_c(n);
  d_c.poison();
  launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());
  return kit::expect_close(d_c.download(), in.c, {0.0, 0.0}, {input, kLookAtAdd});
}

// ---------------------------------------------------------------------------------------------
// Bug 2: a sum.

// Whole numbers from reduce_low to reduce_high, as floats: every partial sum the GPU can form is a
// whole number below 2^24, exact in float, so its sum is exact whatever order it adds in.
inline std::vector<float> whole_numbers(std::size_t n, const std::string& stream = "x") {
  const std::vector<int> ints = kit::Rng::for_case(stream).uniform_ints(
      n, static_cast<int>(kit::param_int("reduce_low")), static_cast<int>(kit::param_int("reduce_high")));
  return std::vector<float>(ints.begin(), ints.end());
}

inline bool expect_sum(float got, double expected, const std::string& input) {
  const bool right = static_cast<double>(got) == expected;
  CHECK_MESSAGE(right, input << " (" << kit::seed_text() << "): the sum should be "
                             << static_cast<long long>(expected) << " and launch_reduce_sum gave "
                             << kit::detail::show(got)
                             << ". The inputs are whole numbers from " << kit::param_int("reduce_low") << " to "
                             << kit::param_int("reduce_high")
                             << " and every partial sum stays below 2^24, so the sum is exact in float whatever the "
                                "order: a difference is a bug, not rounding.\nLook at: "
                             << kLookAtSum);
  return right;
}

// launch_reduce_sum on an input followed by NaN (a float read past the end and added makes the
// sum NaN) and a sum followed by a poisoned guard zone.
inline bool check_sum(int n, const std::string& input) {
  const std::vector<float> x = whole_numbers(n);
  double expected = 0.0;
  for (const float v : x) expected += v;
  kit::GuardedInput<float> d_in(x, guard());
  kit::GuardedBuffer<float> d_sum(1, guard());
  launch_reduce_sum(d_in.data(), n, d_sum.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  const bool right = expect_sum(d_sum.download()[0], expected, input);
  return d_sum.expect_guard_untouched({input, kLookAtSum + ": the sum is one float, d_sum[0]"}) && right;
}

// The same on an input and a sum of exactly their size, for memcheck.
inline bool check_sum_exact(int n, const std::string& input) {
  const std::vector<float> x = whole_numbers(n);
  double expected = 0.0;
  for (const float v : x) expected += v;
  kit::DeviceBuffer<float> d_in(x), d_sum(1);
  d_sum.poison();
  launch_reduce_sum(d_in.data(), n, d_sum.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  return expect_sum(d_sum.download()[0], expected, input);
}

// ---------------------------------------------------------------------------------------------
// Bug 3: a histogram.

using Bytes = std::vector<std::uint8_t>;

// The byte the input guard zones hold: a read outside the input counts it once too often.
constexpr std::uint8_t kGuardByte = 171;

inline std::vector<unsigned> cpu_histogram(const Bytes& data) {
  std::vector<unsigned> bins(kHistogramBins, 0u);
  for (const std::uint8_t byte : data) ++bins[byte];
  return bins;
}

// launch_histogram on bytes between guard zones of kGuardByte, into counters followed by a
// poisoned guard zone; every count compared exactly.
inline bool check_histogram(const Bytes& data, const std::string& input) {
  kit::GuardedInput<std::uint8_t> d_data(data, guard(), kGuardByte);
  kit::GuardedBuffer<unsigned> d_bins(kHistogramBins, guard());
  launch_histogram(d_data.data(), static_cast<int>(data.size()), d_bins.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  const bool right = kit::expect_equal(d_bins.download(), cpu_histogram(data),
                                       {input + " (an element here is a bin: the count of that byte value)",
                                        kLookAtHistogram});
  return d_bins.expect_guard_untouched({input, kLookAtHistogram + ": there are kHistogramBins counters"}) && right;
}

// ---------------------------------------------------------------------------------------------
// Bug 4: a matrix product.

struct Shape {
  int m, k, n;
};

inline std::string describe(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + " times " + std::to_string(s.k) + "x" +
         std::to_string(s.n);
}

// (m, k, n) triples from a parameter.
inline std::vector<Shape> shapes(const std::string& key) {
  const std::vector<int> v = kit::param_int_list(key);
  std::vector<Shape> found;
  for (std::size_t i = 0; i + 2 < v.size(); i += 3) found.push_back({v[i], v[i + 1], v[i + 2]});
  return found;
}

// Whole numbers from matmul_low to matmul_high, as floats: a product of two is at most 16 in size
// and a sum of k of them stays far below 2^24, so every element of C is exact in float.
inline std::vector<float> small_matrix(int rows, int cols, const std::string& stream) {
  const std::vector<int> ints = kit::Rng::for_case(stream).uniform_ints(
      static_cast<std::size_t>(rows) * cols, static_cast<int>(kit::param_int("matmul_low")),
      static_cast<int>(kit::param_int("matmul_high")));
  return std::vector<float>(ints.begin(), ints.end());
}

inline std::vector<double> cpu_product(const std::vector<float>& a, const std::vector<float>& b, const Shape& s) {
  std::vector<double> c(static_cast<std::size_t>(s.m) * s.n, 0.0);
  for (int r = 0; r < s.m; ++r)
    for (int j = 0; j < s.k; ++j)
      for (int col = 0; col < s.n; ++col) c[r * s.n + col] += static_cast<double>(a[r * s.k + j]) * b[j * s.n + col];
  return c;
}

// A small matrix written out row by row, for a message a student can check by hand.
template <class T>
std::string matrix_text(const std::vector<T>& values, int rows, int cols) {
  std::ostringstream text;
  for (int r = 0; r < rows; ++r) {
    text << "    ";
    for (int c = 0; c < cols; ++c) text << kit::detail::show(values[r * cols + c]) << (c + 1 < cols ? "\t" : "\n");
  }
  return text.str();
}

// launch_tiled_matmul on one shape: A and B followed by NaN (a value read past the end and
// multiplied into a sum, even by 0, makes it NaN), C followed by a poisoned guard zone; or, with
// `exact_buffers`, each matrix an allocation of exactly its size (for compute-sanitizer).
inline bool check_matmul(const Shape& s, const std::string& input, bool exact_buffers = false) {
  const std::vector<float> a = small_matrix(s.m, s.k, "a " + describe(s));
  const std::vector<float> b = small_matrix(s.k, s.n, "b " + describe(s));
  const std::vector<double> expected = cpu_product(a, b, s);
  const std::size_t size = static_cast<std::size_t>(s.m) * s.n;
  std::vector<float> got;
  bool guard_untouched = true;
  if (exact_buffers) {
    kit::DeviceBuffer<float> d_a(a), d_b(b), d_c(size);
    d_c.poison();
    launch_tiled_matmul(d_a.data(), d_b.data(), d_c.data(), s.m, s.k, s.n);
    CUDA_CHECK(cudaDeviceSynchronize());
    got = d_c.download();
  } else {
    kit::GuardedInput<float> d_a(a, guard()), d_b(b, guard());
    kit::GuardedBuffer<float> d_c(size, guard());
    launch_tiled_matmul(d_a.data(), d_b.data(), d_c.data(), s.m, s.k, s.n);
    CUDA_CHECK(cudaDeviceSynchronize());
    got = d_c.download();
    guard_untouched = d_c.expect_guard_untouched({input, kLookAtMatmul + ": C has m x n elements"});
  }
  // Small enough to work out by hand: the whole product in the message.
  std::string shown = input + ", entries whole numbers, so every element is exact";
  if (s.m <= 4 && s.k <= 4 && s.n <= 4)
    shown += "\n  A =\n" + matrix_text(a, s.m, s.k) + "  B =\n" + matrix_text(b, s.k, s.n) + "  A·B =\n" +
             matrix_text(expected, s.m, s.n) + "  launch_tiled_matmul gave C =\n" + matrix_text(got, s.m, s.n);
  const bool right = kit::expect_close(got, expected, {0.0, 0.0}, {shown, kLookAtMatmul, static_cast<std::size_t>(s.n)});
  return right && guard_untouched;
}

// Every shape of a parameter, stopping at the first that fails.
inline void check_matmul_shapes(const std::string& key, const std::string& kind, bool exact_buffers = false) {
  for (const Shape& s : shapes(key))
    if (!check_matmul(s, describe(s) + ", " + kind, exact_buffers)) return;
}

// ---------------------------------------------------------------------------------------------
// Bug 5: a transpose.

inline std::string shape_text(int rows, int cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

inline std::vector<float> cpu_transpose(const std::vector<float>& in, int rows, int cols) {
  std::vector<float> out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
  return out;
}

// launch_transpose_tiled on one matrix `repeats` times, each result compared in full: a race
// between the warps of a block changes a result only in the runs where one warp is ahead of
// another, so one launch that came out right proves little. The input is followed by NaN and the
// output by a poisoned guard zone; or, with `exact_buffers`, both are allocations of exactly their
// size (for compute-sanitizer).
inline bool check_transpose(int rows, int cols, int repeats, const std::string& input, bool exact_buffers = false) {
  const std::vector<float> in = kit::Rng::for_case("matrix " + shape_text(rows, cols))
                                    .uniform_floats(static_cast<std::size_t>(rows) * cols, -1.0f, 1.0f);
  const std::vector<float> expected = cpu_transpose(in, rows, cols);
  const std::string look_at = kLookAtTranspose + " (an element is shown as (row, col) of the cols x rows output)";
  kit::GuardedInput<float> guarded_in(exact_buffers ? std::vector<float>() : in, guard());
  kit::DeviceBuffer<float> exact_in(exact_buffers ? in : std::vector<float>());
  kit::GuardedBuffer<float> d_out(exact_buffers ? 0 : in.size(), guard());
  kit::DeviceBuffer<float> exact_out(exact_buffers ? in.size() : 0);
  const float* d_in = exact_buffers ? exact_in.data() : guarded_in.data();
  float* out = exact_buffers ? exact_out.data() : d_out.data();
  for (int run = 1; run <= repeats; ++run) {
    const std::string which = input + (repeats > 1 ? ", launch " + std::to_string(run) + " of " + std::to_string(repeats) : "");
    exact_out.poison();
    d_out.poison();
    launch_transpose_tiled(d_in, out, rows, cols);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = exact_buffers ? exact_out.download() : d_out.download();
    if (!kit::expect_equal(got, expected, {which, look_at, static_cast<std::size_t>(rows)})) return false;
    if (!exact_buffers && !d_out.expect_guard_untouched({which, kLookAtTranspose + ": out has cols x rows elements"}))
      return false;
  }
  return true;
}

// (rows, cols) pairs from a parameter, each transposed once on matrices of exactly their size.
inline void check_transpose_shapes(const std::string& key) {
  const std::vector<int> v = kit::param_int_list(key);
  for (std::size_t i = 0; i + 1 < v.size(); i += 2)
    if (!check_transpose(v[i], v[i + 1], 1, shape_text(v[i], v[i + 1]) + ", in buffers of exactly its size", true))
      return;
}

}  // namespace debugging_checks
