// Work that arrives late on a stream: the tests queue a delay, then the
// input's copy, then call your function on the same stream. Work queued on that
// stream runs after the input has arrived; work run anywhere else (the legacy
// default stream, a stream of its own) runs before it, on what the buffer held.
#pragma once

#include <cuda_runtime.h>

// Queues a kernel on `stream` that keeps the stream busy for about `milliseconds`.
void queue_delay(cudaStream_t stream, double milliseconds);
