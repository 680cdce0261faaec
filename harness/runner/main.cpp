// The runner's entry point: answers the judge's requests until the judge closes the socket.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kit/gpu_wait.hpp"
#include "kit/memory_pool.hpp"
#include "kit/runner.hpp"
#include "stream_work.cuh"

namespace kit::runner {
namespace {

// A device allocation of the judge's, mapped into this process.
struct Mapping {
  void* here;
  std::uint64_t judge_base;
  std::uint64_t bytes;
};

std::unordered_map<std::uint64_t, Mapping>& mappings() {
  static std::unordered_map<std::uint64_t, Mapping> mapped;
  return mapped;
}

std::unordered_map<std::uint64_t, Mapping>::iterator unmap(std::unordered_map<std::uint64_t, Mapping>::iterator at) {
  cudaIpcCloseMemHandle(at->second.here);
  return mappings().erase(at);
}

void unmap_all() {
  while (!mappings().empty()) unmap(mappings().begin());
}

// The judge's allocation `arg` names, mapped here once. An earlier mapping whose range
// overlaps it in the judge is of an allocation the judge has since freed: it goes.
void* map_device(const wire::DeviceArg& arg) {
  auto& mapped = mappings();
  if (auto found = mapped.find(arg.buffer_id); found != mapped.end()) return found->second.here;
  for (auto it = mapped.begin(); it != mapped.end();) {
    const bool overlaps = it->second.judge_base < arg.judge_base + arg.allocation_bytes &&
                          arg.judge_base < it->second.judge_base + it->second.bytes;
    it = overlaps ? unmap(it) : std::next(it);
  }
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, arg.handle, sizeof(handle));
  void* here = nullptr;
  const cudaError_t error = cudaIpcOpenMemHandle(&here, handle, cudaIpcMemLazyEnablePeerAccess);
  if (error != cudaSuccess)
    throw std::runtime_error(std::string("the runner could not map a device buffer of the test's: ") +
                             cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
  mapped.emplace(arg.buffer_id, Mapping{here, arg.judge_base, arg.allocation_bytes});
  return here;
}

// Host memory the judge shares (a memfd it sent): from the student's allocator (`student` is what it
// returned, handed back to the student's free) or the test's own (`student` null).
struct SharedMapping {
  unsigned char* here;
  std::uint64_t bytes;
  void* student;
  bool registered;
};

std::unordered_map<std::uint64_t, SharedMapping>& shared_memory() {
  static std::unordered_map<std::uint64_t, SharedMapping> mapped;
  return mapped;
}

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

// Maps `bytes` of the memfd `fd` (closed here), page-locked where `page_locked`.
SharedMapping map_shared(int fd, std::uint64_t bytes, bool page_locked, void* student) {
  if (fd < 0) throw std::runtime_error("malformed request: shared host memory without its descriptor");
  const std::size_t length = std::max<std::uint64_t>(bytes, 1);
  void* here = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (here == MAP_FAILED)
    throw std::runtime_error(std::string("the runner could not map host memory the test shares: ") +
                             std::strerror(error));
  if (page_locked) {
    const cudaError_t registered = cudaHostRegister(here, length, cudaHostRegisterDefault);
    if (registered != cudaSuccess) {
      munmap(here, length);
      throw std::runtime_error("the runner could not page-lock host memory the test shares: cudaHostRegister: " +
                               cuda_error_text(registered));
    }
  }
  return SharedMapping{static_cast<unsigned char*>(here), bytes, student, page_locked};
}

void unmap_shared(std::uint64_t id) {
  auto& mapped = shared_memory();
  const auto found = mapped.find(id);
  if (found == mapped.end()) throw std::runtime_error("malformed request: no shared host memory of that number");
  if (found->second.registered) cudaHostUnregister(found->second.here);
  munmap(found->second.here, std::max<std::uint64_t>(found->second.bytes, 1));
  mapped.erase(found);
}

// The runner's copies of the judge's streams, by the judge's stream id, until the case ends.
std::unordered_map<std::uint64_t, cudaStream_t>& streams() {
  static std::unordered_map<std::uint64_t, cudaStream_t> made;
  return made;
}

void destroy_streams() {
  for (const auto& [id, stream] : streams()) cudaStreamDestroy(stream);  // released once its work is done
  streams().clear();
}

// Objects the student's functions made, by the number the judge knows them by.
struct Object {
  void* pointer;
  std::string type;
};

std::unordered_map<std::uint64_t, Object>& objects() {
  static std::unordered_map<std::uint64_t, Object> made;
  return made;
}

std::vector<void (*)()>& end_of_case_hooks() {
  static std::vector<void (*)()> hooks;
  return hooks;
}

unsigned char* map_arena() {
  void* arena =
      mmap(nullptr, wire::kArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, wire::kArenaFd, 0);
  if (arena == MAP_FAILED) {
    std::perror("runner: mmap of the judge's host arena");
    return nullptr;
  }
  return static_cast<unsigned char*>(arena);
}

// Whether this process has a GPU to wait for. Where the CUDA runtime finds no device or no driver
// (CI, which tests the split's host half on machines without either), the functions can only have
// used host memory, and cudaDeviceSynchronize would fail every call; any other answer, a real
// device's error included, leaves the wait (and its report) in place.
bool device_present() {
  static const bool present = [] {
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
      cudaGetLastError();  // not left for the next call's checks to find
      return false;
    }
    return error != cudaSuccess || count > 0;
  }();
  return present;
}

void reply(std::uint64_t nonce, wire::Status status, const void* payload, std::size_t bytes) {
  bytes = std::min(bytes, wire::kMaxMessage - sizeof(wire::ReplyHeader));
  wire::Writer out;
  out.put(wire::ReplyHeader{wire::kReplyMagic, status, static_cast<std::uint32_t>(bytes), 0, nonce});
  out.put_bytes(payload, bytes);
  send(wire::kSocketFd, out.data().data(), out.data().size(), MSG_NOSIGNAL);
}

void reply_error(std::uint64_t nonce, const std::string& text) {
  reply(nonce, wire::Status::Error, text.data(), text.size());
}

// One call: the function, then, for a synchronous one, a wait for every stream of the device, so
// that the reply means the work is done (a kernel's fault surfaces here). An asynchronous one (it
// takes a stream, or its host results land where the judge sees them arrive) is answered at once,
// as it returns: the test waits for its work through kit::remote::synchronize.
void call(std::uint64_t nonce, const Function& function, wire::Reader& message, unsigned char* arena, int fd) {
  Arguments arguments(message, arena, fd);
  Result result;
  try {
    function.call(arguments, result);
  } catch (const std::exception& error) {
    return reply_error(nonce, error.what());
  } catch (...) {
    return reply_error(nonce, std::string(function.name) + " threw something that is not a std::exception");
  }
  if (arguments.leaves_work_running())
    return reply(nonce, wire::Status::Ok, result.bytes().data().data(), result.bytes().data().size());
  const cudaError_t error = device_present() ? cudaDeviceSynchronize() : cudaSuccess;
  if (error != cudaSuccess)
    return reply_error(nonce, std::string("after ") + function.name + " returned, waiting for its GPU work failed: " +
                                  cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
                                  "). A kernel it launched read or wrote outside its buffers, or a launch was "
                                  "invalid; compute-sanitizer names the kernel and the line.");
  reply(nonce, wire::Status::Ok, result.bytes().data().data(), result.bytes().data().size());
}

// A wait the judge asks for: the runner's copy of a stream, or (id 0) the whole device.
void synchronize(const wire::StreamArg& arg) {
  if (!device_present()) return;  // no GPU: no work can be running
  const auto found = streams().find(arg.id);
  const cudaError_t error =
      arg.id != 0 && found != streams().end() ? cudaStreamSynchronize(found->second) : cudaDeviceSynchronize();
  if (error != cudaSuccess)
    throw std::runtime_error("waiting for the GPU work your code queued failed: " + cuda_error_text(error) +
                             ". A kernel it launched read or wrote outside its buffers, or a launch was invalid; "
                             "compute-sanitizer names the kernel and the line.");
}

// The device's default memory pool through a timing (kit::keep_freed_device_memory).
void keep_pool(bool keep) {
  const cudaError_t error = kit::keep_freed_device_memory(keep);
  if (error != cudaSuccess)
    throw std::runtime_error(std::string("setting the device's memory pool for ") + (keep ? "a timing" : "after a timing") +
                             " failed: " + cuda_error_text(error));
}

void forget_case() {
  for (void (*forget)() : end_of_case_hooks()) forget();  // handles bound to streams go before the streams
  destroy_streams();
  unmap_all();
}

// One harness request (no function of the student's). `fd`: the descriptor sent with it, taken (set to -1)
// by the request that maps it.
void serve_harness(const wire::RequestHeader& header, wire::Reader& message, int& fd) {
  switch (header.op) {
    case wire::Op::Forget: forget_case(); break;
    case wire::Op::Synchronize: synchronize(message.get<wire::StreamArg>()); break;
    case wire::Op::Delay: {
      const cudaStream_t stream = stream_for(message.get<wire::StreamArg>());
      queue_delay(stream, message.get<std::uint64_t>());
      break;
    }
    case wire::Op::Copy: {
      const cudaStream_t stream = stream_for(message.get<wire::StreamArg>());
      const auto to = message.get<wire::DeviceArg>();
      const auto from = message.get<wire::DeviceArg>();
      const auto bytes = message.get<std::uint64_t>();
      if (to.offset > to.allocation_bytes || bytes > to.allocation_bytes - to.offset ||
          from.offset > from.allocation_bytes || bytes > from.allocation_bytes - from.offset)
        throw std::runtime_error("malformed request: a copy past a buffer's end");
      unsigned char* d_to = static_cast<unsigned char*>(map_device(to)) + to.offset;
      const unsigned char* d_from = static_cast<unsigned char*>(map_device(from)) + from.offset;
      const cudaError_t error = cudaMemcpyAsync(d_to, d_from, bytes, cudaMemcpyDeviceToDevice, stream);
      if (error != cudaSuccess) throw std::runtime_error("the test's copy on a stream failed: " + cuda_error_text(error));
      break;
    }
    case wire::Op::Share: {
      const auto arg = message.get<wire::ShareArg>();
      if (shared_memory().count(arg.id) != 0) throw std::runtime_error("malformed request: shared memory again");
      shared_memory().emplace(arg.id, map_shared(std::exchange(fd, -1), arg.bytes, arg.page_locked != 0, nullptr));
      break;
    }
    case wire::Op::Unshare: unmap_shared(message.get<std::uint64_t>()); break;
    case wire::Op::KeepPool: keep_pool(message.get<std::uint8_t>() != 0); break;
    default: throw std::runtime_error("malformed request: no such operation");
  }
}

void serve(unsigned char* arena) {
  std::vector<unsigned char> buffer(wire::kMaxMessage);
  for (;;) {
    iovec data{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr received{};
    received.msg_iov = &data;
    received.msg_iovlen = 1;
    received.msg_control = control;
    received.msg_controllen = sizeof(control);
    const ssize_t got = recvmsg(wire::kSocketFd, &received, MSG_CMSG_CLOEXEC);
    if (got <= 0) return;  // the judge is done (or gone)
    int fd = -1;  // host memory the judge shares with this request
    for (cmsghdr* c = CMSG_FIRSTHDR(&received); c != nullptr; c = CMSG_NXTHDR(&received, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int)))
        std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
    std::uint64_t nonce = 0;
    try {
      wire::Reader message(buffer.data(), static_cast<std::size_t>(got));
      const auto header = message.get<wire::RequestHeader>();
      nonce = header.nonce;
      if (header.magic != wire::kRequestMagic) throw std::runtime_error("malformed request");
      if (header.op == wire::Op::Call) {
        if (header.function >= kFunctionCount) throw std::runtime_error("malformed request: no such function");
        call(nonce, kFunctions[header.function], message, arena, std::exchange(fd, -1));  // its arguments close it
      } else {
        serve_harness(header, message, fd);
        reply(nonce, wire::Status::Ok, nullptr, 0);
      }
    } catch (const std::exception& error) {
      reply_error(nonce, error.what());
    }
    if (fd >= 0) close(fd);  // sent with a request that had no use for it
  }
}

}  // namespace

