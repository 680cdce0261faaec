#include "kit/cuda_check.cuh"

#include <sstream>

namespace kit {

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  std::ostringstream message;
  message << call << " failed at " << file << ":" << line << ": " << cudaGetErrorName(error) << " ("
          << cudaGetErrorString(error) << ")";
  if (error == cudaErrorIllegalAddress || error == cudaErrorLaunchFailure)
    message << ". A kernel read or wrote outside its buffers; check the bounds guard and the indices"
               " (compute-sanitizer names the kernel and the line).";
  throw CudaError(message.str());
}

}  // namespace kit
