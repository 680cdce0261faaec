// Lab 07 checks shared by the public and the hidden tests: inputs, the CPU
// reference, the comparisons and the timing of one version against its ceilings.
#pragma once


#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kit/cublas.hpp"
#include "kit/device_check.cuh"
#include "kit/kit.cuh"
#include "transpose.cuh"

namespace transpose_checks {

// One of the three versions the student writes: its launch function and where to look.
struct Version {
  std::string name;    // e.g. "transpose_tiled", as in the test names
  std::string kernel;  // the kernel's name: the timing measurement is named after it
  void (*launch)(const float* d_in, float* d_out, int rows, int cols);
};

inline const Version kNaive{"transpose_naive", "transpose_naive_kernel", launch_transpose_naive};
inline const Version kTiled{"transpose_tiled", "transpose_tiled_kernel", launch_transpose_tiled};
inline const Version kPadded{"transpose_padded", "transpose_padded_kernel", launch_transpose_padded};

inline std::string look_at(const Version& v) {
  return v.kernel + " and launch_" + v.name + " in transpose.cu";
}
inline std::string look_at_guards(const Version& v) {
  return "the bounds checks before each write in " + v.kernel +
         ": a thread whose output row or column lies outside the cols x rows output must not write";
}
inline std::string look_at_barrier(const Version& v) {
  return "the __syncthreads() in " + v.kernel +
         ": every thread must wait until the whole tile is in shared memory before reading it";
}

// "33x65 (rows x cols)": the shape of the input.
inline std::string shape(int rows, int cols) {
  return std::to_string(rows) + "x" + std::to_string(cols) + " (rows x cols)";
}

// Transposing moves floats without arithmetic, so the result must be exact.
// Inputs are distinct-looking random values in [-1, 1): any element taken from
// the wrong place shows up as a mismatch.
constexpr float kInputLow = -1.0f, kInputHigh = 1.0f;

// Element p of the cols x rows transpose of the rows x cols matrix of the numbers of a stream: input
// element (p % rows, p / rows), on the GPU or the CPU.
struct TransposedAt {
  kit::UniformFloatAt in;
  std::size_t rows, cols;
  __host__ __device__ double operator()(std::size_t p) const { return in((p % rows) * cols + p / rows); }
};

// The cols x rows transpose of the rows x cols matrix of the numbers of the stream `in`, as
// kit::fill_uniform_floats writes that matrix on the GPU: the CPU reference, made straight from the
// generator (TransposedAt), element by element on every core. No input is made on the CPU,
// copied up or transposed: a matrix of 67 million elements costs a few tenths of a second of the
// correctness run that every student's programs share the GPU for.
inline std::vector<float> transposed_stream(const kit::Rng& in, int rows, int cols) {
  const TransposedAt element{kit::UniformFloatAt(in, kInputLow, kInputHigh), static_cast<std::size_t>(rows),
                             static_cast<std::size_t>(cols)};
  std::vector<float> out(element.rows * element.cols);
  const std::size_t threads = kit::threads_for(static_cast<double>(out.size()), 1 << 20);
  kit::on_threads(threads, [&](std::size_t t) {
    for (std::size_t p = kit::part_begin(out.size(), threads, t); p < kit::part_begin(out.size(), threads, t + 1); ++p)
      out[p] = static_cast<float>(element(p));
  });
  return out;
}

// A fresh rows x cols input from the stream `in`, written on the GPU, with `guard` zeros after it.
inline kit::DeviceBuffer<float> input_on_device(const kit::Rng& in, int rows, int cols, std::size_t guard) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  kit::DeviceBuffer<float> d_in(n + guard);
  kit::fill_uniform_floats(d_in.data(), n, in, kInputLow, kInputHigh);
  if (guard > 0) CUDA_CHECK(cudaMemset(d_in.data() + n, 0, guard * sizeof(float)));
  return d_in;
}

inline std::size_t guard_elements() { return static_cast<std::size_t>(kit::param_int("guard_elements")); }

// kit::expect_close_at with no tolerance: as exact as expect_equal. A float converts to double
// exactly, so |got - expected| <= 0 holds only where got == expected (never for NaN).
inline bool expect_equal_at(const std::vector<float>& got, const std::vector<float>& expected,
                            const std::vector<std::size_t>& positions, std::size_t size,
                            const kit::CaseContext& context) {
  return kit::expect_close_at(got, std::vector<double>(expected.begin(), expected.end()), positions, size,
                              kit::Tolerance{0.0, 0.0}, context);
}

