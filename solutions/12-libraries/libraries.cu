#include <cuComplex.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/transform.h>
#include <cub/device/device_segmented_reduce.cuh>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "libraries.cuh"

// Threads per block for the filter kernel: a multiple of the 32-thread warp.
constexpr int kResponseBlockSize = 256;
static_assert(kResponseBlockSize % 32 == 0, "a block should be whole warps");

// ===========================================================================
// Part 1: the filter [10 pts]
// ===========================================================================

// One thread per complex bin of every spectrum: multiply it by scale times the
// response at its place k among the spectrum's `bins` bins.
// May assume: count = spectra * bins < 2^31; d_spectra holds count values,
// d_response holds bins values.
// Must not: touch anything at index count or beyond.
__global__ void apply_response_kernel(cufftComplex* d_spectra, std::size_t count, int bins,
                                      const cufftComplex* d_response, float scale) {
  // BEGIN SOLUTION
  // TODO: find this thread's bin and its place k within its spectrum (the
  //       spectra lie one after the other, `bins` values each). Guard the
  //       index: the grid is rounded up to whole blocks. Then write back
  //       scale times the complex product of the response at k and the bin
  //       (cuComplex.h has the complex product for float2 values).
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  // count < 2^31, so 32-bit arithmetic is exact here (and much cheaper than a 64-bit modulo).
  const cufftComplex product = cuCmulf(d_response[i % static_cast<unsigned>(bins)], d_spectra[i]);
  d_spectra[i] = make_cuFloatComplex(scale * cuCrealf(product), scale * cuCimagf(product));
  // END SOLUTION
}

// Queues apply_response_kernel over every bin of `spectra` spectra on `stream`.
void launch_apply_response(cufftComplex* d_spectra, std::size_t spectra, int bins, const cufftComplex* d_response,
                           float scale, cudaStream_t stream) {
  // BEGIN SOLUTION
  // TODO: launch apply_response_kernel on `stream` with enough blocks of
  //       kResponseBlockSize threads for spectra * bins values, then check the
  //       launch. Do not synchronize: the pipeline queues more work behind it.
  const std::size_t count = spectra * static_cast<std::size_t>(bins);
  const unsigned blocks = static_cast<unsigned>((count + kResponseBlockSize - 1) / kResponseBlockSize);
  apply_response_kernel<<<blocks, kResponseBlockSize, 0, stream>>>(d_spectra, count, bins, d_response, scale);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ===========================================================================
// Part 2: beams with cuBLAS [10 pts]
// ===========================================================================

// All frames in one call: a strided batched matrix product.
void mix_beams(cublasHandle_t handle, const float* d_channels, const float* d_weights, float* d_beams,
               std::size_t frames, int channels, int beams, int n) {
  // BEGIN SOLUTION
  // TODO: one cublasSgemmStridedBatched call, a batch entry per frame. cuBLAS
  //       reads matrices column-major, and a row-major R x K matrix is, read
  //       column-major, its K x R transpose: find the column-major product
  //       that leaves each frame's row-major beams in place, then its leading
  //       dimensions and the strides from one frame's matrices to the next
  //       (every frame uses the same weights). Check the call.
  const float one = 1.0f, zero = 0.0f;
  // Row-major beams_f (M x n) = weights (M x C) * channels_f (C x n). Read column-major,
  // each of these is its transpose, so cuBLAS is asked for
  //     beams_f^T (n x M) = channels_f^T (n x C) * weights^T (C x M),
  // with no transposition flags at all.
  CUBLAS_CHECK(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, beams, channels, &one, d_channels, n,
                                         static_cast<long long>(channels) * n, d_weights, channels, 0, &zero, d_beams,
                                         n, static_cast<long long>(beams) * n, static_cast<int>(frames)));
  // END SOLUTION
}

// ===========================================================================
// Part 3: unit RMS with Thrust and CUB [10 pts]
// ===========================================================================

// BEGIN SOLUTION
// TODO: the function objects your Thrust and CUB calls need (a square, the
//       first sample of each beam, an RMS from a sum of squares, a division
//       by the RMS of a sample's beam), each with a __host__ __device__ or
//       __device__ call operator.

struct Square {
  __host__ __device__ float operator()(float value) const { return value * value; }
};

// Beam s starts at sample s * n.
struct BeamStart {
  long long n;
  __host__ __device__ long long operator()(long long beam) const { return beam * n; }
};

