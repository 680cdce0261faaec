#include "kit/random.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kit/parallel.hpp"
#include "kit/params.hpp"
#include "kit/results.hpp"

namespace kit {
namespace {

std::uint64_t hash_text(const std::string& text) {
  std::uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

// Fills values[i] = element(i) for every i, on every core for large counts:
// the timing cases make inputs of a gigabyte again for each output they check.
template <class T, class Element>
std::vector<T> generate(std::size_t count, Element element) {
  constexpr double kPerThread = 1 << 20;  // below this a thread costs more than it saves
  std::vector<T> values(count);
  const std::size_t threads = threads_for(static_cast<double>(count), kPerThread);
  on_threads(threads, [&](std::size_t t) {
    for (std::size_t i = part_begin(count, threads, t), end = part_begin(count, threads, t + 1); i < end; ++i)
      values[i] = element(i);
  });
  return values;
}

}  // namespace

namespace detail {
void check_byte_range(int low, int high) {
  if (!(0 <= low && low <= high && high <= 255))
    throw std::invalid_argument("random bytes need 0 <= low <= high <= 255, not [" + std::to_string(low) + ", " +
                                std::to_string(high) + "]");
}
}  // namespace detail

std::uint64_t run_seed() {
  if (const char* seed = std::getenv("KIT_SEED")) return std::strtoull(seed, nullptr, 10);
  return static_cast<std::uint64_t>(param_int("seed"));
}

bool seed_is_public() {
  const char* seed = std::getenv("KIT_SEED");
  if (seed == nullptr) return true;
  try {
    return has_param("seed") && run_seed() == static_cast<std::uint64_t>(param_int("seed"));
  } catch (const std::exception&) {
    return false;  // an unreadable public seed proves nothing: keep the one in force hidden
  }
}

std::string seed_text() {
  return seed_is_public() ? "seed " + std::to_string(run_seed()) : "the grading seed, not shown";
}

Rng Rng::for_case(const std::string& stream) {
  return Rng(detail::mix(run_seed() ^ hash_text(current_case_name() + "/" + stream)));
}

std::vector<float> Rng::uniform_floats(std::size_t count, float low, float high) const {
  return generate<float>(count, [&](std::size_t i) { return uniform_float_at(i, low, high); });
}

std::vector<double> Rng::uniform_doubles(std::size_t count, double low, double high) const {
  return generate<double>(count, [&](std::size_t i) {
    return low + (high - low) * static_cast<double>(detail::random_bits(seed_, i) >> 11) * 0x1.0p-53;
  });
}

std::vector<int> Rng::uniform_ints(std::size_t count, int low, int high) const {
  return generate<int>(count, [&](std::size_t i) { return uniform_int_at(i, low, high); });
}

std::vector<std::uint8_t> Rng::uniform_bytes(std::size_t count) const {
  return generate<std::uint8_t>(
      count, [&](std::size_t i) { return static_cast<std::uint8_t>(detail::random_bits(seed_, i) >> 56); });
}

std::vector<std::uint8_t> Rng::uniform_bytes(std::size_t count, int low, int high) const {
  detail::check_byte_range(low, high);
  const std::uint64_t span = detail::int_span(low, high);
  return generate<std::uint8_t>(count, [&](std::size_t i) {
    return static_cast<std::uint8_t>(detail::uniform_int(detail::random_bits(seed_, i), low, span));
  });
}

std::vector<std::uint8_t> one_value_bytes(std::size_t n, const std::string& stream) {
  return std::vector<std::uint8_t>(n, static_cast<std::uint8_t>(Rng::for_case(stream).uniform_ints(1, 1, 254)[0]));
}

std::vector<std::uint8_t> few_value_bytes(std::size_t n, int count, const std::string& stream) {
  const std::vector<int> values = Rng::for_case(stream + " values").uniform_ints(count, 0, 255);
  const std::vector<int> picks = Rng::for_case(stream).uniform_ints(n, 0, count - 1);
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(values[picks[i]]);
  return bytes;
}

}  // namespace kit