// d_out, the cols x rows transpose of the rows x cols matrix of the numbers of `in` (as
// kit::fill_uniform_floats writes it from that stream), compared exactly at check_samples positions
// drawn at random and at both ends: for outputs too large to compare in full on the CPU in a case
// that every submission of a class runs (kit::sample_positions says why a sample is enough, beside
// the poison check of every element). Output element p, at (p / rows, p % rows), is input element
// (p % rows, p / rows), made again with uniform_float_at instead of making the whole matrix.
inline bool expect_transposed_at_samples(const float* d_out, int rows, int cols, const kit::Rng& in,
                                         const std::string& input, const std::string& where) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols, out_row_length = static_cast<std::size_t>(rows);
  const std::vector<std::size_t> positions =
      kit::sample_positions(n, static_cast<std::size_t>(kit::param_int("check_samples")));
  std::vector<float> expected(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const std::size_t in_col = positions[i] / out_row_length, in_row = positions[i] % out_row_length;
    expected[i] = in.uniform_float_at(in_row * cols + in_col, kInputLow, kInputHigh);
  }
  return expect_equal_at(kit::gather(d_out, positions), expected, positions, n, {input, where, out_row_length});
}

// Runs one version on a fresh random rows x cols matrix into a poisoned output
// and compares the result exactly. The output buffer has `guard` poisoned floats
// after the cols x rows result, and a write into them fails; the input has as
// many zeros after it, so that a kernel which also reads past the input's end
// copies zeros into the guard, never poison it might find there. guard = 0 gives
// buffers of exactly the matrices' sizes, for compute-sanitizer, whose memcheck
// sees an access past an end only where nothing is allocated.
inline bool check_transpose(const Version& v, int rows, int cols, const std::string& input,
                            std::size_t guard = guard_elements()) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const kit::Rng in = kit::Rng::for_case("in " + shape(rows, cols));
  const kit::DeviceBuffer<float> d_in = input_on_device(in, rows, cols, guard);
  kit::GuardedBuffer<float> d_out(n, guard);
  v.launch(d_in.data(), d_out.data(), rows, cols);
  CUDA_CHECK(cudaDeviceSynchronize());
  const kit::CaseContext context{input, look_at(v), static_cast<std::size_t>(rows)};
  const bool ok = kit::expect_equal(d_out.download(), transposed_stream(in, rows, cols), context);
  return d_out.expect_guard_untouched({input, look_at_guards(v)}) && ok;
}

// check_transpose for a matrix too large to compare on the CPU in a case that every submission of
// a class runs: the input is written on the GPU, and every element of the output is compared
// there (kit::expect_close_on_device, exactly), after its own check for the poison.
inline bool check_transpose_on_device(const Version& v, int rows, int cols, const std::string& input,
                                      std::size_t guard = guard_elements()) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const kit::Rng in = kit::Rng::for_case("in " + shape(rows, cols));
  const kit::DeviceBuffer<float> d_in = input_on_device(in, rows, cols, guard);
  kit::GuardedBuffer<float> d_out(n, guard);
  v.launch(d_in.data(), d_out.data(), rows, cols);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::size_t unwritten = kit::count_unwritten(kit::Output::device("out", d_out.data(), n));
  CHECK_MESSAGE(unwritten == 0, input << ": " << unwritten << " of the " << n << " elements of out were never written "
                                      << "(they still hold the poison the test put there before the launch). "
                                         "Does the grid cover every tile, across and down?\nLook at: "
                                      << look_at(v));
  const bool ok = kit::expect_close_on_device(
      d_out.data(), n,
      TransposedAt{kit::UniformFloatAt(in, kInputLow, kInputHigh), static_cast<std::size_t>(rows),
                   static_cast<std::size_t>(cols)},
      kit::Tolerance{}, {input, look_at(v), static_cast<std::size_t>(rows)});
  return d_out.expect_guard_untouched({input, look_at_guards(v)}) && ok && unwritten == 0;
}

// A list parameter of (rows, cols) pairs: [r0, c0, r1, c1, ...].
inline std::vector<std::pair<int, int>> shapes(const std::string& key) {
  const std::vector<std::int64_t> flat = kit::param_ints(key);
  if (flat.size() % 2 != 0) throw std::invalid_argument("parameter " + key + " must hold (rows, cols) pairs");
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i < flat.size(); i += 2)
    pairs.emplace_back(static_cast<int>(flat[i]), static_cast<int>(flat[i + 1]));
  return pairs;
}

// Every shape listed under `key`, each described as `what` plus its shape;
// stops at the first shape that fails, so a report names one input.
inline void check_shapes(const Version& v, const std::string& key, const std::string& what,
                         std::size_t guard = guard_elements()) {
  for (const auto& [rows, cols] : shapes(key))
    if (!check_transpose(v, rows, cols, what + " " + shape(rows, cols), guard)) return;
}

