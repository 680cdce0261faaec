// Your file for lab 12-libraries: fill in every TODO below (the handout: labs/12-libraries/README.md).
// Only libraries.cu is taken when you are graded: the tests and headers are not yours to change.

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
  // TODO: find this thread's bin and its place k within its spectrum (the
  //       spectra lie one after the other, `bins` values each). Guard the
  //       index: the grid is rounded up to whole blocks. Then write back
  //       scale times the complex product of the response at k and the bin
  //       (cuComplex.h has the complex product for float2 values).
}

// Queues apply_response_kernel over every bin of `spectra` spectra on `stream`.
void launch_apply_response(cufftComplex* d_spectra, std::size_t spectra, int bins, const cufftComplex* d_response,
                           float scale, cudaStream_t stream) {
  // TODO: launch apply_response_kernel on `stream` with enough blocks of
  //       kResponseBlockSize threads for spectra * bins values, then check the
  //       launch. Do not synchronize: the pipeline queues more work behind it.
}

// ===========================================================================
// Part 2: beams with cuBLAS [10 pts]
// ===========================================================================

// All frames in one call: a strided batched matrix product.
void mix_beams(cublasHandle_t handle, const float* d_channels, const float* d_weights, float* d_beams,
               std::size_t frames, int channels, int beams, int n) {
  // TODO: one cublasSgemmStridedBatched call, a batch entry per frame. cuBLAS
  //       reads matrices column-major, and a row-major R x K matrix is, read
  //       column-major, its K x R transpose: find the column-major product
  //       that leaves each frame's row-major beams in place, then its leading
  //       dimensions and the strides from one frame's matrices to the next
  //       (every frame uses the same weights). Check the call.
}

// ===========================================================================
// Part 3: unit RMS with Thrust and CUB [10 pts]
// ===========================================================================

// TODO: the function objects your Thrust and CUB calls need (a square, the
//       first sample of each beam, an RMS from a sum of squares, a division
//       by the RMS of a sample's beam), each with a __host__ __device__ or
//       __device__ call operator.

// Scratch for normalize_beams: what the CUB call inside it asks for.
std::size_t normalize_scratch_bytes(std::size_t count, int n) {
  // TODO: ask CUB how much temporary storage the segmented reduction in
  //       normalize_beams needs (its "query" form: a null temporary-storage
  //       pointer, the same argument types as the real call), check the call,
  //       and return it (at least 1).
  return 1;
}

// Each beam's RMS, then the beam divided by it; all queued on `stream`.
void normalize_beams(float* d_beams, float* d_rms, std::size_t count, int n, void* d_scratch, std::size_t scratch_bytes,
                     cudaStream_t stream) {
  // TODO: 1. The sum of the squares of each beam's samples into d_rms: one
  //          CUB segmented reduction (a segment per beam) on `stream`, with
  //          d_scratch as its temporary storage. (thrust::reduce_by_key
  //          would do it too, but it returns how many segments it found, so
  //          it waits for the GPU: a pipeline must not.)
  //       2. d_rms from sums of squares to RMS values, then every sample
  //          divided by its beam's RMS (0 for a silent beam): Thrust
  //          transforms with an execution policy that runs them on `stream`
  //          and does not wait for them to finish.
}

// ===========================================================================
// Part 4: the pipeline [10 pts, and the 18 performance points]
// ===========================================================================

// TODO: decide what each stream needs to carry a batch through every step
//       (copy in, transform, filter, transform back, mix, normalize, copy
//       out) without waiting for the other streams: its own device buffers,
//       its own cuFFT plans and cuBLAS handle bound to it, its own scratch.

struct Pipeline {
  // TODO: what run_pipeline needs (the sizes, the device copies of the
  //       weights and the response, the per-stream resources), and a
  //       destructor that releases it all: destroy_pipeline deletes the Pipeline.
};

// Sets up setup.streams lanes. [part of the pipeline tests]
Pipeline* create_pipeline(const PipelineSetup& setup) {
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
  return new Pipeline{};
}

// Pushes every frame through the lanes, batch by batch. [part of the pipeline tests]
void run_pipeline(Pipeline* pipeline, const float* h_frames, float* h_beams, float* h_rms, std::size_t frames) {
  // TODO: 1. Split the frames into batches; the last batch may be shorter
  //          than the others, and must be read from and written to the right place.
  //       2. Give the batches to the streams in turn. On a batch's stream,
  //          queue every step without waiting: copy in, forward transform,
  //          your filter (with the 1/n that cuFFT's inverse leaves out),
  //          inverse transform, mix, normalize, copy the beams and the RMS out.
  //       3. Before returning, wait until every stream has finished: the
  //          caller reads the outputs as soon as this function returns.
}

// Releases the pipeline; the Pipeline's destructor does the work.
void destroy_pipeline(Pipeline* pipeline) { delete pipeline; }
