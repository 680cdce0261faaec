// The CPU reference's own checks (pipeline_reference.hpp), run without a GPU:
// every GPU test trusts it.
#include <cmath>
#include <complex>
#include <vector>

#include "kit/kit.cuh"
#include "pipeline_reference.hpp"

using namespace pipeline_reference;

namespace {

std::vector<Complex> random_signal(int n, const std::string& stream) {
  const std::vector<double> parts = kit::Rng::for_case(stream).uniform_doubles(2 * static_cast<std::size_t>(n), -1, 1);
  std::vector<Complex> signal;
  for (int j = 0; j < n; ++j) signal.emplace_back(parts[2 * j], parts[2 * j + 1]);
  return signal;
}

std::vector<float> random_floats(int n, const std::string& stream) {
  return kit::Rng::for_case(stream).uniform_floats(static_cast<std::size_t>(n), -1.0f, 1.0f);
}

// One frame through the pipeline in float, as the GPU may compute it: a float
// FFT, float complex products, float dot products and sums in order. `scale`
// is what the filter multiplies by (1/n is right); `bin_shift` > 0 takes each
// bin's response from a later bin (wrong).
struct FloatFrame {
  std::vector<float> beams, rms;
};

FloatFrame float_pipeline(const float* frame, int channels, const std::vector<float>& weights, int beams,
                          const std::vector<Complex>& response, int n, float scale, int bin_shift) {
  using Value = std::complex<float>;
  const BasicFft<float> fft(n);
  std::vector<std::vector<float>> filtered;
  for (int c = 0; c < channels; ++c) {
    std::vector<Value> spectrum(frame + c * n, frame + (c + 1) * n);
    fft.transform(spectrum, -1);
    std::vector<Value> full(static_cast<std::size_t>(n));
    for (int k = 0; k <= n / 2; ++k) full[k] = Value(response[std::min(k + bin_shift, n / 2)]) * spectrum[k] * scale;
    for (int k = n / 2 + 1; k < n; ++k) full[k] = std::conj(full[n - k]);
    fft.transform(full, +1);
    filtered.emplace_back();
    for (const Value& v : full) filtered.back().push_back(v.real());
  }
  FloatFrame out;
  for (int m = 0; m < beams; ++m) {
    std::vector<float> beam(static_cast<std::size_t>(n), 0.0f);
    float sum_of_squares = 0.0f;
    for (int t = 0; t < n; ++t) {
      for (int c = 0; c < channels; ++c) beam[t] += weights[m * channels + c] * filtered[c][t];
      sum_of_squares += beam[t] * beam[t];
    }
    const float rms = std::sqrt(sum_of_squares / n);
    for (float& v : beam) v = rms > 0.0f ? v / rms : 0.0f;
    out.beams.insert(out.beams.end(), beam.begin(), beam.end());
    out.rms.push_back(rms);
  }
  return out;
}

// How many values lie outside their allowed error, and the largest |error| / allowed.
struct Outside {
  std::size_t count = 0;
  double worst = 0.0;
};

Outside outside(const std::vector<float>& got, const std::vector<double>& expected,
                const std::vector<double>& allowed) {
  Outside result;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(got[i] - expected[i]);
    if (!(error <= allowed[i])) ++result.count;
    result.worst = std::max(result.worst, error / allowed[i]);
  }
  return result;
}

}  // namespace

TEST_CASE("cpu reference: the FFT agrees with the direct DFT at every length from 1 to 64 and at 1000" * KIT_CPU_ONLY) {
  std::vector<int> lengths;
  for (int n = 1; n <= 64; ++n) lengths.push_back(n);
  lengths.push_back(1000);
  for (const int n : lengths) {
    const std::vector<Complex> signal = random_signal(n, "signal " + std::to_string(n));
    double magnitude = 0.0;
    for (const Complex& v : signal) magnitude += std::abs(v);
    const Fft fft(n);
    for (const int sign : {-1, +1}) {
      std::vector<Complex> fast = signal;
      fft.transform(fast, sign);
      const std::vector<Complex> direct = direct_dft(signal, sign);
      double worst = 0.0;
      for (int k = 0; k < n; ++k) worst = std::max(worst, std::abs(fast[k] - direct[k]));
      // Both are sums of n terms in double, each within about n * 2^-53 * sum |x| of the exact value.
      CHECK_MESSAGE(worst <= 1e-12 * magnitude,
                    "length " << n << ", sign " << sign << ": the FFT and the direct DFT differ by " << worst);
    }
  }
}

TEST_CASE("cpu reference: an all-pass response keeps each channel and a one-sample delay rotates it" * KIT_CPU_ONLY) {
  for (const int n : {2, 3, 6, 7, 1000, 1024}) {
    const std::vector<float> x = random_floats(n, "x " + std::to_string(n));
    const Fft fft(n);
    const int bins = n / 2 + 1;
    const std::vector<double> kept = filter_channel(x.data(), std::vector<Complex>(bins, 1.0), fft);
    // Delay by one sample: H_k = exp(-2 pi i k / n), real (-1) at k = n/2 for even n.
    std::vector<Complex> delay;
    for (int k = 0; k < bins; ++k) delay.push_back(std::polar(1.0, -2.0 * M_PI * k / n));
    if (n % 2 == 0) delay[n / 2] = -1.0;
    const std::vector<double> delayed = filter_channel(x.data(), delay, fft);
    for (int t = 0; t < n; ++t) {
      CHECK_MESSAGE(std::fabs(kept[t] - x[t]) <= 1e-12, "n = " << n << ", sample " << t
                                                               << " through an all-pass "
                                                                  "response: "
                                                               << kept[t] << ", not " << x[t]);
      const float before = x[(t + n - 1) % n];
      CHECK_MESSAGE(std::fabs(delayed[t] - before) <= 1e-12,
                    "n = " << n << ", sample " << t << " delayed by one: " << delayed[t] << ", not " << before);
    }
  }
}

