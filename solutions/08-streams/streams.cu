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
  // BEGIN SOLUTION
  // TODO: find this thread's sample and its place j within its signal (the
  //       signals lie one after the other, n samples each), then scale both
  //       the real and the imaginary part by w_j. Guard the index: the grid
  //       is rounded up to whole blocks.
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= samples) return;
  // samples < 2^31, so 32-bit arithmetic is exact here (and much cheaper than a 64-bit modulo).
  const unsigned j = static_cast<unsigned>(i) % static_cast<unsigned>(n);
  // sinpif(x) = sin(pi x) without rounding pi x first: accurate to an ulp or two.
  const float s = sinpif(static_cast<float>(j) / static_cast<float>(n));
  const float w = s * s;
  cufftComplex value = d_signals[i];
  value.x *= w;
  value.y *= w;
  d_signals[i] = value;
  // END SOLUTION
}

// Queues apply_window_kernel over every sample of `signals` signals on `stream`.
void launch_apply_window(cufftComplex* d_signals, std::size_t signals, int n, cudaStream_t stream) {
  // BEGIN SOLUTION
  // TODO: launch apply_window_kernel on `stream` (the fourth launch parameter;
  //       the third, dynamic shared memory, is 0) with enough blocks of
  //       kWindowBlockSize threads for signals * n samples, then check the
  //       launch. Do not synchronize: the pipeline queues more work behind it.
  const std::size_t samples = signals * static_cast<std::size_t>(n);
  const unsigned blocks = static_cast<unsigned>((samples + kWindowBlockSize - 1) / kWindowBlockSize);
  apply_window_kernel<<<blocks, kWindowBlockSize, 0, stream>>>(d_signals, samples, n);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
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
  // BEGIN SOLUTION
  // TODO: allocate page-locked (pinned) host memory for count samples with the
  //       CUDA runtime, check the call, and return it.
  // SKELETON: return nullptr;
  cufftComplex* h_samples = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_samples, count * sizeof(cufftComplex)));
  return h_samples;
  // END SOLUTION
}

// Frees memory from allocate_host_samples, with the call that matches it.
void free_host_samples(cufftComplex* h_samples) {
  // BEGIN SOLUTION
  // TODO: free page-locked memory (check the call).
  CUDA_CHECK(cudaFreeHost(h_samples));
  // END SOLUTION
}

// ===========================================================================
// Part 3: the pipeline [55 pts, and the 15 performance points]
// ===========================================================================

// BEGIN SOLUTION
// TODO: decide what each stream needs to carry a chunk through all four steps
//       (copy in, window, transform, copy out) without waiting for the other
//       streams: its own device memory and its own cuFFT plan, bound to it.

// A lane: one stream and everything only that stream uses. Chunk c goes to
// lane c % lanes, and every step of a chunk is queued on its lane's stream, so
// a lane's buffer is reused only after the stream has finished copying the
// previous chunk out of it: the stream's order is the wait.
struct Lane {
  cudaStream_t stream = nullptr;
  cufftHandle plan = 0;
  bool has_plan = false;
  cufftComplex* d_chunk = nullptr;  // chunk_signals * n samples, transformed in place
  void* d_work = nullptr;           // cuFFT's work area, when the plan needs one
};
// END SOLUTION

struct Pipeline {
  // BEGIN SOLUTION
  // TODO: what run_pipeline needs (the signal length, how many signals a chunk
  //       holds, the per-stream resources), and a destructor that releases it
  //       all: destroy_pipeline deletes the Pipeline.
  int n = 0;
  std::size_t chunk_signals = 0;
  std::vector<Lane> lanes;

  ~Pipeline() {
    // Nothing may be freed while a stream still uses it. No CUDA_CHECK here: a
    // destructor must not throw, and a failed release cannot be undone.
    for (Lane& lane : lanes)
      if (lane.stream != nullptr) cudaStreamSynchronize(lane.stream);
    for (Lane& lane : lanes) {
      if (lane.has_plan) cufftDestroy(lane.plan);
      cudaFree(lane.d_work);  // cudaFree(nullptr) does nothing
      cudaFree(lane.d_chunk);
      if (lane.stream != nullptr) cudaStreamDestroy(lane.stream);
    }
  }
  // END SOLUTION
};

// BEGIN SOLUTION
// TODO: (optional) a helper that makes a batched 1D complex-to-complex plan
//       and tells how large a work area it needs.

// A plan for `batch` signals of n samples laid out one after the other. cuFFT
// is told not to allocate its work area itself, so that the pipeline can count
// it against the budget; work_bytes receives its size.
static cufftHandle make_plan(int n, int batch, std::size_t* work_bytes) {
  cufftHandle plan = 0;
  CUFFT_CHECK(cufftCreate(&plan));
  try {
    CUFFT_CHECK(cufftSetAutoAllocation(plan, 0));
    int length = n;
    CUFFT_CHECK(cufftMakePlanMany(plan, 1, &length, nullptr, 1, n, nullptr, 1, n, CUFFT_C2C, batch, work_bytes));
  } catch (...) {
    cufftDestroy(plan);
    throw;
  }
  return plan;
}
// END SOLUTION

