#include "kit/matmul_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "kit/cublas.hpp"
#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"
#include "kit/random.hpp"

namespace kit {
namespace {

// γ_k for a unit roundoff u: k u / (1 - k u), or infinity where k u >= 1.
double gamma(int k, double unit_roundoff) {
  const double ku = k * unit_roundoff;
  return ku < 1.0 ? ku / (1.0 - ku) : std::numeric_limits<double>::infinity();
}

// Row `row` of the exact product (to double rounding) and of |A|·|B|, into
// value[0..n) and magnitude[0..n). Walks B row by row, so memory is read in order.
void cpu_row(const MatmulInputs& in, int row, double* value, double* magnitude) {
  const std::size_t n = static_cast<std::size_t>(in.n);
  for (std::size_t j = 0; j < n; ++j) value[j] = magnitude[j] = 0.0;
  for (int p = 0; p < in.k; ++p) {
    const double a = in.a[static_cast<std::size_t>(row) * in.k + p];
    const double abs_a = std::fabs(a);
    const float* b_row = in.b.data() + static_cast<std::size_t>(p) * n;
    for (std::size_t j = 0; j < n; ++j) {
      value[j] += a * b_row[j];  // a float times a float is exact in double
      magnitude[j] += abs_a * std::fabs(b_row[j]);
    }
  }
}

// Column `col` of the same, into value[0..m) and magnitude[0..m).
void cpu_column(const MatmulInputs& in, int col, double* value, double* magnitude) {
  std::vector<double> b_col(static_cast<std::size_t>(in.k));
  for (int p = 0; p < in.k; ++p) b_col[p] = in.b[static_cast<std::size_t>(p) * in.n + col];
  for (int i = 0; i < in.m; ++i) {
    const float* a_row = in.a.data() + static_cast<std::size_t>(i) * in.k;
    double sum = 0.0, abs_sum = 0.0;
    for (int p = 0; p < in.k; ++p) {
      sum += a_row[p] * b_col[p];
      abs_sum += std::fabs(a_row[p] * b_col[p]);
    }
    value[i] = sum;
    magnitude[i] = abs_sum;
  }
}

std::vector<float> absolute(const std::vector<float>& values) {
  std::vector<float> result(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) result[i] = std::fabs(values[i]);
  return result;
}

// The first, middle and last index below `count`, and `random` more drawn from `stream`.
std::vector<int> spot_indices(int count, int random, const std::string& stream) {
  std::vector<int> indices{0, count / 2, count - 1};
  for (const int i : Rng::for_case(stream).uniform_ints(static_cast<std::size_t>(random), 0, count - 1))
    indices.push_back(i);
  return indices;
}

constexpr int kRandomSpotLines = 3;  // random rows and columns checked on the CPU, besides first, middle, last
constexpr float kInputLow = -1.0f, kInputHigh = 1.0f;

}  // namespace

std::string MatmulInputs::shape() const {
  return std::to_string(m) + "x" + std::to_string(k) + " times " + std::to_string(k) + "x" + std::to_string(n);
}

MatmulInputs make_matmul_inputs(int m, int k, int n) {
  return make_matmul_inputs(m, k, n, Rng::for_case("A"), Rng::for_case("B"));
}

MatmulInputs make_matmul_inputs(int m, int k, int n, const Rng& a, const Rng& b) {
  MatmulInputs in;
  in.m = m;
  in.k = k;
  in.n = n;
  in.a = a.uniform_floats(static_cast<std::size_t>(m) * k, kInputLow, kInputHigh);
  in.b = b.uniform_floats(static_cast<std::size_t>(k) * n, kInputLow, kInputHigh);
  return in;
}

void fill_matmul_inputs(float* d_a, float* d_b, int m, int k, int n, const Rng& a, const Rng& b) {
  fill_uniform_floats(d_a, static_cast<std::size_t>(m) * k, a, kInputLow, kInputHigh);
  fill_uniform_floats(d_b, static_cast<std::size_t>(k) * n, b, kInputLow, kInputHigh);
}

double float_dot_gamma(int k) { return gamma(k, 0x1.0p-24); }

MatmulExpected matmul_expected(const MatmulInputs& in, double error_units) {
  const std::size_t m = static_cast<std::size_t>(in.m), n = static_cast<std::size_t>(in.n);
  MatmulExpected expected;
  expected.m = in.m;
  expected.n = in.n;
  expected.value.resize(m * n);
  expected.allowed.resize(m * n);
  // A correct float result lies within error_units · γ_k(float) · Σ|a||b| of the
  // exact product; the double reference itself is within γ_k(double) of it.
  const double cpu_bound = error_units * float_dot_gamma(in.k) + gamma(in.k, 0x1.0p-53);

  if (static_cast<double>(in.m) * in.k * in.n <= kCpuFullCheckTerms) {
    for (int i = 0; i < in.m; ++i) cpu_row(in, i, &expected.value[i * n], &expected.allowed[i * n]);
    for (double& bound : expected.allowed) bound *= cpu_bound;
    expected.source = "a double-precision CPU product";
    return expected;
  }

  // cuBLAS for every element: its result and the student's are each within
  // γ_k Σ|a||b| of the exact product, so within their sum of each other.
  // Σ|a||b| itself comes from cuBLAS on |A| and |B|: all its terms are
  // positive, so it is at least (1 - γ_k) times the exact sum.
  {
    DeviceBuffer<float> d_a(in.a), d_b(in.b), d_abs_a(absolute(in.a)), d_abs_b(absolute(in.b)), d_c(m * n),
        d_magnitude(m * n);
    cublas_matmul(d_a.data(), d_b.data(), d_c.data(), in.m, in.k, in.n);
    cublas_matmul(d_abs_a.data(), d_abs_b.data(), d_magnitude.data(), in.m, in.k, in.n);
    const std::vector<float> c = d_c.download(), magnitude = d_magnitude.download();
    const double gamma_k = float_dot_gamma(in.k);
    const double gpu_bound = (error_units + 1.0) * gamma_k / (1.0 - gamma_k);
    for (std::size_t i = 0; i < m * n; ++i) {
      expected.value[i] = c[i];
      expected.allowed[i] = gpu_bound * magnitude[i];
    }
  }
  // The exact product where boundary mistakes show first, independent of cuBLAS.
  std::vector<double> value(std::max(m, n)), magnitude(std::max(m, n));
  for (const int row : spot_indices(in.m, kRandomSpotLines, "spot rows")) {
    cpu_row(in, row, value.data(), magnitude.data());
    for (std::size_t j = 0; j < n; ++j) {
      expected.value[row * n + j] = value[j];
      expected.allowed[row * n + j] = cpu_bound * magnitude[j];
    }
  }
  for (const int col : spot_indices(in.n, kRandomSpotLines, "spot columns")) {
    cpu_column(in, col, value.data(), magnitude.data());
    for (std::size_t i = 0; i < m; ++i) {
      expected.value[i * n + col] = value[i];
      expected.allowed[i * n + col] = cpu_bound * magnitude[i];
    }
  }
  expected.source = "cuBLAS, and a double-precision CPU product in " + std::to_string(3 + kRandomSpotLines) +
                    " rows and " + std::to_string(3 + kRandomSpotLines) + " columns";
  return expected;
}

bool expect_matmul(const std::vector<float>& got, const MatmulExpected& expected, const CaseContext& context) {
  CaseContext where = context;
  where.row_length = static_cast<std::size_t>(expected.n);
  where.input += "; expected values from " + expected.source;
  return expect_within(
      got, expected.value, [&](std::size_t i) { return expected.allowed[i]; }, where);
}

void cublas_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n) {
  const float one = 1.0f, zero = 0.0f;
  // cuBLAS is column-major, and a row-major matrix read column-major is its
  // transpose: C = A·B row-major is C^T = B^T·A^T column-major, so B goes first.
  CUBLAS_CHECK(cublasSgemm(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, d_b, n, d_a, k, &zero, d_c, n));
}

Ceiling cublas_matmul_ceiling(const float* d_a, const float* d_b, float* d_c, int m, int k, int n,
                              const TimingOptions& options) {
  cublas_matmul(d_a, d_b, d_c, m, k, n);  // the first call picks and loads its kernel: keep it out of the timing
  const Timing timing = time_device_work([&] { cublas_matmul(d_a, d_b, d_c, m, k, n); }, options);
  return {"cuBLAS SGEMM (FP32)", 2.0 * m * n * k / timing.median_s / 1e9, true};
}

}  // namespace kit
