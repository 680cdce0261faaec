// What the matrix-multiply labs (03, 04) share: random inputs, the
// double-precision CPU reference, the error bound a float dot product obeys,
// and cuBLAS as the yardstick. (Lab 04's other yardstick, the naive kernel, is
// lab 03's solution and so lives with lab 04's hidden tests.)
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
// are replaced by the CPU product in whole rows and columns: the first, the
// middle, the last and a few random ones, where boundary mistakes show first.
MatmulExpected matmul_expected(const MatmulInputs& in, double error_units);
constexpr double kCpuFullCheckTerms = 268435456.0;  // 2^28: a fraction of a second on one core

// got (m x n, row-major) against `expected`; mismatches print as (row, col).
bool expect_matmul(const std::vector<float>& got, const MatmulExpected& expected, const CaseContext& context);

// Row-major C = A·B by cuBLAS SGEMM in plain FP32 (CUBLAS_DEFAULT_MATH: never
// TensorFloat-32 or BF16x9 emulation, which need an explicit opt-in), on the
// default stream. Nothing is synchronized.
void cublas_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n);

// cuBLAS's rate in GFLOP/s, timed in this process on these device matrices
// with `options` (it overwrites d_c). A bound (Ceiling::bound): the labs' kernels
// do the same plain FP32 arithmetic, and none beats cuBLAS at it by much.
Ceiling cublas_matmul_ceiling(const float* d_a, const float* d_b, float* d_c, int m, int k, int n,
                              const TimingOptions& options);

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
