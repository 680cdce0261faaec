#include "stream_work.cuh"

#include "kit/cuda_check.cuh"

namespace kit::runner {
namespace {

__device__ unsigned long long global_nanoseconds() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// One thread that sleeps in short naps until the time is up: the stream is
// busy, the GPU's SMs are all but idle.
__global__ void delay_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = global_nanoseconds();
  while (global_nanoseconds() - start < nanoseconds) __nanosleep(100000);
}

}  // namespace

void queue_delay(cudaStream_t stream, unsigned long long nanoseconds) {
  delay_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  CUDA_CHECK_LAUNCH();
}

}  // namespace kit::runner
