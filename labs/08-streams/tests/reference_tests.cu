// The CPU reference's own check (streams_checks.cuh), run without a GPU: every GPU test trusts it.
#include <cmath>
#include <complex>
#include <vector>

#include "streams_checks.cuh"

using namespace streams_checks;

TEST_CASE("cpu reference: windowed spectra of many signals on several threads match the direct DFT" *
          KIT_CPU_ONLY) {
  // Enough 64-sample signals for several threads (kSamplesPerThread), read from an offset into the input, so
  // that a signal put in another's place, or a thread's part read from the wrong place, shows.
  constexpr int n = 64;
  constexpr std::size_t first = 7, count = 9001;
  const std::vector<float> input = make_signals(first + count, n, "reference signals");
  const Expected expected = expected_spectra(input, first, count, n);
  REQUIRE(expected.values.size() == count * 2 * n);
  REQUIRE(expected.allowed.size() == count);

  for (std::size_t s = 0; s < count; ++s) {
    const float* x = input.data() + (first + s) * 2 * n;
    double norm2 = 0.0;
    for (int j = 0; j < n; ++j) norm2 += double{x[2 * j]} * x[2 * j] + double{x[2 * j + 1]} * x[2 * j + 1];
    const double norm = std::sqrt(norm2);
    if (expected.allowed[s] != doctest::Approx(allowed_error(norm, n)).epsilon(1e-12)) {
      FAIL_CHECK("signal " << s << ": the reference allows an error of " << expected.allowed[s] << ", its norm "
                           << allowed_error(norm, n));
      return;
    }
    // The direct DFT in double: each bin a sum of n terms, so its error is a few n * 2^-53 of the sum of
    // |w_j x_j|, at most sqrt(n) * norm; 1e-12 of that leaves a factor of about 100 over it.
    for (int k = 0; k < n; ++k) {
      std::complex<double> bin = 0.0;
      for (int j = 0; j < n; ++j)
        bin += hann(static_cast<std::size_t>(j), n) * std::complex<double>(x[2 * j], x[2 * j + 1]) *
               std::polar(1.0, -2.0 * M_PI * static_cast<double>(j * k % n) / n);
      const double* got = expected.values.data() + (s * n + k) * 2;
      if (std::abs(std::complex<double>(got[0], got[1]) - bin) > 1e-12 * std::sqrt(double{n}) * norm) {
        FAIL_CHECK("signal " << s << ", bin " << k << ": the reference gives (" << got[0] << ", " << got[1]
                             << "), the direct DFT (" << bin.real() << ", " << bin.imag() << ")");
        return;
      }
    }
  }
}
