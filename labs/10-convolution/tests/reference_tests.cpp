// The lab's CPU reference (convolution_reference.hpp), checked without a GPU against results
// worked out by hand: the GPU tests are only as good as what they compare with.
#include <vector>

#include "convolution_reference.hpp"
#include "kit/kit.cuh"

TEST_CASE("convolution reference: small pictures worked out by hand" * KIT_CPU_ONLY) {
  using namespace convolution_reference;

  // A 3 x 2 picture and a radius-1 filter with distinct weights:
  //   in = 1 2 3     filter = 0 1 0     (row dy = -1)
  //        4 5 6              2 3 4     (row dy =  0)
  //                           0 5 0     (row dy = +1)
  // out(x, y) = sum of filter(dx, dy) in(x + dx, y + dy), 0 outside; e.g. out(0, 0) =
  // 3 * 1 + 4 * 2 + 5 * 4 = 31 (the pixels above and to the left are outside).
  const std::vector<float> in = {1, 2, 3, 4, 5, 6};
  const std::vector<float> filter = {0, 1, 0, 2, 3, 4, 0, 5, 0};
  const Expected all = convolve(in, 3, 2, filter, 1);
  CHECK(all.value == std::vector<double>{31, 45, 43, 33, 49, 31});
  CHECK(all.magnitude == all.value);  // every product is positive
  const Expected second_row = convolve_rows(in, 3, 2, filter, 1, {1});
  CHECK(second_row.value == std::vector<double>{33, 49, 31});

  // Radius 0 scales; a negative weight makes the magnitude differ from the value.
  const Expected scaled = convolve(in, 3, 2, {-2.0f}, 0);
  CHECK(scaled.value == std::vector<double>{-2, -4, -6, -8, -10, -12});
  CHECK(scaled.magnitude == std::vector<double>{2, 4, 6, 8, 10, 12});

  // One weight of 1 at tap (dx, dy) = (1, -1): out(x, y) = in(x + 1, y - 1), 0 outside.
  const std::vector<float> shift = {0, 0, 1, 0, 0, 0, 0, 0, 0};
  CHECK(convolve(in, 3, 2, shift, 1).value == std::vector<double>{0, 0, 0, 2, 3, 0});

  // A filter larger than the picture: every output sums the whole picture with the weights
  // that fall on it. A 1 x 1 picture with a radius-2 filter takes the centre weight only.
  std::vector<float> wide(25, 7.0f);
  wide[12] = 0.5f;
  CHECK(convolve({3.0f}, 1, 1, wide, 2).value == std::vector<double>{1.5});

  CHECK_THROWS_AS(convolve(in, 3, 2, {1.0f, 2.0f}, 1), std::invalid_argument);      // not (2r + 1)^2 weights
  CHECK_THROWS_AS(convolve_rows(in, 3, 2, filter, 1, {2}), std::invalid_argument);  // a row past the last

  // The rows a timing check makes: only those the listed rows' windows read, with the pixels
  // pixel(i) gives, and the same result as from the whole picture.
  const PictureRows made(3, 2, 1, {1}, [&](std::size_t i) { return in[i]; });
  CHECK(made.row(0)[2] == 3.0f);
  CHECK(made.row(1)[0] == 4.0f);
  CHECK(convolve_rows(made, filter, 1, {1}).value == second_row.value);
  const PictureRows first_only(3, 5, 1, {0}, [](std::size_t i) { return static_cast<float>(i); });
  CHECK_THROWS_AS(first_only.row(2), std::out_of_range);                             // not in a window
  CHECK_THROWS_AS(convolve_rows(first_only, filter, 1, {0, 3}), std::out_of_range);  // row 3 reads 2 to 4
  CHECK_THROWS_AS(PictureRows(3, 2, 1, {5}, [](std::size_t) { return 0.0f; }), std::invalid_argument);

  // On every core for a large picture: the same rows, in the same places, bit for bit, as one
  // row at a time (the sum runs in the same order whichever thread computes it).
  {
    const int width = 300, height = 97, radius = 7, side = 2 * radius + 1;
    std::vector<float> picture(static_cast<std::size_t>(width) * height), weights(side * side);
    for (std::size_t i = 0; i < picture.size(); ++i) picture[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
    const Expected whole = convolve(picture, width, height, weights, radius);
    const std::vector<int> rows = {0, 6, 7, 48, 89, 96};
    const PictureRows windows(width, height, radius, rows, [&](std::size_t i) { return picture[i]; });
    const Expected some = convolve_rows(windows, weights, radius, rows);
    bool same = true;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const Expected one = convolve_rows(picture, width, height, weights, radius, {rows[r]});
      for (int x = 0; x < width; ++x) {
        const std::size_t at = static_cast<std::size_t>(rows[r]) * width + x, in_some = r * width + x;
        same = same && whole.value[at] == one.value[x] && whole.magnitude[at] == one.magnitude[x] &&
               some.value[in_some] == one.value[x] && some.magnitude[in_some] == one.magnitude[x];
      }
    }
    CHECK(same);
  }

  // The rounding bound: γ_1 = u / (1 - u), and it grows with the number of terms.
  CHECK(float_sum_gamma(1) == doctest::Approx(0x1.0p-24).epsilon(1e-6));
  CHECK(float_sum_gamma(225) > 225 * 0x1.0p-24);

  // FFT sizes: the next number with no prime factor above 7.
  CHECK(next_fft_size(1) == 1);
  CHECK(next_fft_size(7) == 7);
  CHECK(next_fft_size(11) == 12);
  CHECK(next_fft_size(13) == 14);
  CHECK(next_fft_size(4097) == 4116);  // 2^2 * 3 * 7^3
  CHECK(next_fft_size(8199) == 8232);  // 2^3 * 3 * 7^3: the timing picture, 8192 + radius 7
}
