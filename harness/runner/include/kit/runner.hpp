// The runner: the process that runs a student's functions when the tests call them
// (kit/remote.hpp is the judge's side). Everything under harness/runner/ runs beside
// student code, so nothing here decides a score: it maps what the judge sends, calls the
// function, waits for the device where the call is synchronous, and replies.
//
// Each lab's table of functions is generated from its public header (grader/calls.py):
// one entry per function, reading its arguments in order and calling it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kit/wire.hpp"

namespace kit::runner {

// The arguments of one call, read in order as the judge wrote them.
class Arguments {
 public:
  Arguments(wire::Reader& message, unsigned char* arena, int fd) : message_(message), arena_(arena), fd_(fd) {}
  ~Arguments();  // closes a descriptor the call did not take
  Arguments(const Arguments&) = delete;
  Arguments& operator=(const Arguments&) = delete;

  template <class T>
  T value() {
    static_assert(std::is_trivially_copyable_v<T>, "passed by value: its bytes");
    expect(wire::ArgKind::Value);
    if (message_.get<std::uint8_t>() != sizeof(T)) throw std::runtime_error("malformed request: a value's size");
    return message_.get<T>();
  }

  // A pointer argument: into the judge's device memory (mapped here), into the shared host
  // arena, into host memory both processes map, or null.
  template <class T>
  T* pointer() {
    return static_cast<T*>(raw_pointer(!std::is_const_v<T>));
  }

  // The runner's stream for the judge's (made on first use, destroyed at the end of the case).
  // The call is asynchronous by contract: the runner does not wait for its work.
  cudaStream_t stream();
  // The judge's cuBLAS handle: which one, and the runner's copy of the stream it is bound to.
  // The call is asynchronous by contract, as for a stream.
  wire::BlasArg blas(cudaStream_t* stream);

  // An object of type `type` that an earlier call's student function made (Result::set_object);
  // anything else is refused. `release`: the call destroys it, so its number is forgotten.
  template <class T>
  T* object(const char* type, bool release = false) {
    return static_cast<T*>(raw_object(type, release));
  }

  // Whether the runner replies without waiting for the device: the call took a stream, or its host
  // results land in memory the judge maps, where the judge sees whether they arrived before the reply.
  bool leaves_work_running() const { return leaves_work_running_; }

  wire::AllocationArg allocation();  // the mirror that goes with an allocator's call
  int take_fd();                     // the descriptor sent with the request (-1: none)
  std::uint64_t released();          // the number of the mirror a free's argument names (0: null)

 private:
  void expect(wire::ArgKind kind);
  void* raw_pointer(bool writable);
  void* raw_object(const char* type, bool release);

  wire::Reader& message_;
  unsigned char* arena_;
  int fd_;
  bool leaves_work_running_ = false;
};

// What a call returns to the judge (nothing, for a void function).
class Result {
 public:
  template <class T>
  void set(const T& value) {
    bytes_.put(value);
  }
  // An object the student's function made: the judge gets a number for it, never the pointer.
  void set_object(void* object, const char* type);
  const wire::Writer& bytes() const { return bytes_; }

 private:
  wire::Writer bytes_;
};

// The student's allocator returned `allocated`, `bytes` long: the memory the judge sent goes with it,
// page-locked here where the student's is, and the judge learns the number and whether it is.
void mirror_allocation(Arguments& in, Result& out, void* allocated);
// The student's free, called with what their allocator returned for the mirror the judge names;
// then the mirror goes, whether or not the free threw.
void free_allocation(Arguments& in, void (*student_free)(void*));

// Runs at every end of a test case (Op::Forget): what a part of the runner keeps per case goes.
void at_end_of_case(void (*forget)());

// The runner's stream for a judge stream (id 0: the legacy default stream).
cudaStream_t stream_for(const wire::StreamArg& arg);

using Entry = void (*)(Arguments&, Result&);

struct Function {
  const char* name;
  Entry call;
};

// The lab's table, defined by its generated runner_calls.cpp.
extern const Function kFunctions[];
extern const std::size_t kFunctionCount;

}  // namespace kit::runner
