// Lab 06's reference for scans too large to make again on the CPU after every call (a timed
// call's gigabyte, the hidden three-level scan): the exact scan of the same generated inputs, made
// on the GPU, and every element of an output compared with it there (compare_scan); or, for a
// timed call, the exact sums at drawn positions only (compare_scan_at).
//
// The tests may use CUB, which the lab forbids students: this code runs in the judge, never beside
// student code. It is checked against the CPU reference (scan_reference.hpp) on many lengths in
// reference_on_device_tests.cu, and scan_checks.cuh asks the CPU reference again about the first
// wrong elements before it reports them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <vector>

#include "kit/device_count.cuh"
#include "kit/kit.cuh"
#include "scan_reference.hpp"

namespace scan_on_device {

using scan_reference::Kind;

// The terms a reference adds up for input element i. For floats: its value and its magnitude, in
// double. Both sums are exact for these inputs (scan_reference.hpp's FloatSums says why), so the
// order CUB adds them in changes no bit, and they equal the CPU's FloatSums.
struct FloatTerms {
  kit::UniformFloatAt x;
  __host__ __device__ double2 operator()(std::size_t i) const {
    const double value = x(i);
    return make_double2(value, fabs(value));
  }
};

// For ints: the value in 64 bits, the CPU's IntSums.
struct IntTerms {
  std::uint64_t seed;
  int low;
  std::uint64_t span;
  __host__ __device__ long long operator()(std::size_t i) const {
    return kit::detail::uniform_int(kit::detail::random_bits(seed, i), low, span);
  }
};

struct AddTerms {
  __host__ __device__ double2 operator()(const double2& a, const double2& b) const {
    return make_double2(a.x + b.x, a.y + b.y);
  }
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};

// A float output element is wrong when it is not within gamma times the sum of the magnitudes it
// adds of the exact sum: scan_checks.cuh's allowed_error, element by element. The poison, a NaN,
// is never within.
struct FloatWrong {
  Kind kind;
  double gamma;
  __host__ __device__ bool operator()(float got, const double2& inclusive, const double2& own) const {
    const double expected = kind == Kind::Inclusive ? inclusive.x : inclusive.x - own.x;
    return !(fabs(static_cast<double>(got) - expected) <= gamma * inclusive.y);
  }
};

// An int output element is wrong unless it is the exact sum.
struct IntWrong {
  Kind kind;
  __host__ __device__ bool operator()(int got, long long inclusive, long long own) const {
    return static_cast<long long>(got) != (kind == Kind::Inclusive ? inclusive : inclusive - own);
  }
};

namespace detail {

// Whether element begin + i of the output is wrong, against the inclusive sums `scanned` of its
// part, each added to `carry`, the sums of every element before the part.
template <class T, class Term, class TermAt, class Wrong>
struct WrongInPart {
  const T* got;
  std::size_t begin;
  const Term* scanned;
  const Term* carry;
  TermAt term_at;
  Wrong wrong;
  __device__ bool operator()(std::size_t i) const {
    return wrong(got[begin + i], AddTerms{}(*carry, scanned[i]), term_at(begin + i));
  }
};

// carry += the last inclusive sum of the part just compared.
template <class Term>
__global__ void advance_carry_kernel(Term* carry, const Term* last) {
  *carry = AddTerms{}(*carry, *last);
}

}  // namespace detail

// Elements of a part scanned at once: 16 Mi terms (256 MiB of double2) of scratch, whatever the
// output's length.
constexpr std::size_t kPartElements = std::size_t{1} << 24;

// Compares every element of got[0, count) with the inclusive scan of term_at(0), term_at(1), ...
// through `wrong`, part by part: CUB scans a part's terms, made on the GPU as the CPU makes the
// inputs (never read from the call's input, which the runner could have changed), and
// kit::find_where compares the part with them, each sum carried over from the parts before.
// Returns how many elements are wrong, and the first. Waits for the GPU.
template <class T, class Term, class TermAt, class Wrong>
kit::Found compare_scan(const T* got, std::size_t count, TermAt term_at, Wrong wrong,
                        std::size_t part_elements = kPartElements) {
  kit::Found found{0, kit::kNotFound};
  if (count == 0) return found;
  const kit::remote::JudgeAlone alone("the check of the scan");  // while the reference lies in device memory
  const std::size_t part = std::min(count, part_elements);
  kit::DeviceBuffer<Term> scanned(part), carry(1);
  CUDA_CHECK(cudaMemset(carry.data(), 0, carry.bytes()));
  const auto terms_from = [&](std::size_t begin) {
    return thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(begin), term_at);
  };
  std::size_t scratch_bytes = 0;
  CUDA_CHECK(cub::DeviceScan::InclusiveScan(nullptr, scratch_bytes, terms_from(0), scanned.data(), AddTerms{},
                                            static_cast<int>(part)));
  kit::DeviceBuffer<unsigned char> scratch(std::max<std::size_t>(scratch_bytes, 1));
  for (std::size_t begin = 0; begin < count; begin += part) {
    const std::size_t items = std::min(part, count - begin);
    CUDA_CHECK(cub::DeviceScan::InclusiveScan(scratch.data(), scratch_bytes, terms_from(begin), scanned.data(),
                                              AddTerms{}, static_cast<int>(items)));
    const kit::Found in_part = kit::find_where(
        items, detail::WrongInPart<T, Term, TermAt, Wrong>{got, begin, scanned.data(), carry.data(), term_at, wrong});
    if (in_part.count > 0 && found.count == 0) found.first = begin + in_part.first;
    found.count += in_part.count;
    detail::advance_carry_kernel<<<1, 1>>>(carry.data(), scanned.data() + (items - 1));
    CUDA_CHECK_LAUNCH();
  }
  return found;
}