struct RmsFromSumOfSquares {
  float n;  // exact: n < 2^24
  __device__ float operator()(float sum) const { return sqrtf(sum / n); }
};

struct DivideByRms {
  const float* rms;
  long long n;
  __device__ float operator()(float sample, long long index) const {
    const float beam_rms = rms[index / n];
    return beam_rms > 0.0f ? sample / beam_rms : 0.0f;
  }
};

// The squares of the samples, made as CUB reads them: no array of squares is ever stored.
static auto squares_of(const float* d_beams) { return thrust::make_transform_iterator(d_beams, Square{}); }
static auto beam_starts(int n) {
  return thrust::make_transform_iterator(thrust::make_counting_iterator<long long>(0), BeamStart{n});
}
// END SOLUTION

// Scratch for normalize_beams: what the CUB call inside it asks for.
std::size_t normalize_scratch_bytes(std::size_t count, int n) {
  // BEGIN SOLUTION
  // TODO: ask CUB how much temporary storage the segmented reduction in
  //       normalize_beams needs (its "query" form: a null temporary-storage
  //       pointer, the same argument types as the real call), check the call,
  //       and return it (at least 1).
  // SKELETON: return 1;
  std::size_t bytes = 0;
  const auto starts = beam_starts(n);
  CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(nullptr, bytes, squares_of(nullptr), static_cast<float*>(nullptr),
                                             static_cast<long long>(count), starts, starts + 1));
  return std::max<std::size_t>(bytes, 1);
  // END SOLUTION
}

// Each beam's RMS, then the beam divided by it; all queued on `stream`.
void normalize_beams(float* d_beams, float* d_rms, std::size_t count, int n, void* d_scratch, std::size_t scratch_bytes,
                     cudaStream_t stream) {
  // BEGIN SOLUTION
  // TODO: 1. The sum of the squares of each beam's samples into d_rms: one
  //          CUB segmented reduction (a segment per beam) on `stream`, with
  //          d_scratch as its temporary storage. (thrust::reduce_by_key
  //          would do it too, but it returns how many segments it found, so
  //          it waits for the GPU: a pipeline must not.)
  //       2. d_rms from sums of squares to RMS values, then every sample
  //          divided by its beam's RMS (0 for a silent beam): Thrust
  //          transforms with an execution policy that runs them on `stream`
  //          and does not wait for them to finish.
  std::size_t bytes = scratch_bytes;
  const auto starts = beam_starts(n);
  CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(d_scratch, bytes, squares_of(d_beams), d_rms,
                                             static_cast<long long>(count), starts, starts + 1, stream));
  const auto on_stream = thrust::cuda::par_nosync.on(stream);
  thrust::transform(on_stream, d_rms, d_rms + count, d_rms, RmsFromSumOfSquares{static_cast<float>(n)});
  const std::size_t samples = count * static_cast<std::size_t>(n);
  thrust::transform(on_stream, d_beams, d_beams + samples, thrust::make_counting_iterator<long long>(0), d_beams,
                    DivideByRms{d_rms, n});
  // END SOLUTION
}

// ===========================================================================
// Part 4: the pipeline [10 pts, and the 18 performance points]
// ===========================================================================

// BEGIN SOLUTION
// TODO: decide what each stream needs to carry a batch through every step
//       (copy in, transform, filter, transform back, mix, normalize, copy
//       out) without waiting for the other streams: its own device buffers,
//       its own cuFFT plans and cuBLAS handle bound to it, its own scratch.

// A lane: one stream and everything only that stream uses. Batch b goes to
// lane b % lanes, and every step of a batch is queued on its lane's stream,
// so a lane's buffers are reused only after the stream has finished copying
// the previous batch out of them: the stream's order is the wait.
struct Lane {
  cudaStream_t stream = nullptr;
  cufftHandle forward = 0, inverse = 0;  // real-to-complex and complex-to-real over a whole batch
  bool has_forward = false, has_inverse = false;
  cublasHandle_t blas = nullptr;
  float* d_frames = nullptr;          // batch x C x n: the frames, then the filtered channels
  cufftComplex* d_spectra = nullptr;  // batch x C x bins
  float* d_beams = nullptr;           // batch x M x n
  float* d_rms = nullptr;             // batch x M
  void* d_scratch = nullptr;
  std::size_t scratch_bytes = 0;
};
// END SOLUTION

