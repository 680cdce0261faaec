// Work the judge queues on a stream of the runner's ahead of a student's call (Op::Delay): the
// call's input then arrives late on that stream, which only work queued on the same stream sees.
#pragma once

#include <cuda_runtime.h>

namespace kit::runner {

// Queues a kernel on `stream` that holds it up for about `nanoseconds`; throws on a failed launch.
void queue_delay(cudaStream_t stream, unsigned long long nanoseconds);

}  // namespace kit::runner
