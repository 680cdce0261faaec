// Rng's numbers written (or added up) by the GPU: each thread computes its
// elements from the seed and their indices exactly as the CPU does (the
// generators in kit/random.hpp's detail namespace are shared by both).
#include "kit/grid_stride.cuh"
#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"
#include "kit/device.hpp"
#include "kit/random.hpp"

namespace kit {
namespace {

template <class T, class Element>
__global__ void fill_kernel(T* out, std::size_t count, Element element) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = element(i);
}

// Element generators as small function objects (a kernel takes no host lambdas).
struct FloatElement {
  std::uint64_t seed;
  float low;
  double span;
  __device__ float operator()(std::size_t i) const {
    return detail::uniform_float(detail::random_bits(seed, i), low, span);
  }
};

struct IntElement {
  std::uint64_t seed;
  int low;
  std::uint64_t span;
  __device__ int operator()(std::size_t i) const {
    return detail::uniform_int(detail::random_bits(seed, i), low, span);
  }
};

struct ByteElement {
  IntElement value;
  __device__ std::uint8_t operator()(std::size_t i) const { return static_cast<std::uint8_t>(value(i)); }
};

// Each thread adds up its elements in double, each warp its threads' sums, then one thread its
// block's warps, in a fixed order: the same inputs give the same sums, bit for bit.
template <class Element>
__global__ void sums_kernel(std::size_t count, Element element, double2* block_sums) {
  double sum = 0.0, abs_sum = 0.0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double value = element(i);
    sum += value;
    abs_sum += fabs(value);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    abs_sum += __shfl_down_sync(0xFFFFFFFFu, abs_sum, offset);
  }
  __shared__ double2 warp_sums[detail::kGridStrideBlock / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = make_double2(sum, abs_sum);
  __syncthreads();
  if (threadIdx.x != 0) return;
  double2 block = make_double2(0.0, 0.0);
  for (int warp = 0; warp < detail::kGridStrideBlock / 32; ++warp) {
    block.x += warp_sums[warp].x;
    block.y += warp_sums[warp].y;
  }
  block_sums[blockIdx.x] = block;
}

template <class T, class Element>
void fill(T* d_out, std::size_t count, Element element) {
  if (count == 0) return;
  fill_kernel<<<detail::grid_for(count), detail::kGridStrideBlock>>>(d_out, count, element);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_uniform_floats(float* d_out, std::size_t count, const Rng& rng, float low, float high) {
  fill(d_out, count, FloatElement{rng.seed(), low, static_cast<double>(high) - low});
}

Sums sum_uniform_floats(std::size_t count, const Rng& rng, float low, float high) {
  if (count == 0) return {};
  const unsigned blocks = detail::grid_for(count);
  DeviceBuffer<double2> block_sums(blocks);
  const FloatElement element{rng.seed(), low, static_cast<double>(high) - low};
  sums_kernel<<<blocks, detail::kGridStrideBlock>>>(count, element, block_sums.data());
  CUDA_CHECK_LAUNCH();
  Sums total;
  for (const double2& block : block_sums.download()) {
    total.sum += block.x;
    total.abs_sum += block.y;
  }
  return total;
}

void fill_uniform_ints(int* d_out, std::size_t count, const Rng& rng, int low, int high) {
  fill(d_out, count, IntElement{rng.seed(), low, detail::int_span(low, high)});
}

void fill_uniform_bytes(std::uint8_t* d_out, std::size_t count, const Rng& rng, int low, int high) {
  detail::check_byte_range(low, high);
  fill(d_out, count, ByteElement{IntElement{rng.seed(), low, detail::int_span(low, high)}});
}

}  // namespace kit
