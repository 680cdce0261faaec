#include "kit/random.hpp"

#include <cstdlib>
#include <string>

#include "kit/params.hpp"
#include "kit/results.hpp"

namespace kit {
namespace {

// SplitMix64's finalizer: a cheap, well-mixed hash of a 64-bit counter.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t hash_text(const std::string& text) {
  std::uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

}  // namespace

std::uint64_t run_seed() {
  if (const char* seed = std::getenv("KIT_SEED")) return std::strtoull(seed, nullptr, 10);
  return static_cast<std::uint64_t>(param_int("seed"));
}

Rng Rng::for_case(const std::string& stream) {
  return Rng(mix(run_seed() ^ hash_text(current_case_name() + "/" + stream)));
}

std::uint64_t Rng::bits(std::uint64_t index) const { return mix(seed_ ^ mix(index)); }

std::vector<float> Rng::uniform_floats(std::size_t count, float low, float high) {
  std::vector<float> values(count);
  const double span = static_cast<double>(high) - low;
  for (std::size_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(low + span * static_cast<double>(bits(i) >> 40) * 0x1.0p-24);
  return values;
}

std::vector<double> Rng::uniform_doubles(std::size_t count, double low, double high) {
  std::vector<double> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = low + (high - low) * static_cast<double>(bits(i) >> 11) * 0x1.0p-53;
  return values;
}

std::vector<int> Rng::uniform_ints(std::size_t count, int low, int high) {
  std::vector<int> values(count);
  const std::uint64_t span = static_cast<std::uint64_t>(static_cast<std::int64_t>(high) - low + 1);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<int>(low + static_cast<std::int64_t>(bits(i) % span));
  return values;
}

std::vector<std::uint8_t> Rng::uniform_bytes(std::size_t count) {
  std::vector<std::uint8_t> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<std::uint8_t>(bits(i) >> 56);
  return values;
}

}  // namespace kit
