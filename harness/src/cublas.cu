#include "kit/cublas.hpp"

#include <string>

#include "kit/cuda_check.cuh"

namespace kit {

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                    cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

// One handle for the whole process: creating one costs far more than a small
// product. It is never destroyed, because at exit it would be torn down after
// the CUDA runtime it depends on.
cublasHandle_t cublas_handle() {
  static const cublasHandle_t handle = [] {
    cublasHandle_t created = nullptr;
    CUBLAS_CHECK(cublasCreate(&created));
    CUBLAS_CHECK(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH));
    return created;
  }();
  return handle;
}

}  // namespace kit
