// The lab's CPU reference (scan_reference.hpp), checked without a GPU: the GPU tests are only as
// good as what they compare with. The sampled reference (one pass over an input made element by
// element, split over threads) must give, at every position it is asked for, exactly what the
// whole-array reference gives there.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "kit/kit.cuh"
#include "scan_reference.hpp"

using namespace scan_reference;

namespace {

// Both ends (each twice: positions may repeat), the first and last element of every part the
// input is split into for `threads` threads, and eighths of the way; ascending, as
// kit::sample_positions gives them.
std::vector<std::size_t> positions_in(std::size_t count, std::size_t threads) {
  std::vector<std::size_t> positions{0, 0, count - 1, count - 1};
  for (std::size_t t = 1; t < threads; ++t) {
    const std::size_t first = kit::part_begin(count, threads, t);
    if (first > 0 && first < count) positions.insert(positions.end(), {first - 1, first});
  }
  for (std::size_t step = 1; step < 8; ++step) positions.push_back(count * step / 8);
  std::sort(positions.begin(), positions.end());
  return positions;
}

}  // namespace

TEST_CASE("scan reference: prefixes made on several threads at sampled positions equal the whole scan's" *
          KIT_CPU_ONLY) {
  const kit::Rng rng(61);
  // 1, a prime, and a length not a multiple of any thread count below.
  for (const std::size_t count : {std::size_t{1}, std::size_t{1000003}, (std::size_t{3} << 20) + 7}) {
    const std::vector<int> ints = rng.uniform_ints(count, -100, 100);
    const std::vector<float> floats = rng.uniform_floats(count, -1.0f, 1.0f);
    for (const Kind kind : {Kind::Inclusive, Kind::Exclusive})
      for (const std::size_t threads : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{16}}) {
        const std::vector<std::size_t> positions = positions_in(count, threads);
        CAPTURE(count);
        CAPTURE(threads);
        const std::vector<int> int_whole = int_reference(ints, kind);
        const std::vector<int> int_sampled = scan_reference_at<IntSums, std::vector<int>>(
            count, [&](std::size_t i) { return rng.uniform_int_at(i, -100, 100); }, positions, kind, threads);
        const FloatReference float_whole = float_reference(floats, kind);
        const FloatReference float_sampled = scan_reference_at<FloatSums, FloatReference>(
            count, [&](std::size_t i) { return rng.uniform_float_at(i, -1.0f, 1.0f); }, positions, kind, threads);
        bool same = true;
        for (std::size_t k = 0; k < positions.size(); ++k) {
          const std::size_t p = positions[k];
          same = same && int_sampled[k] == int_whole[p] && float_sampled.sum[k] == float_whole.sum[p] &&
                 float_sampled.magnitude[k] == float_whole.magnitude[p];
        }
        CHECK(same);
      }
  }
}
