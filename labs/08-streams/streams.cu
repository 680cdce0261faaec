// Your file for lab 08-streams: fill in every TODO below (the handout: labs/08-streams/README.md).
// Only streams.cu is taken when you are graded: the tests and headers are not yours to change.

#include <algorithm>
#include <climits>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kit/cuda_check.cuh"
#include "streams.cuh"

// Threads per block for the window kernel: a multiple of the 32-thread warp.
constexpr int kWindowBlockSize = 256;
static_assert(kWindowBlockSize % 32 == 0, "a block should be whole warps");

// ===========================================================================
// Part 1: the window [10 pts]
// ===========================================================================

// One thread per complex sample: multiply it by the Hann weight of its place
// j in its signal, w_j = sin^2(pi j / n).
// May assume: d_signals holds `samples` = signals * n complex values (< 2^31).
// Must not: touch any sample at index `samples` or beyond.
__global__ void apply_window_kernel(cufftComplex* d_signals, std::size_t samples, int n) {
  // TODO: find this thread's sample and its place j within its signal (the
  //       signals lie one after the other, n samples each), then scale both
  //       the real and the imaginary part by w_j. Guard the index: the grid
  //       is rounded up to whole blocks.
}

// Queues apply_window_kernel over every sample of `signals` signals on `stream`.
void launch_apply_window(cufftComplex* d_signals, std::size_t signals, int n, cudaStream_t stream) {
  // TODO: launch apply_window_kernel on `stream` (the fourth launch parameter;
  //       the third, dynamic shared memory, is 0) with enough blocks of
  //       kWindowBlockSize threads for signals * n samples, then check the
  //       launch. Do not synchronize: the pipeline queues more work behind it.
}

// ===========================================================================
// Part 2: host memory [5 pts]
// ===========================================================================

// Page-locked host memory for `count` complex samples. A copy engine can read
// and write such memory on its own (direct memory access), which is what lets
// cudaMemcpyAsync return at once and run beside kernels. From ordinary
// (pageable) memory the driver first copies through a staging buffer of its
// own, and the call waits for that.
cufftComplex* allocate_host_samples(std::size_t count) {
  // TODO: allocate page-locked (pinned) host memory for count samples with the
  //       CUDA runtime, check the call, and return it.
  return nullptr;
}

// Frees memory from allocate_host_samples, with the call that matches it.
void free_host_samples(cufftComplex* h_samples) {
  // TODO: free page-locked memory (check the call).
}

// ===========================================================================
// Part 3: the pipeline [55 pts, and the 15 performance points]
// ===========================================================================

// TODO: decide what each stream needs to carry a chunk through all four steps
//       (copy in, window, transform, copy out) without waiting for the other
//       streams: its own device memory and its own cuFFT plan, bound to it.

struct Pipeline {
  // TODO: what run_pipeline needs (the signal length, how many signals a chunk
  //       holds, the per-stream resources), and a destructor that releases it
  //       all: destroy_pipeline deletes the Pipeline.
};

// TODO: (optional) a helper that makes a batched 1D complex-to-complex plan
//       and tells how large a work area it needs.

// Sets up setup.streams lanes within setup.budget_bytes of device memory. [part of the pipeline tests]
Pipeline* create_pipeline(const PipelineSetup& setup) {
  // TODO: 1. Choose the chunk size: the largest number of signals such that
  //          every stream's buffers and cuFFT work area together fit in the
  //          budget. cuFFT may need a work area: ask it how large before you
  //          settle on the chunk size.
  //       2. For each stream: create it (non-blocking, so that nothing on the
  //          legacy default stream serialises it), allocate its device memory,
  //          make its plan and bind the plan to the stream (cufftSetStream).
  //       Allocate everything here; run_pipeline must not allocate.
  return new Pipeline{};
}

// Pushes every signal through the lanes, chunk by chunk. [part of the pipeline tests]
void run_pipeline(Pipeline* pipeline, const cufftComplex* h_in, cufftComplex* h_out, std::size_t signals) {
  // TODO: 1. Split the signals into chunks; the last chunk may be shorter than
  //          the others, and must be read from and written to the right place.
  //       2. Give the chunks to the streams in turn. On a chunk's stream, queue
  //          all four steps without waiting: copy in, window, transform, copy
  //          out. A buffer may be refilled only once everything queued on it
  //          before is done.
  //       3. Before returning, wait until every stream has finished: the caller
  //          reads h_out as soon as this function returns.
}

// Releases the pipeline; the Pipeline's destructor does the work.
void destroy_pipeline(Pipeline* pipeline) { delete pipeline; }
