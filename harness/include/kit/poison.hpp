// The byte pattern written over outputs before a run, so that elements a
// submission never wrote stand out.
#pragma once

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kit {

// 0xFF bytes make a NaN in float and double, which no arithmetic on finite
// inputs produces. Integers get 0xAB bytes (e.g. -1414812757 as int32), a
// value no lab's test data produces.
template <class T>
constexpr int poison_byte() {
  return std::is_floating_point<T>::value ? 0xFF : 0xAB;
}

template <class T>
T poison_value() {
  T value;
  std::memset(&value, poison_byte<T>(), sizeof(T));
  return value;
}

template <class T>
bool is_poison(T value) {
  const T poison = poison_value<T>();
  return std::memcmp(&value, &poison, sizeof(T)) == 0;
}

template <class T>
std::vector<T> poisoned_vector(std::size_t count) {
  return std::vector<T>(count, poison_value<T>());
}

// `values` followed by `guard` poisoned elements: uploaded as an input, a kernel that reads past its
// end brings the poison into an output; as an output, one that writes past it changes the guard.
template <class T>
std::vector<T> with_guard(std::vector<T> values, std::size_t guard) {
  values.resize(values.size() + guard, poison_value<T>());
  return values;
}

}  // namespace kit
