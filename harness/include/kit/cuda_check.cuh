// Error checking for CUDA calls and kernel launches.
//
// A failed call throws kit::CudaError carrying the call text, file and line, so
// doctest reports it as a failure of the current test case and the run goes on.
// Nothing here ends the process.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace kit {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);

inline void check_cuda(cudaError_t error, const char* call, const char* file, int line) {
  if (error != cudaSuccess) throw_cuda_error(error, call, file, line);
}

}  // namespace kit

// Wrap every CUDA runtime call: CUDA_CHECK(cudaMalloc(&d_x, bytes));
#define CUDA_CHECK(call) ::kit::check_cuda((call), #call, __FILE__, __LINE__)

// Put right after every kernel launch. A launch reports bad configurations
// (too many threads per block, too much shared memory) only through
// cudaGetLastError; faults inside the kernel surface at the next synchronization.
#define CUDA_CHECK_LAUNCH() ::kit::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
