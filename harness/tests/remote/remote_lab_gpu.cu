// The pretend lab's GPU functions: what remote_lab.hpp declares for the cases that need a GPU.
#include "kit/cuda_check.cuh"
#include "remote_lab.hpp"

namespace {

constexpr int kBlock = 256;

__global__ void add_kernel(float* d_values, int n, float amount) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d_values[i] += amount;
}

}  // namespace

void add_on_stream(float* d_values, int n, float amount, cudaStream_t stream) {
  add_kernel<<<(n + kBlock - 1) / kBlock, kBlock, 0, stream>>>(d_values, n, amount);
  CUDA_CHECK_LAUNCH();
}

float* allocate_pinned_floats(std::size_t count) {
  float* h_floats = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_floats, count * sizeof(float)));
  return h_floats;
}

void free_pinned_floats(float* h_floats) { CUDA_CHECK(cudaFreeHost(h_floats)); }
