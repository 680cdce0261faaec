// cuBLAS: errors that carry the call (CUBLAS_CHECK, for tests and for student
// code that calls cuBLAS, as in lab 12), and the tests' one handle per process
// (a second reference and a timing yardstick; student code makes its own).
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
