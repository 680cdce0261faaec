// Lab 08 checks shared by the public and the hidden tests: inputs, the CPU
// reference (window and FFT in double), tolerances, and the run-and-compare
// routines for the window kernel and the pipeline.
#pragma once

#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "kit/remote.hpp"
#include "streams.cuh"

namespace streams_checks {

// The lab's usual signal length, stream count and small budget, from lab.toml.
inline int fft_n() { return static_cast<int>(kit::param_int("fft_n")); }
inline int streams() { return static_cast<int>(kit::param_int("streams")); }
inline std::size_t small_budget() { return static_cast<std::size_t>(kit::param_int("small_budget_kib")) * 1024; }

inline const std::string kLookAtWindow = "apply_window_kernel and launch_apply_window in streams.cu";
inline const std::string kLookAtPipeline =
    "create_pipeline and run_pipeline in streams.cu (in the listing a row is a signal; columns 2k and 2k+1 are "
    "the real and imaginary parts of its sample k)";
inline const std::string kLookAtGuard =
    "the size of each chunk's copies in run_pipeline: the last chunk is usually shorter than the others";
inline const std::string kLookAtWait =
    "the end of run_pipeline: the caller reads h_out as soon as it returns, so it must first wait until every "
    "stream has finished (cudaStreamSynchronize on each)";
inline const std::string kLookAtBudget =
    "create_pipeline: size the chunks from the budget, and count every cudaMalloc and cuFFT's work areas";

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr double kFloatEpsilon = 0x1.0p-24;  // unit roundoff of float: half an ulp at 1

// ---------------------------------------------------------------------------
// Inputs

// `signals` signals of n complex samples as 2 floats each (re, im), uniform in [-1, 1].
inline std::vector<float> make_signals(std::size_t signals, int n, const std::string& stream = "signals") {
  return kit::Rng::for_case(stream).uniform_floats(2 * signals * static_cast<std::size_t>(n), -1.0f, 1.0f);
}

// The timing test's gigabyte, too large to draw sample by sample in good time: the
// `base` signals repeated. Dataset `shift` starts at base signal `shift` (its signal s is
// base signal (s + shift) % base count), so a new shift changes the data at every place, and
// a prime count of base signals keeps any two chunks of a power-of-two size from holding the
// same data, so a chunk read from or written to the wrong place still shows.
// The repetition is kept on the device, base count - 1 signals longer than a dataset, so that
// every dataset is one stretch of it and a timed call's fresh input is one copy to the host: a
// copy engine writes the gigabyte in tens of milliseconds, where one CPU core took a fifth of a
// second before every call, while the whole class waited for the GPU.
class TiledSignals {
 public:
  TiledSignals(const std::vector<float>& base, int n, std::size_t signals)
      : floats_per_signal_(2 * static_cast<std::size_t>(n)),
        distinct_(base.size() / floats_per_signal_),
        signals_(signals),
        d_tiled_((signals + distinct_ - 1) * floats_per_signal_) {
    const std::size_t total = d_tiled_.size();
    CUDA_CHECK(cudaMemcpy(d_tiled_.data(), base.data(), base.size() * sizeof(float), cudaMemcpyHostToDevice));
    // Doubling the repeated stretch: each copy lands at a whole number of repetitions.
    for (std::size_t have = base.size(); have < total; have *= 2)
      CUDA_CHECK(cudaMemcpy(d_tiled_.data() + have, d_tiled_.data(), std::min(have, total - have) * sizeof(float),
                            cudaMemcpyDeviceToDevice));
  }

  std::size_t distinct() const { return distinct_; }

  // Writes dataset `shift` (the dataset's signals x 2n floats) to host memory `out`.
  void copy_to_host(std::size_t shift, float* out) const {
    CUDA_CHECK(cudaMemcpy(out, d_tiled_.data() + shift % distinct_ * floats_per_signal_,
                          signals_ * floats_per_signal_ * sizeof(float), cudaMemcpyDeviceToHost));
  }