Arguments::~Arguments() {
  if (fd_ >= 0) close(fd_);
}

void Arguments::expect(wire::ArgKind kind) {
  if (message_.get<wire::ArgKind>() != kind) throw std::runtime_error("malformed request: an argument's kind");
}

int Arguments::take_fd() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

cudaStream_t Arguments::stream() {
  expect(wire::ArgKind::Stream);
  leaves_work_running_ = true;
  return stream_for(message_.get<wire::StreamArg>());
}

wire::BlasArg Arguments::blas(cudaStream_t* stream) {
  expect(wire::ArgKind::Blas);
  leaves_work_running_ = true;
  const auto arg = message_.get<wire::BlasArg>();
  *stream = stream_for(arg.stream);
  return arg;
}

wire::AllocationArg Arguments::allocation() {
  expect(wire::ArgKind::Allocation);
  return message_.get<wire::AllocationArg>();
}

std::uint64_t Arguments::released() {
  const auto kind = message_.get<wire::ArgKind>();
  if (kind == wire::ArgKind::Null) return 0;
  if (kind != wire::ArgKind::Shared) throw std::runtime_error("malformed request: an allocation to free expected");
  const auto arg = message_.get<wire::SharedArg>();
  if (arg.id == 0 || arg.offset != 0) throw std::runtime_error("malformed request: an allocation to free");
  return arg.id;
}

