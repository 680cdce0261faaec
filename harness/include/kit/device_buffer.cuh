// Memory that frees itself: device buffers and pinned host buffers; and a stream that does too.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "kit/cuda_check.cuh"
#include "kit/poison.hpp"

namespace kit {
namespace detail {

// A runner maps the judge's device buffers through CUDA IPC. There the driver maps an allocation of a
// gigabyte or so whose size is not a whole number of 64 KiB in small pages, and every kernel of the
// runner's that streams through it pays for the page-table walks. Measured on an H100 (driver 580,
// docs/gpu-runs/2026-11-26-h100-ipc-pages.md): a kernel reading 1 GiB of an allocation of 1 GiB + 8 KiB
// ran at 2,290 GB/s in the importing process against 3,050 GB/s in its own; lab 05's reference reduction
// took 0.49 ms in the runner against 0.36 ms in one process, reading 2 MiB more from memory a gigabyte
// (an 8-byte page-table entry a 4 KiB page, by Nsight Compute's count). Whole
// 2 MiB pages (the GPU's large page) read at full speed in both; buffers under 2 MiB showed no
// difference and keep their size. So must the buffers of a compute-sanitizer case: memcheck sees an
// access past a buffer's end only where nothing is allocated (docs/adding-a-lab.md).
constexpr std::size_t kLargePageBytes = std::size_t{2} << 20;
inline std::size_t in_whole_large_pages(std::size_t bytes) {
  if (bytes < kLargePageBytes) return bytes;
  return (bytes + kLargePageBytes - 1) / kLargePageBytes * kLargePageBytes;
}

}  // namespace detail

// `count` elements of T in device memory, freed when the buffer goes out of scope.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMalloc(&data_, detail::in_whole_large_pages(bytes())));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);  // no throw from a destructor; a failed free is moot
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), count_(other.count_) {
    other.data_ = nullptr;
    other.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void upload(const std::vector<T>& host) {
    if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    if (count_ > 0) CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  // Fill with the poison pattern (NaN for floating point) so unwritten elements are caught.
  void poison() {
    if (count_ > 0) CUDA_CHECK(cudaMemset(data_, poison_byte<T>(), bytes()));
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// A device buffer that the functions of one set of a timed work share, and that lives as long as
// the last of them (kit::TimedWork::sets_from): they capture it by value.
template <class T>
std::shared_ptr<DeviceBuffer<T>> shared_device_buffer(std::size_t count) {
  return std::make_shared<DeviceBuffer<T>>(count);
}

// Page-locked host memory: the copy engines can read and write it directly, which
// is what lets cudaMemcpyAsync overlap with kernels.
template <class T>
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMallocHost(&data_, count_ * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// A CUDA stream of a test's own, destroyed with it. Non-blocking: work queued on the
// legacy default stream does not wait for it, nor it for that work.
class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace kit
