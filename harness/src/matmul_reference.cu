#include "kit/matmul_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "kit/device_count.cuh"
#include "kit/grid_stride.cuh"
#include "kit/cublas.hpp"
#include "kit/cuda_check.cuh"
#include "kit/device.hpp"
#include "kit/device_buffer.cuh"
#include "kit/parallel.hpp"
#include "kit/random.hpp"

namespace kit {
namespace {

constexpr int kRandomSpotLines = 3;  // random rows and columns checked on the CPU, besides first, middle, last
constexpr float kInputLow = -1.0f, kInputHigh = 1.0f;

// γ_k for a unit roundoff u: k u / (1 - k u), or infinity where k u >= 1.
double gamma(int k, double unit_roundoff) {
  const double ku = k * unit_roundoff;
  return ku < 1.0 ? ku / (1.0 - ku) : std::numeric_limits<double>::infinity();
}

// Allowed distance from the CPU product, per unit of Σ|a||b|: a correct float result lies within
// error_units · γ_k(float) · Σ|a||b| of the exact product; the double reference itself is within
// γ_k(double) of it.
double cpu_bound(double error_units, int k) { return error_units * float_dot_gamma(k) + gamma(k, 0x1.0p-53); }

// Allowed distance from cuBLAS's product, per unit of cuBLAS's Σ|a||b|: its result and the
// student's are each within γ_k Σ|a||b| of the exact product (error_units of it for the
// student's), so within their sum of each other. Σ|a||b| itself comes from cuBLAS on |A| and |B|:
// all its terms are positive, so it is at least (1 - γ_k) times the exact sum.
double cublas_bound(double error_units, int k) {
  const double gamma_k = float_dot_gamma(k);
  return (error_units + 1.0) * gamma_k / (1.0 - gamma_k);
}

std::string shape_text(int m, int k, int n) {
  return std::to_string(m) + "x" + std::to_string(k) + " times " + std::to_string(k) + "x" + std::to_string(n);
}

// ---- the CPU product in whole rows and columns, on every core ----------------------------

constexpr double kTermsPerThread = 1 << 20;  // multiply-adds worth a thread: about a millisecond

// Tasks of rows: up to kRowGroup rows of C over up to kColumnChunk columns, so that a piece of a
// row of B, read or made once, serves every row of the group, and the task's sums (2 x 8 x 256
// doubles, 32 KiB) stay in the core's L1 and L2 caches. Tasks of columns: kRowChunk rows of A,
// each read or made once for every column (k x 8 doubles, 256 KiB at k = 4096: in L2).
constexpr std::size_t kRowGroup = 8;
constexpr std::size_t kColumnChunk = 256;
constexpr std::size_t kRowChunk = 8;

// matmul_lines for A and B given element by element: a_at(i) is element i of A (row-major), b_at(i)
// of B. Every sum runs over the inner index in order, as one thread would add it.
template <class ElementA, class ElementB>
MatmulLines lines_of(int m, int k, int n, const ElementA& a_at, const ElementB& b_at, std::vector<int> rows,
                     std::vector<int> cols) {
  MatmulLines lines;
  lines.rows = std::move(rows);
  lines.cols = std::move(cols);
  const std::size_t mm = static_cast<std::size_t>(m), kk = static_cast<std::size_t>(k),
                    nn = static_cast<std::size_t>(n);
  const std::size_t row_count = lines.rows.size(), col_count = lines.cols.size();
  lines.row_value.assign(row_count * nn, 0.0);
  lines.row_magnitude.assign(row_count * nn, 0.0);
  lines.col_value.assign(col_count * mm, 0.0);
  lines.col_magnitude.assign(col_count * mm, 0.0);

  // The rows of A and the columns of B that the lines need, in double (exact: they are floats).
  std::vector<double> a_rows(row_count * kk), b_cols(col_count * kk);
  for (std::size_t r = 0; r < row_count; ++r)
    for (std::size_t p = 0; p < kk; ++p) a_rows[r * kk + p] = a_at(static_cast<std::size_t>(lines.rows[r]) * kk + p);
  for (std::size_t c = 0; c < col_count; ++c)
    for (std::size_t p = 0; p < kk; ++p) b_cols[c * kk + p] = b_at(p * nn + static_cast<std::size_t>(lines.cols[c]));

  const std::size_t chunks = (nn + kColumnChunk - 1) / kColumnChunk;
  const std::size_t row_tasks = (row_count + kRowGroup - 1) / kRowGroup * chunks;
  const std::size_t col_tasks = col_count == 0 ? 0 : (mm + kRowChunk - 1) / kRowChunk;

  // B is walked row by row, so each of its elements is made once per group of rows.
  const auto row_task = [&](std::size_t t) {
    const std::size_t r0 = t / chunks * kRowGroup, r1 = std::min(row_count, r0 + kRowGroup);
    const std::size_t j0 = t % chunks * kColumnChunk, width = std::min(nn, j0 + kColumnChunk) - j0;
    double b_piece[kColumnChunk];
    for (std::size_t p = 0; p < kk; ++p) {
      for (std::size_t j = 0; j < width; ++j) b_piece[j] = b_at(p * nn + j0 + j);
      for (std::size_t r = r0; r < r1; ++r) {
        const double a = a_rows[r * kk + p], abs_a = std::fabs(a);
        double* value = &lines.row_value[r * nn + j0];
        double* magnitude = &lines.row_magnitude[r * nn + j0];
        for (std::size_t j = 0; j < width; ++j) {
          value[j] += a * b_piece[j];  // a float times a float is exact in double
          magnitude[j] += abs_a * std::fabs(b_piece[j]);
        }
      }
    }
  };
  // A few rows of A are held transposed, so that the sums of a column run side by side over rows
  // (the compiler's vector lanes, and no wait for the previous add), each still in order of p.
  const auto col_task = [&](std::size_t t) {
    const std::size_t i0 = t * kRowChunk, height = std::min(mm, i0 + kRowChunk) - i0;
    std::vector<double> a_piece(kk * kRowChunk);  // a_piece[p * kRowChunk + i] is A(i0 + i, p)
    for (std::size_t i = 0; i < height; ++i)
      for (std::size_t p = 0; p < kk; ++p) a_piece[p * kRowChunk + i] = a_at((i0 + i) * kk + p);
    for (std::size_t c = 0; c < col_count; ++c) {
      double value[kRowChunk] = {}, magnitude[kRowChunk] = {};
      for (std::size_t p = 0; p < kk; ++p) {
        const double b = b_cols[c * kk + p];
        const double* a = &a_piece[p * kRowChunk];
        for (std::size_t i = 0; i < kRowChunk; ++i) {
          const double term = a[i] * b;  // a float times a float is exact in double
          value[i] += term;
          magnitude[i] += std::fabs(term);
        }
      }
      std::copy_n(value, height, &lines.col_value[c * mm + i0]);
      std::copy_n(magnitude, height, &lines.col_magnitude[c * mm + i0]);
    }
  };
  const double terms = static_cast<double>(row_count) * kk * nn + static_cast<double>(col_count) * mm * kk;
  parallel_for(row_tasks + col_tasks, terms, kTermsPerThread,
               [&](std::size_t t) { t < row_tasks ? row_task(t) : col_task(t - row_tasks); });
  return lines;
}

// ---- cuBLAS's product, and C compared with it, on the GPU --------------------------------

__global__ void absolute_kernel(float* data, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] = fabsf(data[i]);
}

void make_absolute(float* d_data, std::size_t count) {
  absolute_kernel<<<detail::grid_for(count), detail::kGridStrideBlock>>>(d_data, count);
  CUDA_CHECK_LAUNCH();
}

// cuBLAS's A·B into d_value and |A|·|B| into d_magnitude; d_a and d_b hold |A| and |B| afterwards.
// Queued on the default stream.
void cublas_reference(float* d_a, float* d_b, float* d_value, float* d_magnitude, int m, int k, int n) {
  cublas_matmul(d_a, d_b, d_value, m, k, n);
  make_absolute(d_a, static_cast<std::size_t>(m) * k);
  make_absolute(d_b, static_cast<std::size_t>(k) * n);
  cublas_matmul(d_a, d_b, d_magnitude, m, k, n);
}

// Whether an element of C (m x n) is farther than bound x magnitude from cuBLAS's value, leaving
// out the rows and columns flagged in on_cpu_row and on_cpu_col (those are compared with the CPU
// product). In double, as expect_matmul compares, so both find the same elements.
struct OutsideBound {
  const float* c;
  const float* value;
  const float* magnitude;
  std::size_t n;
  double bound;
  const unsigned char* on_cpu_row;
  const unsigned char* on_cpu_col;
  __device__ bool operator()(std::size_t i) const {
    if (on_cpu_row[i / n] || on_cpu_col[i % n]) return false;
    const double allowed = bound * static_cast<double>(magnitude[i]);
    return !(fabs(static_cast<double>(c[i]) - static_cast<double>(value[i])) <= allowed);  // NaN too
  }
};

std::vector<float> download(const float* d_data, std::size_t count) {
  std::vector<float> host(count);
  if (count > 0) CUDA_CHECK(cudaMemcpy(host.data(), d_data, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

std::string lines_source(const MatmulLines& lines) {
  return "cuBLAS, and a double-precision CPU product in " + std::to_string(lines.rows.size()) + " rows and " +
         std::to_string(lines.cols.size()) + " columns";
}

// The expected C of a large product: cuBLAS's values (value, magnitude: all of C) within
// cublas_bound, replaced in `lines` by the CPU product within cpu_bound.
MatmulExpected expected_from(const std::vector<float>& value, const std::vector<float>& magnitude,
                             const MatmulLines& lines, int m, int k, int n, double error_units) {
  const std::size_t mm = static_cast<std::size_t>(m), nn = static_cast<std::size_t>(n);
  MatmulExpected expected;
  expected.m = m;
  expected.n = n;
  expected.value.resize(mm * nn);
  expected.allowed.resize(mm * nn);
  const double gpu_bound = cublas_bound(error_units, k), line_bound = cpu_bound(error_units, k);
  for (std::size_t i = 0; i < mm * nn; ++i) {
    expected.value[i] = value[i];
    expected.allowed[i] = gpu_bound * magnitude[i];
  }
  for (std::size_t r = 0; r < lines.rows.size(); ++r) {
    const std::size_t row = static_cast<std::size_t>(lines.rows[r]);
    for (std::size_t j = 0; j < nn; ++j) {
      expected.value[row * nn + j] = lines.row_value[r * nn + j];
      expected.allowed[row * nn + j] = line_bound * lines.row_magnitude[r * nn + j];
    }
  }
  for (std::size_t c = 0; c < lines.cols.size(); ++c) {
    const std::size_t col = static_cast<std::size_t>(lines.cols[c]);
    for (std::size_t i = 0; i < mm; ++i) {
      expected.value[i * nn + col] = lines.col_value[c * mm + i];
      expected.allowed[i * nn + col] = line_bound * lines.col_magnitude[c * mm + i];
    }
  }
  expected.source = lines_source(lines);
  return expected;
}

CaseContext matmul_context(const CaseContext& context, int n, const std::string& source) {
  CaseContext where = context;
  where.row_length = static_cast<std::size_t>(n);
  where.input += "; expected values from " + source;
  return where;
}

}  // namespace

std::string MatmulInputs::shape() const { return shape_text(m, k, n); }

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

std::vector<int> matmul_check_lines(int count, int random, const Rng& rng) {
  if (count <= 0) return {};
  std::vector<int> lines{0, count / 2, count - 1};
  for (const int i : rng.uniform_ints(static_cast<std::size_t>(std::max(random, 0)), 0, count - 1)) lines.push_back(i);
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  return lines;
}

MatmulLines matmul_lines(const MatmulInputs& in, std::vector<int> rows, std::vector<int> cols) {
  return lines_of(
      in.m, in.k, in.n, [&](std::size_t i) { return in.a[i]; }, [&](std::size_t i) { return in.b[i]; }, std::move(rows),
      std::move(cols));
}

MatmulLines matmul_lines(int m, int k, int n, const Rng& a, const Rng& b, std::vector<int> rows,
                         std::vector<int> cols) {
  return lines_of(
      m, k, n, [&](std::size_t i) { return a.uniform_float_at(i, kInputLow, kInputHigh); },
      [&](std::size_t i) { return b.uniform_float_at(i, kInputLow, kInputHigh); }, std::move(rows), std::move(cols));
}

MatmulExpected matmul_expected(const MatmulInputs& in, double error_units) {
  if (static_cast<double>(in.m) * in.k * in.n <= kCpuFullCheckTerms) {
    std::vector<int> every_row(static_cast<std::size_t>(in.m));
    std::iota(every_row.begin(), every_row.end(), 0);
    MatmulLines lines = matmul_lines(in, std::move(every_row), {});
    MatmulExpected expected;
    expected.m = in.m;
    expected.n = in.n;
    expected.value = std::move(lines.row_value);  // every row, in order: all of C
    expected.allowed = std::move(lines.row_magnitude);
    const double bound = cpu_bound(error_units, in.k);
    for (double& allowed : expected.allowed) allowed *= bound;
    expected.source = "a double-precision CPU product";
    return expected;
  }
  // cuBLAS for every element, and the exact product where boundary mistakes show first,
  // independent of cuBLAS (made on the CPU while the GPU works).
  const std::size_t size = static_cast<std::size_t>(in.m) * in.n;
  DeviceBuffer<float> d_a(in.a), d_b(in.b), d_value(size), d_magnitude(size);
  cublas_reference(d_a.data(), d_b.data(), d_value.data(), d_magnitude.data(), in.m, in.k, in.n);
  const MatmulLines lines = matmul_lines(in, matmul_check_lines(in.m, kRandomSpotLines, Rng::for_case("spot rows")),
                                         matmul_check_lines(in.n, kRandomSpotLines, Rng::for_case("spot columns")));
  return expected_from(d_value.download(), d_magnitude.download(), lines, in.m, in.k, in.n, error_units);
}

namespace detail {

MismatchLog matmul_mismatches(const std::vector<float>& got, const MatmulExpected& expected) {
  MismatchLog log(expected.value.size());
  log_outside(
      got, expected.value, [&](std::size_t i) { return expected.allowed[i]; }, [](std::size_t i) { return i; }, log);
  return log;
}

// It proves what a comparison with matmul_expected proves: every element within the cuBLAS bound
// of cuBLAS's product, and whole rows and columns within the rigorous bound of the double product.
// Only the place of the work differs. Making the whole expected C on the CPU costs most of a second
// per verified call at 4096³ (A and B made again, 256 MB of doubles written, C and two cuBLAS
// products downloaded and compared on one core, twelve lines of 16M multiply-adds), and the whole
// class waits while it runs. Here the GPU makes the inputs again from the streams (the same numbers
// as the CPU's: kit::fill_uniform_floats), runs the two cuBLAS products and compares all of C in
// double, a few ms; meanwhile the CPU computes the lines on every core, making each element of A
// and B where it is used (32M elements made, 200M multiply-adds: tens of ms on 16 cores). The
// lines besides the first, middle and last are drawn after the call from the operating system's
// entropy, as kit::sample_positions draws positions, so a submission cannot know which ones the
// CPU compares.
MismatchLog matmul_mismatches_on_device(const float* d_c, int m, int k, int n, const Rng& a, const Rng& b,
                                        double error_units, std::string* source) {
  const std::size_t mm = static_cast<std::size_t>(m), nn = static_cast<std::size_t>(n), size = mm * nn;
  if (static_cast<double>(m) * k * n <= kCpuFullCheckTerms) {
    const MatmulExpected expected = matmul_expected(make_matmul_inputs(m, k, n, a, b), error_units);
    *source = expected.source;
    return matmul_mismatches(download(d_c, size), expected);
  }

  std::random_device entropy;
  const Rng row_draw((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
  const Rng col_draw((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
  std::vector<int> rows = matmul_check_lines(m, kRandomSpotLines, row_draw);
  std::vector<int> cols = matmul_check_lines(n, kRandomSpotLines, col_draw);

  // The lines' elements of C, rows then columns as MatmulLines holds them: read now, before the
  // reference's GPU work is queued (a read waits for it).
  std::vector<std::size_t> positions;
  positions.reserve(rows.size() * nn + cols.size() * mm);
  std::vector<unsigned char> on_cpu_row(mm, 0), on_cpu_col(nn, 0);
  for (const int row : rows) {
    on_cpu_row[static_cast<std::size_t>(row)] = 1;
    for (std::size_t j = 0; j < nn; ++j) positions.push_back(static_cast<std::size_t>(row) * nn + j);
  }
  for (const int col : cols) {
    on_cpu_col[static_cast<std::size_t>(col)] = 1;
    for (std::size_t i = 0; i < mm; ++i) positions.push_back(i * nn + static_cast<std::size_t>(col));
  }
  const std::vector<float> got_lines = gather(d_c, positions);
  const DeviceBuffer<unsigned char> d_on_cpu_row(on_cpu_row), d_on_cpu_col(on_cpu_col);
  DeviceBuffer<float> d_a(mm * static_cast<std::size_t>(k)), d_b(static_cast<std::size_t>(k) * nn), d_value(size),
      d_magnitude(size);

  fill_matmul_inputs(d_a.data(), d_b.data(), m, k, n, a, b);
  cublas_reference(d_a.data(), d_b.data(), d_value.data(), d_magnitude.data(), m, k, n);
  const std::size_t outside =
      count_where(size, OutsideBound{d_c, d_value.data(), d_magnitude.data(), nn, cublas_bound(error_units, k),
                                     d_on_cpu_row.data(), d_on_cpu_col.data()});

  const MatmulLines lines = matmul_lines(m, k, n, a, b, std::move(rows), std::move(cols));
  *source = lines_source(lines);
  const double line_bound = cpu_bound(error_units, k);
  const std::size_t row_elements = lines.row_value.size();
  bool lines_right = true;
  for (std::size_t e = 0; e < got_lines.size(); ++e) {
    const bool in_row = e < row_elements;
    const double value = in_row ? lines.row_value[e] : lines.col_value[e - row_elements];
    const double magnitude = in_row ? lines.row_magnitude[e] : lines.col_magnitude[e - row_elements];
    lines_right = lines_right && std::fabs(static_cast<double>(got_lines[e]) - value) <= line_bound * magnitude;
  }
  if (lines_right && outside == 0) return MismatchLog(size);

  // Something is wrong (rare, and the timing case stops there): all of C against all of the
  // expected C on the CPU, for a report that counts the wrong elements and names the first.
  return matmul_mismatches(download(d_c, size),
                           expected_from(d_value.download(), d_magnitude.download(), lines, m, k, n, error_units));
}

}  // namespace detail

bool expect_matmul(const std::vector<float>& got, const MatmulExpected& expected, const CaseContext& context) {
  return detail::matmul_mismatches(got, expected)
      .report("result", matmul_context(context, expected.n, expected.source));
}

bool expect_matmul_on_device(const float* d_c, int m, int k, int n, const Rng& a, const Rng& b, double error_units,
                             const CaseContext& context) {
  std::string source;
  const detail::MismatchLog log = detail::matmul_mismatches_on_device(d_c, m, k, n, a, b, error_units, &source);
  return log.report("result", matmul_context(context, n, source));
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

// 137 GFLOP at 4096³ with A, B and C at 64 MiB each: far beyond launch overhead and the 50 MB L2.
Measurement time_square_matmul(const std::string& name, MatmulLauncher launch, int size, const std::string& look_at,
                               const std::vector<MatmulPeer>& peers) {
  const std::size_t elements = static_cast<std::size_t>(size) * size;
  DeviceBuffer<float> d_a(elements), d_b(elements), d_c(elements);
  const TimingOptions options = TimingOptions::from_params();
  const double error_units = param_double("dot_error_units");

  TimedWork work;
  work.name = name;
  work.call = [&] { launch(d_a.data(), d_b.data(), d_c.data(), size, size, size); };
  work.work_per_call = 2.0 * size * size * static_cast<double>(size);
  work.unit = RateUnit::GFLOPs;
  work.outputs = {Output::device("C", d_c.data(), elements)};
  work.refresh = [&](const Call& call) {
    fill_matmul_inputs(d_a.data(), d_b.data(), size, size, size, call.rng("A"), call.rng("B"));
  };
  fill_matmul_inputs(d_a.data(), d_b.data(), size, size, size, Rng::for_case("A"), Rng::for_case("B"));
  for (const MatmulPeer peer : peers)
    work.ceilings.push_back(peer(d_a.data(), d_b.data(), d_c.data(), size, size, size, options));
  work.ceilings.push_back(cublas_matmul_ceiling(d_a.data(), d_b.data(), d_c.data(), size, size, size, options));
  work.verify = [&](const Call& call) {
    return expect_matmul_on_device(
        d_c.data(), size, size, size, call.rng("A"), call.rng("B"), error_units,
        {"the timing matrices, " + shape_text(size, size, size) + ", inputs of " + call.name(), look_at});
  };
  work.look_at = look_at;
  return time_work(work, options);
}

}  // namespace kit
