// Deterministic random inputs.
//
// Every test case draws from its own stream, derived from the run's seed and
// the test case's name, so a case gets the same inputs whether it runs alone or
// with the others. The run's seed is $KIT_SEED if set (the grader passes a secret
// one), else the lab's `seed` parameter; failure messages print it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kit {

std::uint64_t run_seed();

class Rng {
 public:
  // A stream for the running test case; `stream` tells apart several inputs of one case.
  static Rng for_case(const std::string& stream = "");
  explicit Rng(std::uint64_t seed) : seed_(seed) {}

  // Counter-based: element i depends only on the seed and i, so large inputs are
  // fast to make and identical on every machine.
  std::vector<float> uniform_floats(std::size_t count, float low, float high);
  std::vector<double> uniform_doubles(std::size_t count, double low, double high);
  std::vector<int> uniform_ints(std::size_t count, int low, int high);  // inclusive bounds
  std::vector<std::uint8_t> uniform_bytes(std::size_t count);
  std::uint64_t seed() const { return seed_; }

 private:
  std::uint64_t bits(std::uint64_t index) const;
  std::uint64_t seed_;
};

}  // namespace kit
