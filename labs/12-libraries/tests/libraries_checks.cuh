// Lab 12 checks shared by the public and the hidden tests: inputs, the
// expected results with the error each may have (pipeline_reference.hpp), the
// resources a test holds, and the run-and-compare routines of every part.
#pragma once

#include <cublas_v2.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kit/kit.cuh"
#include "kit/remote.hpp"
#include "libraries.cuh"
#include "pipeline_reference.hpp"

namespace libraries_checks {

using pipeline_reference::Complex;
using pipeline_reference::kUnitRoundoff;

inline const std::string kLookAtResponse =
    "apply_response_kernel and launch_apply_response in libraries.cu (in the listing, index 2i and 2i+1 are the real "
    "and imaginary parts of value i, which is bin i % bins of spectrum i / bins)";
inline const std::string kLookAtResponseGuard =
    "the bounds check in apply_response_kernel: a thread whose index is spectra * bins or more must not write";
inline const std::string kLookAtResponseStream =
    "launch_apply_response: launch the kernel on the stream it is given (the fourth launch parameter). Here the "
    "input arrives on that stream after a delay, so a kernel run on any other stream sees the buffer before the "
    "input is in it";
inline const std::string kLookAtMix =
    "mix_beams in libraries.cu: which matrix is which to cuBLAS (it reads them column-major), the transposition "
    "flags, the leading dimensions and the strides from one frame to the next (row r of the listing is beam r % M "
    "of frame r / M)";
inline const std::string kLookAtMixGuard =
    "the sizes and strides in mix_beams: the output holds frames x M x n floats and nothing after them is yours";
inline const std::string kLookAtMixStream =
    "mix_beams: the product must run on the stream the handle is bound to, which the caller chose (do not call "
    "cublasSetStream on it). Here the input arrives on that stream after a delay";
inline const std::string kLookAtNormalize =
    "normalize_beams in libraries.cu: one segment per beam of n samples in the reduction, and every sample divided "
    "by its own beam's RMS; a beam of zeros stays zeros (row r of the listing is beam r)";
inline const std::string kLookAtRms =
    "normalize_beams in libraries.cu: d_rms[beam] = sqrt(sum of the beam's squares / n), one value per beam";
inline const std::string kLookAtNormalizeGuard =
    "the sizes in normalize_beams: count beams of n samples and count RMS values, nothing after them";
inline const std::string kLookAtNormalizeStream =
    "normalize_beams: every step must run on `stream`, the CUB call (its last argument) and the Thrust calls (an "
    "execution policy bound to the stream). Here the input arrives on that stream after a delay";
inline const std::string kLookAtNoWaiting =
    "normalize_beams must queue its work and return: a Thrust algorithm run with the thrust::cuda::par policy waits "
    "for its stream before returning (par_nosync does not), and thrust::reduce and thrust::reduce_by_key always "
    "wait, because they hand a result back to the host";
inline const std::string kLookAtPipelineBeams =
    "run_pipeline and create_pipeline in libraries.cu: each batch's offsets, the plans' batch and layout (n/2 + 1 "
    "bins per spectrum), the order of the steps on one stream (row r of the listing is beam r % M of "
    "frame r / M, counting from the first frame named above)";
inline const std::string kLookAtPipelineRms =
    "the RMS values: normalize_beams, the 1/n that the filter must apply because cuFFT's inverse transform is not "
    "normalized, and the copy of each batch's RMS values out of the device (row r of the listing is "
    "frame r, counting from the first frame named above; column m is its beam m)";
inline const std::string kLookAtPipelineGuard =
    "the size of each batch's copies out in run_pipeline: the last batch is usually shorter than the others";
inline const std::string kLookAtWait =
    "the end of run_pipeline: the caller reads the outputs as soon as it returns, so it must first wait until "
    "every stream has finished (cudaStreamSynchronize on each)";

// ---------------------------------------------------------------------------
// Parameters

inline pipeline_reference::ErrorModel error_model() {
  return {kit::param_double("fft_error_factor"), kit::param_double("multiply_error_units"),
          kit::param_double("normalize_error_units")};
}
inline std::size_t guard_floats() { return static_cast<std::size_t>(kit::param_int("guard_floats")); }
inline double stream_delay_ms() { return kit::param_double("stream_delay_ms"); }

// ---------------------------------------------------------------------------
// Inputs

inline std::vector<float> uniform(std::size_t count, const std::string& stream, float low = -1.0f, float high = 1.0f) {
  return kit::Rng::for_case(stream).uniform_floats(count, low, high);
}

// The n/2 + 1 bins of a filter: real and imaginary parts uniform in [-0.7, 0.7]
// (so |H_k| < 1), the first bin and, for even n, the last real, as in the
// response of any real filter. Random bins: a bin multiplied by its neighbour's
// response, or a conjugated one, is far off.
inline std::vector<cufftComplex> make_response(int n, const std::string& stream = "response") {
  const int bins = n / 2 + 1;
  const std::vector<float> parts = uniform(2 * static_cast<std::size_t>(bins), stream, -0.7f, 0.7f);
  std::vector<cufftComplex> response(static_cast<std::size_t>(bins));
  for (int k = 0; k < bins; ++k) response[k] = make_cuFloatComplex(parts[2 * k], parts[2 * k + 1]);
  response[0].y = 0.0f;
  if (n % 2 == 0) response[n / 2].y = 0.0f;
  return response;
}

inline std::vector<Complex> as_complex(const std::vector<cufftComplex>& values) {
  std::vector<Complex> out;
  for (const cufftComplex& v : values) out.emplace_back(v.x, v.y);
  return out;
}

// M x C weights uniform in [-1, 1]; the row of a silent beam (if any) is all zeros.
inline std::vector<float> make_weights(int beams, int channels, int silent_beam = -1) {
  std::vector<float> weights = uniform(static_cast<std::size_t>(beams) * channels, "weights");
  if (silent_beam >= 0) std::fill_n(weights.begin() + static_cast<std::size_t>(silent_beam) * channels, channels, 0.0f);
  return weights;
}

// The first `count` elements and the rest.
template <class T>
std::pair<std::vector<T>, std::vector<T>> split_at(const std::vector<T>& all, std::size_t count) {
  return {std::vector<T>(all.begin(), all.begin() + count), std::vector<T>(all.begin() + count, all.end())};
}

// ---------------------------------------------------------------------------
// Resources, released however a test ends

// A cuBLAS handle of the test's own, bound to `stream`, in plain FP32 math.
class TestBlas {
 public:
  explicit TestBlas(cudaStream_t stream) {
    CUBLAS_CHECK(cublasCreate(&handle_));
    CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasSetStream(handle_, stream));
  }
  ~TestBlas() { cublasDestroy(handle_); }
  TestBlas(const TestBlas&) = delete;
  TestBlas& operator=(const TestBlas&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// Device memory that a late input is copied from on the stream: it must outlive the copy.
template <class T>
using Staging = std::unique_ptr<kit::DeviceBuffer<T>>;

// Fills a device buffer from the host, for work queued next on `stream`. On
// time: copied now. Late (`late`): poisoned now, then copied on `stream` behind
// a delay queued there first, from a device buffer of the test's that holds the
// input already (so the copy is queued and the call returns at once); keep what
// this returns until the stream is done. The delay and the copy run in your
// code's process, on its copy of `stream` (kit::remote::queue_delay), where your
// function's work on that stream queues behind them.
// Either way, everything the test did on the device before is complete when it
// returns: work on a non-blocking stream does not wait for the legacy default
// stream that cudaMemcpy and cudaMemset use.
template <class T>
Staging<T> fill_on_stream(kit::DeviceBuffer<T>& d_buffer, const std::vector<T>& host, cudaStream_t stream, bool late) {
  if (!late) {
    d_buffer.upload(host);
    CUDA_CHECK(cudaDeviceSynchronize());
    return nullptr;
  }
  auto staging = std::make_unique<kit::DeviceBuffer<T>>(host);
  d_buffer.poison();
  CUDA_CHECK(cudaDeviceSynchronize());
  kit::remote::queue_delay(stream, stream_delay_ms());
  kit::remote::copy_on_stream(d_buffer.data(), staging->data(), host.size() * sizeof(T), stream);
  return staging;
}

// ---------------------------------------------------------------------------
// Part 1: the filter kernel

// Runs launch_apply_response on `spectra` random spectra of `bins` bins, with
// a random response, on a stream of the test's own, and compares every value
// with the product in double. A poisoned guard follows the spectra (writes
// past the end) and the response (reads past its end bring the poison in).
// With `late`, the spectra arrive on that stream after a delay. A `guard` of
// 0 leaves buffers of exactly their size, for the memory checker.
inline void check_response(std::size_t spectra, int bins, const std::string& input, bool late = false,
                           std::size_t guard = guard_floats()) {
  const std::size_t values = spectra * static_cast<std::size_t>(bins);
  const float scale = static_cast<float>(kit::param_double("response_scale"));
  const std::vector<float> spectrum_parts = uniform(2 * values, "spectra");
  const std::vector<float> response_parts = uniform(2 * static_cast<std::size_t>(bins), "response");
  kit::DeviceBuffer<float> d_spectra(2 * values + guard), d_response(kit::with_guard(response_parts, guard));
  kit::Stream stream;
  if (late) {  // a first run of the same size: loading a kernel may wait for the device, and must not here
    launch_apply_response(reinterpret_cast<cufftComplex*>(d_spectra.data()), spectra, bins,
                          reinterpret_cast<const cufftComplex*>(d_response.data()), scale, stream.get());
    kit::remote::synchronize(stream.get());
  }
  const auto staging = fill_on_stream(d_spectra, kit::with_guard(spectrum_parts, guard), stream.get(), late);
  launch_apply_response(reinterpret_cast<cufftComplex*>(d_spectra.data()), spectra, bins,
                        reinterpret_cast<const cufftComplex*>(d_response.data()), scale, stream.get());
  kit::remote::synchronize(stream.get());  // the work is in your code's process, on its copy of the stream
  kit::remote::synchronize_device();
  const auto [got, past_end] = split_at(d_spectra.download(), 2 * values);

  // A complex product and a scaling in float: within multiply_error_units u of
  // |scale| |H_k| |x| in modulus (lab.toml), so in each part too.
  std::vector<double> expected(2 * values), allowed(2 * values);
  const double units = kit::param_double("multiply_error_units") * kUnitRoundoff;
  for (std::size_t i = 0; i < values; ++i) {
    const std::size_t k = i % static_cast<std::size_t>(bins);
    const Complex h(response_parts[2 * k], response_parts[2 * k + 1]);
    const Complex x(spectrum_parts[2 * i], spectrum_parts[2 * i + 1]);
    const Complex product = static_cast<double>(scale) * h * x;
    expected[2 * i] = product.real();
    expected[2 * i + 1] = product.imag();
    allowed[2 * i] = allowed[2 * i + 1] = units * std::fabs(scale) * std::abs(h) * std::abs(x);
  }
  const std::string look_at = late ? kLookAtResponseStream : kLookAtResponse;
  if (std::equal(got.begin(), got.end(), spectrum_parts.begin()))
    FAIL_CHECK("For input: " << input << " (" << kit::seed_text() << "), every value is exactly as it was: "
                             << (late ? "the kernel never ran on the spectra after they had arrived on the stream."
                                      : "the response was never applied. Is apply_response_kernel launched, and "
                                        "does it write its result back?")
                             << "\nLook at: " << look_at);
  kit::expect_within(got, expected, [&](std::size_t i) { return allowed[i]; }, {input, look_at});
  kit::expect_guard_untouched(past_end, 2 * values, {input, kLookAtResponseGuard});
}

// ---------------------------------------------------------------------------
// Part 2: beams

struct MixShape {
  std::size_t frames;
  int channels, beams, n;
};

inline std::string describe(const MixShape& s) {
  return std::to_string(s.frames) + (s.frames == 1 ? " frame" : " frames") + " of " + std::to_string(s.channels) +
         " channels x " + std::to_string(s.n) + " samples into " + std::to_string(s.beams) + " beams";
}

// A flat [frames, channels, beams, n, ...] lab parameter.
inline std::vector<MixShape> mix_shapes(const std::string& key) {
  const auto values = kit::param_ints(key);
  REQUIRE_MESSAGE((!values.empty() && values.size() % 4 == 0),
                  "lab parameter '" << key << "' must list whole [frames, channels, beams, n] quadruples");
  std::vector<MixShape> shapes;
  for (std::size_t i = 0; i < values.size(); i += 4)
    shapes.push_back({static_cast<std::size_t>(values[i]), static_cast<int>(values[i + 1]),
                      static_cast<int>(values[i + 2]), static_cast<int>(values[i + 3])});
  return shapes;
}

// Runs mix_beams with a handle of the test's own on random channels and
// weights; every beam value against the double-precision product, within
// gamma_C sum_c |w| |y| (a float dot product of C terms, any order). Poisoned
// guards after the weights (a stride that runs past them brings the poison in)
// and after the beams (writes past the end); `late` and `guard` as for check_response.
inline void check_mix(const MixShape& shape, const std::string& input, bool late = false,
                      std::size_t guard = guard_floats()) {
  const std::size_t n = static_cast<std::size_t>(shape.n), channels = static_cast<std::size_t>(shape.channels);
  const std::size_t beams = static_cast<std::size_t>(shape.beams);
  const std::size_t in_count = shape.frames * channels * n, out_count = shape.frames * beams * n;
  const std::vector<float> y = uniform(in_count, "channels");
  const std::vector<float> weights = make_weights(shape.beams, shape.channels);
  kit::DeviceBuffer<float> d_channels(in_count), d_weights(kit::with_guard(weights, guard)), d_beams(out_count + guard);
  kit::Stream stream;
  TestBlas blas(stream.get());
  if (late) {  // a first run of the same size: loading a kernel may wait for the device, and must not here
    mix_beams(blas.get(), d_channels.data(), d_weights.data(), d_beams.data(), shape.frames, shape.channels,
              shape.beams, shape.n);
    kit::remote::synchronize(stream.get());
  }
  d_beams.poison();
  const auto staging = fill_on_stream(d_channels, y, stream.get(), late);
  mix_beams(blas.get(), d_channels.data(), d_weights.data(), d_beams.data(), shape.frames, shape.channels, shape.beams,
            shape.n);
  kit::remote::synchronize(stream.get());  // the product is in your code's process, on its copy of the stream
  kit::remote::synchronize_device();
  const auto [got, past_end] = split_at(d_beams.download(), out_count);

  const double gamma = kit::float_dot_gamma(shape.channels);
  std::vector<double> expected(out_count), allowed(out_count);
  for (std::size_t f = 0; f < shape.frames; ++f)
    for (std::size_t m = 0; m < beams; ++m)
      for (std::size_t t = 0; t < n; ++t) {
        double value = 0.0, magnitude = 0.0;
        for (std::size_t c = 0; c < channels; ++c) {
          const double term = static_cast<double>(weights[m * channels + c]) * y[(f * channels + c) * n + t];
          value += term;
          magnitude += std::fabs(term);
        }
        expected[(f * beams + m) * n + t] = value;
        allowed[(f * beams + m) * n + t] = gamma * magnitude;
      }
  kit::expect_within(got, expected, [&](std::size_t i) { return allowed[i]; },
                     {input, late ? kLookAtMixStream : kLookAtMix, n});
  kit::expect_guard_untouched(past_end, out_count, {input, kLookAtMixGuard});
}

// ---------------------------------------------------------------------------
// Part 3: unit RMS

// Runs normalize_beams on `count` random beams of n samples (every
// `silent_every`-th one all zeros, when given), with the scratch it asks for,
// on a stream of the test's own; compares the beams and the RMS values with
// the double-precision ones (bounds in pipeline_reference::normalize). Guards
// after both outputs. With `late`, the beams arrive on the stream after a
// delay, and the call must have returned long before the delay is over;
// `guard` as for check_response.
inline void check_normalize(std::size_t count, int n, const std::string& input, std::size_t silent_every = 0,
                            bool late = false, std::size_t guard = guard_floats()) {
  const std::size_t samples = count * static_cast<std::size_t>(n);
  std::vector<float> beams = uniform(samples, "beams");
  if (silent_every > 0)
    for (std::size_t b = 0; b < count; b += silent_every) std::fill_n(beams.begin() + b * n, n, 0.0f);
  const std::size_t scratch_bytes = normalize_scratch_bytes(count, n);
  REQUIRE_MESSAGE(scratch_bytes >= 1,
                  "normalize_scratch_bytes("
                      << count << ", " << n << ") returned 0; the "
                      << "header asks for at least 1.\nLook at: normalize_scratch_bytes in libraries.cu");
  kit::DeviceBuffer<char> d_scratch(scratch_bytes);
  kit::DeviceBuffer<float> d_beams(samples + guard), d_rms(count + guard);
  kit::Stream stream;
  if (late) {  // a first run of the same size: loading a kernel may wait for the device, and must not here
    d_beams.upload(kit::with_guard(beams, guard));
    CUDA_CHECK(cudaDeviceSynchronize());
    normalize_beams(d_beams.data(), d_rms.data(), count, n, d_scratch.data(), scratch_bytes, stream.get());
    kit::remote::synchronize(stream.get());
  }
  d_rms.poison();
  const auto staging = fill_on_stream(d_beams, kit::with_guard(beams, guard), stream.get(), late);
  // The call's whole round trip to your code's process: it cannot return before your function does.
  const auto start = std::chrono::steady_clock::now();
  normalize_beams(d_beams.data(), d_rms.data(), count, n, d_scratch.data(), scratch_bytes, stream.get());
  const std::chrono::duration<double, std::milli> call = std::chrono::steady_clock::now() - start;
  kit::remote::synchronize(stream.get());  // the work is in your code's process, on its copy of the stream
  kit::remote::synchronize_device();
  const auto [got, past_end] = split_at(d_beams.download(), samples);
  const auto [got_rms, past_rms] = split_at(d_rms.download(), count);

  // The inputs are exact floats: the only errors are the reduction's and the division's.
  const pipeline_reference::ErrorModel model = error_model();
  const std::vector<double> exact(beams.begin(), beams.end()), no_error(static_cast<std::size_t>(n), 0.0);
  std::vector<double> expected(samples), allowed(samples), expected_rms(count), allowed_rms(count);
  for (std::size_t b = 0; b < count; ++b) {
    const auto normalized = pipeline_reference::normalize(exact.data() + b * n, no_error.data(), n, model);
    std::copy(normalized.values.begin(), normalized.values.end(), expected.begin() + b * n);
    std::copy(normalized.allowed.begin(), normalized.allowed.end(), allowed.begin() + b * n);
    expected_rms[b] = normalized.rms;
    allowed_rms[b] = normalized.rms_allowed;
  }
  kit::expect_within(got_rms, expected_rms, [&](std::size_t i) { return allowed_rms[i]; },
                     {input + " (the RMS values)", late ? kLookAtNormalizeStream : kLookAtRms});
  kit::expect_within(got, expected, [&](std::size_t i) { return allowed[i]; },
                     {input + " (the normalized beams)", late ? kLookAtNormalizeStream : kLookAtNormalize,
                      static_cast<std::size_t>(n)});
  kit::expect_guard_untouched(past_end, samples, {input + " (the beams)", kLookAtNormalizeGuard});
  kit::expect_guard_untouched(past_rms, count, {input + " (the RMS values)", kLookAtNormalizeGuard});
  if (late)
    CHECK_MESSAGE(
        call.count() < 0.5 * stream_delay_ms(),
        "For input: " << input << ", normalize_beams took " << call.count()
                      << " ms to return, while its stream was held up for " << stream_delay_ms()
                      << " ms before its input arrived: it waited for the GPU.\nLook at: " << kLookAtNoWaiting);
}

// ---------------------------------------------------------------------------
// Part 4: the pipeline

// A pipeline's shape: samples, channels and beams, streams and batch size,
// and the beam whose weights are all zero (-1: none).
struct Scenario {
  int n, channels, beams, streams, frames_per_batch;
  int silent_beam = -1;
};

inline std::string describe(const Scenario& s) {
  return std::to_string(s.channels) + " channels of " + std::to_string(s.n) + " samples into " +
         std::to_string(s.beams) + " beams, " + std::to_string(s.streams) + " streams, batches of " +
         std::to_string(s.frames_per_batch) + " frames" +
         (s.silent_beam >= 0 ? ", beam " + std::to_string(s.silent_beam) + " with all-zero weights" : "");
}

// A [n, channels, beams] lab parameter with the streams and batch size from two others.
inline Scenario scenario_param(const std::string& shape_key, const std::string& streams_key,
                               const std::string& batch_key) {
  const auto shape = kit::param_ints(shape_key);
  REQUIRE_MESSAGE(shape.size() == 3, "lab parameter '" << shape_key << "' must be [n, channels, beams]");
  return {static_cast<int>(shape[0]), static_cast<int>(shape[1]), static_cast<int>(shape[2]),
          static_cast<int>(kit::param_int(streams_key)), static_cast<int>(kit::param_int(batch_key))};
}

// The lab's usual pipeline, from lab.toml.
inline Scenario pipeline_scenario() {
  return scenario_param("pipeline_shape", "pipeline_streams", "pipeline_batch_frames");
}

// The weights and the response a pipeline is made with.
struct PipelineInputs {
  std::vector<float> weights;
  std::vector<cufftComplex> response;

  explicit PipelineInputs(const Scenario& s)
      : weights(make_weights(s.beams, s.channels, s.silent_beam)), response(make_response(s.n)) {}

  PipelineSetup setup(const Scenario& s) const {
    PipelineSetup setup;
    setup.samples = s.n;
    setup.channels = s.channels;
    setup.beams = s.beams;
    setup.weights = weights.data();
    setup.response = response.data();
    setup.streams = s.streams;
    setup.frames_per_batch = s.frames_per_batch;
    return setup;
  }
};

// A destructor must not throw: where destroy_pipeline fails (or your code's process is gone after an
// earlier failure of the test case), that is reported, and the test goes on.
struct PipelineDeleter {
  void operator()(Pipeline* pipeline) const {
    try {
      destroy_pipeline(pipeline);
    } catch (const std::exception& error) {
      FAIL_CHECK("destroy_pipeline failed: " << error.what());
    }
  }
};
using PipelineHandle = std::unique_ptr<Pipeline, PipelineDeleter>;

inline PipelineHandle make_pipeline(const Scenario& s, const PipelineInputs& inputs) {
  PipelineHandle pipeline(create_pipeline(inputs.setup(s)));
  REQUIRE_MESSAGE(pipeline != nullptr, "create_pipeline returned nullptr (write Part 4: it must return a Pipeline)");
  return pipeline;
}

inline std::string frames_text(std::size_t frames) {
  return std::to_string(frames) + (frames == 1 ? " frame" : " frames");
}

// The expected output of `period` distinct random frames; frame f of a
// dataset is distinct frame f % period. A prime period keeps batches of any
// size from lining up with it, so a batch read from or written to the wrong
// place still shows.
class ExpectedFrames {
 public:
  ExpectedFrames(const Scenario& s, const PipelineInputs& inputs, std::size_t period, const std::string& stream)
      : scenario_(s), frames_(uniform(period * s.channels * static_cast<std::size_t>(s.n), stream)), expected_(period) {
    const pipeline_reference::Fft fft(s.n);
    const std::vector<Complex> response = as_complex(inputs.response);
    const pipeline_reference::ErrorModel model = error_model();
    const std::size_t frame_floats = static_cast<std::size_t>(s.channels) * s.n;
    // A frame's reference is milliseconds of one core (two transforms in double for each channel), worth a
    // thread of its own: the frames are shared out over the cores, since the timing case makes its own while
    // the class waits for the GPU, and a correctness case up to 257.
    kit::parallel_for(period, static_cast<double>(period), 1.0, [&](std::size_t f) {
      expected_[f] = pipeline_reference::expect_frame(frames_.data() + f * frame_floats, s.channels, inputs.weights,
                                                      s.beams, response, fft, model);
    });
  }

  std::size_t period() const { return expected_.size(); }
  const pipeline_reference::FrameExpected& operator[](std::size_t f) const { return expected_[f % period()]; }

  // Writes `frames` frames of the dataset to `out`.
  void fill(float* out, std::size_t frames) const {
    const std::size_t frame_floats = static_cast<std::size_t>(scenario_.channels) * scenario_.n;
    for (std::size_t f = 0; f < frames; f += period())
      std::memcpy(out + f * frame_floats, frames_.data(),
                  std::min(period(), frames - f) * frame_floats * sizeof(float));
  }

  // Compares a dataset's outputs (frames x M x n beams, frames x M RMS values)
  // with what is expected, `block` frames at a time; stops at the first block
  // that is wrong (its report says enough). Returns whether all was right.
  bool compare(const float* beams, const float* rms, std::size_t frames, std::size_t block,
               const std::string& input) const {
    for (std::size_t first = 0; first < frames; first += block)
      if (!compare_frames(beams, rms, first, std::min(block, frames - first), input)) return false;
    return true;
  }

  // compare() on whole frames only: the first, the last and `samples` more at places drawn from
  // the operating system's entropy after the run (kit::sample_positions, which says why a sample
  // is enough beside the timing's poison check of every value). For the timing case's gigabyte,
  // whose full comparison took seconds of one core while the whole class waited for the GPU.
  bool compare_sampled(const float* beams, const float* rms, std::size_t frames, std::size_t samples,
                       const std::string& input) const {
    std::vector<std::size_t> chosen = kit::sample_positions(frames, samples);
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    const std::string which = " (one of " + std::to_string(chosen.size()) +
                              " frames compared in full: the first, the last and others drawn at random after the run)";
    for (const std::size_t frame : chosen)
      if (!compare_frames(beams, rms, frame, 1, input, which)) return false;
    return true;
  }

 private:
  // Frames [first, first + count) of the outputs against what is expected; `note` follows their
  // name in the report.
  bool compare_frames(const float* beams, const float* rms, std::size_t first, std::size_t count,
                      const std::string& input, const std::string& note = "") const {
    const std::size_t n = static_cast<std::size_t>(scenario_.n), m = static_cast<std::size_t>(scenario_.beams);
    std::vector<double> beam_values, beam_allowed, rms_values, rms_allowed;
    for (std::size_t f = first; f < first + count; ++f) {
      const auto& e = (*this)[f];
      beam_values.insert(beam_values.end(), e.beams.begin(), e.beams.end());
      beam_allowed.insert(beam_allowed.end(), e.beams_allowed.begin(), e.beams_allowed.end());
      rms_values.insert(rms_values.end(), e.rms.begin(), e.rms.end());
      rms_allowed.insert(rms_allowed.end(), e.rms_allowed.begin(), e.rms_allowed.end());
    }
    const std::string which =
        (count == 1 ? "; frame " + std::to_string(first)
                    : "; frames " + std::to_string(first) + " to " + std::to_string(first + count - 1)) +
        note;
    const bool beams_right =
        kit::expect_within(std::vector<float>(beams + first * m * n, beams + (first + count) * m * n), beam_values,
                           [&](std::size_t i) { return beam_allowed[i]; },
                           {input + which + ", the normalized beams", kLookAtPipelineBeams, n});
    const bool rms_right = kit::expect_within(std::vector<float>(rms + first * m, rms + (first + count) * m),
                                              rms_values, [&](std::size_t i) { return rms_allowed[i]; },
                                              {input + which + ", the RMS values", kLookAtPipelineRms, m});
    return beams_right && rms_right;
  }

  Scenario scenario_;
  std::vector<float> frames_;
  std::vector<pipeline_reference::FrameExpected> expected_;
};

// One dataset in page-locked memory shared with your code's process, with poisoned guards after the input and
// the outputs (`guard_batches` batches long: a copy of a whole batch where the
// last one is short stays inside them; 0 for buffers of exactly their size).
class Dataset {
 public:
  Dataset(const Scenario& s, const ExpectedFrames& expected, std::size_t frames, std::size_t guard_batches = 1)
      : scenario_(s),
        expected_(expected),
        frames_(frames),
        in_count_(frames * s.channels * static_cast<std::size_t>(s.n)),
        beam_count_(frames * s.beams * static_cast<std::size_t>(s.n)),
        rms_count_(frames * s.beams),
        batch_(guard_batches * static_cast<std::size_t>(s.frames_per_batch)),
        h_in_(in_count_ + batch_ * s.channels * s.n),
        h_beams_(beam_count_ + batch_ * s.beams * s.n),
        h_rms_(rms_count_ + batch_ * s.beams) {
    expected_.fill(h_in_.data(), frames_);
    std::fill(h_in_.data() + in_count_, h_in_.data() + h_in_.size(), kit::poison_value<float>());
  }

  const float* in() const { return h_in_.data(); }
  float* beams() { return h_beams_.data(); }
  float* rms() { return h_rms_.data(); }
  void poison_outputs() {
    std::fill(h_beams_.data(), h_beams_.data() + h_beams_.size(), kit::poison_value<float>());
    std::fill(h_rms_.data(), h_rms_.data() + h_rms_.size(), kit::poison_value<float>());
  }

  // Compares the outputs as they are now (the last run's) with the CPU reference on `samples`
  // whole frames drawn at random now, and the first and the last (ExpectedFrames::compare_sampled).
  bool outputs_right_sampled(std::size_t samples, const std::string& input) const {
    return expected_.compare_sampled(h_beams_.data(), h_rms_.data(), frames_, samples, input);
  }

  // Runs the dataset through `pipeline` and checks, in this order: that the
  // last frame was already written when run_pipeline returned; the output
  // values against the CPU reference, every frame `block` at a time or, with
  // `sampled` above 0, that many whole frames drawn at random after the run
  // and the first and the last; that nothing was written past the outputs.
  void check(Pipeline* pipeline, const std::string& input, std::size_t block, std::size_t sampled = 0) {
    const std::size_t last_beams = static_cast<std::size_t>(scenario_.beams) * scenario_.n;
    poison_outputs();
    run_pipeline(pipeline, in(), beams(), rms(), frames_);
    // The caller may read the moment run_pipeline returns. The last frame is
    // the last to arrive: look at it before anything else.
    const std::vector<float> last_at_return(beams() + beam_count_ - last_beams, beams() + beam_count_);
    const std::vector<float> last_rms_at_return(rms() + rms_count_ - scenario_.beams, rms() + rms_count_);
    kit::remote::synchronize_device();  // so that what follows tells a late result from a wrong one

    const bool right = sampled > 0 ? expected_.compare_sampled(beams(), rms(), frames_, sampled, input)
                                   : expected_.compare(beams(), rms(), frames_, block, input);
    kit::expect_guard_untouched(std::vector<float>(beams() + beam_count_, beams() + h_beams_.size()), beam_count_,
                                {input + ", the beams", kLookAtPipelineGuard});
    kit::expect_guard_untouched(std::vector<float>(rms() + rms_count_, rms() + h_rms_.size()), rms_count_,
                                {input + ", the RMS values", kLookAtPipelineGuard});

    const auto poisoned = [](const std::vector<float>& values) {
      return std::any_of(values.begin(), values.end(), [](float v) { return kit::is_poison(v); });
    };
    const bool late = poisoned(last_at_return) || poisoned(last_rms_at_return);
    if (late && right)
      FAIL_CHECK("The output for input: " << input << " (" << kit::seed_text()
                                          << ") was right in the end, but its last frame still held the poison when "
                                             "run_pipeline returned: the results arrived after the call had "
                                             "returned.\nLook at: "
                                          << kLookAtWait);
    else if (late)
      FAIL_CHECK("Also, for input: " << input
                                     << ", the last frame still held the poison when run_pipeline "
                                        "returned.\nLook at: "
                                     << kLookAtWait);
  }

 private:
  Scenario scenario_;
  const ExpectedFrames& expected_;
  std::size_t frames_, in_count_, beam_count_, rms_count_, batch_;
  // Page-locked, and mapped by your code's process too: run_pipeline reads and writes them there with no
  // copy, and the test sees a result the moment it lands, as it would in one process.
  kit::remote::SharedHostBuffer<float> h_in_, h_beams_, h_rms_;
};

// A fresh pipeline for one dataset of `frames` frames (distinct up to
// `period`, then repeating), checked whole.
inline void check_pipeline(const Scenario& s, std::size_t frames, std::size_t period, const std::string& input) {
  const PipelineInputs inputs(s);
  const ExpectedFrames expected(s, inputs, std::min(frames, period), "frames");
  Dataset dataset(s, expected, frames);
  PipelineHandle pipeline = make_pipeline(s, inputs);
  dataset.check(pipeline.get(), input + "; " + describe(s), frames);
}

}  // namespace libraries_checks
