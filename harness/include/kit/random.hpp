// Deterministic random inputs.
//
// Every test case draws from its own stream, derived from the run's seed and
// the test case's name, so a case gets the same inputs whether it runs alone or
// with the others. The run's seed is $KIT_SEED if set (the grader passes a secret
// one), else the lab's `seed` parameter. Failure messages name it through
// seed_text(), which shows the public seed only: with the secret one and these
// generators, anyone could make every hidden test's inputs.
//
// The numbers are counter-based: element i depends only on the seed and i. So
// large inputs are made on every core at once, and the GPU can write the very
// same numbers straight into device memory (fill_uniform_*, below), which is
// how timing cases give every timed call fresh inputs that the CPU reference
// can make again afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define KIT_HOST_DEVICE __host__ __device__
#else
#define KIT_HOST_DEVICE
#endif

namespace kit {

std::uint64_t run_seed();
// Whether the seed in force is the lab's public one: $KIT_SEED unset, or equal to the lab's `seed`
// parameter. Anything else (the grader's secret seed, or a lab without a public seed) is not shown.
bool seed_is_public();
// The seed as a message names it: "seed 2026" for the public one, else a phrase that does not show it.
// Every message a student may read names the seed this way, never through run_seed().
std::string seed_text();

class Rng {
 public:
  // A stream for the running test case; `stream` tells apart several inputs of one case.
  static Rng for_case(const std::string& stream = "");
  explicit Rng(std::uint64_t seed) : seed_(seed) {}

  std::vector<float> uniform_floats(std::size_t count, float low, float high) const;
  // Element `index` of uniform_floats(count, low, high), whatever the count: for checking an
  // output at a few positions without making the whole input again. Inline (below), like the
  // other _at functions: a timing check makes a gigabyte of them on every core.
  float uniform_float_at(std::size_t index, float low, float high) const;
  std::vector<double> uniform_doubles(std::size_t count, double low, double high) const;
  std::vector<int> uniform_ints(std::size_t count, int low, int high) const;  // inclusive bounds
  int uniform_int_at(std::size_t index, int low, int high) const;             // element `index` of uniform_ints
  std::vector<std::uint8_t> uniform_bytes(std::size_t count) const;
  std::vector<std::uint8_t> uniform_bytes(std::size_t count, int low,
                                          int high) const;                   // inclusive, 0 <= low <= high <= 255
  std::uint8_t uniform_byte_at(std::size_t index, int low, int high) const;  // element `index` of the above
  std::uint64_t seed() const { return seed_; }

 private:
  std::uint64_t seed_;
};

// Inputs for histograms, from the running test case's stream `stream`:
// n copies of one byte drawn from [1, 254] (neither the 0 of a fresh memset nor the 171 of guard
// zones): every thread counts into one bin, the hardest case for atomics.
std::vector<std::uint8_t> one_value_bytes(std::size_t n, const std::string& stream = "value");
// n bytes drawn from `count` random values only: the lanes of a warp share a few bins.
std::vector<std::uint8_t> few_value_bytes(std::size_t n, int count, const std::string& stream = "few");

// The same numbers as Rng's functions of the same name, written by the GPU into
// device memory (queued on the default stream; nothing is synchronized).
void fill_uniform_floats(float* d_out, std::size_t count, const Rng& rng, float low, float high);
void fill_uniform_ints(int* d_out, std::size_t count, const Rng& rng, int low, int high);
void fill_uniform_bytes(std::uint8_t* d_out, std::size_t count, const Rng& rng, int low, int high);

namespace detail {

// SplitMix64's finalizer: a cheap, well-mixed hash of a 64-bit counter.
KIT_HOST_DEVICE inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The bits behind element `index` of the stream `seed`.
KIT_HOST_DEVICE inline std::uint64_t random_bits(std::uint64_t seed, std::uint64_t index) {
  return mix(seed ^ mix(index));
}

// The element generators, shared by the CPU and the GPU so that both give the
// same numbers bit for bit. For floats: the top 24 bits make k in [0, 2^24);
// span * k is exact in double (span, the difference of two floats, has at most
// 25 significant bits for the ranges the tests use) and so is the scaling by
// 2^-24, so a compiler that fuses the multiply and the add changes nothing.
KIT_HOST_DEVICE inline float uniform_float(std::uint64_t bits, float low, double span) {
  return static_cast<float>(low + span * static_cast<double>(bits >> 40) * 0x1.0p-24);
}
KIT_HOST_DEVICE inline int uniform_int(std::uint64_t bits, int low, std::uint64_t span) {
  return static_cast<int>(low + static_cast<std::int64_t>(bits % span));
}
// The number of integers in [low, high].
KIT_HOST_DEVICE inline std::uint64_t int_span(int low, int high) {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(high) - low + 1);
}

// Throws std::invalid_argument unless 0 <= low <= high <= 255.
void check_byte_range(int low, int high);

}  // namespace detail

// Element i of rng.uniform_floats(count, low, high), as a function object that the GPU can call
// too: kit::sums_on_device adds up a generated input with it, element by element, as the CPU
// makes it.
struct UniformFloatAt {
  UniformFloatAt(const Rng& rng, float low, float high)
      : seed(rng.seed()), low(low), span(static_cast<double>(high) - low) {}
  KIT_HOST_DEVICE float operator()(std::size_t i) const {
    return detail::uniform_float(detail::random_bits(seed, i), low, span);
  }
  std::uint64_t seed;
  float low;
  double span;
};
// The _at functions, inline so that a loop over a gigabyte of them compiles into one.
inline float Rng::uniform_float_at(std::size_t index, float low, float high) const {
  return detail::uniform_float(detail::random_bits(seed_, index), low, static_cast<double>(high) - low);
}

inline int Rng::uniform_int_at(std::size_t index, int low, int high) const {
  return detail::uniform_int(detail::random_bits(seed_, index), low, detail::int_span(low, high));
}

inline std::uint8_t Rng::uniform_byte_at(std::size_t index, int low, int high) const {
  detail::check_byte_range(low, high);
  return static_cast<std::uint8_t>(
      detail::uniform_int(detail::random_bits(seed_, index), low, detail::int_span(low, high)));
}

}  // namespace kit