void* Arguments::raw_object(const char* type, bool release) {
  const auto kind = message_.get<wire::ArgKind>();
  if (kind == wire::ArgKind::Null) return nullptr;
  if (kind != wire::ArgKind::Object) throw std::runtime_error("malformed request: an object expected");
  const auto id = message_.get<std::uint64_t>();
  const auto found = objects().find(id);
  if (found == objects().end() || found->second.type != type)
    throw std::runtime_error(std::string("the test passed a ") + type + "* that no function of yours returned, or one "
                             "that was destroyed already; the runner refuses it");
  void* pointer = found->second.pointer;
  if (release) objects().erase(found);
  return pointer;
}

void* Arguments::raw_pointer(bool writable) {
  switch (message_.get<wire::ArgKind>()) {
    case wire::ArgKind::Null: return nullptr;
    case wire::ArgKind::Shared: {
      const auto arg = message_.get<wire::SharedArg>();
      const auto found = shared_memory().find(arg.id);
      if (found == shared_memory().end() || arg.offset > found->second.bytes ||
          arg.bytes > found->second.bytes - arg.offset)
        throw std::runtime_error("malformed request: a host pointer outside the memory shared with the test");
      // Written where the judge reads it: the judge sees, as it would in one process, whether the
      // results were there when the function returned, so the runner does not wait for them.
      if (writable) leaves_work_running_ = true;
      return found->second.here + arg.offset;
    }
    case wire::ArgKind::Host: {
      const auto arg = message_.get<wire::HostArg>();
      if (arena_ == nullptr || arg.offset > wire::kArenaBytes || arg.bytes > wire::kArenaBytes - arg.offset)
        throw std::runtime_error("malformed request: a host buffer outside the arena");
      return arena_ + arg.offset;
    }
    case wire::ArgKind::Device: {
      const auto arg = message_.get<wire::DeviceArg>();
      if (arg.offset > arg.allocation_bytes) throw std::runtime_error("malformed request: a device pointer");
      return static_cast<unsigned char*>(map_device(arg)) + arg.offset;
    }
    default: throw std::runtime_error("malformed request: a pointer argument expected");
  }
}

