// Issue 19: what the set-up of labs 08's and 12's timing cases costs, piece by piece. Their cases spend 4.4 to 5.9 s
// (lab 08) and 2.7 to 3.2 s (lab 12) outside their measurements, while the student holds the GPU alone
// (docs/gpu-runs/2026-11-29-h200-all-selfchecks-attacks-273d74a.md), and the case's records do not split it.
//
//   setup_probe
//
// Times, kTimes times each, the pieces those set-ups are made of, at their sizes:
// - host memory shared between judge and runner (kit::remote's make_shared: a memfd mapping), written once, and
//   the same with its pages allocated at once or page-locked before it is written (what might make them cheaper);
// - page-locking it with cudaHostRegister, as the judge and the runner each do (and cudaHostUnregister), with the
//   kernel's ordinary pages and, where the kernel gives shared memory huge pages, with those (MADV_HUGEPAGE);
// - cudaMallocHost, cudaMalloc and cudaMemcpy of a gigabyte;
// - the cuFFT plans of lab 08's stages (1024-point C2C, 131072 signals) and lab 12's (4096-point R2C and C2R, 65536
//   signals), and a cuBLAS handle.
// Prints the median and the slowest of each, in milliseconds.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "kit/cublas.hpp"
#include "kit/cuda_check.cuh"
#include "kit/cufft.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTimes = 5;
constexpr std::size_t kGiB = std::size_t{1} << 30;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// kTimes runs of `set_up` (timed) each followed by `tear_down` (timed apart); prints both rows.
void time_pair(const char* what, const std::function<void()>& set_up, const char* undo,
               const std::function<void()>& tear_down) {
  std::vector<double> made, undone;
  for (int i = 0; i < kTimes; ++i) {
    auto start = Clock::now();
    set_up();
    made.push_back(ms_since(start));
    start = Clock::now();
    tear_down();
    undone.push_back(ms_since(start));
  }
  for (auto* row : {&made, &undone}) std::sort(row->begin(), row->end());
  std::printf("| %s | %.1f | %.1f |\n", what, made[kTimes / 2], made.back());
  if (undo != nullptr) std::printf("| %s | %.1f | %.1f |\n", undo, undone[kTimes / 2], undone.back());
}

// A gigabyte shared the way kit::remote shares host memory with the runner: a memfd, mapped. Its pages are made
// where first touched, or with `allocate_at_once` all in two calls (fallocate, then MAP_POPULATE maps them).
void* map_shared_gigabyte(bool allocate_at_once, bool huge_pages = false) {
  const int fd = memfd_create("setup-probe", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(kGiB)) != 0) throw std::runtime_error("memfd_create failed");
  if (allocate_at_once && fallocate(fd, 0, 0, static_cast<off_t>(kGiB)) != 0)
    throw std::runtime_error("fallocate failed");
  void* memory = mmap(nullptr, kGiB, PROT_READ | PROT_WRITE, MAP_SHARED | (allocate_at_once ? MAP_POPULATE : 0), fd, 0);
  close(fd);
  if (memory == MAP_FAILED) throw std::runtime_error("mmap failed");
  if (huge_pages) madvise(memory, kGiB, MADV_HUGEPAGE);
  return memory;
}

// The same, written once (the test's inputs, or the poison in its outputs).
void* shared_gigabyte(bool allocate_at_once, bool huge_pages = false) {
  void* memory = map_shared_gigabyte(allocate_at_once, huge_pages);
  std::memset(memory, 1, kGiB);
  return memory;
}

std::string first_line_of(const char* path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line.empty() ? "(not there)" : line;
}

void probe() {
  CUDA_CHECK(cudaFree(nullptr));  // the context, made before anything is timed
  std::printf("Shared memory's huge pages (/sys/kernel/mm/transparent_hugepage/shmem_enabled): %s\n\n",
              first_line_of("/sys/kernel/mm/transparent_hugepage/shmem_enabled").c_str());
  std::printf("| piece (a gigabyte where sized) | median ms | slowest ms |\n|---|---|---|\n");

  void* shared = nullptr;
  time_pair("memfd mapping, written once", [&] { shared = shared_gigabyte(false); }, "munmap",
            [&] { munmap(shared, kGiB); });
  // Ways to make the same pages for less: most of the time above is the kernel making a page at each first touch.
  time_pair("memfd mapping, its pages allocated at once (fallocate, MAP_POPULATE), then written",
            [&] { shared = shared_gigabyte(true); }, nullptr, [&] { munmap(shared, kGiB); });
  time_pair("memfd mapping, page-locked (cudaHostRegister) before it is written, then written",
            [&] {
              shared = map_shared_gigabyte(false);
              CUDA_CHECK(cudaHostRegister(shared, kGiB, cudaHostRegisterDefault));
              std::memset(shared, 1, kGiB);
            },
            nullptr, [&] {
              CUDA_CHECK(cudaHostUnregister(shared));
              munmap(shared, kGiB);
            });
  for (const bool huge : {false, true}) {
    shared = shared_gigabyte(false, huge);
    time_pair(huge ? "cudaHostRegister, MADV_HUGEPAGE" : "cudaHostRegister",
              [&] { CUDA_CHECK(cudaHostRegister(shared, kGiB, cudaHostRegisterDefault)); },
              huge ? "cudaHostUnregister, MADV_HUGEPAGE" : "cudaHostUnregister",
              [&] { CUDA_CHECK(cudaHostUnregister(shared)); });
    munmap(shared, kGiB);
  }
  void* pinned = nullptr;
  time_pair("cudaMallocHost", [&] { CUDA_CHECK(cudaMallocHost(&pinned, kGiB)); }, "cudaFreeHost",
            [&] { CUDA_CHECK(cudaFreeHost(pinned)); });
  void* device = nullptr;
  time_pair("cudaMalloc", [&] { CUDA_CHECK(cudaMalloc(&device, kGiB)); }, "cudaFree",
            [&] { CUDA_CHECK(cudaFree(device)); });

  CUDA_CHECK(cudaMallocHost(&pinned, kGiB));
  CUDA_CHECK(cudaMalloc(&device, kGiB));
  std::memset(pinned, 0, kGiB);
  time_pair("cudaMemcpy host to device, page-locked", [&] {
    CUDA_CHECK(cudaMemcpy(device, pinned, kGiB, cudaMemcpyHostToDevice));
  }, nullptr, [] {});
  CUDA_CHECK(cudaFree(device));
  CUDA_CHECK(cudaFreeHost(pinned));

  cufftHandle plan = 0;
  const auto destroy = [&] { CUFFT_CHECK(cufftDestroy(plan)); };
  time_pair("cufftPlan1d 1024 C2C x 131072 (lab 08)", [&] { CUFFT_CHECK(cufftPlan1d(&plan, 1024, CUFFT_C2C, 131072)); },
            "cufftDestroy", destroy);
  time_pair("cufftPlan1d 4096 R2C x 65536 (lab 12)", [&] { CUFFT_CHECK(cufftPlan1d(&plan, 4096, CUFFT_R2C, 65536)); },
            "cufftDestroy", destroy);
  time_pair("cufftPlan1d 4096 C2R x 65536 (lab 12)", [&] { CUFFT_CHECK(cufftPlan1d(&plan, 4096, CUFFT_C2R, 65536)); },
            "cufftDestroy", destroy);
  cublasHandle_t handle = nullptr;
  time_pair("cublasCreate", [&] { CUBLAS_CHECK(cublasCreate(&handle)); }, "cublasDestroy",
            [&] { CUBLAS_CHECK(cublasDestroy(handle)); });
}

}  // namespace

int main() {
  try {
    probe();
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
