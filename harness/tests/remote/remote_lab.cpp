// The pretend lab's "student file": what remote_lab.hpp declares, run in the runner.
#include "remote_lab.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <stdexcept>

#include "kit/cuda_check.cuh"
#include "kit/wire.hpp"

void scale_host(const float* h_in, float* h_out, int n, float factor) {
  for (int i = 0; i < n; ++i) h_out[i] = factor * h_in[i];
}

long long sum_host(const int* h_values, std::int64_t n) {
  if (h_values == nullptr) return -1;
  long long sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += h_values[i];
  return sum;
}

void fill_even(float* h_out, int n, float value) {
  for (int i = 0; i < n; i += 2) h_out[i] = value;
}

int scribble_on_input(const float* h_in, int n) {
  float* writable = const_cast<float*>(h_in);
  for (int i = 0; i < n; ++i) writable[i] = -1.0f;
  return n;
}

void fail_with(Failure how) {
  switch (how) {
    case Failure::kCudaError: {
      const cudaError_t refused = cudaErrorInvalidValue;  // stands for a CUDA call that failed
      CUDA_CHECK(refused);
      break;
    }
    case Failure::kRuntimeError: throw std::runtime_error("the pretend student gave up at step 42");
    case Failure::kNotAnException: throw 42;
  }
}

void crash_now(Ending how) {
  const rlimit no_core{0, 0};  // a test's crash leaves no core file behind
  setrlimit(RLIMIT_CORE, &no_core);
  switch (how) {
    case Ending::kSegfault: raise(SIGSEGV); break;
    case Ending::kAbort: std::abort();
    case Ending::kExit3: std::exit(3);
    case Ending::kForgedReply: {
      const kit::wire::ReplyHeader done{kit::wire::kReplyMagic, kit::wire::Status::Ok, 0, 0, 0};
      send(kit::wire::kSocketFd, &done, sizeof(done), MSG_NOSIGNAL);
      break;
    }
  }
}

int runner_process_id() { return static_cast<int>(getpid()); }

int judge_variables_seen() {
  int seen = 0;
  for (const char* name : {"KIT_RESULTS", "KIT_SEED", "KIT_PARAMS"}) seen += std::getenv(name) != nullptr;
  return seen;
}

int number_in(const char* variable) {
  const char* said = std::getenv(variable);
  return said == nullptr ? -1 : std::atoi(said);
}

int prefix_says() { return number_in("PREFIX_SAYS"); }

int tool_says() { return number_in("NV_TOOL_SAYS"); }

struct Counter {
  int next;
  int step;
};

Counter* make_counter(const CounterSetup& setup) {
  int start = setup.start;
  for (int i = 0; i < setup.extras; ++i) start += setup.h_extras[i];
  return new Counter{start, setup.step};
}

int count_up(Counter* counter) {
  const int value = counter->next;
  counter->next += counter->step;
  return value;
}

void end_counter(Counter* counter) { delete counter; }

namespace {

std::set<float*>& floats_allocated() {
  static std::set<float*> allocated;
  return allocated;
}

}  // namespace

float* allocate_floats(std::size_t count) {
  if (count == 0) return nullptr;
  float* h_floats = new float[count];
  floats_allocated().insert(h_floats);
  return h_floats;
}

void free_floats(float* h_floats) {
  if (floats_allocated().erase(h_floats) == 0)
    throw std::runtime_error("free_floats was given a pointer allocate_floats never returned");
  delete[] h_floats;
}

void add_to_shared(float* h_values, int n, float amount) {
  for (int i = 0; i < n; ++i) h_values[i] += amount;
}

bool same_place(const float* h_a, const float* h_b) { return h_a == h_b; }

bool on_legacy_stream(cudaStream_t stream) { return stream == nullptr; }
