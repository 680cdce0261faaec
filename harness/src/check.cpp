#include "kit/check.hpp"

#include <algorithm>
#include <sstream>

#include <doctest/doctest.h>

#include "kit/random.hpp"

namespace kit {
namespace detail {
namespace {

std::string where(std::size_t index, std::size_t row_length) {
  if (row_length == 0) return "[" + std::to_string(index) + "]";
  return "(row " + std::to_string(index / row_length) + ", col " + std::to_string(index % row_length) + ")";
}

}  // namespace

std::string MismatchLog::message(const std::string& what, const CaseContext& context) const {
  std::ostringstream message;
  message << "Wrong " << what << " for input: " << context.input << " (" << seed_text() << ").\n";
  if (sampled_from_ > 0)
    message << count_ << " of the " << total_ << " elements checked (at positions drawn at random from all "
            << sampled_from_ << ") are wrong";
  else
    message << count_ << " of " << total_ << " elements are wrong";
  if (unwritten_ == total_)
    message << ", and none was written: every one still holds the poison the test put there before the call."
               " Is the kernel launched with enough blocks, and is the result copied back?";
  else if (unwritten_ > 0)
    message << "; " << unwritten_ << " of them were never written (they still hold the poison)."
            << " Does the grid cover every element?";
  message << "\nFirst wrong elements (where: expected, got):";
  for (const auto& m : first_)
    message << "\n  " << where(m.index, context.row_length) << ": " << m.expected << ", " << m.got;
  if (!context.look_at.empty()) message << "\nLook at: " << context.look_at;
  return message.str();
}

bool MismatchLog::report(const std::string& what, const CaseContext& context) const {
  if (ok()) return true;
  FAIL_CHECK(message(what, context));
  return false;
}

}  // namespace detail

std::string checked_on_device_failure(detail::MismatchLog log, std::size_t wrong_on_device, std::size_t first,
                                     std::size_t unwritten, const CaseContext& context) {
  if (log.count() == 0 || log.count() > wrong_on_device) {
    std::ostringstream message;
    message << "The test's two references disagree about the result for input: " << context.input << " ("
            << seed_text() << "): the one on the GPU finds " << wrong_on_device << " wrong elements, the first at "
            << detail::where(first, context.row_length) << ", and the one on the CPU finds " << log.count()
            << " from there. That is a fault in the lab's tests, not in your code: tell your TA, with this message.";
    return message.str();
  }
  log.add_unshown(wrong_on_device - log.count(), unwritten - std::min(unwritten, log.unwritten()));
  return log.message("result", context);
}

}  // namespace kit
