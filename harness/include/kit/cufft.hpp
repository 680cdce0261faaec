// cuFFT calls return a cufftResult, not a cudaError_t. Wrap each one:
//   CUFFT_CHECK(cufftExecC2C(plan, d_data, d_data, CUFFT_FORWARD));
// A failure throws kit::CudaError naming the call, file and line, like CUDA_CHECK.
// Student code and tests both use it; a lab that does lists libraries = ["cufft"]
// in its lab.toml.
#pragma once

#include <cufft.h>

#include <string>

#include "kit/cuda_check.cuh"

namespace kit {

inline const char* cufft_result_name(cufftResult result) {
  switch (result) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN (the handle is not a plan)";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED (cuFFT could not allocate device memory)";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE (a null pointer or a bad argument)";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED (the transform failed to launch)";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE (a transform size or batch that cuFFT does not take)";
    default: return "a cuFFT error";
  }
}

inline void check_cufft(cufftResult result, const char* call, const char* file, int line) {
  if (result != CUFFT_SUCCESS)
    throw CudaError(std::string(call) + " failed with " + cufft_result_name(result) + " (code " +
                    std::to_string(static_cast<int>(result)) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace kit

#define CUFFT_CHECK(call) ::kit::check_cufft((call), #call, __FILE__, __LINE__)
