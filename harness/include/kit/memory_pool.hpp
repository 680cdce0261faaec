// What the current device's default memory pool does with memory freed into it while a timing runs.
#pragma once

#include <cuda_runtime.h>

namespace kit {

// keep: the default pool of the current device keeps what is freed into it (its release threshold
// at the maximum), so a call that allocates with cudaMallocAsync and frees with cudaFreeAsync gets
// the same memory back the next time. Its default, a threshold of 0, hands the memory back to the
// driver at every synchronization, so each such call maps and unmaps device memory anew: driver
// work that is not the code being timed, and that a busy host slowed 10-20x in lab 06's reference
// (docs/gpu-runs/2026-11-27-h200x4-all-labs-cross-gpu.md). !keep: back to the default, and what the
// pool holds goes back to the driver now, so that free device memory reads as before the timing.
// A machine without a GPU, or a device without the stream-ordered allocator
// (cudaDevAttrMemoryPoolsSupported: some virtual GPUs), has no pool, and is left as it is. Returns
// the first failed CUDA call's error, or cudaSuccess.
cudaError_t keep_freed_device_memory(bool keep);

}  // namespace kit
