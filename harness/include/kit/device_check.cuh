// Comparing an output too large to copy to the host with its reference, element by element, on the
// GPU: a large hidden test's, where a sample of positions would miss a bug confined to a few
// elements. The reference is a function object that both the GPU and the CPU can call; only when
// some elements are wrong does the CPU compute the first few again, for the message.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "kit/check.hpp"
#include "kit/device_count.cuh"
#include "kit/timing.cuh"

namespace kit {
namespace detail {

template <class T, class ExpectedAt>
struct OutsideTolerance {
  const T* got;
  ExpectedAt expected_at;
  Tolerance tolerance;
  __device__ bool operator()(std::size_t i) const {  // expect_close's test; NaN fails it too
    const double expected = expected_at(i);
    return !(fabs(static_cast<double>(got[i]) - expected) <= tolerance.abs + tolerance.rel * fabs(expected));
  }
};

// Elements from the first wrong one that the CPU compares again for the message.
constexpr std::size_t kReportWindow = 4096;

}  // namespace detail

// The failure message for an output of n elements at d_out that a comparison on the GPU found
// wrong: `log_window(got, positions, log)` logs the elements at `positions` (a window from the first
// wrong one, `got` their values) that the CPU's reference finds wrong; they are shown, and the GPU's
// count gives the rest (kit::checked_on_device_failure). The output's type must be one whose poison no
// right value holds (floats, ints), since every element holding it is counted as never written.
template <class T, class LogWindow>
std::string found_on_device_failure(const T* d_out, std::size_t n, const Found& wrong, const LogWindow& log_window,
                                    const CaseContext& context) {
  const auto first = static_cast<std::size_t>(wrong.first);
  std::vector<std::size_t> positions(std::min(n, first + detail::kReportWindow) - first);
  std::iota(positions.begin(), positions.end(), first);
  detail::MismatchLog log(n);
  log_window(gather(d_out, positions), positions, log);
  // An Output may be poisoned, so it holds a writable pointer; count_unwritten only reads it.
  const std::size_t unwritten = count_unwritten(Output::device("output", const_cast<T*>(d_out), n));
  return checked_on_device_failure(log, static_cast<std::size_t>(wrong.count), first, unwritten, context);
}

// found_on_device_failure, reported; returns false.
template <class T, class LogWindow>
bool report_found_on_device(const T* d_out, std::size_t n, const Found& wrong, const LogWindow& log_window,
                            const CaseContext& context) {
  FAIL_CHECK(found_on_device_failure(d_out, n, wrong, log_window, context));
  return false;
}

// Why element i of d_out (n of them, in device memory) is not within `tolerance` of
// expected_at(i), for some i; nothing when every one is. `expected_at` is a function object with a
// `__host__ __device__ double operator()(std::size_t i) const` that makes its value from the
// inputs' random streams (never from the test's input buffers, which student code could have
// changed). Compared on the GPU (kit::find_where); the message shows the first wrong elements as
// the CPU computes them.
template <class T, class ExpectedAt>
std::optional<std::string> close_on_device_failure(const T* d_out, std::size_t n, const ExpectedAt& expected_at,
                                                   Tolerance tolerance, const CaseContext& context) {
  const Found wrong = find_where(n, detail::OutsideTolerance<T, ExpectedAt>{d_out, expected_at, tolerance});
  if (wrong.count == 0) return std::nullopt;
  const auto log_window = [&](const std::vector<T>& got, const std::vector<std::size_t>& positions,
                              detail::MismatchLog& log) {
    std::vector<double> expected(positions.size());
    for (std::size_t i = 0; i < positions.size(); ++i) expected[i] = expected_at(positions[i]);
    detail::log_outside(
        got, expected, [&](std::size_t i) { return tolerance.abs + tolerance.rel * std::fabs(expected[i]); },
        [&](std::size_t i) { return positions[i]; }, log);
  };
  return found_on_device_failure(d_out, n, wrong, log_window, context);
}

// close_on_device_failure as a check: reports the failure, if any, and returns whether there was none.
template <class T, class ExpectedAt>
bool expect_close_on_device(const T* d_out, std::size_t n, const ExpectedAt& expected_at, Tolerance tolerance,
                            const CaseContext& context) {
  const std::optional<std::string> failure = close_on_device_failure(d_out, n, expected_at, tolerance, context);
  if (failure) FAIL_CHECK(*failure);
  return !failure;
}

}  // namespace kit
