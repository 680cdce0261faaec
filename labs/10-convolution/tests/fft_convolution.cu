#include "fft_convolution.cuh"

#include <cstddef>
#include <string>

#include "convolution_reference.hpp"
#include "kit/cuda_check.cuh"

namespace {

void check_cufft(cufftResult result, const char* call, const char* file, int line) {
  if (result != CUFFT_SUCCESS)
    throw kit::CudaError(std::string(call) + " failed with cuFFT error " + std::to_string(static_cast<int>(result)) +
                         " at " + file + ":" + std::to_string(line));
}
#define CUFFT_PEER_CHECK(call) check_cufft((call), #call, __FILE__, __LINE__)

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65536;  // grid-stride loops below cover any count with at most this many blocks

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// The filter's spectrum, computed in double, scaled by 1 / (the transform's size) so that the
// inverse transform needs no scaling of its own, and rounded to float.
__global__ void to_float_spectrum_kernel(const cufftDoubleComplex* in, cufftComplex* out, std::size_t count,
                                         double scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = make_cuComplex(static_cast<float>(in[i].x * scale), static_cast<float>(in[i].y * scale));
}

// spectrum[i] *= filter[i]: the convolution theorem.
__global__ void multiply_spectra_kernel(cufftComplex* spectrum, const cufftComplex* filter, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const cufftComplex a = spectrum[i], b = filter[i];
    spectrum[i] = make_cuComplex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
  }
}

}  // namespace

FftConvolution::FftConvolution(int width, int height, const std::vector<float>& filter, int radius)
    : width_(width),
      height_(height),
      padded_width_(convolution_reference::next_fft_size(width + radius)),
      padded_height_(convolution_reference::next_fft_size(height + radius)),
      padded_(static_cast<std::size_t>(padded_width_) * padded_height_),
      result_(padded_.size()),
      spectrum_(static_cast<std::size_t>(padded_width_ / 2 + 1) * padded_height_),
      filter_spectrum_(spectrum_.size()) {
  const std::size_t real_count = padded_.size(), complex_count = spectrum_.size();
  CUFFT_PEER_CHECK(cufftPlan2d(&forward_, padded_height_, padded_width_, CUFFT_R2C));
  CUFFT_PEER_CHECK(cufftPlan2d(&inverse_, padded_height_, padded_width_, CUFFT_C2R));

  // out(x, y) = sum of f(dx, dy) in(x + dx, y + dy) is the circular convolution of the padded
  // picture with h, where h(-dx, -dy) = f(dx, dy): the filter mirrored, its taps at negative
  // offsets wrapped round to the far end of the array.
  kit::DeviceBuffer<double> d_h(real_count);
  kit::DeviceBuffer<cufftDoubleComplex> d_h_spectrum(complex_count);
  CUDA_CHECK(cudaMemset(d_h.data(), 0, d_h.bytes()));
  const int side = 2 * radius + 1;
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx) {
      const std::size_t row = (padded_height_ - dy) % padded_height_, col = (padded_width_ - dx) % padded_width_;
      const double weight = filter[(dy + radius) * side + dx + radius];
      CUDA_CHECK(cudaMemcpy(d_h.data() + row * padded_width_ + col, &weight, sizeof(double), cudaMemcpyHostToDevice));
    }
  cufftHandle filter_plan = 0;
  CUFFT_PEER_CHECK(cufftPlan2d(&filter_plan, padded_height_, padded_width_, CUFFT_D2Z));
  const cufftResult transformed = cufftExecD2Z(filter_plan, d_h.data(), d_h_spectrum.data());
  cufftDestroy(filter_plan);
  CUFFT_PEER_CHECK(transformed);
  to_float_spectrum_kernel<<<blocks_for(complex_count), kThreads>>>(
      d_h_spectrum.data(), filter_spectrum_.data(), complex_count, 1.0 / static_cast<double>(real_count));
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

FftConvolution::~FftConvolution() {
  cufftDestroy(forward_);
  cufftDestroy(inverse_);
}

void FftConvolution::run(const float* d_in, float* d_out) {
  const std::size_t row_bytes = static_cast<std::size_t>(width_) * sizeof(float);
  const std::size_t padded_row_bytes = static_cast<std::size_t>(padded_width_) * sizeof(float);
  // The picture in the corner of the padded array, zeros to its right and below it (written
  // every run: a transform may use its input array as scratch space).
  CUDA_CHECK(cudaMemcpy2DAsync(padded_.data(), padded_row_bytes, d_in, row_bytes, row_bytes, height_,
                               cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaMemset2DAsync(padded_.data() + width_, padded_row_bytes, 0, padded_row_bytes - row_bytes, height_));
  CUDA_CHECK(cudaMemsetAsync(padded_.data() + static_cast<std::size_t>(height_) * padded_width_, 0,
                             static_cast<std::size_t>(padded_height_ - height_) * padded_row_bytes));
  CUFFT_PEER_CHECK(cufftExecR2C(forward_, padded_.data(), spectrum_.data()));
  multiply_spectra_kernel<<<blocks_for(spectrum_.size()), kThreads>>>(spectrum_.data(), filter_spectrum_.data(),
                                                                      spectrum_.size());
  CUDA_CHECK_LAUNCH();
  CUFFT_PEER_CHECK(cufftExecC2R(inverse_, spectrum_.data(), result_.data()));
  CUDA_CHECK(cudaMemcpy2DAsync(d_out, row_bytes, result_.data(), padded_row_bytes, row_bytes, height_,
                               cudaMemcpyDeviceToDevice));
}
