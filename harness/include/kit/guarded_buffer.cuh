// Device memory followed by a poisoned guard zone: how the tests catch a kernel
// that writes past the end of its output, or reads past the end of an input and
// puts what it read into a result.
#pragma once

#include <cstddef>
#include <vector>

#include "kit/check.hpp"
#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"

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

}  // namespace kit
