// The messages between the judge (the test program: checks, timing, results) and the
// runner (the student's compiled code and a dispatcher, in a sandboxed process of its own).
//
// The judge calls a student function by sending a request over a Unix socket (a datagram
// each way): which function, and its arguments in order. Numbers travel by value; device
// buffers travel as CUDA IPC handles (the runner maps the judge's allocation); host
// buffers travel as places in a shared memory arena that the judge fills before the call
// and reads back after it, or, where they lie in host memory both processes map (a memfd
// the judge sends with SCM_RIGHTS: what the student's allocator returned, or a buffer the
// test shares), as a place in that memory, with no copy. Streams travel as the judge's
// stream id and flags (the runner keeps a stream of its own per id), cuBLAS handles as the
// judge's handle and the stream it is bound to, and objects the student's code made as
// numbers the runner handed out. The runner replies once the call is done and, unless the
// call is asynchronous by contract (it takes a stream or a cuBLAS handle) or its host
// results land in shared memory where the judge sees them arrive, once every stream of its
// device is done too; the reply holds the return value or the error text.
//
// Both sides include this file; nothing in it trusts the other side: a reader checks
// every size against the message it came in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace kit::wire {

// The runner's end of the socket and the shared host arena, as the runner inherits them.
constexpr int kSocketFd = 3;
constexpr int kArenaFd = 4;
// A request or reply is one datagram of at most this many bytes (error texts are cut to fit).
constexpr std::size_t kMaxMessage = 1 << 16;
// Host buffers share one arena per runner; a call's buffers are laid out from its start.
constexpr std::size_t kArenaBytes = std::size_t{16} << 30;  // sparse: only what a call uses is memory
constexpr std::size_t kArenaAlignment = 256;

constexpr std::uint32_t kRequestMagic = 0x4b495452;  // "KITR"
constexpr std::uint32_t kReplyMagic = 0x4b495450;    // "KITP"

enum class Op : std::uint32_t {
  Call = 1,         // call function `function` with the arguments that follow
  Forget = 2,       // a test case ended: unmap every device buffer, destroy every stream and cuBLAS handle
  Synchronize = 3,  // a StreamArg: wait for its stream (id 0: for the whole device)
  Delay = 4,        // a StreamArg, then nanoseconds (u64): queue a kernel that holds the stream up that long
  Copy = 5,         // a StreamArg, a DeviceArg to, a DeviceArg from, bytes (u64): queue a device copy
  Share = 6,        // a ShareArg, with the memfd of host memory the test shares: map it
  Unshare = 7,      // an id (u64): unmap that shared host memory
  KeepPool = 8,     // a u8: 1 as a timing starts, 0 as it ends (kit::keep_freed_device_memory)
};

enum class Status : std::uint32_t { Ok = 0, Error = 1 };

enum class ArgKind : std::uint8_t {
  Value = 1,   // a number or a small struct, by value: a size byte, then the bytes
  Device = 2,  // a pointer into device memory: DeviceArg
  Host = 3,    // a pointer to host memory in the arena: HostArg
  Null = 4,    // a null pointer
  Stream = 5,  // a cudaStream_t: StreamArg
  Blas = 6,    // a cublasHandle_t: BlasArg
  Object = 7,  // an object the student's code made and the runner numbered: its id (u64)
  Shared = 8,  // a pointer into host memory both processes map: SharedArg
  Allocation = 9,  // the memfd sent with the request mirrors what the student's allocator returns: AllocationArg
};

struct DeviceArg {
  unsigned char handle[64];         // cudaIpcMemHandle_t of the allocation
  std::uint64_t buffer_id;          // the judge's unique id of the allocation
  std::uint64_t judge_base;         // where the allocation starts in the judge
  std::uint64_t allocation_bytes;   // its size
  std::uint64_t offset;             // the pointer's offset into it
};

struct HostArg {
  std::uint64_t offset;  // into the arena
  std::uint64_t bytes;
};

// The judge's stream: cudaStreamGetId (unique for the judge's life) and cudaStreamGetFlags.
struct StreamArg {
  std::uint64_t id;  // 0: the legacy default stream
  std::uint32_t flags;
  std::uint32_t reserved;
};

// The judge's cuBLAS handle (its value: the runner keeps one handle per value until the case ends),
// the stream it is bound to and its math mode, both set on the runner's handle before each call.
struct BlasArg {
  std::uint64_t handle;
  StreamArg stream;
  std::uint32_t math_mode;
  std::uint32_t reserved;
};

struct SharedArg {
  std::uint64_t id;      // the shared memory's, drawn by the judge
  std::uint64_t offset;  // the pointer's offset into it
  std::uint64_t bytes;   // what the parameter's count covers from there (0: not counted)
};

// Host memory the test shares with the runner (Op::Share), or the mirror of an allocation of the
// student's (ArgKind::Allocation): the memfd sent with the request holds `bytes` bytes.
struct ShareArg {
  std::uint64_t id;
  std::uint64_t bytes;
  std::uint32_t page_locked;  // the runner registers its mapping with cudaHostRegister too
  std::uint32_t reserved;
};
using AllocationArg = ShareArg;  // page_locked unused: the runner finds out from the student's pointer

// What the runner answers a call of the student's allocator.
struct AllocationReply {
  std::uint64_t id;           // 0: the allocator returned null
  std::uint32_t page_locked;  // whether the student's memory was page-locked (so the mirror is registered)
  std::uint32_t reserved;
};

struct RequestHeader {
  std::uint32_t magic = kRequestMagic;
  Op op = Op::Call;
  std::uint32_t function = 0;  // index into the lab's table of functions
  std::uint32_t args = 0;
  // Drawn by the judge for each request and echoed in its reply: a reply sent ahead of its request
  // (to stop the judge's clock before the work is done) cannot carry it.
  std::uint64_t nonce = 0;
};

struct ReplyHeader {
  std::uint32_t magic = kReplyMagic;
  Status status = Status::Ok;
  std::uint32_t bytes = 0;  // of the return value (Ok) or the error text (Error) that follows
  std::uint32_t reserved = 0;
  std::uint64_t nonce = 0;  // the request's
};

// Appends plain values to a message.
class Writer {
 public:
  template <class T>
  void put(const T& value) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
    data_.insert(data_.end(), bytes, bytes + sizeof(T));
  }
  void put_bytes(const void* bytes, std::size_t count) {
    const auto* begin = static_cast<const unsigned char*>(bytes);
    data_.insert(data_.end(), begin, begin + count);
  }
  const std::vector<unsigned char>& data() const { return data_; }

 private:
  std::vector<unsigned char> data_;
};

// Reads plain values from a received message, refusing to read past its end.
class Reader {
 public:
  Reader(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}
  template <class T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  const unsigned char* take(std::size_t count) {
    if (count > size_ - position_) throw std::runtime_error("malformed message: it ends early");
    const unsigned char* at = data_ + position_;
    position_ += count;
    return at;
  }
  std::size_t left() const { return size_ - position_; }

 private:
  const unsigned char* data_;
  std::size_t size_;
  std::size_t position_ = 0;
};

}  // namespace kit::wire
