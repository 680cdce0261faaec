// What the matrix-multiply labs (03, 04) share: random inputs, the
// double-precision CPU reference, the error bound a float dot product obeys,
// cuBLAS as a second reference and as the yardstick, and the timing case.
// (Lab 04's other yardstick, the naive kernel, is lab 03's solution and so
// lives with lab 04's hidden tests.)
//
// Matrices are row-major floats: A is m x k, B is k x n, C is m x n.
// A lab that uses this header links cuBLAS (libraries = ["cublas"] in lab.toml).
#pragma once

#include <string>
#include <vector>

#include <stdexcept>

#include "kit/check.hpp"
#include "kit/params.hpp"
#include "kit/random.hpp"
#include "kit/timing.cuh"

namespace kit {

struct MatmulInputs {
  int m = 0, k = 0, n = 0;
  std::vector<float> a, b;  // uniform in [-1, 1]

  // e.g. "33x65 times 65x17"
  std::string shape() const;
  // 2 m n k: one multiply and one add per term of every dot product.
  double flops() const { return 2.0 * m * n * k; }
};

// Fresh inputs for the running test case, from its "A" and "B" random streams.
MatmulInputs make_matmul_inputs(int m, int k, int n);
// The same from the given streams (a timing call's: kit::Call::rng).
MatmulInputs make_matmul_inputs(int m, int k, int n, const Rng& a, const Rng& b);
// The numbers of make_matmul_inputs(m, k, n, a, b), written by the GPU into
// d_a (m x k) and d_b (k x n): a timing call's new inputs.
void fill_matmul_inputs(float* d_a, float* d_b, int m, int k, int n, const Rng& a, const Rng& b);

// γ_k = k u / (1 - k u), u = 2^-24: however a float dot product of length k is
// summed (any order, with or without fused multiply-adds), its error is at most
// γ_k · Σ |x_i| |y_i| (N. J. Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., 2002, §3.1).
double float_dot_gamma(int k);

// What C must hold: for every element, the expected value and how far from it a
// correct float result may lie.
struct MatmulExpected {
  int m = 0, n = 0;
  std::vector<double> value;
  std::vector<double> allowed;
  std::string source;  // where `value` came from, for the failure message
};

// The expected C for `in`, with error_units · γ_k · Σ|a||b| allowed per element
// (error_units = 1 is the rigorous bound). Products up to kCpuFullCheckTerms
// multiply-adds are computed in double on the CPU in full. Larger ones take
// their values from cuBLAS, with the bound widened by cuBLAS's own γ_k, and
// are replaced by the CPU product in whole rows and columns (matmul_check_lines,
// from the case's "spot rows" and "spot columns" streams).
MatmulExpected matmul_expected(const MatmulInputs& in, double error_units);
constexpr double kCpuFullCheckTerms = 268435456.0;  // 2^28: a fraction of a second on one core

// got (m x n, row-major) against `expected`; mismatches print as (row, col).
bool expect_matmul(const std::vector<float>& got, const MatmulExpected& expected, const CaseContext& context);

// C (m x n, row-major, in device memory) against the product of the inputs that
// make_matmul_inputs(m, k, n, a, b) makes, with the bound of matmul_expected:
// the check of a timed call's output, which the whole class waits for. Every
// element is compared, on the GPU, with cuBLAS's product of the same inputs
// (made again on the GPU from the streams, not read from the call's A and B),
// allowing the bound widened by cuBLAS's own γ_k, with Σ|a||b| from cuBLAS on
// |A| and |B|: the check of matmul_expected, without a gigabyte of doubles on
// the CPU. The first, the middle and the last row and column, and three more of
// each drawn from the operating system's entropy after the call (so the
// submission cannot know them), are compared instead with the CPU product in
// double (matmul_lines), independent of cuBLAS. Only when something is wrong is
// C downloaded and compared in full on the CPU, for expect_matmul's report
// (the first mismatches as (row, col): expected, got). Products up to
// kCpuFullCheckTerms are compared in full on the CPU. Returns whether C was right.
bool expect_matmul_on_device(const float* d_c, int m, int k, int n, const Rng& a, const Rng& b, double error_units,
                             const CaseContext& context);

// The rows (or the columns) of a large C compared with the CPU product: the
// first, the middle and the last of `count`, where boundary mistakes show
// first, and `random` more drawn from `rng`; ascending, each once.
std::vector<int> matmul_check_lines(int count, int random, const Rng& rng);

// Whole rows and columns of the product in double (exact to double rounding: a
// float times a float is exact in double, and the sum runs in order of the
// inner index) and of |A|·|B|, which the error bound scales. Computed on every core.
struct MatmulLines {
  std::vector<int> rows, cols;
  std::vector<double> row_value, row_magnitude;  // rows.size() x n: [r * n + j] is element (rows[r], j)
  std::vector<double> col_value, col_magnitude;  // cols.size() x m: [c * m + i] is element (i, cols[c])
};
MatmulLines matmul_lines(const MatmulInputs& in, std::vector<int> rows, std::vector<int> cols);
// The same for the inputs make_matmul_inputs(m, k, n, a, b) makes, each element
// made where it is used: nothing the size of A or B is held in memory.
MatmulLines matmul_lines(int m, int k, int n, const Rng& a, const Rng& b, std::vector<int> rows, std::vector<int> cols);

namespace detail {
// The comparisons of expect_matmul and expect_matmul_on_device, without the
// report (the harness's own tests read what they found); *source is set to
// where the expected values came from.
MismatchLog matmul_mismatches(const std::vector<float>& got, const MatmulExpected& expected);
MismatchLog matmul_mismatches_on_device(const float* d_c, int m, int k, int n, const Rng& a, const Rng& b,
                                        double error_units, std::string* source);
}  // namespace detail

// Row-major C = A·B by cuBLAS SGEMM in plain FP32 (CUBLAS_DEFAULT_MATH: never
// TensorFloat-32 or BF16x9 emulation, which need an explicit opt-in), on the
// default stream. Nothing is synchronized.
void cublas_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n);