TEST_CASE("cpu reference: beams RMS and normalized beams of a worked example" * KIT_CPU_ONLY) {
  // Two channels of four samples, an all-pass response (y = x), beam 0 the sum
  // of the channels and beam 1 silent:
  //   x0 = [1, -1, 1, -1], x1 = [1, 1, 1, 1]  ->  b0 = [2, 0, 2, 0], rms = sqrt(8 / 4) = sqrt(2),
  //   normalized [sqrt(2), 0, sqrt(2), 0]; b1 = 0, rms 0, normalized zeros, exactly.
  const std::vector<float> frame = {1, -1, 1, -1, 1, 1, 1, 1};
  const std::vector<float> weights = {1, 1, 0, 0};
  const Fft fft(4);
  const ErrorModel model;
  const FrameExpected expected = expect_frame(frame.data(), 2, weights, 2, std::vector<Complex>(3, 1.0), fft, model);
  REQUIRE(expected.beams.size() == 8);
  REQUIRE(expected.rms.size() == 2);
  const double root2 = std::sqrt(2.0);
  const std::vector<double> beam0 = {root2, 0, root2, 0};
  for (int t = 0; t < 4; ++t) {
    CHECK(std::fabs(expected.beams[t] - beam0[t]) <= 1e-12);
    // Small (a few float roundings of numbers near 1) but not zero: float arithmetic made them.
    CHECK(expected.beams_allowed[t] > 0.0);
    CHECK(expected.beams_allowed[t] < 1e-4);
    CHECK(expected.beams[4 + t] == 0.0);
    CHECK(expected.beams_allowed[4 + t] == 0.0);  // a silent beam must come out as exact zeros
  }
  CHECK(std::fabs(expected.rms[0] - root2) <= 1e-12);
  CHECK(expected.rms_allowed[0] > 0.0);
  CHECK(expected.rms_allowed[0] < 1e-4);
  CHECK(expected.rms[1] == 0.0);
  CHECK(expected.rms_allowed[1] == 0.0);

  // normalize() alone on exact values: [3, 4] has RMS sqrt(25 / 2).
  const std::vector<double> beam = {3, 4}, no_error = {0, 0};
  const Normalized normalized = normalize(beam.data(), no_error.data(), 2, model);
  const double rms = std::sqrt(12.5);
  CHECK(std::fabs(normalized.rms - rms) <= 1e-12);
  CHECK(std::fabs(normalized.values[0] - 3 / rms) <= 1e-12);
  CHECK(std::fabs(normalized.values[1] - 4 / rms) <= 1e-12);
  // The RMS's rounding: gamma_2 + 4u relative, about 6 float units.
  CHECK(normalized.rms_allowed == doctest::Approx(rms * (kit::float_dot_gamma(2) + 4 * kUnitRoundoff)));
}

TEST_CASE("cpu reference: a float computation of the pipeline lies within the allowed errors and wrong ones do not" *
          KIT_CPU_ONLY) {
  const int channels = 8, beams = 3;
  for (const int n : {1000, 1024}) {
    CAPTURE(n);
    const std::vector<float> frame = random_floats(channels * n, "frame " + std::to_string(n));
    const std::vector<float> weights = random_floats(beams * channels, "weights " + std::to_string(n));
    const std::vector<float> parts = random_floats(2 * (n / 2 + 1), "response " + std::to_string(n));
    std::vector<Complex> response;
    for (int k = 0; k <= n / 2; ++k) response.emplace_back(0.7 * parts[2 * k], 0.7 * parts[2 * k + 1]);
    response[0] = response[0].real();
    response[n / 2] = response[n / 2].real();  // n is even here
    const ErrorModel model;
    const FrameExpected expected = expect_frame(frame.data(), channels, weights, beams, response, Fft(n), model);

    const FloatFrame right = float_pipeline(frame.data(), channels, weights, beams, response, n, 1.0f / n, 0);
    const Outside beams_right = outside(right.beams, expected.beams, expected.beams_allowed);
    const Outside rms_right = outside(right.rms, expected.rms, expected.rms_allowed);
    CHECK_MESSAGE(beams_right.count == 0, beams_right.count << " beam values of a correct float computation lie "
                                                               "outside the bounds (worst error "
                                                            << beams_right.worst << " x allowed)");
    CHECK_MESSAGE(rms_right.count == 0, rms_right.count << " RMS values of a correct float computation lie outside "
                                                           "the bounds (worst error "
                                                        << rms_right.worst << " x allowed)");

    const FloatFrame unscaled = float_pipeline(frame.data(), channels, weights, beams, response, n, 1.0f, 0);
    CHECK_MESSAGE(outside(unscaled.rms, expected.rms, expected.rms_allowed).count == beams,
                  "the bounds let an RMS without the inverse transform's 1/n pass");
    const FloatFrame shifted = float_pipeline(frame.data(), channels, weights, beams, response, n, 1.0f / n, 1);
    CHECK_MESSAGE(outside(shifted.beams, expected.beams, expected.beams_allowed).count > expected.beams.size() / 2,
                  "the bounds let most beam values computed with the neighbouring bins' response pass");
  }
}
