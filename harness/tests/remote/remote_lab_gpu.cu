// The pretend lab's GPU functions: what remote_lab.hpp declares for the cases that need a GPU.
#include "kit/cuda_check.cuh"
#include "remote_lab.hpp"

namespace {

constexpr int kBlock = 256;

__global__ void add_kernel(float* d_values, int n, float amount) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d_values[i] += amount;
}

__global__ void double_kernel(const float* d_in, float* d_out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d_out[i] = 2.0f * d_in[i];
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

void double_values(const float* d_in, float* d_out, int n) {
  double_kernel<<<(n + kBlock - 1) / kBlock, kBlock>>>(d_in, d_out, n);
  CUDA_CHECK_LAUNCH();
}

void double_values_mostly(const float* d_in, float* d_out, int n) {
  static int calls = 0;
  if (++calls % 4 == 0) return;
  double_values(d_in, d_out, n);
}

void scratch_on_device(std::size_t bytes) {
  void* d_scratch = nullptr;
  CUDA_CHECK(cudaMallocAsync(&d_scratch, bytes, 0));
  CUDA_CHECK(cudaMemsetAsync(d_scratch, 0, bytes, 0));
  CUDA_CHECK(cudaFreeAsync(d_scratch, 0));
  CUDA_CHECK(cudaStreamSynchronize(0));
}
