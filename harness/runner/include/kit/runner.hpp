// The runner: the process that runs a student's functions when the tests call them
// (kit/remote.hpp is the judge's side). Everything under harness/runner/ runs beside
// student code, so nothing here decides a score: it maps what the judge sends, calls the
// function, waits for the device and replies.
//
// Each lab's table of functions is generated from its public header (grader/calls.py):
// one entry per function, reading its arguments in order and calling it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kit/wire.hpp"

namespace kit::runner {

// The arguments of one call, read in order as the judge wrote them.
class Arguments {
 public:
  Arguments(wire::Reader& message, unsigned char* arena) : message_(message), arena_(arena) {}

  template <class T>
  T value() {
    expect(wire::ArgKind::Value);
    if (message_.get<std::uint8_t>() != sizeof(T)) throw std::runtime_error("malformed request: a value's size");
    return message_.get<T>();
  }

  // A pointer argument: into the judge's device memory (mapped here), into the shared
  // host arena, or null.
  template <class T>
  T* pointer() {
    return static_cast<T*>(raw_pointer());
  }

 private:
  void expect(wire::ArgKind kind);
  void* raw_pointer();

  wire::Reader& message_;
  unsigned char* arena_;
};

// What a call returns to the judge (nothing, for a void function).
class Result {
 public:
  template <class T>
  void set(const T& value) {
    bytes_.put(value);
  }
  const wire::Writer& bytes() const { return bytes_; }

 private:
  wire::Writer bytes_;
};

using Entry = void (*)(Arguments&, Result&);

struct Function {
  const char* name;
  Entry call;
};

// The lab's table, defined by its generated runner_calls.cpp.
extern const Function kFunctions[];
extern const std::size_t kFunctionCount;

}  // namespace kit::runner
