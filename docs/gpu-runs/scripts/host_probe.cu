// Issue 23: which of a test program's driver calls wait on programs that start and end on another GPU of the host.
//
//   host_probe <GPU measured> <GPU churned> <churning shells>
//
// On the measured GPU it times, 25 times each, what every test program of a class does: a process that starts,
// makes its CUDA context and exits (a runner); cudaIpcOpenMemHandle and cudaIpcCloseMemHandle of a 64 MiB buffer
// another process exported (a runner mapping the judge's buffers); cudaMalloc and cudaFree of 64 MiB (the judge's
// inputs). First with the host quiet, then while <churning shells> start programs on the churned GPU one after
// another (each makes a context, allocates 256 MiB and exits, as a class's programs do). Prints the median and the
// slowest tenth of each, quiet and churned: what grows under churn is what two lanes of a class share. Each
// process sees only the GPU it works on (CUDA_VISIBLE_DEVICES, numbered as nvidia-smi numbers them), as every
// process of a class's lane does.
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kit/cuda_check.cuh"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTimes = 25;
constexpr std::size_t kBufferBytes = 64u << 20;
constexpr std::size_t kChurnBytes = 256u << 20;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Spread {
  double median_ms;
  double p90_ms;
};

Spread spread_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[ms.size() * 9 / 10]};
}

// From here on this process's CUDA sees GPU `gpu` of the host (nvidia-smi's number) alone, as device 0.
void see_only(int gpu) {
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  setenv("CUDA_VISIBLE_DEVICES", std::to_string(gpu).c_str(), 1);
}

// `self` run as `mode` on GPU `gpu` alone, waited for; its exit status.
int run_self(const char* self, const char* mode, int gpu) {
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    see_only(gpu);
    char* argv[] = {const_cast<char*>(self), const_cast<char*>(mode), nullptr};
    execv(self, argv);
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

// A program of a class, as the churn runs it: a context on the one GPU it sees, 256 MiB, exit.
int one_program() {
  void* memory = nullptr;
  CUDA_CHECK(cudaMalloc(&memory, kChurnBytes));
  CUDA_CHECK(cudaMemset(memory, 0, kChurnBytes));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(memory));
  return 0;
}

// A shell that starts programs on `gpu` one after another until killed.
[[noreturn]] void churn(const char* self, int gpu) {
  for (;;) run_self(self, "--program", gpu);
}

// Allocates a buffer on `gpu`, writes its IPC handle to `fd`, and waits to be killed (the judge's side).
[[noreturn]] void export_buffer(int gpu, int fd) {
  see_only(gpu);
  void* memory = nullptr;
  CUDA_CHECK(cudaMalloc(&memory, kBufferBytes));
  cudaIpcMemHandle_t handle;
  CUDA_CHECK(cudaIpcGetMemHandle(&handle, memory));
  if (write(fd, &handle, sizeof(handle)) != static_cast<ssize_t>(sizeof(handle))) _exit(2);
  for (;;) pause();
}

struct Figures {
  Spread start_and_exit, ipc_open, ipc_close, malloc, free;
};

// The five timings on `gpu`, `handle` being another process's buffer there.
Figures measure(const char* self, int gpu, const cudaIpcMemHandle_t& handle) {
  std::vector<double> runs, opens, closes, mallocs, frees;
  for (int i = 0; i < kTimes; ++i) {
    auto start = Clock::now();
    run_self(self, "--context", gpu);
    runs.push_back(ms_since(start));
    void* mapped = nullptr;
    start = Clock::now();
    CUDA_CHECK(cudaIpcOpenMemHandle(&mapped, handle, cudaIpcMemLazyEnablePeerAccess));
    opens.push_back(ms_since(start));
    start = Clock::now();
    CUDA_CHECK(cudaIpcCloseMemHandle(mapped));
    closes.push_back(ms_since(start));
    void* memory = nullptr;
    start = Clock::now();
    CUDA_CHECK(cudaMalloc(&memory, kBufferBytes));
    mallocs.push_back(ms_since(start));
    start = Clock::now();
    CUDA_CHECK(cudaFree(memory));
    frees.push_back(ms_since(start));
  }
  return {spread_of(runs), spread_of(opens), spread_of(closes), spread_of(mallocs), spread_of(frees)};
}

void print_row(const char* what, Spread quiet, Spread churned) {
  std::printf("| %s | %.2f / %.2f | %.2f / %.2f | %.2fx |\n", what, quiet.median_ms, quiet.p90_ms, churned.median_ms,
              churned.p90_ms, churned.median_ms / quiet.median_ms);
}

int probe(const char* self, int measured, int churned, int shells) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) throw std::runtime_error("pipe failed");
  const pid_t exporter = fork();
  if (exporter == 0) {
    close(pipe_ends[0]);
    export_buffer(measured, pipe_ends[1]);
  }
  close(pipe_ends[1]);  // so that an exporter that failed shows as the end of the pipe
  cudaIpcMemHandle_t handle;
  if (read(pipe_ends[0], &handle, sizeof(handle)) != static_cast<ssize_t>(sizeof(handle)))
    throw std::runtime_error("the exporting process sent no IPC handle (its error is above)");
  see_only(measured);
  CUDA_CHECK(cudaFree(nullptr));
  const Figures quiet = measure(self, measured, handle);
  std::vector<pid_t> churners;
  for (int k = 0; k < shells; ++k) {
    const pid_t shell = fork();
    if (shell == 0) churn(self, churned);
    churners.push_back(shell);
  }
  sleep(2);  // the churn under way
  const Figures busy = measure(self, measured, handle);
  for (pid_t shell : churners) kill(shell, SIGKILL);
  for (pid_t shell : churners) waitpid(shell, nullptr, 0);
  kill(exporter, SIGKILL);
  waitpid(exporter, nullptr, 0);
  std::printf("GPU %d measured; %d shells starting programs on GPU %d meanwhile in the second column. "
              "Milliseconds, median / slowest tenth, of %d each:\n\n", measured, shells, churned, kTimes);
  std::printf("| on GPU %d | quiet | churned | median churned / quiet |\n|---|---|---|---|\n", measured);
  print_row("a process that makes its context and exits", quiet.start_and_exit, busy.start_and_exit);
  print_row("cudaIpcOpenMemHandle, 64 MiB", quiet.ipc_open, busy.ipc_open);
  print_row("cudaIpcCloseMemHandle", quiet.ipc_close, busy.ipc_close);
  print_row("cudaMalloc, 64 MiB", quiet.malloc, busy.malloc);
  print_row("cudaFree", quiet.free, busy.free);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2 && std::strcmp(argv[1], "--program") == 0) return one_program();
    if (argc == 2 && std::strcmp(argv[1], "--context") == 0) {
      CUDA_CHECK(cudaFree(nullptr));
      return 0;
    }
    if (argc != 4) {
      std::fprintf(stderr, "usage: host_probe <GPU measured> <GPU churned> <churning shells>\n");
      return 2;
    }
    return probe("/proc/self/exe", std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3]));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
