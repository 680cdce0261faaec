// The runner's side of a cuBLAS handle passed by the judge (kit/remote_cublas.hpp): linked into
// the runner only where the lab lets student code use cuBLAS.
#pragma once

#include <cublas_v2.h>

#include "kit/runner.hpp"

namespace kit::runner {

// The runner's handle for the judge's (one per judge handle until the case ends), bound to the
// runner's copy of the judge handle's stream and in its math mode.
cublasHandle_t blas_handle(Arguments& in);

}  // namespace kit::runner