// The inclusive sums of the terms up to each of `positions` (ascending, repeats allowed): the terms
// from one position to the next added on the GPU, one segment each (CUB), and those sums added in
// order on the CPU. Exact, as compare_scan's are: no order of adding them changes a bit. Lengths
// up to the largest int, as the scans'.
template <class Term, class TermAt>
std::vector<Term> inclusive_sums_at(const std::vector<std::size_t>& positions, TermAt term_at) {
  std::vector<int> begins(positions.size()), ends(positions.size());
  for (std::size_t k = 0; k < positions.size(); ++k) {
    begins[k] = k == 0 ? 0 : ends[k - 1];
    ends[k] = static_cast<int>(positions[k] + 1);
  }
  const kit::DeviceBuffer<int> d_begins(begins), d_ends(ends);
  kit::DeviceBuffer<Term> d_sums(positions.size());
  const auto terms = thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0), term_at);
  const auto segments = static_cast<int>(positions.size());
  std::size_t scratch_bytes = 0;
  CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(nullptr, scratch_bytes, terms, d_sums.data(), segments,
                                                d_begins.data(), d_ends.data(), AddTerms{}, Term{}));
  kit::DeviceBuffer<unsigned char> scratch(std::max<std::size_t>(scratch_bytes, 1));
  CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(scratch.data(), scratch_bytes, terms, d_sums.data(), segments,
                                                d_begins.data(), d_ends.data(), AddTerms{}, Term{}));
  std::vector<Term> sums = d_sums.download();
  for (std::size_t k = 1; k < sums.size(); ++k) sums[k] = AddTerms{}(sums[k - 1], sums[k]);
  return sums;
}

// compare_scan at `positions` only (ascending, as kit::sample_positions draws them): how many of
// got's elements there are wrong, and the first. A timed call's output is compared this way, at
// positions drawn after the call (kit::sample_positions says why that is enough); the sums it
// makes cost one pass that reads nothing, where compare_scan's write and read a scan of the whole.
template <class T, class Term, class TermAt, class Wrong>
kit::Found compare_scan_at(const T* got, const std::vector<std::size_t>& positions, TermAt term_at, Wrong wrong) {
  kit::Found found{0, kit::kNotFound};
  if (positions.empty()) return found;
  const kit::remote::JudgeAlone alone("the check of the scan");  // while the reference lies in device memory
  const std::vector<Term> sums = inclusive_sums_at<Term>(positions, term_at);
  const std::vector<T> values = kit::gather(got, positions);
  for (std::size_t k = 0; k < positions.size(); ++k)
    if (wrong(values[k], sums[k], term_at(positions[k]))) {
      if (found.count == 0) found.first = positions[k];
      ++found.count;
    }
  return found;
}

}  // namespace scan_on_device
