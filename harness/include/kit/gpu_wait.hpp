// How a process's CUDA waits (for a kernel, a copy, a stream) use the CPU.
//
// CUDA spins by default where a process has fewer contexts than the machine has cores: every
// process waiting on the GPU keeps a core busy. The grader runs several correctness programs at
// once, each a judge and a runner, beside a class's builds, and asks them to block instead
// (KIT_GPU_WAIT=block, which the judge passes on to its runner). Timing runs alone and keeps the
// default: a spinning wait wakes soonest, and the reference is timed the same way.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kit {

// Whether this program runs beside other programs on its GPU: the grader's KIT_GPU_WAIT=block, given to a
// class's correctness runs. Their work holds a fence back as a runner's own does (kit::remote::JudgeAlone
// says what it does about it).
inline bool gpu_shared_with_others() {
  const char* wait = std::getenv("KIT_GPU_WAIT");
  return wait != nullptr && std::strcmp(wait, "block") == 0;
}

// Call before the process's first CUDA call: the flag applies to the context that call makes.
inline void apply_gpu_wait() {
  if (!gpu_shared_with_others()) return;
  const cudaError_t error = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  if (error != cudaSuccess)  // no GPU, say: the first call that needs one says so, and waits spin meanwhile
    std::fprintf(stderr, "note: cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) failed (%s:%d): %s\n", __FILE__,
                 __LINE__, cudaGetErrorString(error));
}

}  // namespace kit
