// Rng's numbers written by the GPU: each element computed from the seed and its
// index exactly as the CPU does (the generators in kit/random.hpp's detail
// namespace are shared by both), by kit::make_on_device's kernel.
#include "kit/device_count.cuh"
#include "kit/random.hpp"

namespace kit {
namespace {

// Element generators as small function objects (a kernel takes no host lambdas); floats are UniformFloatAt.
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

}  // namespace

void fill_uniform_floats(float* d_out, std::size_t count, const Rng& rng, float low, float high) {
  make_on_device(d_out, count, UniformFloatAt(rng, low, high));
}

void fill_uniform_ints(int* d_out, std::size_t count, const Rng& rng, int low, int high) {
  make_on_device(d_out, count, IntElement{rng.seed(), low, detail::int_span(low, high)});
}

void fill_uniform_bytes(std::uint8_t* d_out, std::size_t count, const Rng& rng, int low, int high) {
  detail::check_byte_range(low, high);
  make_on_device(d_out, count, ByteElement{IntElement{rng.seed(), low, detail::int_span(low, high)}});
}

}  // namespace kit