struct Pipeline {
  // BEGIN SOLUTION
  // TODO: what run_pipeline needs (the sizes, the device copies of the
  //       weights and the response, the per-stream resources), and a
  //       destructor that releases it all: destroy_pipeline deletes the Pipeline.
  int n = 0, channels = 0, beams = 0, bins = 0;
  std::size_t batch = 0;
  float* d_weights = nullptr;
  cufftComplex* d_response = nullptr;
  std::vector<Lane> lanes;

  ~Pipeline() {
    // Nothing may be released while a stream still uses it. No checks here: a
    // destructor must not throw, and a failed release cannot be undone.
    for (Lane& lane : lanes)
      if (lane.stream != nullptr) cudaStreamSynchronize(lane.stream);
    for (Lane& lane : lanes) {
      if (lane.has_forward) cufftDestroy(lane.forward);
      if (lane.has_inverse) cufftDestroy(lane.inverse);
      if (lane.blas != nullptr) cublasDestroy(lane.blas);
      cudaFree(lane.d_frames);  // cudaFree(nullptr) does nothing
      cudaFree(lane.d_spectra);
      cudaFree(lane.d_beams);
      cudaFree(lane.d_rms);
      cudaFree(lane.d_scratch);
      if (lane.stream != nullptr) cudaStreamDestroy(lane.stream);
    }
    cudaFree(d_weights);
    cudaFree(d_response);
  }
  // END SOLUTION
};

// Sets up setup.streams lanes. [part of the pipeline tests]
Pipeline* create_pipeline(const PipelineSetup& setup) {
  // BEGIN SOLUTION
  // TODO: 1. Copy the weights and the response to the device: every stream
  //          reads the same copy, so it must be complete before any stream
  //          starts (the streams are non-blocking: they do not wait for
  //          work on the legacy default stream).
  //       2. For each stream: create it (non-blocking, so that nothing on the
  //          legacy default stream serialises it); allocate its buffers for
  //          a whole batch; make a real-to-complex and a complex-to-real plan
  //          for batch * C signals of n samples, and bind both to the stream;
  //          create a cuBLAS handle bound to the stream; allocate the scratch
  //          normalize_beams asks for.
  //       Allocate everything here; run_pipeline must not allocate.
  // SKELETON: return new Pipeline{};
  if (setup.samples < 2 || setup.channels < 1 || setup.beams < 1 || setup.streams < 1 || setup.frames_per_batch < 1 ||
      setup.weights == nullptr || setup.response == nullptr)
    throw std::invalid_argument("create_pipeline: a size below its minimum, or no weights or response");
  auto pipeline = std::make_unique<Pipeline>();
  Pipeline& p = *pipeline;
  p.n = setup.samples;
  p.channels = setup.channels;
  p.beams = setup.beams;
  p.bins = setup.samples / 2 + 1;
  p.batch = static_cast<std::size_t>(setup.frames_per_batch);
  const std::size_t n = static_cast<std::size_t>(p.n);
  const std::size_t weights = static_cast<std::size_t>(p.beams) * p.channels;
  CUDA_CHECK(cudaMalloc(&p.d_weights, weights * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(p.d_weights, setup.weights, weights * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMalloc(&p.d_response, p.bins * sizeof(cufftComplex)));
  CUDA_CHECK(cudaMemcpy(p.d_response, setup.response, p.bins * sizeof(cufftComplex), cudaMemcpyHostToDevice));

  const std::size_t signals = p.batch * p.channels;  // one transform per channel of every frame
  const std::size_t beam_count = p.batch * p.beams;
  p.lanes.resize(static_cast<std::size_t>(setup.streams));
  for (Lane& lane : p.lanes) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&lane.d_frames, signals * n * sizeof(float)));
    // A short last batch leaves frames from before in the buffer (at first: these zeros),
    // which the transforms, run over the whole batch, turn into results never copied out.
    CUDA_CHECK(cudaMemsetAsync(lane.d_frames, 0, signals * n * sizeof(float), lane.stream));
    CUDA_CHECK(cudaMalloc(&lane.d_spectra, signals * p.bins * sizeof(cufftComplex)));
    CUDA_CHECK(cudaMalloc(&lane.d_beams, beam_count * n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&lane.d_rms, beam_count * sizeof(float)));
    // cufftPlan1d lays a batch out one signal after the other: n floats apart going in,
    // n/2 + 1 complex values apart coming out (and the reverse for the inverse).
    CUFFT_CHECK(cufftPlan1d(&lane.forward, p.n, CUFFT_R2C, static_cast<int>(signals)));
    lane.has_forward = true;
    CUFFT_CHECK(cufftSetStream(lane.forward, lane.stream));
    CUFFT_CHECK(cufftPlan1d(&lane.inverse, p.n, CUFFT_C2R, static_cast<int>(signals)));
    lane.has_inverse = true;
    CUFFT_CHECK(cufftSetStream(lane.inverse, lane.stream));
    CUBLAS_CHECK(cublasCreate(&lane.blas));
    CUBLAS_CHECK(cublasSetStream(lane.blas, lane.stream));
    lane.scratch_bytes = normalize_scratch_bytes(beam_count, p.n);
    CUDA_CHECK(cudaMalloc(&lane.d_scratch, lane.scratch_bytes));
  }
  // The copies of the weights and the response went through the legacy default stream,
  // which the lanes' streams do not wait for: they must be done before any batch starts.
  CUDA_CHECK(cudaDeviceSynchronize());
  return pipeline.release();
  // END SOLUTION
}