// cuBLAS's rate in GFLOP/s, timed in this process on these device matrices
// with `options` (it overwrites d_c). A bound (Ceiling::bound): the labs' kernels
// do the same plain FP32 arithmetic, and none beats cuBLAS at it by much.
Ceiling cublas_matmul_ceiling(const float* d_a, const float* d_b, float* d_c, int m, int k, int n,
                              const TimingOptions& options);

// A student's launcher, and a peer timed beside it (lab 04's naive kernel),
// both on row-major device matrices A (m x k), B (k x n), C (m x n).
using MatmulLauncher = void (*)(const float* d_a, const float* d_b, float* d_c, int m, int k, int n);
using MatmulPeer = Ceiling (*)(const float* d_a, const float* d_b, float* d_c, int m, int k, int n,
                               const TimingOptions& options);

// The labs' matrix-product timing case: `launch` as measurement `name` on
// size x size matrices, against `peers` (timed first, on the same matrices) and
// cuBLAS (a bound, last in the measurement's ceilings), with the guards of
// time_work: every call gets new A and B, written on the GPU from its own random
// streams; C is checked to be written in full after each call and compared with
// the reference (expect_matmul_on_device, bound from the dot_error_units
// parameter) after calls chosen at random. Options from the lab's params.
// Reports the measurement and returns it, for the caller's own judgement.
Measurement time_square_matmul(const std::string& name, MatmulLauncher launch, int size, const std::string& look_at,
                               const std::vector<MatmulPeer>& peers = {});

// A matrix product's shape, M x K times K x N, as the labs' configs give it.
struct MatmulShape {
  int m, k, n;
};

// A [m, k, n] lab parameter.
inline MatmulShape shape_param(const std::string& key) {
  const auto values = param_ints(key);
  if (values.size() != 3) throw std::runtime_error("lab parameter '" + key + "' must be [m, k, n]");
  return {static_cast<int>(values[0]), static_cast<int>(values[1]), static_cast<int>(values[2])};
}

// A flat [m, k, n, m, k, n, ...] lab parameter.
inline std::vector<MatmulShape> shapes_param(const std::string& key) {
  const auto values = param_ints(key);
  if (values.empty() || values.size() % 3 != 0)
    throw std::runtime_error("lab parameter '" + key + "' must list whole [m, k, n] triples");
  std::vector<MatmulShape> shapes;
  for (std::size_t i = 0; i < values.size(); i += 3)
    shapes.push_back({static_cast<int>(values[i]), static_cast<int>(values[i + 1]), static_cast<int>(values[i + 2])});
  return shapes;
}

// The expected product of these inputs, with the error bound the labs' dot_error_units parameter sets.
inline MatmulExpected expected_for(const MatmulInputs& in) {
  return matmul_expected(in, param_double("dot_error_units"));
}

}  // namespace kit
