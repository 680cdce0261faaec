// Lab 06 CPU reference, used by the tests: the exact scans of int and float inputs, in full
// (small tests) or at sampled positions of an input made element by element (outputs too large
// to make again in full). Plain C++: no GPU, no test framework.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kit/parallel.hpp"

namespace scan_reference {

enum class Kind { Inclusive, Exclusive };

// The whole-array references (small tests) and the sampled ones
// (outputs too large to make again in full) add the inputs with the same running
// sums and read each element off them with the same `record`, so both give the
// same numbers.

// The running sums of an int scan, in 64 bits (the inputs keep every prefix in int range).
struct IntSums {
  long long sum = 0;
  void add(int x) { sum += x; }
  void add(const IntSums& earlier) { sum += earlier.sum; }
};

// The running sums of a float scan: the inputs' sum in double, and beside it the
// sum of their magnitudes, which the tolerance scales with. Both are exact here:
// kit::Rng makes floats in [-1, 1] as multiples of 2^-23, and a sum of up to 2^30
// of them is a multiple of 2^-23 below 2^30 in size, which a double holds
// exactly. So the order of the additions (one loop, or parts added up afterwards)
// changes no bit; in any case a double's rounding stays far below the tolerance.
struct FloatSums {
  double sum = 0.0;
  double magnitude = 0.0;
  void add(float x) {
    sum += x;
    magnitude += std::fabs(static_cast<double>(x));
  }
  void add(const FloatSums& earlier) {
    sum += earlier.sum;
    magnitude += earlier.magnitude;
  }
};

// A float scan's reference: each output's sum, and the sum of the magnitudes of
// the inputs up to and including that element.
struct FloatReference {
  std::vector<double> sum;
  std::vector<double> magnitude;
  explicit FloatReference(std::size_t n) : sum(n), magnitude(n) {}
};

// Element k of a reference, from the running sums just before and just after its
// input: an inclusive scan includes that input, an exclusive one stops before it
// (the magnitudes include it either way).
inline void record(std::vector<int>& ref, std::size_t k, Kind kind, const IntSums& before, const IntSums& after) {
  ref[k] = static_cast<int>((kind == Kind::Inclusive ? after : before).sum);
}
inline void record(FloatReference& ref, std::size_t k, Kind kind, const FloatSums& before, const FloatSums& after) {
  ref.sum[k] = (kind == Kind::Inclusive ? after : before).sum;
  ref.magnitude[k] = after.magnitude;
}

// The scan of x, one element after another. section > 0: every section of that
// many elements is scanned on its own (parts 1 and 2); 0: one scan of the whole array.
template <class Sums, class Reference, class T>
Reference scan_reference(const std::vector<T>& x, Kind kind, std::size_t section) {
  Reference ref(x.size());
  Sums sums;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (section > 0 && i % section == 0) sums = Sums{};
    const Sums before = sums;
    sums.add(x[i]);
    record(ref, i, kind, before, sums);
  }
  return ref;
}

// The exact scan of integers.
inline std::vector<int> int_reference(const std::vector<int>& x, Kind kind) {
  return scan_reference<IntSums, std::vector<int>>(x, kind, 0);
}

inline FloatReference float_reference(const std::vector<float>& x, Kind kind, std::size_t section = 0) {
  return scan_reference<FloatSums, FloatReference>(x, kind, section);
}

// How many threads scan_reference_at uses for `count` inputs: one per core, each
// with at least a million inputs (below that a thread costs more than it saves).
inline std::size_t reference_threads(std::size_t count) {
  return kit::threads_for(static_cast<double>(count), 1 << 20);
}

// The scan of count inputs, element(i) giving input i, at `positions` only
// (ascending, repeats allowed; element k of the result is the output at
// positions[k]): for outputs too large to make again in full. An output depends
// on every input before it, so this is still one pass over the inputs, but on
// `threads` cores at once and without storing them: each thread adds up one
// contiguous part of the inputs from zero and keeps its running sums around the
// positions inside it; then the sums of the parts before each part are added to
// what it kept.
template <class Sums, class Reference, class Element>
Reference scan_reference_at(std::size_t count, Element element, const std::vector<std::size_t>& positions, Kind kind,
                            std::size_t threads) {
  struct Around {
    Sums before, after;
  };
  std::vector<Around> kept(positions.size());
  std::vector<Sums> part_total(threads);
  std::vector<std::size_t> first_position(threads + 1, positions.size());
  for (std::size_t t = 0; t < threads; ++t)
    first_position[t] = static_cast<std::size_t>(
        std::lower_bound(positions.begin(), positions.end(), kit::part_begin(count, threads, t)) - positions.begin());

  const auto scan_part = [&](std::size_t t) {
    const std::size_t end = kit::part_begin(count, threads, t + 1);
    std::size_t i = kit::part_begin(count, threads, t);
    Sums sums;
    for (std::size_t k = first_position[t]; k < first_position[t + 1]; ++k) {
      const std::size_t p = positions[k];
      if (p < i) {  // positions[k - 1] again: only a repeat is behind i
        kept[k] = kept[k - 1];
        continue;
      }
      for (; i < p; ++i) sums.add(element(i));
      const Sums before = sums;
      sums.add(element(i++));
      kept[k] = {before, sums};
    }
    for (; i < end; ++i) sums.add(element(i));
    part_total[t] = sums;
  };
  kit::on_threads(threads, scan_part);

  Reference ref(positions.size());
  Sums earlier;  // the sum of the parts before part t
  for (std::size_t t = 0; t < threads; ++t) {
    for (std::size_t k = first_position[t]; k < first_position[t + 1]; ++k) {
      Sums before = earlier, after = earlier;
      before.add(kept[k].before);
      after.add(kept[k].after);
      record(ref, k, kind, before, after);
    }
    earlier.add(part_total[t]);
  }
  return ref;
}

}  // namespace scan_reference
