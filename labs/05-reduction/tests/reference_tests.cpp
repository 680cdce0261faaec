// The lab's CPU reference (reduction_reference.hpp), checked without a GPU: the GPU tests are
// only as good as what they compare with.
#include <cmath>
#include <cstddef>
#include <vector>

#include "kit/kit.cuh"
#include "reduction_reference.hpp"

using namespace reduction_reference;

namespace {

void check_same(const Expected& got, const Expected& want) {
  CHECK(got.sum == want.sum);
  CHECK(got.abs_sum == want.abs_sum);
  CHECK(got.integers == want.integers);
}

// Element i of rng.uniform_floats(count, low, high), made where it is needed.
auto uniform_float_elements(const kit::Rng& rng, float low, float high) {
  return [rng, low, high](std::size_t i) { return rng.uniform_float_at(i, low, high); };
}

}  // namespace

TEST_CASE("reduction reference: sums and whole numbers worked out by hand" * KIT_CPU_ONLY) {
  const Expected mixed = expected_sum(std::vector<float>{1.5f, -2.0f, 0.25f});
  CHECK(mixed.sum == -0.25);
  CHECK(mixed.abs_sum == 3.75);
  CHECK_FALSE(mixed.integers);
  CHECK_FALSE(exact_in_float(mixed));

  // Whole numbers whose magnitudes add up to at most 2^24: any order of float additions is exact.
  const Expected whole = expected_sum(std::vector<float>{3.0f, -2.0f, 5.0f});
  CHECK(whole.sum == 6.0);
  CHECK(whole.abs_sum == 10.0);
  CHECK(whole.integers);
  CHECK(exact_in_float(whole));

  // A whole number past 2^24, and NaN, are not counted as whole (nor converted to an integer).
  CHECK_FALSE(expected_sum(std::vector<float>{0x1.0p25f}).integers);
  const Expected nan = expected_sum(std::vector<float>{1.0f, std::nanf("")});
  CHECK(std::isnan(nan.sum));
  CHECK_FALSE(nan.integers);

  const Expected none = expected_sum(std::vector<float>{});
  CHECK(none.sum == 0.0);
  CHECK(exact_in_float(none));
}

// A large input's sum is split over the cores, each adding up its part. Split or not, the sums
// must be the same bits: the values are multiples of 2^-24 (2^-23 in [-1, 1)), so every sum in
// double is exact whatever the order. n is prime, a multiple of no thread count tried, so the
// parts differ in size.
TEST_CASE("reduction reference: a sum made element by element on several threads equals the sum of the whole input" *
          KIT_CPU_ONLY) {
  const kit::Rng rng = kit::Rng::for_case("x");
  constexpr std::size_t kPrime = 1000003;
  const Expected whole = expected_sum(rng.uniform_floats(kPrime, -1.0f, 1.0f));
  CHECK(whole.sum != whole.abs_sum);  // both signs, so the two sums are told apart
  for (const std::size_t threads : {1, 2, 3, 7, 16, 64}) {
    CAPTURE(threads);
    check_same(expected_sum(kPrime, uniform_float_elements(rng, -1.0f, 1.0f), threads), whole);
  }

  // More threads than elements: some parts are empty.
  check_same(expected_sum(5, uniform_float_elements(rng, -1.0f, 1.0f), 7),
             expected_sum(rng.uniform_floats(5, -1.0f, 1.0f)));

  // The timing's range, large enough for one thread per core (up to 3) and not a multiple of 2 or 3.
  const std::size_t n = 3 * kSumPerThread + 1;
  check_same(expected_sum(n, uniform_float_elements(rng, 0.0f, 1.0f)), expected_sum(rng.uniform_floats(n, 0.0f, 1.0f)));
}
