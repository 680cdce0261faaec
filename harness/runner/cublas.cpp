#include <cublas_v2.h>

#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kit/runner_cublas.hpp"

namespace kit::runner {
namespace {

// By the judge's handle: a handle made per call would cost more than a small product.
std::unordered_map<std::uint64_t, cublasHandle_t>& handles() {
  static std::unordered_map<std::uint64_t, cublasHandle_t> made;
  return made;
}

// At the end of a case: the judge's handles are gone, and a new one may have an old one's value.
void destroy_handles() {
  for (const auto& [judge, handle] : handles()) cublasDestroy(handle);
  handles().clear();
}

[[maybe_unused]] const bool forgotten_at_end_of_case = (at_end_of_case(destroy_handles), true);

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("the runner's copy of the test's cuBLAS handle: ") + what +
                             " failed: " + cublasGetStatusName(status));
}

}  // namespace

cublasHandle_t blas_handle(Arguments& in) {
  cudaStream_t stream = nullptr;
  const wire::BlasArg arg = in.blas(&stream);
  auto found = handles().find(arg.handle);
  if (found == handles().end()) {
    cublasHandle_t handle = nullptr;
    check(cublasCreate(&handle), "cublasCreate");
    found = handles().emplace(arg.handle, handle).first;
  }
  check(cublasSetStream(found->second, stream), "cublasSetStream");
  check(cublasSetMathMode(found->second, static_cast<cublasMath_t>(arg.math_mode)), "cublasSetMathMode");
  return found->second;
}

}  // namespace kit::runner
