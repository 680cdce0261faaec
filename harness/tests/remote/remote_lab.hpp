// A pretend lab's public header, for the harness's test of the judge/runner split
// (remote_tests.cpp). Most of its functions use host memory, values, objects and the legacy
// stream only, so those cases run on a machine without a GPU; the last few need one.
// remote_lab.cpp and remote_lab_gpu.cu play the student's file. grader/calls.py makes the
// judge's proxies and the runner's table from this header and host_buffers.toml, as it does
// for a lab from the lab's header and lab.toml.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// How fail_with fails, and how crash_now ends the runner: values of a type of the header's own.
enum class Failure { kCudaError, kRuntimeError, kNotAnException };
// kForgedReply: the runner answers on the socket itself, ahead of its dispatcher, with a reply
// that says "done" (what a submission would do to stop the judge's clock before its work is done).
enum class Ending { kSegfault, kAbort, kExit3, kForgedReply };

// h_out[i] = factor * h_in[i] for i < n.
void scale_host(const float* h_in, float* h_out, int n, float factor);

// The sum of h_values[0..n) in 64 bits; -1 when h_values is null.
long long sum_host(const int* h_values, std::int64_t n);

// Writes `value` to the even elements of h_out[0..n) and nothing to the odd ones.
void fill_even(float* h_out, int n, float value);

// Overwrites its read-only input (casting const away), as careless or hostile code might;
// returns how many elements it overwrote.
int scribble_on_input(const float* h_in, int n);

// Throws: a failed CUDA_CHECK's kit::CudaError, a std::runtime_error, or an int.
void fail_with(Failure how);

// Ends the runner: SIGSEGV, abort() or exit(3).
void crash_now(Ending how);

// The process the functions run in.
int runner_process_id();

// How many of the judge's KIT_RESULTS, KIT_SEED and KIT_PARAMS the runner's environment holds.
int judge_variables_seen();

// PREFIX_SAYS in the runner's environment, as a number; -1 where it is unset.
int prefix_says();

// NV_TOOL_SAYS in the runner's environment, as a number; -1 where it is unset.
int tool_says();

// ---- what crosses besides values and host buffers (grader/calls.py) ----

// A struct by const reference, with a pointer member whose count host_buffers.toml gives by its
// dotted name: the runner gets the struct's bytes and its own copy of the extras.
struct CounterSetup {
  int start = 0;
  int step = 1;
  const int* h_extras = nullptr;  // `extras` numbers added to start, read by make_counter only
  int extras = 0;
};

// An object only the "student's" file defines: the judge holds the runner's number for it.
struct Counter;

// A counter from start + the extras, counting up by step.
Counter* make_counter(const CounterSetup& setup);
// The counter's next value.
int count_up(Counter* counter);
// Ends a counter.
void end_counter(Counter* counter);

// Host memory the "student" allocates (ordinary memory, so no GPU is needed); null for count 0.
float* allocate_floats(std::size_t count);
// Frees what allocate_floats returned; throws for any other pointer.
void free_floats(float* h_floats);
// h_values[i] += amount for i < n, in memory both processes map (no count: shared_host_buffers).
void add_to_shared(float* h_values, int n, float amount);
// Whether two counted host buffers arrive as one place (they do only where no copy is made).
bool same_place(const float* h_a, const float* h_b);

// Whether `stream` arrived as the legacy default stream; the call is asynchronous by contract.
bool on_legacy_stream(cudaStream_t stream);

// ---- GPU functions (remote_lab_gpu.cu), for the cases that need one ----

// Queues d_values[i] += amount for i < n on `stream` and returns without waiting.
void add_on_stream(float* d_values, int n, float amount, cudaStream_t stream);
// Page-locked host memory (cudaMallocHost), and its free.
float* allocate_pinned_floats(std::size_t count);
void free_pinned_floats(float* h_floats);

// d_out[i] = 2 d_in[i] for i < n; returns when the work is done.
void double_values(const float* d_in, float* d_out, int n);
// The same, except that every fourth call (counted in the runner) returns having done nothing.
void double_values_mostly(const float* d_in, float* d_out, int n);
// Allocates `bytes` of device memory with cudaMallocAsync on the legacy default stream, writes it, frees it
// with cudaFreeAsync and waits for the stream: what lab 06's scans do with their tile sums in every call.
void scratch_on_device(std::size_t bytes);
