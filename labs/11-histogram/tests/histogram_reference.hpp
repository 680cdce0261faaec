// Lab 11 CPU reference, used by the tests. Plain C++: no GPU, no test framework.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace histogram_reference {

// Counts of the 256 byte values.
inline std::vector<unsigned> byte_counts(const std::uint8_t* data, std::size_t n) {
  std::vector<unsigned> counts(256, 0);
  for (std::size_t i = 0; i < n; ++i) ++counts[data[i]];
  return counts;
}

inline std::vector<unsigned> byte_counts(const std::vector<std::uint8_t>& data) {
  return byte_counts(data.data(), data.size());
}

// The bin of v, as histogram.cuh defines it, or -1 when v is not counted: floor((v - lo) / (hi
// - lo) * bins) for lo <= v < hi, no more than bins - 1. Computed in double as (v - lo) * bins
// / (hi - lo): for the tests' ranges v - lo, hi - lo and the product with bins (at most 4096)
// are exact, so only the division rounds. It moves a value by about 1e-16 of a bin's width, far
// less than the tests keep their values from the edges between bins, and a value exactly on an
// edge k stays on it (the exact quotient k is a double, so the division returns it).
inline int bin_of(float v, float lo, float hi, int bins) {
  if (!(v >= lo && v < hi)) return -1;  // below, at or above hi, infinite or NaN
  const double position = (static_cast<double>(v) - lo) * bins / (static_cast<double>(hi) - lo);
  const int bin = static_cast<int>(std::floor(position));
  return bin < bins ? bin : bins - 1;
}

inline std::vector<unsigned> float_counts(const std::vector<float>& values, float lo, float hi, int bins) {
  std::vector<unsigned> counts(static_cast<std::size_t>(bins), 0);
  for (const float v : values)
    if (const int bin = bin_of(v, lo, hi, bins); bin >= 0) ++counts[bin];
  return counts;
}

}  // namespace histogram_reference
