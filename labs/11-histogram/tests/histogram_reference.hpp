// Lab 11 CPU reference, used by the tests. Plain C++: no GPU, no test framework. Its per-element
// rules are also compiled for the GPU (KIT_HOST_DEVICE), where the timing checks count their
// generated inputs by the same rules.
//
// A histogram is one rule per element (its bin, or none) and one loop that adds the elements of
// an index range to counters. Every count below is that loop over an input in memory, a range of
// indices per core, each with counters of its own. The timing cases count their generated inputs
// on the GPU instead (kit::count_bins_on_device), by the same per-element rules.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kit/parallel.hpp"
#include "kit/random.hpp"

namespace histogram_reference {

constexpr int kByteValues = 256;

// ---- The per-element rules -------------------------------------------------------------------

// The bin of a byte: its value.
KIT_HOST_DEVICE inline int byte_bin(std::uint8_t byte) { return byte; }

// The bin of v, as histogram.cuh defines it, or -1 when v is not counted: floor((v - lo) / (hi
// - lo) * bins) for lo <= v < hi, no more than bins - 1. Computed in double as (v - lo) * bins
// / (hi - lo): for the tests' ranges v - lo, hi - lo and the product with bins (at most 4096)
// are exact, so only the division rounds. It moves a value by about 1e-16 of a bin's width, far
// less than the tests keep their values from the edges between bins, and a value exactly on an
// edge k stays on it (the exact quotient k is a double, so the division returns it).
KIT_HOST_DEVICE inline int bin_of(float v, float lo, float hi, int bins) {
  if (!(v >= lo && v < hi)) return -1;  // below, at or above hi, infinite or NaN
  const double position = (static_cast<double>(v) - lo) * bins / (static_cast<double>(hi) - lo);
  const int bin = static_cast<int>(std::floor(position));
  return bin < bins ? bin : bins - 1;
}

// ---- The counting loop -----------------------------------------------------------------------

// Adds one to counts[bin_at(i)] for every i in [begin, end) whose bin is not -1.
template <class BinAt>
void count_range(std::size_t begin, std::size_t end, const BinAt& bin_at, std::vector<unsigned>& counts) {
  for (std::size_t i = begin; i < end; ++i)
    if (const int bin = bin_at(i); bin >= 0) ++counts[static_cast<std::size_t>(bin)];
}

// The counts in `bins` bins of elements 0 .. n-1, on `threads` threads: thread t counts the
// t-th of `threads` contiguous ranges (kit::part_begin) into counters of its own, and the
// counters are added up at the end. bin_at is called from all of them at once, so it may only
// read.
template <class BinAt>
std::vector<unsigned> count_bins(std::size_t n, int bins, const BinAt& bin_at, unsigned threads = 1) {
  const auto bin_count = static_cast<std::size_t>(bins);
  threads = std::max(threads, 1u);
  std::vector<std::vector<unsigned>> parts(threads, std::vector<unsigned>(bin_count, 0u));
  kit::on_threads(threads, [&](std::size_t t) {
    count_range(kit::part_begin(n, threads, t), kit::part_begin(n, threads, t + 1), bin_at, parts[t]);
  });
  std::vector<unsigned> counts(bin_count, 0u);
  for (const auto& part : parts)
    for (std::size_t b = 0; b < bin_count; ++b) counts[b] += part[b];
  return counts;
}

// How many threads to count n elements on: every core, but no thread for fewer than 2^20
// elements, below which starting it costs more than it saves.
inline unsigned threads_for(std::size_t n) {
  return static_cast<unsigned>(kit::threads_for(static_cast<double>(n), 1 << 20));
}

// ---- Bytes -----------------------------------------------------------------------------------

// Counts of the 256 byte values of data[0 .. n-1].
inline std::vector<unsigned> byte_counts(const std::uint8_t* data, std::size_t n, unsigned threads = 1) {
  return count_bins(
      n, kByteValues, [data](std::size_t i) { return byte_bin(data[i]); }, threads);
}

inline std::vector<unsigned> byte_counts(const std::vector<std::uint8_t>& data, unsigned threads = 1) {
  return byte_counts(data.data(), data.size(), threads);
}

// ---- Floats ----------------------------------------------------------------------------------

// Counts of `values` in `bins` bins over [lo, hi).
inline std::vector<unsigned> float_counts(const std::vector<float>& values, float lo, float hi, int bins,
                                          unsigned threads = 1) {
  return count_bins(
      values.size(), bins, [&](std::size_t i) { return bin_of(values[i], lo, hi, bins); }, threads);
}

}  // namespace histogram_reference