// The tile is staged correctly only if every thread waits for the whole tile.
// A missing barrier goes wrong only when a warp runs ahead of another, which
// needs many blocks in flight at once: a large matrix, launched several times.
inline void check_barrier(const Version& v) {
  const int rows = static_cast<int>(kit::param_int("barrier_rows"));
  const int cols = static_cast<int>(kit::param_int("barrier_cols"));
  const int repeats = static_cast<int>(kit::param_int("barrier_repeats"));
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const kit::Rng in = kit::Rng::for_case("barrier");
  const kit::DeviceBuffer<float> d_in = input_on_device(in, rows, cols, 0);
  const std::vector<float> expected = transposed_stream(in, rows, cols);
  kit::DeviceBuffer<float> d_out(n);
  for (int run = 1; run <= repeats; ++run) {
    d_out.poison();
    v.launch(d_in.data(), d_out.data(), rows, cols);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string input = "a large matrix " + shape(rows, cols) + ", launch " + std::to_string(run) + " of " +
                              std::to_string(repeats);
    if (!kit::expect_equal(d_out.download(), expected, {input, look_at_barrier(v), static_cast<std::size_t>(rows)}))
      return;
  }
}

// --- the cuBLAS peer, used only by the timing cases --------------------------

// cuBLAS is column-major: our row-major rows x cols `in` is, to cuBLAS, a
// cols x rows matrix A with leading dimension cols, and our cols x rows `out` is
// a rows x cols matrix C with leading dimension rows. So out = transpose(in) is
// C = 1 * op(A) + 0 * op(B) with op = transpose (B = A; with beta = 0 it adds nothing).
inline void cublas_transpose(const float* d_in, float* d_out, int rows, int cols) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasSgeam(kit::cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_T, rows, cols, &alpha, d_in, cols, &beta,
                           d_in, cols, d_out, rows));
}

// Times one version on the large timing matrix, with two ceilings measured in
// this process: a device-to-device copy of the same number of bytes, and
// cuBLAS's own transpose (cublasSgeam), whose output is checked too. Every
// timed call gets a new matrix, written on the GPU from its own random stream;
// the harness checks that the output is written in full each time and, after
// calls chosen at random, compares it with the CPU's numbers at positions drawn
// at random: making all 2^26 elements again and transposing them on the CPU is
// most of a second per checked call, while the class waits for the GPU.
inline void time_version(const Version& v) {
  const int rows = static_cast<int>(kit::param_int("timing_rows"));
  const int cols = static_cast<int>(kit::param_int("timing_cols"));
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const auto options = kit::TimingOptions::from_params();
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);  // each element read once, written once
  const std::string input = "the timing matrix " + shape(rows, cols);

  kit::TimedWork work;
  work.name = v.kernel;
  work.work_per_call = bytes;
  {  // the peer's matrices, gone before the sets are made
    const kit::Rng peer_in = kit::Rng::for_case("timing");
    kit::DeviceBuffer<float> d_in(n), d_out(n);
    kit::fill_uniform_floats(d_in.data(), n, peer_in, kInputLow, kInputHigh);
    const kit::Timing peer =
        kit::time_device_work([&] { cublas_transpose(d_in.data(), d_out.data(), rows, cols); }, options);
    expect_transposed_at_samples(d_out.data(), rows, cols, peer_in, "the cuBLAS peer on " + input,
                                 "not your code: the lab's cuBLAS call in tests/transpose_checks.cuh (tell your TA)");
    work.ceilings = {kit::copy_ceiling(static_cast<std::size_t>(bytes), options),
                     {"cuBLAS Sgeam transpose", bytes / peer.median_s / 1e9}};
  }
  work.look_at = look_at(v);
  // A call takes a fraction of a millisecond, so the harness may make several sets of the
  // matrices and time several calls in a row, each on its own set.
  work.sets_from([&] {
    const auto d_in = kit::shared_device_buffer<float>(n), d_out = kit::shared_device_buffer<float>(n);
    kit::WorkSet set;
    set.call = [=, &v] { v.launch(d_in->data(), d_out->data(), rows, cols); };
    set.outputs = {kit::Output::device("d_out", d_out->data(), n)};  // NaN: no input element is one
    set.refresh = [=](const kit::Call& call) {
      kit::fill_uniform_floats(d_in->data(), n, call.rng("timing"), kInputLow, kInputHigh);
    };
    set.verify = [=, &v](const kit::Call& call) {
      return expect_transposed_at_samples(d_out->data(), rows, cols, call.rng("timing"),
                                          input + ", the matrix of " + call.name(), look_at(v));
    };
    return set;
  });
  kit::time_work(work, options);
}

}  // namespace transpose_checks
