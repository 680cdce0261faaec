// The judge's side of passing a cuBLAS handle to the student's code (kit/remote.hpp): what the
// runner's handle must copy from the judge's. Included by the generated proxies of a lab whose
// header takes a cublasHandle_t; such a lab's tests link cuBLAS.
#pragma once

#include <cublas_v2.h>

#include "kit/cublas.hpp"
#include "kit/remote.hpp"

namespace kit::remote {

inline Call& pass_blas(Call& call, cublasHandle_t handle, const char* parameter) {
  cudaStream_t stream = nullptr;
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  CUBLAS_CHECK(cublasGetStream(handle, &stream));
  CUBLAS_CHECK(cublasGetMathMode(handle, &mode));
  return call.blas(handle, stream, static_cast<int>(mode), parameter);
}

}  // namespace kit::remote
