#include "kit/memory_pool.hpp"

#include <cstdint>

namespace kit {

cudaError_t keep_freed_device_memory(bool keep) {
  int device = 0, pools = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // no GPU, so no pool: not an error, and not left for the next call's checks to find
    return cudaSuccess;
  }
  if (error != cudaSuccess || pools == 0) return error;  // no stream-ordered allocator here: nothing to keep
  cudaMemPool_t pool = nullptr;
  std::uint64_t threshold = keep ? UINT64_MAX : 0;
  error = cudaDeviceGetDefaultMemPool(&pool, device);
  if (error == cudaSuccess) error = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (error == cudaSuccess && !keep) error = cudaMemPoolTrimTo(pool, 0);
  return error;
}

}  // namespace kit
