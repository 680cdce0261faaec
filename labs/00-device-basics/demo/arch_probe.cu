// Lab 00's -arch experiment: which GPU code did nvcc put in this program, and what happens when
// its kernel is launched on this GPU? Build it yourself with different -arch settings (the
// handout gives the commands) and compare what it prints. It stands alone, with nothing of the
// lab's harness, so that one nvcc command builds it.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>

// Writes the architecture the running code was compiled for: __CUDA_ARCH__ is 900 for code
// compiled for sm_90 or compute_90, 750 for compute_75, and so on.
__global__ void probe_kernel(int* arch) {
#ifdef __CUDA_ARCH__
  *arch = __CUDA_ARCH__;
#endif
}

// Prints a CUDA error in words and says whether the call failed.
static bool failed(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return false;
  std::printf("%s failed: %s (%s)\n", what, cudaGetErrorName(error), cudaGetErrorString(error));
  return true;
}

static double launch_ms(int* d_arch, cudaError_t* error) {
  const auto start = std::chrono::steady_clock::now();
  probe_kernel<<<1, 1>>>(d_arch);
  *error = cudaGetLastError();
  if (*error == cudaSuccess) *error = cudaDeviceSynchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int main() {
  cudaDeviceProp prop{};
  if (failed(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
  std::printf("this GPU: %s, compute capability %d.%d (sm_%d%d)\n", prop.name, prop.major, prop.minor, prop.major,
              prop.minor);

  // The context first, so that the first launch below pays only for the kernel's code: loading
  // it, and compiling it from PTX where the program holds no SASS this GPU runs.
  int* d_arch = nullptr;
  if (failed(cudaMalloc(&d_arch, sizeof(int)), "cudaMalloc")) return 1;
  if (failed(cudaMemset(d_arch, 0, sizeof(int)), "cudaMemset")) return 1;
  cudaError_t error = cudaSuccess;
  const double first = launch_ms(d_arch, &error);
  if (failed(error, "the first launch")) return 1;
  const double second = launch_ms(d_arch, &error);
  if (failed(error, "the second launch")) return 1;
  std::printf("first launch and wait: %.3f ms; second: %.3f ms (host clock)\n", first, second);

  int arch = 0;
  if (failed(cudaMemcpy(&arch, d_arch, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy")) return 1;
  std::printf("the kernel ran code compiled for __CUDA_ARCH__ = %d\n", arch);
  cudaFuncAttributes attributes{};
  if (!failed(cudaFuncGetAttributes(&attributes, probe_kernel), "cudaFuncGetAttributes"))
    std::printf("cudaFuncGetAttributes: binaryVersion %d (the SASS it runs), ptxVersion %d (the PTX it came from)\n",
                attributes.binaryVersion, attributes.ptxVersion);
  cudaFree(d_arch);
  return 0;
}
