// Issue 20, vector add: what limits c = a + b against the device-to-device copy that lab 01 takes as its ceiling
// (the reference reached 0.91 of it on an H100, 2026-11-25; the goal is 0.95). Each kernel below adds 2^26 or
// 2^28 floats (as lab 01 counts them, 12 bytes an element against the copy's 8), and the copies are timed in the
// same run: cudaMemcpyAsync, which is lab 01's ceiling, and a copy kernel of float4s. What the kernels vary:
// one element a thread (lab 01's reference, and the students' kernel), four a thread as one float4, a grid-stride
// loop of float4s over a grid of a few blocks an SM, and the same with streaming loads and stores (evict-first,
// __ldcs/__stcs), which keep the output's lines from pushing the inputs' out of L2. Every sum is checked whole.
//
//   bash docs/gpu-runs/scripts/sweeps.sh (builds every probe with the harness, then runs them)
//   ./vector_add_probe [log2 of the length, default 26]
#include "sweep.cuh"

constexpr int kBlock = 256;

__global__ void one_a_thread(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void float4_a_thread(const float4* a, const float4* b, float4* c, int quads) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < quads) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

template <bool STREAMING>
__global__ void float4_grid_stride(const float4* a, const float4* b, float4* c, int quads) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < quads; i += gridDim.x * blockDim.x) {
    const float4 x = STREAMING ? __ldcs(a + i) : a[i];
    const float4 y = STREAMING ? __ldcs(b + i) : b[i];
    const float4 sum = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    if (STREAMING)
      __stcs(c + i, sum);
    else
      c[i] = sum;
  }
}

__global__ void copy_float4(const float4* from, float4* to, int quads) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < quads) to[i] = from[i];
}

__global__ void fill(float* data, std::size_t count, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] = uniform_from(hashed(i, seed));
}

// Adds to *wrong the elements of c that are not exactly a + b (one rounding, the same on any GPU), NaN included.
__global__ void count_wrong_sums(const float* a, const float* b, const float* c, int n, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    mine += !(c[i] == a[i] + b[i]);
  if (mine) atomicAdd(wrong, mine);
}

int main(int argc, char** argv) try {
  const int log2_n = argc > 1 ? std::atoi(argv[1]) : 26;
  if (log2_n < 10 || log2_n > 29) {
    std::fprintf(stderr, "the length is 2^k for k from 10 to 29\n");
    return 2;
  }
  const int n = 1 << log2_n, quads = n / 4;
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  std::printf("%s, %d SMs; c = a + b on 2^%d floats, median of %d runs after %d\n", properties.name,
              properties.multiProcessorCount, log2_n, kRepeats, kWarmup);
  float *a, *b, *c;
  unsigned long long* wrong;
  for (float** p : {&a, &b, &c}) CUDA_CHECK(cudaMalloc(p, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&wrong, sizeof(*wrong)));
  fill<<<1024, kBlock>>>(a, n, 1u);
  fill<<<1024, kBlock>>>(b, n, 2u);
  CUDA_CHECK(cudaGetLastError());

  const double bytes_copied = 8.0 * n, bytes_added = 12.0 * n;
  const double memcpy_ms = median_ms([&] {
    CUDA_CHECK(cudaMemcpyAsync(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice));
  });
  const double memcpy_gb_s = bytes_copied / (memcpy_ms * 1e-3) / 1e9;
  std::printf("%-44s %8.4f ms  %6.0f GB/s  (lab 01's ceiling)\n", "cudaMemcpyAsync, device to device", memcpy_ms,
              memcpy_gb_s);
  const double kernel_copy_ms = median_ms([&] {
    copy_float4<<<(quads + kBlock - 1) / kBlock, kBlock>>>(reinterpret_cast<const float4*>(a),
                                                           reinterpret_cast<float4*>(c), quads);
  });
  std::printf("%-44s %8.4f ms  %6.0f GB/s  %.3f of cudaMemcpyAsync\n", "a copy kernel of float4s", kernel_copy_ms,
              bytes_copied / (kernel_copy_ms * 1e-3) / 1e9, memcpy_ms / kernel_copy_ms);

  const auto report = [&](const char* name, auto launch) {
    CUDA_CHECK(cudaMemset(c, 0xFF, n * sizeof(float)));  // NaN: an element never written is caught
    launch();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemset(wrong, 0, sizeof(*wrong)));
    count_wrong_sums<<<1024, kBlock>>>(a, b, c, n, wrong);
    unsigned long long wrong_sums = 0;
    CUDA_CHECK(cudaMemcpy(&wrong_sums, wrong, sizeof(wrong_sums), cudaMemcpyDeviceToHost));
    const double ms = median_ms(launch);
    const double gb_s = bytes_added / (ms * 1e-3) / 1e9;
    std::printf("%-44s %8.4f ms  %6.0f GB/s  %.3f of cudaMemcpyAsync  %llu wrong\n", name, ms, gb_s, gb_s / memcpy_gb_s,
                wrong_sums);
  };
  const auto* a4 = reinterpret_cast<const float4*>(a);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  auto* c4 = reinterpret_cast<float4*>(c);
  const int few_blocks = properties.multiProcessorCount * (properties.maxThreadsPerMultiProcessor / kBlock);
  report("one element a thread (lab 01's reference)",
         [&] { one_a_thread<<<(n + kBlock - 1) / kBlock, kBlock>>>(a, b, c, n); });
  report("a float4 a thread",
         [&] { float4_a_thread<<<(quads + kBlock - 1) / kBlock, kBlock>>>(a4, b4, c4, quads); });
  report("float4s, grid-stride over a full GPU's blocks",
         [&] { float4_grid_stride<false><<<few_blocks, kBlock>>>(a4, b4, c4, quads); });
  report("the same, streaming loads and stores",
         [&] { float4_grid_stride<true><<<few_blocks, kBlock>>>(a4, b4, c4, quads); });

  for (float* p : {a, b, c}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaFree(wrong));
  return 0;
} catch (const std::exception& error) {
  return failed(error);
}
