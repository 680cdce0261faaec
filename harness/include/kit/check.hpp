// Comparing a submission's output with a CPU reference.
//
// Every check reports through doctest (the run goes on), and a failure message
// says what input failed, the seed (the public one only: seed_text()), how many
// elements are wrong, the first few as (index, expected, got), and where the
// student should look.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kit/poison.hpp"

namespace kit {

// An element passes when |got - expected| <= abs + rel * |expected|.
struct Tolerance {
  double rel = 0.0;
  double abs = 0.0;
};

// What a failure message tells the student.
struct CaseContext {
  std::string input;           // the kind of input, e.g. "n = 1000003, not a multiple of the block size"
  std::string look_at;         // where to look, e.g. "vector_add_kernel in vector_add.cu"
  std::size_t row_length = 0;  // when > 0, indices print as (row, col) of rows this long
};

namespace detail {

struct Mismatch {
  std::size_t index;
  std::string expected;
  std::string got;
};

// Collects mismatches: their count, how many were never written, the first few.
class MismatchLog {
 public:
  // `total` elements checked; `sampled_from`, when above 0, the size of the output they were
  // drawn from (a timed call's output checked at random positions).
  explicit MismatchLog(std::size_t total, std::size_t sampled_from = 0) : total_(total), sampled_from_(sampled_from) {}
  // Counts a mismatch; `describe` (returning {expected, got} as text) runs only
  // for the few that are shown, so a wholly wrong large output stays fast to check.
  template <class Describe>
  void add(std::size_t index, bool unwritten, Describe describe) {
    ++count_;
    if (unwritten) ++unwritten_;
    if (first_.size() < kShown) {
      const auto [expected, got] = describe();
      first_.push_back({index, expected, got});
    }
  }
  // Counts `count` more mismatches, `unwritten` of them never written, without showing any: those
  // an output compared in full on the GPU found beyond the few shown.
  void add_unshown(std::size_t count, std::size_t unwritten) {
    count_ += count;
    unwritten_ += unwritten;
  }
  bool ok() const { return count_ == 0; }
  std::size_t count() const { return count_; }
  std::size_t unwritten() const { return unwritten_; }
  // What the student reads: the input, the seed (seed_text(), so never the grader's), how many are wrong and
  // why, the first few.
  std::string message(const std::string& what, const CaseContext& context) const;
  // Reports a failure to doctest when anything mismatched; returns ok().
  bool report(const std::string& what, const CaseContext& context) const;

 private:
  static constexpr std::size_t kShown = 5;
  std::size_t total_;
  std::size_t sampled_from_;
  std::size_t count_ = 0;
  std::size_t unwritten_ = 0;
  std::vector<Mismatch> first_;
};

template <class T>
std::string show(T value) {
  std::ostringstream text;
  if (is_poison(value)) return "never written (poison)";
  text.precision(9);
  if constexpr (sizeof(T) == 1)
    text << static_cast<int>(value);
  else
    text << value;
  return text.str();
}

}  // namespace detail

namespace detail {

// Logs each got[i] not within allowed_error(i) of expected[i], as the element at place(i) of the
// output; a size mismatch is logged once instead.
template <class T, class AllowedError, class Place>
void log_outside(const std::vector<T>& got, const std::vector<double>& expected, AllowedError allowed_error,
                 Place place, MismatchLog& log) {
  if (got.size() != expected.size()) {
    log.add(0, false, [&] {
      return std::pair{std::to_string(expected.size()) + " elements", std::to_string(got.size()) + " elements"};
    });
    return;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double value = static_cast<double>(got[i]);
    if (!(std::fabs(value - expected[i]) <= allowed_error(i)))  // NaN fails here too
      log.add(place(i), is_poison(got[i]), [&] { return std::pair{show(expected[i]), show(got[i])}; });
  }
}

}  // namespace detail

// got[i] must lie within allowed_error(i) of expected[i]: the general form, for
// arithmetic whose error bound differs per element (a dot product's grows with
// the sum of the magnitudes it adds).
template <class T, class AllowedError>
bool expect_within(const std::vector<T>& got, const std::vector<double>& expected, AllowedError allowed_error,
                   const CaseContext& context) {
  detail::MismatchLog log(expected.size());
  detail::log_outside(
      got, expected, allowed_error, [](std::size_t i) { return i; }, log);
  return log.report("result", context);
}

// got[i] must lie within tolerance of expected[i].
template <class T>
bool expect_close(const std::vector<T>& got, const std::vector<double>& expected, Tolerance tolerance,
                  const CaseContext& context) {
  return expect_within(
      got, expected, [&](std::size_t i) { return tolerance.abs + tolerance.rel * std::fabs(expected[i]); }, context);
}

// expect_within for an output of `size` elements checked at `positions` only: got[i] and
// expected[i] are its elements at positions[i], and a mismatch is reported at its position in
// the whole output. For timed calls, whose outputs are too large to compare in full after each
// (kit::sample_positions says why a sample is enough).
template <class T, class AllowedError>
bool expect_within_at(const std::vector<T>& got, const std::vector<double>& expected, AllowedError allowed_error,
                      const std::vector<std::size_t>& positions, std::size_t size, const CaseContext& context) {
  detail::MismatchLog log(positions.size(), size);
  detail::log_outside(
      got, expected, allowed_error, [&](std::size_t i) { return positions.at(i); }, log);
  return log.report("result", context);
}

// expect_close at `positions` only (expect_within_at, with a tolerance).
template <class T>
bool expect_close_at(const std::vector<T>& got, const std::vector<double>& expected,
                     const std::vector<std::size_t>& positions, std::size_t size, Tolerance tolerance,
                     const CaseContext& context) {
  return expect_within_at(
      got, expected, [&](std::size_t i) { return tolerance.abs + tolerance.rel * std::fabs(expected[i]); }, positions,
      size, context);
}

// The failure message for an output compared in full on the GPU, which found `wrong_on_device` elements
// wrong, the first at `first`, `unwritten` of them never written. `log` holds what the CPU
// reference found wrong from the first on: the elements shown, and a second opinion on the GPU's
// verdict; the GPU's count gives the rest. When the CPU finds none there, or more than the GPU,
// the two references disagree, and the failure says so: a fault in the tests, for the TA.
std::string checked_on_device_failure(detail::MismatchLog log, std::size_t wrong_on_device, std::size_t first,
                                     std::size_t unwritten, const CaseContext& context);

// Exact comparison, for integers and bytes.
template <class T>
bool expect_equal(const std::vector<T>& got, const std::vector<T>& expected, const CaseContext& context) {
  detail::MismatchLog log(expected.size());
  if (got.size() != expected.size()) {
    log.add(0, false, [&] {
      return std::pair{std::to_string(expected.size()) + " elements", std::to_string(got.size()) + " elements"};
    });
  } else {
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!(got[i] == expected[i]))
        log.add(i, is_poison(got[i]), [&] { return std::pair{detail::show(expected[i]), detail::show(got[i])}; });
  }
  return log.report("result", context);
}

// A guard zone placed after an output must still hold its poison: a kernel
// without a bounds check writes there. `first_index` is the index of the
// guard's first element in the output (that is, the output's length).
template <class T>
bool expect_guard_untouched(const std::vector<T>& guard, std::size_t first_index, const CaseContext& context) {
  detail::MismatchLog log(guard.size());
  for (std::size_t i = 0; i < guard.size(); ++i)
    if (!is_poison(guard[i]))
      log.add(first_index + i, false, [&] {
        return std::pair{std::string("untouched (past the end)"), detail::show(guard[i])};
      });
  return log.report("memory past the end of the output", context);
}

}  // namespace kit
