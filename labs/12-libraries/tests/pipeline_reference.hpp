// Lab 12 CPU reference, in double: the Fourier transform, the filtered
// channels, the beams, their RMS and the normalized beams, each with the error
// a correct single-precision computation may make in it. Plain C++: no GPU,
// no test framework. The error model's constants come from lab.toml, where the
// arithmetic behind them is written out.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <vector>

#include "kit/matmul_reference.hpp"  // kit::float_dot_gamma

namespace pipeline_reference {

using Complex = std::complex<double>;
constexpr double kUnitRoundoff = 0x1.0p-24;  // of float: half an ulp at 1

// The discrete Fourier transform of any length n:
//     out[k] = sum_j a[j] exp(sign * 2 pi i j k / n),  sign = -1 (forward) or +1 (inverse, unnormalized).
// Mixed radix, decimation in time: each level splits off the smallest prime
// factor p of the length and combines p transforms of a p-th of it, so a
// transform costs O(n * sum of n's prime factors). The roots of unity come
// straight from cos and sin. In double (the reference) the result is accurate
// to about log2(n) * 1e-16 relative: far below float's rounding, which is what
// is tested. In float it is one correct single-precision FFT among many, which
// the CPU tests run through the error bounds.
template <class Real>
class BasicFft {
 public:
  using Value = std::complex<Real>;

  explicit BasicFft(int n) : n_(n), roots_(static_cast<std::size_t>(n)) {
    for (int t = 0; t < n; ++t) roots_[t] = Value(std::polar(1.0, -2.0 * M_PI * t / n));
  }
  int size() const { return n_; }

  void transform(std::vector<Value>& a, int sign) const {
    const std::vector<Value> in = a;
    recurse(in.data(), 1, a.data(), n_, 1, sign);
  }

 private:
  // out[k] = sum_j in[j * stride] w^(jk), k < len, with w = exp(sign 2 pi i / len) = root(step).
  void recurse(const Value* in, std::size_t stride, Value* out, int len, int step, int sign) const {
    if (len == 1) {
      out[0] = in[0];
      return;
    }
    int p = 2;
    while (len % p != 0 && p * p <= len) ++p;
    if (len % p != 0) p = len;  // len is prime
    const int m = len / p;
    for (int r = 0; r < p; ++r)
      recurse(in + r * stride, stride * p, out + static_cast<std::size_t>(r) * m, m, step * p, sign);
    // out[r*m + k] now holds sub-transform r at k; output k + q*m is
    // sum_r w^(r (k + q m)) times it.
    std::vector<Value> column(static_cast<std::size_t>(p));
    for (int k = 0; k < m; ++k) {
      for (int r = 0; r < p; ++r) column[r] = out[static_cast<std::size_t>(r) * m + k];
      for (int q = 0; q < p; ++q) {
        const long long index = k + static_cast<long long>(q) * m;
        Value sum = 0;
        for (int r = 0; r < p; ++r) sum += column[r] * root((r * index % len) * step, sign);
        out[index] = sum;
      }
    }
  }
  Value root(long long t, int sign) const { return sign < 0 ? roots_[t] : std::conj(roots_[t]); }

  int n_;
  std::vector<Value> roots_;  // exp(-2 pi i t / n)
};

using Fft = BasicFft<double>;

// The same transform straight from its definition, O(n^2): the FFT's own check.
inline std::vector<Complex> direct_dft(const std::vector<Complex>& a, int sign) {
  const std::size_t n = a.size();
  std::vector<Complex> out(n);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t j = 0; j < n; ++j)
      out[k] += a[j] * std::polar(1.0, sign * 2.0 * M_PI * static_cast<double>(j * k % n) / n);
  return out;
}

// One channel through the filter: y = (1/n) IDFT(H . DFT(x)), where H holds
// the n/2 + 1 bins of a real filter (H[0] and, for even n, H[n/2] real). The
// product's other bins are the complex conjugates of their mirror images, as
// in the spectrum of any real signal, so the inverse is real: what cuFFT's
// complex-to-real transform computes from the n/2 + 1 bins it is given.
inline std::vector<double> filter_channel(const float* x, const std::vector<Complex>& response, const Fft& fft) {
  const int n = fft.size();
  std::vector<Complex> spectrum(x, x + n);
  fft.transform(spectrum, -1);
  std::vector<Complex> filtered(static_cast<std::size_t>(n));
  for (int k = 0; k <= n / 2; ++k) filtered[k] = response[k] * spectrum[k];
  for (int k = n / 2 + 1; k < n; ++k) filtered[k] = std::conj(filtered[n - k]);
  fft.transform(filtered, +1);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) y[j] = filtered[j].real() / n;
  return y;
}

// The constants of the error bounds (lab.toml: fft_error_factor,
// multiply_error_units, normalize_error_units).
struct ErrorModel {
  double fft_factor = 8.0;       // a float FFT of length n is within fft_factor log2(n) u of the exact one (2-norm)
  double multiply_units = 5.0;   // a bin times the response and the scale: within multiply_units u (modulus)
  double normalize_units = 4.0;  // the division, square root and final rounding of the RMS and of each sample
};