// Sets up setup.streams lanes within setup.budget_bytes of device memory. [part of the pipeline tests]
Pipeline* create_pipeline(const PipelineSetup& setup) {
  // BEGIN SOLUTION
  // TODO: 1. Choose the chunk size: the largest number of signals such that
  //          every stream's buffers and cuFFT work area together fit in the
  //          budget. cuFFT may need a work area: ask it how large before you
  //          settle on the chunk size.
  //       2. For each stream: create it (non-blocking, so that nothing on the
  //          legacy default stream serialises it), allocate its device memory,
  //          make its plan and bind the plan to the stream (cufftSetStream).
  //       Allocate everything here; run_pipeline must not allocate.
  // SKELETON: return new Pipeline{};
  if (setup.streams < 1 || setup.signal_length < 1)
    throw std::invalid_argument("create_pipeline: streams and signal_length must be at least 1");
  auto pipeline = std::make_unique<Pipeline>();
  pipeline->n = setup.signal_length;
  const std::size_t signal_bytes = static_cast<std::size_t>(setup.signal_length) * sizeof(cufftComplex);
  const std::size_t lane_budget = setup.budget_bytes / static_cast<std::size_t>(setup.streams);

  // Largest chunk whose buffer fits a lane's share; shrink it until the work
  // area cuFFT asks for fits beside it.
  std::size_t chunk = std::min<std::size_t>(lane_budget / signal_bytes, INT_MAX);
  std::size_t work_bytes = 0;
  for (;;) {
    if (chunk == 0) throw std::invalid_argument("create_pipeline: the budget leaves no room for one signal per stream");
    const cufftHandle trial = make_plan(setup.signal_length, static_cast<int>(chunk), &work_bytes);
    CUFFT_CHECK(cufftDestroy(trial));
    const std::size_t needed = chunk * signal_bytes + work_bytes;
    if (needed <= lane_budget) break;
    // Scale the chunk down by how far over the share it is (a work area grows
    // with the batch), and by at least one signal.
    chunk = std::min(chunk - 1, static_cast<std::size_t>(static_cast<double>(chunk) * lane_budget / needed));
  }
  pipeline->chunk_signals = chunk;

  pipeline->lanes.resize(static_cast<std::size_t>(setup.streams));
  for (Lane& lane : pipeline->lanes) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&lane.d_chunk, chunk * signal_bytes));
    std::size_t lane_work_bytes = 0;
    lane.plan = make_plan(setup.signal_length, static_cast<int>(chunk), &lane_work_bytes);
    lane.has_plan = true;
    if (lane_work_bytes > 0) {
      CUDA_CHECK(cudaMalloc(&lane.d_work, lane_work_bytes));
      CUFFT_CHECK(cufftSetWorkArea(lane.plan, lane.d_work));
    }
    CUFFT_CHECK(cufftSetStream(lane.plan, lane.stream));
  }
  return pipeline.release();
  // END SOLUTION
}

// Pushes every signal through the lanes, chunk by chunk. [part of the pipeline tests]
void run_pipeline(Pipeline* pipeline, const cufftComplex* h_in, cufftComplex* h_out, std::size_t signals) {
  // BEGIN SOLUTION
  // TODO: 1. Split the signals into chunks; the last chunk may be shorter than
  //          the others, and must be read from and written to the right place.
  //       2. Give the chunks to the streams in turn. On a chunk's stream, queue
  //          all four steps without waiting: copy in, window, transform, copy
  //          out. A buffer may be refilled only once everything queued on it
  //          before is done.
  //       3. Before returning, wait until every stream has finished: the caller
  //          reads h_out as soon as this function returns.
  const std::size_t n = static_cast<std::size_t>(pipeline->n);
  const std::size_t chunk_signals = pipeline->chunk_signals;
  const std::size_t chunks = (signals + chunk_signals - 1) / chunk_signals;
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    Lane& lane = pipeline->lanes[chunk % pipeline->lanes.size()];
    const std::size_t count = std::min(chunk_signals, signals - chunk * chunk_signals);
    const std::size_t offset = chunk * chunk_signals * n;  // first sample of the chunk
    const std::size_t bytes = count * n * sizeof(cufftComplex);
    CUDA_CHECK(cudaMemcpyAsync(lane.d_chunk, h_in + offset, bytes, cudaMemcpyHostToDevice, lane.stream));
    launch_apply_window(lane.d_chunk, count, pipeline->n, lane.stream);
    // The plan transforms a whole chunk. For a short last chunk the signals
    // past `count` are stale leftovers: each signal is transformed on its own,
    // and those are never copied out, so this costs a little time and nothing else.
    CUFFT_CHECK(cufftExecC2C(lane.plan, lane.d_chunk, lane.d_chunk, CUFFT_FORWARD));
    CUDA_CHECK(cudaMemcpyAsync(h_out + offset, lane.d_chunk, bytes, cudaMemcpyDeviceToHost, lane.stream));
  }
  for (Lane& lane : pipeline->lanes) CUDA_CHECK(cudaStreamSynchronize(lane.stream));
  // END SOLUTION
}

// Releases the pipeline; the Pipeline's destructor does the work.
void destroy_pipeline(Pipeline* pipeline) { delete pipeline; }