 private:
  std::size_t floats_per_signal_, distinct_, signals_;
  kit::DeviceBuffer<float> d_tiled_;
};

// ---------------------------------------------------------------------------
// The CPU reference

inline double hann(std::size_t j, int n) {
  const double s = std::sin(M_PI * static_cast<double>(j) / n);
  return s * s;
}

// Windowed forward DFT of one signal in double precision: an iterative radix-2
// FFT, so the reference costs O(n log n) per signal. Its own rounding error
// (about log2(n) * 1e-16 relative) is negligible next to float's.
class CpuSpectrum {
 public:
  explicit CpuSpectrum(int n) : n_(n), re_(n), im_(n), window_(n), twiddle_re_(n / 2 + 1), twiddle_im_(n / 2 + 1), bit_reversed_(n) {
    int bits = 0;
    while ((1 << bits) < n) ++bits;
    for (int j = 0; j < n; ++j) {
      window_[j] = hann(static_cast<std::size_t>(j), n);
      int reversed = 0;
      for (int b = 0; b < bits; ++b) reversed |= ((j >> b) & 1) << (bits - 1 - b);
      bit_reversed_[j] = reversed;
    }
    for (int m = 0; m <= n / 2; ++m) {  // exp(-2 pi i m / n)
      twiddle_re_[m] = std::cos(2.0 * M_PI * m / n);
      twiddle_im_[m] = -std::sin(2.0 * M_PI * m / n);
    }
  }

  // out[2k], out[2k+1] = re, im of sum_j w_j x_j exp(-2 pi i j k / n), where x
  // is `in` as (re, im) float pairs. Returns the 2-norm of x.
  double transform(const float* in, double* out) {
    double norm2 = 0.0;
    for (int j = 0; j < n_; ++j) {
      const double x_re = in[2 * j], x_im = in[2 * j + 1];
      norm2 += x_re * x_re + x_im * x_im;
      re_[bit_reversed_[j]] = window_[j] * x_re;
      im_[bit_reversed_[j]] = window_[j] * x_im;
    }
    for (int length = 2; length <= n_; length *= 2) {
      const int half = length / 2, stride = n_ / length;
      for (int start = 0; start < n_; start += length) {
        for (int k = 0; k < half; ++k) {
          const double w_re = twiddle_re_[k * stride], w_im = twiddle_im_[k * stride];
          const int a = start + k, b = a + half;
          const double v_re = re_[b] * w_re - im_[b] * w_im;
          const double v_im = re_[b] * w_im + im_[b] * w_re;
          re_[b] = re_[a] - v_re;
          im_[b] = im_[a] - v_im;
          re_[a] += v_re;
          im_[a] += v_im;
        }
      }
    }
    for (int k = 0; k < n_; ++k) {
      out[2 * k] = re_[k];
      out[2 * k + 1] = im_[k];
    }
    return std::sqrt(norm2);
  }

