// The judge's side of calling student code: the student's functions run in another
// process, the runner, so that nothing they do can reach the checks, the clock or the
// results file (harness/runner/ holds the code that runs beside student code).
//
// Each function of a lab's public header has a proxy in the judge with the same
// signature, generated from the header (grader/calls.py): it describes its arguments to
// a Call and runs it. A test case reads as if it called the student's function.
//
// The runner is started at the first call, as $KIT_RUNNER_PREFIX (one argument a line:
// the grader's sandbox, compute-sanitizer) followed by $KIT_RUNNER, or the program
// beside this one named <this program>-runner. It gets no environment of the judge's
// beyond what a CUDA program needs: no seed, no results file, no parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kit/wire.hpp"

namespace kit::remote {

// The student's function failed in the runner: it threw (a failed CUDA_CHECK names the
// call, file and line), a kernel faulted, or the runner process died.
class StudentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One call of a student function, its arguments added in order.
class Call {
 public:
  Call(std::uint32_t function, const char* name);

  template <class T>
  Call& value(const T& argument) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) < 256, "passed by value: a number or small struct");
    message_.put(wire::ArgKind::Value);
    message_.put(static_cast<std::uint8_t>(sizeof(T)));
    message_.put(argument);
    ++args_;
    return *this;
  }
  // A pointer into device memory that the judge allocated (or null).
  Call& device(const void* pointer, const char* parameter);
  // Host memory of `bytes` bytes: copied to the runner before the call and, unless
  // `read_only`, copied back after it (in full, so elements the call does not write keep
  // what the test put there: the poison).
  Call& host(const void* pointer, std::size_t bytes, bool read_only, const char* parameter);

  void run();  // a function that returns nothing
  template <class R>
  R run_returning() {
    const std::vector<unsigned char> reply = send_and_wait();
    if (reply.size() != sizeof(R))
      throw StudentError(std::string(name_) + ": the runner's reply holds " + std::to_string(reply.size()) +
                         " bytes, not the " + std::to_string(sizeof(R)) + " of the return value");
    R result;
    std::memcpy(&result, reply.data(), sizeof(R));
    return result;
  }

 private:
  struct HostCopy {
    void* judge;       // where the test's buffer is (null when read-only)
    std::size_t offset;
    std::size_t bytes;
  };
  std::vector<unsigned char> send_and_wait();

  std::uint32_t function_;
  const char* name_;
  wire::Writer message_;
  std::uint32_t args_ = 0;
  std::size_t arena_used_ = 0;
  bool passes_device_memory_ = false;
  std::vector<HostCopy> copies_back_;
};

// ---- timing: what kit::time_work needs so that only the call itself is measured ----

// While a TimedSection lives, the runner (if one runs) is stopped (SIGSTOP) except
// during a call: it cannot watch the next call's inputs being written, nor work on them
// before the clock starts. Where no runner runs (the work is the judge's own, or the lab
// is graded in one process), it does nothing.
class TimedSection {
 public:
  TimedSection();
  ~TimedSection();
  TimedSection(const TimedSection&) = delete;
  TimedSection& operator=(const TimedSection&) = delete;

  void resume();  // right after the clock starts
  void pause();   // right after the clock stops
};

// Waits until this process's GPU work is done and the GPU has given it a turn: an empty
// kernel, then cudaDeviceSynchronize. The GPU runs one process's work at a time, in
// slices of about 2 ms, so work the runner left running after its reply delays this by
// up to a slice (and is counted when the clock brackets it), or shows in the outputs.
void fence();

// Whether the GPU is quiet: an empty kernel of this process ran within `limit_s`. After
// the runner's reply and the pause, any GPU work of the runner's still running shows here.
bool gpu_quiet(double limit_s, double* took_s = nullptr);

// How many calls the judge has sent the runner so far: a timed call that sent one went through
// the path between the two processes.
long long calls_made();

// What the path between judge and runner adds to one timed call, measured with a twin runner
// of the judge's own that answers with an empty kernel (this program run with --kit-twin),
// stopped and resumed as the runner is: the socket, and the GPU switching from one process's
// work to the other's and back (about 0.2 ms each way on an H100). The judge subtracts it
// from each timed call of the student's; a student's code cannot change it, since the twin
// runs none. `before_each_call` is what the judge does before each timed call of the student's
// (poison, cache flush, the quiet check): done before each of the twin's calls too, the GPU
// switches to the twin from the same state as it does to the runner.
double path_overhead_s(const std::function<void()>& before_each_call);

// The twin's side (main calls it for --kit-twin): an empty kernel per request.
int serve_twin();

// A test case ended: the runner unmaps the device buffers it was given.
void end_of_case();

// At the end of the test program: ends the runner and records how it ended (a "runner"
// record with its exit code, which compute-sanitizer sets when it found an error).
// Returns that exit code (128 + N for a signal N), 0 when no runner was started.
int finish();

}  // namespace kit::remote
