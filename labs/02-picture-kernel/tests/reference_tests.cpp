// The lab's CPU reference (picture_reference.hpp), checked without a GPU. Most tests compare with
// whole pictures (gray, box_blur: a summed-area table); the timed calls, at sampled pixels, with
// pixels made on their own from input bytes made again one at a time (gray_pixel, box_blur_pixel:
// the window added up). Both ways must give the same pixels, or a timing case would fail a
// correct kernel, or pass a wrong one, that the other tests judge the other way.
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "picture_checks.cuh"

using namespace picture_checks;

TEST_CASE("picture reference: a pixel made on its own equals that pixel of the whole picture" * KIT_CPU_ONLY) {
  std::vector<Size> sizes = kit::picture_sizes("line_sizes");
  sizes.push_back(kit::picture_size("blur_small_size"));
  std::vector<int> radii = {0};
  for (const auto& list : {"blur_radii", "blur_past_radii"})
    for (const int radius : kit::param_int_list(list)) radii.push_back(radius);

  for (const Size& size : sizes) {
    const std::size_t n = size.pixels();
    const auto width = static_cast<std::size_t>(size.width);
    const StreamBytes colours{kit::Rng::for_case("colours " + size.text()), 0, 255};
    const Bytes gray = picture_reference::gray(colours.rng.uniform_bytes(3 * n, colours.low, colours.high));
    Bytes gray_by_pixel(n);
    for (std::size_t p = 0; p < n; ++p) gray_by_pixel[p] = picture_reference::gray_pixel(colours, p);
    if (!kit::expect_equal(gray_by_pixel, gray, {size.describe() + ": gray_pixel against gray", "", width})) return;

    const StreamBytes picture{kit::Rng::for_case("gray " + size.text()), 0, 255};
    const Bytes in = picture.rng.uniform_bytes(n, picture.low, picture.high);
    for (const int radius : radii) {
      const Bytes blurred = picture_reference::box_blur(in, size.width, size.height, radius);
      Bytes blurred_by_pixel(n);
      for (std::size_t p = 0; p < n; ++p)
        blurred_by_pixel[p] =
            picture_reference::box_blur_pixel(picture, size.width, size.height, radius, p % width, p / width);
      const std::string input =
          size.describe() + ", radius " + std::to_string(radius) + ": box_blur_pixel against box_blur";
      if (!kit::expect_equal(blurred_by_pixel, blurred, {input, "", width})) return;
    }
  }
}
