// Lab 05 CPU reference, used by the tests: the exact sum of a float input and the sum of its
// magnitudes, which the tolerance scales with. Plain C++: no GPU, no test framework.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kit/parallel.hpp"
#include "kit/random.hpp"

namespace reduction_reference {

// 2^24: integers up to this size are exact in a float.
inline constexpr double kFloatExactIntegers = 16777216.0;

struct Expected {
  double sum = 0.0;      // in double: exact for every input these tests make
  double abs_sum = 0.0;  // sum of |x_i|, which the rounding error bound scales with
  bool integers = true;  // every x_i is a whole number of at most 2^24 in magnitude
};

// Adds element(i) for every i in [begin, end) to `e`, one after the other.
template <class Element>
void add_range(Expected& e, const Element& element, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const float v = element(i);
    e.sum += v;
    e.abs_sum += std::fabs(v);
    // Whole numbers matter only when they are small enough to be exact in a float; checking the
    // size first makes the round trip through an integer safe (NaN fails the size check). Once
    // one element is not whole, the && skips the rest.
    e.integers =
        e.integers && std::fabs(v) <= kFloatExactIntegers && static_cast<float>(static_cast<std::int64_t>(v)) == v;
  }
}

// Below this many elements a thread of its own costs more than it saves.
inline constexpr std::size_t kSumPerThread = std::size_t{1} << 20;

// The sum of element(i) for i in [0, n) on `threads` threads, each adding one contiguous part
// (their sizes differ by at most one), the parts then added in index order. `element` is called
// from several threads at once, so it may only read.
//
// The order of the additions changes no bit of the result: in double, the sums of every input
// these tests make are exact, whatever the order. The timing input holds at most 2^28 multiples
// of 2^-24 in [0, 1), so every partial sum is a multiple of 2^-24 below 2^28 (52 bits); the
// cancelling one 10^6 multiples of 2^-23 of at most 1000 (below 2^30: 53 bits); the others are
// whole numbers. So the reference adds no error of its own to what the tolerance allows.
template <class Element>
Expected expected_sum(std::size_t n, const Element& element, std::size_t threads) {
  threads = std::max<std::size_t>(threads, 1);
  std::vector<Expected> parts(threads);
  kit::on_threads(threads, [&](std::size_t t) {
    add_range(parts[t], element, kit::part_begin(n, threads, t), kit::part_begin(n, threads, t + 1));
  });
  Expected total;
  for (const Expected& part : parts) {
    total.sum += part.sum;
    total.abs_sum += part.abs_sum;
    total.integers = total.integers && part.integers;
  }
  return total;
}

template <class Element>
Expected expected_sum(std::size_t n, const Element& element) {
  return expected_sum(n, element, kit::threads_for(static_cast<double>(n), kSumPerThread));
}

// The sum of an input in host memory.
inline Expected expected_sum(const std::vector<float>& x) {
  return expected_sum(x.size(), [&x](std::size_t i) { return x[i]; });
}

// Whole numbers with sum(|x_i|) <= 2^24: every partial sum, in any order, is a
// whole number of at most 2^24 that a float holds exactly, so no addition rounds.
inline bool exact_in_float(const Expected& e) { return e.integers && e.abs_sum <= kFloatExactIntegers; }

}  // namespace reduction_reference
