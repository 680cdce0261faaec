// Comparing a submission's output with a CPU reference.
//
// Every check reports through doctest (the run goes on), and a failure message
// says what input failed, the seed, how many elements are wrong, the first few
// as (index, expected, got), and where the student should look.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
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
  std::string input;    // the kind of input, e.g. "n = 1000003, not a multiple of the block size"
  std::string look_at;  // where to look, e.g. "vector_add_kernel in vector_add.cu"
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
  explicit MismatchLog(std::size_t total) : total_(total) {}
  void add(std::size_t index, const std::string& expected, const std::string& got, bool unwritten);
  bool ok() const { return count_ == 0; }
  // Reports a failure to doctest when anything mismatched; returns ok().
  bool report(const std::string& what, const CaseContext& context) const;

 private:
  std::size_t total_;
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

// got[i] must lie within allowed[i] of expected[i] (a bound per element, for
// arithmetic whose error grows with the data, such as a dot product).
template <class T>
bool expect_within(const std::vector<T>& got, const std::vector<double>& expected,
                   const std::vector<double>& allowed, const CaseContext& context) {
  detail::MismatchLog log(expected.size());
  if (got.size() != expected.size()) {
    log.add(0, std::to_string(expected.size()) + " elements", std::to_string(got.size()) + " elements", false);
  } else {
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double value = static_cast<double>(got[i]);
      if (!(std::fabs(value - expected[i]) <= allowed[i]))  // NaN fails here too
        log.add(i, detail::show(expected[i]), detail::show(got[i]), is_poison(got[i]));
    }
  }
  return log.report("result", context);
}

// got[i] must lie within tolerance of expected[i].
template <class T>
bool expect_close(const std::vector<T>& got, const std::vector<double>& expected, Tolerance tolerance,
                  const CaseContext& context) {
  std::vector<double> allowed(expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) allowed[i] = tolerance.abs + tolerance.rel * std::fabs(expected[i]);
  return expect_within(got, expected, allowed, context);
}

// Exact comparison, for integers and bytes.
template <class T>
bool expect_equal(const std::vector<T>& got, const std::vector<T>& expected, const CaseContext& context) {
  detail::MismatchLog log(expected.size());
  if (got.size() != expected.size()) {
    log.add(0, std::to_string(expected.size()) + " elements", std::to_string(got.size()) + " elements", false);
  } else {
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!(got[i] == expected[i])) log.add(i, detail::show(expected[i]), detail::show(got[i]), is_poison(got[i]));
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
    if (!is_poison(guard[i])) log.add(first_index + i, "untouched (past the end)", detail::show(guard[i]), false);
  return log.report("memory past the end of the output", context);
}

}  // namespace kit
