// Rng's numbers written by the GPU: one thread per element, each computing the
// element from the seed and its index exactly as the CPU does (the generators
// in kit/random.hpp's detail namespace are shared by both).
#include "kit/grid_stride.cuh"
#include "kit/cuda_check.cuh"
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

void fill_uniform_ints(int* d_out, std::size_t count, const Rng& rng, int low, int high) {
  fill(d_out, count, IntElement{rng.seed(), low, detail::int_span(low, high)});
}

void fill_uniform_bytes(std::uint8_t* d_out, std::size_t count, const Rng& rng, int low, int high) {
  detail::check_byte_range(low, high);
  fill(d_out, count, ByteElement{IntElement{rng.seed(), low, detail::int_span(low, high)}});
}

}  // namespace kit