void Result::set_object(void* object, const char* type) {
  static std::uint64_t last = 0;
  if (object == nullptr) return set(std::uint64_t{0});
  objects().emplace(++last, Object{object, type});
  set(last);
}

// How many bytes of page-locked memory lie from `allocated` to the end of its allocation, as the driver
// knows it; 0 where the driver does not say (it is found through the runtime: the runner links no libcuda).
std::size_t page_locked_bytes_from(void* allocated) {
  static const auto range_of = [] {
    void* address = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const bool ok = cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &address, 12000, cudaEnableDefault,
                                                     &found) == cudaSuccess &&
                    found == cudaDriverEntryPointSuccess;
    cudaGetLastError();
    return ok ? reinterpret_cast<decltype(&cuPointerGetAttribute)>(address) : nullptr;
  }();
  CUdeviceptr start = 0;
  std::size_t size = 0;
  const auto pointer = reinterpret_cast<CUdeviceptr>(allocated);
  if (range_of == nullptr || range_of(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer) != CUDA_SUCCESS ||
      range_of(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer) != CUDA_SUCCESS || pointer < start)
    return 0;
  return start + size - pointer;
}

void mirror_allocation(Arguments& in, Result& out, void* allocated) {
  const wire::AllocationArg arg = in.allocation();
  const int fd = in.take_fd();
  if (allocated == nullptr) {
    if (fd >= 0) close(fd);
    return out.set(wire::AllocationReply{0, 0, 0});
  }
  // Page-locked where the student's own memory is, so that their copies from the mirror behave as from theirs.
  cudaPointerAttributes attributes{};
  bool page_locked = false;
  if (device_present()) {
    page_locked = cudaPointerGetAttributes(&attributes, allocated) == cudaSuccess &&
                  attributes.type == cudaMemoryTypeHost;
    cudaGetLastError();  // pageable memory is a fact, not an error for the next call to find
  }
  if (shared_memory().count(arg.id) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("malformed request: an allocation's number again");
  }
  // The tests write and read the mirror, not this memory: at least see that it holds what was asked for.
  if (const std::size_t held = page_locked ? page_locked_bytes_from(allocated) : 0; held != 0 && held < arg.bytes) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("your allocator returned page-locked memory of " + std::to_string(held) +
                             " bytes, and the call asked for " + std::to_string(arg.bytes) +
                             " (count elements of their size)");
  }
  shared_memory().emplace(arg.id, map_shared(fd, arg.bytes, page_locked, allocated));
  out.set(wire::AllocationReply{arg.id, page_locked ? 1u : 0u, 0});
}

