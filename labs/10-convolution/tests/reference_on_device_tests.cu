// The comparison on the GPU of every pixel (find_wrong_pixels) and of some (find_wrong_pixels_at,
// convolution_checks.cu), checked against the CPU reference (convolution_reference.hpp): the check
// of every timed call is only as good as they are.
#include <cstddef>
#include <numeric>
#include <vector>

#include "convolution_checks.cuh"

using namespace convolution_checks;

TEST_CASE(
    "convolution reference: every pixel compared on the GPU finds the CPU's convolution right and one wrong "
    "pixel wrong") {
  // The CPU's convolution rounded to float is within u = 2^-24 of each exact sum, so inside an
  // allowance of 2u times the magnitudes; a pixel moved by 1000 is far outside it (a window's
  // magnitudes stay below 225 here, so the allowance below 1).
  constexpr double kUnits = 0x1.0p-23;
  constexpr float kLow = 0.0f, kHigh = 1.0f;
  const kit::Rng picture(101);
  // One pixel, whose window lies mostly outside; windows wider than the picture; primes; every
  // radius the lab uses.
  for (const auto& shape :
       {std::pair{Size{1, 1}, 2}, std::pair{Size{3, 2}, 7}, std::pair{Size{37, 23}, 0}, std::pair{Size{37, 23}, 3},
        std::pair{Size{331, 211}, 2}, std::pair{Size{331, 211}, 7}}) {
    const Size size = shape.first;  // named copies, not structured bindings: CAPTURE's lambda takes them
    const int radius = shape.second;
    CAPTURE(size.text());
    CAPTURE(radius);
    const std::vector<float> filter = random_filter(radius);
    const convolution_reference::Expected expected = convolution_reference::convolve(
        picture.uniform_floats(size.pixels(), kLow, kHigh), size.width, size.height, filter, radius);
    std::vector<float> out(expected.value.begin(), expected.value.end());
    const std::size_t moved = out.size() / 2;
    const kit::DeviceBuffer<float> d_right(out);
    const kit::Found right = find_wrong_pixels(d_right.data(), picture, kLow, kHigh, size, filter, radius, kUnits);
    CHECK(right.count == 0);
    out[moved] += 1000.0f;
    const kit::DeviceBuffer<float> d_off(out);
    const kit::Found off = find_wrong_pixels(d_off.data(), picture, kLow, kHigh, size, filter, radius, kUnits);
    CHECK(off.count == 1);
    CHECK(off.first == moved);
    // Compared at some pixels only, as a timed call's output is: found where it is among them, and
    // not where it is not.
    const kit::Found among = find_wrong_pixels_at(d_off.data(), picture, kLow, kHigh, size, filter, radius, kUnits,
                                                  {moved});
    CHECK(among.count == 1);
    CHECK(among.first == moved);
    std::vector<std::size_t> others(out.size());
    std::iota(others.begin(), others.end(), std::size_t{0});
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(moved));
    CHECK(find_wrong_pixels_at(d_off.data(), picture, kLow, kHigh, size, filter, radius, kUnits, others).count == 0);
  }
}