// Pushes every frame through the lanes, batch by batch. [part of the pipeline tests]
void run_pipeline(Pipeline* pipeline, const float* h_frames, float* h_beams, float* h_rms, std::size_t frames) {
  // BEGIN SOLUTION
  // TODO: 1. Split the frames into batches; the last batch may be shorter
  //          than the others, and must be read from and written to the right place.
  //       2. Give the batches to the streams in turn. On a batch's stream,
  //          queue every step without waiting: copy in, forward transform,
  //          your filter (with the 1/n that cuFFT's inverse leaves out),
  //          inverse transform, mix, normalize, copy the beams and the RMS out.
  //       3. Before returning, wait until every stream has finished: the
  //          caller reads the outputs as soon as this function returns.
  Pipeline& p = *pipeline;
  const std::size_t n = static_cast<std::size_t>(p.n);
  const std::size_t in_per_frame = static_cast<std::size_t>(p.channels) * n;
  const std::size_t out_per_frame = static_cast<std::size_t>(p.beams) * n;
  const std::size_t batches = (frames + p.batch - 1) / p.batch;
  for (std::size_t b = 0; b < batches; ++b) {
    Lane& lane = p.lanes[b % p.lanes.size()];
    const std::size_t first = b * p.batch;
    const std::size_t count = std::min(p.batch, frames - first);
    CUDA_CHECK(cudaMemcpyAsync(lane.d_frames, h_frames + first * in_per_frame, count * in_per_frame * sizeof(float),
                               cudaMemcpyHostToDevice, lane.stream));
    // The plans transform a whole batch; for a short last batch the extra signals are
    // stale, each transformed on its own and never copied out.
    CUFFT_CHECK(cufftExecR2C(lane.forward, lane.d_frames, lane.d_spectra));
    launch_apply_response(lane.d_spectra, count * p.channels, p.bins, p.d_response, 1.0f / p.n, lane.stream);
    CUFFT_CHECK(cufftExecC2R(lane.inverse, lane.d_spectra, lane.d_frames));
    mix_beams(lane.blas, lane.d_frames, p.d_weights, lane.d_beams, count, p.channels, p.beams, p.n);
    normalize_beams(lane.d_beams, lane.d_rms, count * p.beams, p.n, lane.d_scratch, lane.scratch_bytes, lane.stream);
    CUDA_CHECK(cudaMemcpyAsync(h_beams + first * out_per_frame, lane.d_beams, count * out_per_frame * sizeof(float),
                               cudaMemcpyDeviceToHost, lane.stream));
    CUDA_CHECK(cudaMemcpyAsync(h_rms + first * p.beams, lane.d_rms, count * p.beams * sizeof(float),
                               cudaMemcpyDeviceToHost, lane.stream));
  }
  for (Lane& lane : p.lanes) CUDA_CHECK(cudaStreamSynchronize(lane.stream));
  // END SOLUTION
}

// Releases the pipeline; the Pipeline's destructor does the work.
void destroy_pipeline(Pipeline* pipeline) { delete pipeline; }