void free_allocation(Arguments& in, void (*student_free)(void*)) {
  const std::uint64_t id = in.released();
  if (id == 0) return student_free(nullptr);
  const auto found = shared_memory().find(id);
  if (found == shared_memory().end() || found->second.student == nullptr)
    throw std::runtime_error("the test frees memory that your allocator did not return; the runner refuses it");
  void* allocated = found->second.student;
  struct Unmap {  // the mirror goes whether or not the student's free throws
    std::uint64_t id;
    ~Unmap() { unmap_shared(id); }
  } unmap{id};
  student_free(allocated);
}

void at_end_of_case(void (*forget)()) { end_of_case_hooks().push_back(forget); }

cudaStream_t stream_for(const wire::StreamArg& arg) {
  if (arg.id == 0) return nullptr;  // the legacy default stream
  auto& made = streams();
  if (const auto found = made.find(arg.id); found != made.end()) return found->second;
  cudaStream_t stream = nullptr;
  const cudaError_t error = cudaStreamCreateWithFlags(&stream, arg.flags);
  if (error != cudaSuccess)
    throw std::runtime_error("the runner could not make a stream like the test's: cudaStreamCreateWithFlags: " +
                             cuda_error_text(error));
  made.emplace(arg.id, stream);
  return stream;
}

}  // namespace kit::runner

int main() {
  unsigned char* arena = kit::runner::map_arena();
  // The CUDA context before the hello. The judge starts this process as it starts itself, so the two
  // make their contexts at once; and it waits for the hello before it first stops this process, never
  // in the middle of making one. Where there is no GPU, the first call that needs one says so.
  kit::apply_gpu_wait();
  cudaFree(nullptr);
  const char hello = 1;  // the judge reads this process's id from the kernel's credentials on it
  if (send(kit::wire::kSocketFd, &hello, 1, MSG_NOSIGNAL) != 1) {
    std::perror("runner: no judge on the socket (the runner is started by a test program, not by hand)");
    return 2;
  }
  kit::runner::serve(arena);
  kit::runner::unmap_all();
  return 0;
}
