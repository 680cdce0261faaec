// Device memory followed by a poisoned guard zone: how the tests catch a kernel
// that writes past the end of its output, or reads past the end of an input and
// puts what it read into a result.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "kit/check.hpp"
#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"
#include "kit/poison.hpp"

namespace kit {

// `count` elements of T in device memory and, right after them in the same
// allocation, `guard` more, all holding the poison pattern (NaN for floats).
// As an output: a kernel handed data() and count must leave the guard as it
// found it, which expect_guard_untouched checks. As an input (made from host
// values): a kernel that reads past the end and uses what it read turns a
// result into NaN, which the comparison with the reference catches.
// The guard must be deeper than the farthest a wrong kernel is likely to reach
// (a block's or a tile's worth of elements past the end, or a row of them): one
// that reaches past the guard writes memory the test does not see, or faults.
// compute-sanitizer tests use plain DeviceBuffers instead: its memcheck tool
// sees an access past the end only when nothing is allocated there.
template <class T>
class GuardedBuffer {
 public:
  GuardedBuffer(std::size_t count, std::size_t guard) : count_(count), buffer_(count + guard) { buffer_.poison(); }
  GuardedBuffer(const std::vector<T>& values, std::size_t guard) : GuardedBuffer(values.size(), guard) {
    if (!values.empty())
      CUDA_CHECK(cudaMemcpy(buffer_.data(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
  }

  T* data() { return buffer_.data(); }
  const T* data() const { return buffer_.data(); }
  std::size_t size() const { return count_; }
  std::size_t guard_size() const { return buffer_.size() - count_; }

  // Poison the elements and the guard, before each run of the code under test.
  void poison() { buffer_.poison(); }

  // The `count` elements, without the guard.
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), buffer_.data(), count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

  // Every guard element still holds the poison; a failure lists the first ones
  // that do not, by their index from the buffer's start (count and on).
  bool expect_guard_untouched(const CaseContext& context) const {
    std::vector<T> guard(guard_size());
    if (!guard.empty())
      CUDA_CHECK(cudaMemcpy(guard.data(), buffer_.data() + count_, guard.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return kit::expect_guard_untouched(guard, count_, context);
  }

 private:
  std::size_t count_;
  DeviceBuffer<T> buffer_;
};

// An input in device memory between two guard zones of at least `guard` elements, filled with
// `fill` (the poison unless a lab needs a value its result would show): a kernel that reads
// before the input's start or past its end picks up values that are not in it, and its result
// shows them (a NaN in a sum, a count in the wrong bin). The zone before is a whole number of
// 256-byte steps, so data() is aligned as cudaMalloc's memory is. Unlike GuardedBuffer's guard,
// nothing checks these zones afterwards: an input's guard is there to be read, not written.
template <class T>
class GuardedInput {
 public:
  // `count` elements the test writes on the GPU. Until then they hold the poison, where `fill` is
  // the poison (one memset); with another fill, only the guard zones are written.
  GuardedInput(std::size_t count, std::size_t guard, T fill = poison_value<T>())
      : before_(aligned_guard(guard)), count_(count), buffer_(before_ + count + guard) {
    if (is_poison(fill))
      buffer_.poison();
    else
      fill_guards(fill);
  }
  GuardedInput(const std::vector<T>& values, std::size_t guard, T fill = poison_value<T>())
      : before_(aligned_guard(guard)), count_(values.size()), buffer_(before_ + values.size() + guard) {
    fill_guards(fill);
    upload(before_, values.data(), count_);
  }

  T* data() { return buffer_.data() + before_; }
  const T* data() const { return buffer_.data() + before_; }
  std::size_t size() const { return count_; }

 private:
  static std::size_t aligned_guard(std::size_t guard) {
    constexpr std::size_t kStep = 256 / sizeof(T) > 0 ? 256 / sizeof(T) : 1;
    return (guard + kStep - 1) / kStep * kStep;
  }
  std::size_t guard_after() const { return buffer_.size() - before_ - count_; }
  void upload(std::size_t at, const T* values, std::size_t count) {
    if (count > 0) CUDA_CHECK(cudaMemcpy(buffer_.data() + at, values, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void fill_guards(T fill) {
    const std::vector<T> zone(std::max(before_, guard_after()), fill);
    upload(0, zone.data(), before_);
    upload(before_ + count_, zone.data(), guard_after());
  }

  std::size_t before_;
  std::size_t count_;
  DeviceBuffer<T> buffer_;
};

}  // namespace kit
