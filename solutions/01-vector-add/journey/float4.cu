// Vector add journey, stretch step: four floats a thread, each input read and the output written as float4s.
//
// The reference gives every element a thread of its own: a warp's load is 32 floats, 128 bytes, one
// instruction. Here a warp's load is 32 float4s, 512 bytes, for the same one instruction: a quarter of the
// loads, stores, index computations and bounds checks, and a quarter of the threads, each with four times the
// bytes in flight. On an H100 that took c = a + b from 0.94 of the device-to-device copy to 1.04 of it, at 2^26
// floats (docs/gpu-runs/scripts/vector_add_probe.cu, 2026-11-27; 12 bytes an element against the copy's 8, so
// the add may pass the copy: reads cost a little less than writes). Timed as graded, in lab 01's timing case: 0.93
// and 1.03 (H100, 2026-11-28, docs/gpu-runs/2026-11-28-h100-journeys.json).
//
// The self-check grades it as a [[right]] variant of the reference (solutions/01-vector-add/hidden.toml): this
// file takes the place of the reference from its kernel on, so every untimed test, the compute-sanitizer one
// included, runs on it. `python3 -m grader journey --lab 01-vector-add` times it beside the reference and the
// copy, in lab 01's own timing case.
#include <cstdint>

// Four elements a thread: thread q adds elements 4q .. 4q + 3 with one 16-byte load from each input and one
// 16-byte store. The thread just past the whole groups of four adds the last n % 4 elements one at a time.
// May assume: a, b and c start on a 16-byte boundary (launch_vector_add checks) and hold n floats.
// Must not: touch any element at index n or beyond; a float4 load of the last, partial group would read
// past the end even though no result uses what it read.
__global__ void vector_add_float4_kernel(const float* a, const float* b, float* c, int n) {
  const int quad = blockIdx.x * blockDim.x + threadIdx.x;
  const int quads = n / 4;  // whole groups of four
  if (quad < quads) {
    const float4 x = reinterpret_cast<const float4*>(a)[quad];
    const float4 y = reinterpret_cast<const float4*>(b)[quad];
    reinterpret_cast<float4*>(c)[quad] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  } else if (quad == quads) {
    for (int i = 4 * quad; i < n; ++i) c[i] = a[i] + b[i];  // 0 to 3 elements
  }
}

// The reference's kernel, one thread per element: for vectors that do not all start on a 16-byte boundary,
// where a float4 load or store would fault.
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Launches vector_add_float4_kernel over n elements of device vectors, a thread for every four; or
// vector_add_kernel where a vector does not start on a 16-byte boundary (what cudaMalloc returns starts on 256
// bytes, but a pointer into the middle of it need not).
void launch_vector_add(const float* d_a, const float* d_b, float* d_c, int n) {
  const auto address = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const bool aligned = (address(d_a) | address(d_b) | address(d_c)) % alignof(float4) == 0;
  // Counted in 64 bits: n + kBlockSize - 1 overflows an int for n near INT_MAX.
  const long long threads = aligned ? (static_cast<long long>(n) + 3) / 4 : n;
  const int blocks = static_cast<int>((threads + kBlockSize - 1) / kBlockSize);
  if (aligned)
    vector_add_float4_kernel<<<blocks, kBlockSize>>>(d_a, d_b, d_c, n);
  else
    vector_add_kernel<<<blocks, kBlockSize>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

// The whole round trip from host arrays, as the reference does it: allocate, copy in, launch, copy out, free.
void vector_add(const float* h_a, const float* h_b, float* h_c, int n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  CUDA_CHECK(cudaMalloc(&d_a, bytes));
  CUDA_CHECK(cudaMalloc(&d_b, bytes));
  CUDA_CHECK(cudaMalloc(&d_c, bytes));
  CUDA_CHECK(cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice));
  launch_vector_add(d_a, d_b, d_c, n);
  CUDA_CHECK(cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_a));
  CUDA_CHECK(cudaFree(d_b));
  CUDA_CHECK(cudaFree(d_c));
}
