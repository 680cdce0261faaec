// The judge's side of calling student code: the student's functions run in another
// process, the runner, so that nothing they do can reach the checks, the clock or the
// results file (harness/runner/ holds the code that runs beside student code).
//
// Each function of a lab's public header has a proxy in the judge with the same
// signature, generated from the header (grader/calls.py): it describes its arguments to
// a Call and runs it. A test case reads as if it called the student's function, with one
// exception: the student's GPU work runs in the runner, so a test that waits for it
// waits through kit::remote::synchronize (the judge's cudaStreamSynchronize and
// cudaDeviceSynchronize wait for the judge's own work only).
//
// The runner is started as the test program starts (or at the first call), as
// $KIT_RUNNER_PREFIX (one argument a line: the grader's sandbox, compute-sanitizer)
// followed by $KIT_RUNNER, or the program beside this one named <this program>-runner.
// It gets no environment of the judge's beyond what a CUDA program needs: no seed, no
// results file, no parameters.
#pragma once

#include <cuda_runtime.h>

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

  // A stream: the runner queues the call's work on a stream of its own made with the same flags,
  // one per stream of the judge's, and does not wait for it before replying.
  Call& stream(cudaStream_t stream, const char* parameter);
  // A cuBLAS handle (kit/remote_cublas.hpp reads its stream and math mode): the runner keeps a
  // handle of its own per handle of the judge's, bound to the runner's copy of that stream.
  Call& blas(const void* handle, cudaStream_t stream, int math_mode, const char* parameter);
  // An object the student's code made: a pointer a proxy returned (run_returning_object), which is
  // the runner's number for it, never dereferenced here.
  Call& object(const void* object);
  // Host memory shared with the runner (from the student's allocator, or kit::remote::SharedHostBuffer),
  // passed as a place in it, with no copy: the parameter has no count, so nothing else can carry it.
  Call& shared_host(const void* pointer, const char* parameter);
  // This call is the student's free of `pointer`, an allocation of theirs that the judge mirrors
  // (run_allocating): once it has run, whatever its outcome, the judge's mirror goes too.
  Call& release(const void* pointer, const char* parameter);

  void run();  // a function that returns nothing
  template <class R>
  R run_returning() {
    const std::vector<unsigned char> reply = send_and_wait();
    return reply_as<R>(reply);
  }
  // A function that returns an object the student's code made: the runner's number for it,
  // disguised as the pointer type (incomplete in the header, so nothing here dereferences it).
  template <class T>
  T* run_returning_object() {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(run_returning<std::uint64_t>()));
  }
  // The student's allocator of `bytes` bytes of host memory: the judge makes memory that both
  // processes map, the runner calls the allocator, and the judge returns its own mapping, page-locked
  // exactly when the student's memory is (or null where the allocator returned null).
  void* run_allocating(std::size_t bytes);

 private:
  struct HostCopy {
    void* judge;       // where the test's buffer is (null when read-only)
    std::size_t offset;
    std::size_t bytes;
  };
  std::vector<unsigned char> send_and_wait(int fd = -1);
  template <class R>
  R reply_as(const std::vector<unsigned char>& reply) const {
    if (reply.size() != sizeof(R))
      throw StudentError(std::string(name_) + ": the runner's reply holds " + std::to_string(reply.size()) +
                         " bytes, not the " + std::to_string(sizeof(R)) + " of the return value");
    R result;
    std::memcpy(&result, reply.data(), sizeof(R));
    return result;
  }

  std::uint32_t function_;
  const char* name_;
  wire::Writer message_;
  std::uint32_t args_ = 0;
  std::size_t arena_used_ = 0;
  bool passes_device_memory_ = false;
  std::vector<HostCopy> copies_back_;
  const void* released_ = nullptr;  // the mirrored allocation this call frees
};

// ---- the student's GPU work, from the judge ----

// Waits until the work the runner queued on its copy of `stream` is done; for the legacy default
// stream (nullptr), until all of the runner's work on the device is. Throws StudentError where that
// work failed (a kernel's fault). The judge's cudaStreamSynchronize would wait for nothing: the
// work is in the runner.
void synchronize(cudaStream_t stream);
// All the GPU work of both processes done: the runner's device, then the judge's.
void synchronize_device();

// Work the test queues on the runner's copy of `stream`, ahead of a call of the student's on it,
// so that the call's input arrives late there (a call whose work runs on any other stream reads
// the buffer before it has arrived): a kernel that holds the stream up for `milliseconds`, and a
// copy between two device buffers of the test's.
void queue_delay(cudaStream_t stream, double milliseconds);
void copy_on_stream(void* d_to, const void* d_from, std::size_t bytes, cudaStream_t stream);

// Host memory both processes map (a memfd), page-locked in both where `page_locked` (it then
// needs a GPU): a host pointer into it reaches the student's function with no copy either way,
// so a large input or output costs the timed call nothing and a result is seen the moment it lands.
void* share_host(std::size_t bytes, bool page_locked);
void unshare_host(void* pointer) noexcept;

