// Your file for lab 01-vector-add: fill in every TODO below (the handout: labs/01-vector-add/README.md).
// Only vector_add.cu is taken when you are graded: the tests and headers are not yours to change.

#include "kit/cuda_check.cuh"
#include "vector_add.cuh"

// Threads per block: a multiple of the 32-thread warp. Any value from 64 to
// 1024 works; 256 is a common starting point.
constexpr int kBlockSize = 256;

// One thread per element: c[i] = a[i] + b[i].
// May assume: a, b and c point to at least n floats in device memory.
// Must not: touch any element at index n or beyond.
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  // TODO: compute this thread's global index from blockIdx.x, blockDim.x and threadIdx.x,
  //       then write c[i] = a[i] + b[i] only when the index is below n: the grid is
  //       rounded up to whole blocks, so the last block usually has threads past the end.
}

// Launches vector_add_kernel over n elements of device vectors. [tested on its own]
void launch_vector_add(const float* d_a, const float* d_b, float* d_c, int n) {
  // TODO: launch vector_add_kernel with kBlockSize threads per block and enough blocks
  //       to cover all n elements (round the division up), then check the launch with
  //       CUDA_CHECK_LAUNCH().
}

// The whole round trip from host arrays: allocate, copy in, launch, copy out, free.
void vector_add(const float* h_a, const float* h_b, float* h_c, int n) {
  // TODO: 1. cudaMalloc three device vectors of n floats (d_a, d_b, d_c);
  //       2. cudaMemcpy h_a and h_b to the device (cudaMemcpyHostToDevice);
  //       3. call launch_vector_add;
  //       4. cudaMemcpy d_c back into h_c (cudaMemcpyDeviceToHost; this waits for the kernel);
  //       5. cudaFree all three.
  //       Wrap every CUDA call in CUDA_CHECK(...) so a failure names the call and the line.
}
