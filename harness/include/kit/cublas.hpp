// cuBLAS for the tests (a second reference and a timing yardstick; student code
// never calls it): errors that carry the call, and one handle per process.
// A lab that uses this lists libraries = ["cublas"] in its lab.toml.
#pragma once

#include <cublas_v2.h>

namespace kit {

// Throws kit::CudaError naming the call when cuBLAS reports a failure.
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);

// The process's cuBLAS handle, in plain FP32 math (CUBLAS_DEFAULT_MATH: never
// TensorFloat-32 or BF16x9 emulation, which need an explicit opt-in), on the
// default stream. Made on first use.
cublasHandle_t cublas_handle();

}  // namespace kit

#define CUBLAS_CHECK(call) ::kit::check_cublas((call), #call, __FILE__, __LINE__)