 private:
  int n_;
  std::vector<double> re_, im_, window_, twiddle_re_, twiddle_im_;
  std::vector<int> bit_reversed_;
};

// How far a single-precision result may be from the exact spectrum of a signal
// x of n samples (the arithmetic is explained beside the parameters in lab.toml):
//   sqrt(n) * ||x||_2 * (fft_error_factor * log2(n) * eps + window_error)
inline double allowed_error(double signal_norm, int n) {
  const double log2n = std::max(1.0, std::log2(static_cast<double>(n)));
  return std::sqrt(static_cast<double>(n)) * signal_norm *
         (kit::param_double("fft_error_factor") * log2n * kFloatEpsilon + kit::param_double("window_error"));
}

// The expected output of signals [first, first + count) of `input`, as floats
// (re, im) in double, and the error allowed in each of those signals.
struct Expected {
  std::vector<double> values;
  std::vector<double> allowed;  // per signal
};

// Below this many samples a thread of its own costs more than it saves: a 1024-point transform takes tens of
// microseconds, a thread's start a few.
constexpr double kSamplesPerThread = 1 << 18;

// The signals are shared out over the cores, each thread with a transform of its own: the budget tests run
// alone on the GPU, which the whole class waits for, while this computes the spectra of ten thousand signals.
inline Expected expected_spectra(const std::vector<float>& input, std::size_t first, std::size_t count, int n) {
  const std::size_t floats_per_signal = 2 * static_cast<std::size_t>(n);
  Expected expected{std::vector<double>(count * floats_per_signal), std::vector<double>(count)};
  const double error_per_norm = allowed_error(1.0, n);  // the allowed error is proportional to the signal's norm
  const std::size_t threads = kit::threads_for(static_cast<double>(count) * n, kSamplesPerThread, count);
  kit::on_threads(threads, [&](std::size_t t) {
    CpuSpectrum spectrum(n);
    for (std::size_t s = kit::part_begin(count, threads, t), end = kit::part_begin(count, threads, t + 1); s < end;
         ++s)
      expected.allowed[s] = error_per_norm * spectrum.transform(input.data() + (first + s) * floats_per_signal,
                                                                expected.values.data() + s * floats_per_signal);
  });
  return expected;
}

// A timed call's output against the CPU reference, on whole signals: the first, the last and
// timing_check_signals more at places drawn from the operating system's entropy after the call
// (kit::sample_positions, which says why a sample is enough beside the poison check of every
// sample), each compared sample by sample. Comparing the whole gigabyte took seconds of one core
// after each checked call, while the whole class waited for the GPU. `base` holds the reference
// of the base signals; output signal s is that of base signal (s + shift) % their count. Stops at
// the first wrong signal (its report says enough); returns whether all were right.
inline bool expect_sampled_spectra(const float* got, std::size_t signals, std::size_t shift, const Expected& base,
                                   int n, const std::string& input) {
  const std::size_t floats_per_signal = 2 * static_cast<std::size_t>(n);
  std::vector<std::size_t> chosen =
      kit::sample_positions(signals, static_cast<std::size_t>(kit::param_int("timing_check_signals")));
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  std::vector<std::size_t> positions(floats_per_signal);  // the signal's floats, numbered in the whole output
  for (const std::size_t signal : chosen) {
    const std::size_t source = (signal + shift) % base.allowed.size();
    const auto expected = base.values.begin() + static_cast<std::ptrdiff_t>(source * floats_per_signal);
    const float* values = got + signal * floats_per_signal;
    std::iota(positions.begin(), positions.end(), signal * floats_per_signal);
    if (!kit::expect_close_at(
            std::vector<float>(values, values + floats_per_signal),
            std::vector<double>(expected, expected + static_cast<std::ptrdiff_t>(floats_per_signal)), positions,
            signals * floats_per_signal, kit::Tolerance{0.0, base.allowed[source]},
            {input + "; signal " + std::to_string(signal) + ", one of " + std::to_string(chosen.size()) +
                 " compared in full (the first, the last and others drawn at random after the call)",
             kLookAtPipeline, floats_per_signal}))
      return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Resources, released however a test ends

// Host memory from the student's allocate_host_samples, freed with free_host_samples.
class HostSamples {
 public:
  explicit HostSamples(std::size_t count) : count_(count), data_(allocate_host_samples(count)) {
    REQUIRE_MESSAGE(data_ != nullptr, "allocate_host_samples(" << count << ") returned nullptr; the pipeline tests "
                                      "keep their data in memory from it (write Part 2 first)");
  }
  ~HostSamples() {
    try {
      free_host_samples(data_);
    } catch (const std::exception& error) {
      FAIL_CHECK("free_host_samples failed on memory from allocate_host_samples: " << error.what());
    }
  }
  HostSamples(const HostSamples&) = delete;
  HostSamples& operator=(const HostSamples&) = delete;

  cufftComplex* data() { return data_; }
  float* floats() { return reinterpret_cast<float*>(data_); }
  std::size_t size() const { return count_; }

 private:
  std::size_t count_;
  cufftComplex* data_;
};

// Whether the runtime knows `host` as page-locked memory. For memory from allocate_host_samples, the
// test's view of it is page-locked exactly when your code's process found yours to be (the mirror
// both processes map is registered in both then: grader/calls.py), so this is observed in that process.
inline bool is_page_locked(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    cudaGetLastError();  // clear it: pageable memory is a fact to report, not an error
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

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

inline PipelineHandle make_pipeline(const PipelineSetup& setup) {
  PipelineHandle pipeline(create_pipeline(setup));
  REQUIRE_MESSAGE(pipeline != nullptr, "create_pipeline returned nullptr (write Part 3: it must return a Pipeline)");
  return pipeline;
}

inline PipelineSetup setup_for(int n, int streams, std::size_t budget_bytes) {
  PipelineSetup setup;
  setup.signal_length = n;
  setup.streams = streams;
  setup.budget_bytes = budget_bytes;
  return setup;
}

inline std::string describe(const PipelineSetup& setup) {
  return "signals of " + std::to_string(setup.signal_length) + " samples, " + std::to_string(setup.streams) +
         " streams, a budget of " + std::to_string(setup.budget_bytes / 1024) + " KiB";
}

// ---------------------------------------------------------------------------
// Part 1: the window kernel on device memory, with a poisoned guard zone after it.

inline std::size_t guard_samples() { return static_cast<std::size_t>(kit::param_int("guard_samples")); }

// `guard` poisoned samples follow the signals; 0 gives a buffer of exactly the signals,
// for compute-sanitizer, whose memcheck sees an access past the end only where nothing
// is allocated.
inline void check_window(std::size_t signals, int n, const std::string& input, std::size_t guard = guard_samples()) {
  const std::size_t floats = 2 * signals * static_cast<std::size_t>(n);
  const std::vector<float> host = make_signals(signals, n);
  kit::GuardedBuffer<float> d_signals(host, 2 * guard);
  {
    kit::Stream stream;
    launch_apply_window(reinterpret_cast<cufftComplex*>(d_signals.data()), signals, n, stream.get());
    kit::remote::synchronize(stream.get());  // the kernel runs in your code's process, on its copy of the stream
  }
  kit::remote::synchronize_device();
  const std::vector<float> got = d_signals.download();

  // One float product w * x, with w within window_error of the exact weight:
  // |error| <= (window_error + eps) * |x|.
  std::vector<double> expected(floats);
  for (std::size_t i = 0; i < floats; ++i) expected[i] = hann((i / 2) % n, n) * host[i];
  const double per_unit = kit::param_double("window_error") + kFloatEpsilon;
  if (std::equal(got.begin(), got.end(), host.begin()))
    FAIL_CHECK("For input: " << input << ", every sample is exactly as it was: the window was never applied. Is "
                                         "apply_window_kernel launched, and does it write its result back?\nLook at: "
                             << kLookAtWindow);
  kit::expect_within(got, expected, [&](std::size_t i) { return per_unit * std::fabs(host[i]); },
                     {input, kLookAtWindow + " (in the listing, index 2i and 2i+1 are the real and imaginary parts "
                                             "of sample i)"});
  d_signals.expect_guard_untouched({input, kLookAtWindow + ": the bounds check"});
}

// ---------------------------------------------------------------------------
// Part 3: one dataset through a pipeline.
//
// Input and output live in memory from allocate_host_samples, each with a guard
// zone after it as large as the whole budget (no chunk can be larger), poisoned.
// check() runs the pipeline and checks, in this order: that the last signal
// was already written when run_pipeline returned; every output sample against
// the CPU reference; that nothing was written past the output.

inline std::string signals_text(std::size_t signals) {
  return std::to_string(signals) + (signals == 1 ? " signal" : " signals");
}

class Dataset {
 public:
  Dataset(const PipelineSetup& setup, std::size_t signals, const std::string& stream = "signals")
      : setup_(setup),
        signals_(signals),
        samples_(signals * static_cast<std::size_t>(setup.signal_length)),
        guard_(std::max<std::size_t>(setup.budget_bytes / sizeof(cufftComplex), setup.signal_length)),
        in_(make_signals(signals, setup.signal_length, stream)),
        h_in_(samples_ + guard_),
        h_out_(samples_ + guard_) {
    std::memcpy(h_in_.floats(), in_.data(), in_.size() * sizeof(float));
    std::memset(h_in_.floats() + 2 * samples_, kit::poison_byte<float>(), guard_ * sizeof(cufftComplex));
  }

  void check(Pipeline* pipeline, const std::string& input) {
    const int n = setup_.signal_length;
    const std::size_t floats_per_signal = 2 * static_cast<std::size_t>(n);
    const std::size_t floats = 2 * samples_;
    float* out = h_out_.floats();
    std::memset(out, kit::poison_byte<float>(), h_out_.size() * sizeof(cufftComplex));

    run_pipeline(pipeline, h_in_.data(), h_out_.data(), signals_);
    // The caller may read the moment run_pipeline returns. The last signal is
    // the last to arrive: look at it before anything else.
    const std::vector<float> last_at_return(out + floats - floats_per_signal, out + floats);
    kit::remote::synchronize_device();  // so that what follows tells a late result from a wrong one

    const std::vector<float> got(out, out + floats), past_end(out + floats, out + 2 * h_out_.size());
    const Expected expected = expected_spectra(in_, 0, signals_, n);
    const bool right = kit::expect_within(
        got, expected.values, [&](std::size_t i) { return expected.allowed[i / floats_per_signal]; },
        {input, kLookAtPipeline, floats_per_signal});
    kit::expect_guard_untouched(past_end, floats, {input, kLookAtGuard});

    const bool late =
        std::any_of(last_at_return.begin(), last_at_return.end(), [](float v) { return kit::is_poison(v); });
    if (late && right)
      FAIL_CHECK("The output for input: " << input << " (" << kit::seed_text()
                                          << ") was right in the end, but its last signal still held the poison "
                                             "when run_pipeline returned: the results arrived after the call "
                                             "had returned.\nLook at: "
                                          << kLookAtWait);
    else if (late)
      FAIL_CHECK("Also, for input: " << input << ", the last signal still held the poison when run_pipeline "
                                     "returned.\nLook at: " << kLookAtWait);
  }

 private:
  PipelineSetup setup_;
  std::size_t signals_, samples_, guard_;
  std::vector<float> in_;
  HostSamples h_in_, h_out_;
};

inline void check_dataset(Pipeline* pipeline, const PipelineSetup& setup, std::size_t signals, const std::string& input,
                          const std::string& stream = "signals") {
  Dataset dataset(setup, signals, stream);
  dataset.check(pipeline, input);
}

// A fresh pipeline for one dataset.
inline void check_pipeline(const PipelineSetup& setup, std::size_t signals, const std::string& input) {
  PipelineHandle pipeline = make_pipeline(setup);
  check_dataset(pipeline.get(), setup, signals, input + "; " + describe(setup));
}

// ---------------------------------------------------------------------------
// The device-memory budget: what the pipeline holds, as cudaMemGetInfo sees it.

// cudaMemGetInfo counts the whole device, so the test sees what your code's process holds.
inline std::size_t device_bytes_free() {
  std::size_t free_bytes = 0, total_bytes = 0;
  kit::remote::synchronize_device();
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

// Runs a dataset through a fresh pipeline, checks it, and checks that the
// device memory the pipeline held after create_pipeline and after run_pipeline
// stayed within the budget (plus budget_slack_mib for what cuFFT keeps per plan
// and the allocator's rounding to whole pages).
inline void check_budget(const PipelineSetup& setup, std::size_t signals, const std::string& input) {
  {
    // A first, small run loads the kernels (lazily, into device memory) of the
    // window and of cuFFT, so that the measurement below counts only the pipeline.
    PipelineHandle warm = make_pipeline(setup);
    check_dataset(warm.get(), setup, 3, "a warm-up run of 3 signals; " + describe(setup), "warm-up");
  }
  Dataset dataset(setup, signals);  // host memory first: mapping it for the GPU is not the pipeline's
  const std::size_t before = device_bytes_free();
  PipelineHandle pipeline = make_pipeline(setup);
  const std::size_t after_create = device_bytes_free();
  dataset.check(pipeline.get(), input + "; " + describe(setup));
  const std::size_t after_run = device_bytes_free();

  const std::size_t lowest = std::min(after_create, after_run);
  const std::size_t held = before > lowest ? before - lowest : 0;
  const std::size_t slack = static_cast<std::size_t>(kit::param_int("budget_slack_mib")) * kMiB;
  CHECK_MESSAGE(held <= setup.budget_bytes + slack,
                "For input: " << input << ", the pipeline held " << held / kMiB << " MiB of device memory; the budget is "
                              << setup.budget_bytes / kMiB << " MiB (the test allows " << slack / kMiB
                              << " MiB more for cuFFT's own plan data and the allocator's rounding).\nLook at: "
                              << kLookAtBudget);
}

}  // namespace streams_checks