// One beam of n samples: its exact values b (double) and how far a float
// computation of each may be from it, then the RMS and the normalized beam,
// with their bounds (lab.toml derives them). A beam that is exactly zero,
// with no error, must come out as zeros.
struct Normalized {
  std::vector<double> values, allowed;  // b / rms, n samples
  double rms = 0.0, rms_allowed = 0.0;
};

inline Normalized normalize(const double* b, const double* error, int n, const ErrorModel& model) {
  double sum_of_squares = 0.0, error_squares = 0.0;
  for (int t = 0; t < n; ++t) {
    sum_of_squares += b[t] * b[t];
    error_squares += error[t] * error[t];
  }
  Normalized out{std::vector<double>(static_cast<std::size_t>(n)), std::vector<double>(static_cast<std::size_t>(n))};
  out.rms = std::sqrt(sum_of_squares / n);
  const double rms_moved = std::sqrt(error_squares / n);  // |rms(b') - rms(b)| <= ||b' - b||_2 / sqrt(n)
  const double arithmetic = kit::float_dot_gamma(n) + model.normalize_units * kUnitRoundoff;
  out.rms_allowed = rms_moved + arithmetic * (out.rms + rms_moved);
  const double unbounded = std::numeric_limits<double>::infinity();
  for (int t = 0; t < n; ++t) {
    if (out.rms == 0.0) {
      out.allowed[t] = rms_moved == 0.0 ? 0.0 : unbounded;  // an exact zero beam stays zero
    } else if (out.rms_allowed >= out.rms) {
      out.values[t] = b[t] / out.rms;
      out.allowed[t] = unbounded;  // the RMS is not known to any digit: nothing to check
    } else {
      out.values[t] = b[t] / out.rms;
      const double moved = (error[t] + std::fabs(out.values[t]) * out.rms_allowed) / (out.rms - out.rms_allowed);
      out.allowed[t] = moved + model.normalize_units * kUnitRoundoff * (std::fabs(out.values[t]) + moved);
    }
  }
  return out;
}

// A frame: C channels of n samples, M x C weights, the n/2 + 1 bins of the
// response. What run_pipeline must write for it: M normalized beams and their
// RMS, each value with its allowed error.
struct FrameExpected {
  std::vector<double> beams, beams_allowed;  // M x n
  std::vector<double> rms, rms_allowed;      // M
};

inline FrameExpected expect_frame(const float* frame, int channels, const std::vector<float>& weights, int beams,
                                  const std::vector<Complex>& response, const Fft& fft, const ErrorModel& model) {
  const int n = fft.size();
  const std::size_t samples = static_cast<std::size_t>(n);
  double response_max = 0.0;
  for (int k = 0; k <= n / 2; ++k) response_max = std::max(response_max, std::abs(response[k]));
  const double fft_error = model.fft_factor * std::max(1.0, std::log2(static_cast<double>(n))) * kUnitRoundoff;
  const double multiply_error = model.multiply_units * kUnitRoundoff;

  // Each filtered channel, and the bound on any of its samples' error: the
  // whole error's 2-norm, |H|max ||x||_2 (3 fft_error + 2 multiply_error).
  std::vector<std::vector<double>> filtered;
  std::vector<double> channel_error;
  for (int c = 0; c < channels; ++c) {
    const float* x = frame + c * samples;
    double norm2 = 0.0;
    for (std::size_t t = 0; t < samples; ++t) norm2 += static_cast<double>(x[t]) * x[t];
    filtered.push_back(filter_channel(x, response, fft));
    channel_error.push_back(response_max * std::sqrt(norm2) * (3.0 * fft_error + 2.0 * multiply_error));
  }

  // Beams: a float dot product of C terms over the computed channels.
  const double dot_gamma = kit::float_dot_gamma(channels);
  FrameExpected expected;
  std::vector<double> beam(samples), error(samples);
  for (int m = 0; m < beams; ++m) {
    for (std::size_t t = 0; t < samples; ++t) {
      double value = 0.0, bound = 0.0;
      for (int c = 0; c < channels; ++c) {
        const double w = weights[static_cast<std::size_t>(m) * channels + c];
        value += w * filtered[c][t];
        bound += std::fabs(w) * (channel_error[c] + dot_gamma * (std::fabs(filtered[c][t]) + channel_error[c]));
      }
      beam[t] = value;
      error[t] = bound;
    }
    const Normalized normalized = normalize(beam.data(), error.data(), n, model);
    expected.beams.insert(expected.beams.end(), normalized.values.begin(), normalized.values.end());
    expected.beams_allowed.insert(expected.beams_allowed.end(), normalized.allowed.begin(), normalized.allowed.end());
    expected.rms.push_back(normalized.rms);
    expected.rms_allowed.push_back(normalized.rms_allowed);
  }
  return expected;
}

}  // namespace pipeline_reference
