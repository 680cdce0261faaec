// The lab's CPU reference (histogram_reference.hpp), checked without a GPU against counts worked
// out by hand: the GPU tests are only as good as what they compare with.
#include <cmath>
#include <limits>
#include <vector>

#include "histogram_reference.hpp"
#include "kit/kit.cuh"

TEST_CASE("histogram reference: bins worked out by hand" * KIT_CPU_ONLY) {
  using namespace histogram_reference;

  const std::vector<unsigned> bytes = byte_counts(std::vector<std::uint8_t>{0, 255, 7, 255, 0, 0});
  CHECK(bytes.size() == 256);
  CHECK(bytes[0] == 3);
  CHECK(bytes[7] == 1);
  CHECK(bytes[255] == 2);
  CHECK(bytes[1] == 0);

  // [-1, 1) in 10 bins of 0.2: lo is in bin 0, 0 is the edge between bins 4 and 5 and belongs
  // to bin 5, the largest float below 1 to bin 9; 1, values below -1, infinities and NaN count
  // nowhere.
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(bin_of(-1.0f, -1.0f, 1.0f, 10) == 0);
  CHECK(bin_of(0.0f, -1.0f, 1.0f, 10) == 5);
  CHECK(bin_of(0.5f, -1.0f, 1.0f, 10) == 7);
  CHECK(bin_of(-0.95f, -1.0f, 1.0f, 10) == 0);
  CHECK(bin_of(std::nextafter(1.0f, 0.0f), -1.0f, 1.0f, 10) == 9);
  CHECK(bin_of(1.0f, -1.0f, 1.0f, 10) == -1);
  CHECK(bin_of(std::nextafter(-1.0f, -2.0f), -1.0f, 1.0f, 10) == -1);
  CHECK(bin_of(inf, -1.0f, 1.0f, 10) == -1);
  CHECK(bin_of(-inf, -1.0f, 1.0f, 10) == -1);
  CHECK(bin_of(std::nanf(""), -1.0f, 1.0f, 10) == -1);
  // One bin takes everything in the range.
  CHECK(bin_of(0.999f, 0.0f, 1.0f, 1) == 0);
  // A range that does not start at 0, and a bin count that is not a power of two: [2, 5) in 3
  // bins of 1.
  CHECK(bin_of(2.0f, 2.0f, 5.0f, 3) == 0);
  CHECK(bin_of(3.5f, 2.0f, 5.0f, 3) == 1);
  CHECK(bin_of(4.0f, 2.0f, 5.0f, 3) == 2);

  CHECK(float_counts({-1.0f, 0.0f, 0.05f, 1.0f, std::nanf(""), 0.99f}, -1.0f, 1.0f, 2) == std::vector<unsigned>{1, 3});
}

// The large correctness cases count on several threads, a range of indices each: the same counts
// as one pass, also where the length is not a multiple of the thread count (a shorter last range)
// or below it (empty ones).
TEST_CASE("histogram reference: counts made on several threads equal counts made in one pass" * KIT_CPU_ONLY) {
  using namespace histogram_reference;
  const kit::Rng rng = kit::Rng::for_case("bytes");
  for (const std::size_t n : {std::size_t{5}, std::size_t{100003}})  // 100003 = 7 x 14286 + 1 = 16 x 6250 + 3
    for (const unsigned threads : {1u, 7u, 16u}) {
      CAPTURE(n);
      CAPTURE(threads);
      const std::vector<std::uint8_t> bytes = rng.uniform_bytes(n, 0, 255);
      CHECK(byte_counts(bytes, threads) == byte_counts(bytes));
      // Values from a range wider than [lo, hi), so that some count nowhere.
      const std::vector<float> values = rng.uniform_floats(n, -1.5f, 1.5f);
      CHECK(float_counts(values, -1.0f, 1.0f, 10, threads) == float_counts(values, -1.0f, 1.0f, 10));
    }
}