template <class T>
class SharedHostBuffer {
 public:
  explicit SharedHostBuffer(std::size_t count, bool page_locked = true)
      : count_(count), data_(static_cast<T*>(share_host(count * sizeof(T), page_locked))) {}
  ~SharedHostBuffer() { unshare_host(data_); }
  SharedHostBuffer(const SharedHostBuffer&) = delete;
  SharedHostBuffer& operator=(const SharedHostBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  std::size_t count_;
  T* data_;
};

// ---- timing: what kit::time_work needs so that only the call itself is measured ----

// While a TimedSection lives, the runner (if one runs) is stopped (SIGSTOP) except
// during a call: it cannot watch the next call's inputs being written, nor work on them
// before the clock starts. Where no runner runs (the work is the judge's own, or the lab
// is graded in one process), it stops nothing. Either way, while it lives the device's default
// memory pools, the runner's and the judge's, keep what is freed into them
// (kit::keep_freed_device_memory), and give it back when it ends.
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

// Whether the GPU is free of the runner's work: gpu_quiet twice in a row, a few tries (remote.cu says
// how long it allows); the longest fence in *took_s. A busy GPU is also noted in the test case's record
// ("gpu_busy"): a program that shares the GPU with other programs cannot tell their work from
// the runner's, so the grader runs such a case again with the GPU to itself, where the
// runner's is the only work there is.
bool gpu_free(double* took_s = nullptr);

// Whether gpu_free found the GPU busy since this was last asked (at each test case's start and end).
bool take_gpu_found_busy();

// While a JudgeAlone lives, the runner (if one runs) is stopped and the GPU has been found free of
// its work. A check that builds its reference in device memory after a call (kit/device_count.cuh,
// kit/device_check.cuh, labs 06 and 10) holds one, so that no runner code (a kernel left running
// after its reply, a thread of its own) runs while the reference is made and compared: device
// memory of the judge's is out of the runner's reach only as long as no IPC handle to it is
// guessed. Throws StudentError, naming `check`, when the runner's work does not leave the GPU.
// Beside other programs (kit::gpu_shared_with_others), whose work comes in bursts, it looks for a
// quiet moment between them for up to a second: a check that finds none runs its whole case again
// under the exclusive GPU lock, stopping every other program (lab 06: 104 such reruns in 20
// students, 3.8 s of each student's 5.8 s alone).
class JudgeAlone {
 public:
  explicit JudgeAlone(const char* check);

 private:
  TimedSection section_;
};

// How many calls the judge has sent the runner so far: a timed call that sent one went through
// the path between the two processes.
long long calls_made();

// What the path between judge and runner adds to one timed request of `calls_per_request` calls
// one after the other, measured with a twin runner
// of the judge's own that answers with an empty kernel (this program run with --kit-twin),
// stopped and resumed as the runner is: the socket, and the GPU switching from one process's
// work to the other's and back (about 0.2 ms each way on an H100). The judge subtracts it
// from each timed call of the student's; a student's code cannot change it, since the twin
// runs none. `before_each_call` is what the judge does on the GPU before each timed call of the
// student's (poison of device outputs, cache flush, the quiet check): done before each of the twin's
// calls too, the GPU switches to the twin from the same state as it does to the runner. The twin lives until the
// end of the test program (finish), stopped between measurements; in a judge that serves many runs, until the
// judge ends (keep_twin_between_runs).
double path_overhead_s(const std::function<void()>& before_each_call, int calls_per_request);

// The twin's side (main calls it for --kit-twin): an empty kernel per request.
int serve_twin();

// Starts the runner now, where this test program has one, instead of at the first call: main calls
// it first, so that the runner's start (the sandbox, its CUDA context) overlaps the judge's own.
void start_runner();

// A timing test case begins: where a runner runs, the twin starts now, so that its start overlaps
// the case's set-up; the first TimedSection waits for it to be done before anything is timed.
void start_twin();

// A test case ended: the runner unmaps the device buffers it was given and
// destroys its copies of the test's streams and cuBLAS handles. Objects and host allocations of the student's stay until
// the test frees them.
void end_of_case();

// At the end of the test program: ends the runner and records how it ended (a "runner"
// record with its exit code, which compute-sanitizer sets when it found an error).
// Returns that exit code (128 + N for a signal N), 0 when no runner was started. Leaves nothing of
// the run behind (no runner, no shared memory), so that a judge serving many runs starts the next afresh; only
// the twin, which runs nothing of a student's, stays where keep_twin_between_runs says so.
int finish();

// A judge that serves many runs (--kit-serve) keeps its twin from one run's timing to the next's, stopped in
// between: a twin is a CUDA context made and torn down, work the driver does one process at a time for the
// whole host, inside the hold in which a timing program has its GPU alone. end_twin ends it as the judge ends.
void keep_twin_between_runs();
void end_twin();

}  // namespace kit::remote
