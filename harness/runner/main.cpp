// The runner's entry point: answers the judge's requests until the judge closes the socket.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <string>
#include <unordered_map>
#include <vector>

#include "kit/runner.hpp"

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

// One call: the function, then a wait for every stream of the device, so that the reply
// means the work is done (a kernel's fault surfaces here).
void call(std::uint64_t nonce, const Function& function, wire::Reader& message, unsigned char* arena) {
  Arguments arguments(message, arena);
  Result result;
  try {
    function.call(arguments, result);
  } catch (const std::exception& error) {
    return reply_error(nonce, error.what());
  } catch (...) {
    return reply_error(nonce, std::string(function.name) + " threw something that is not a std::exception");
  }
  const cudaError_t error = device_present() ? cudaDeviceSynchronize() : cudaSuccess;
  if (error != cudaSuccess)
    return reply_error(nonce, std::string("after ") + function.name + " returned, waiting for its GPU work failed: " +
                                  cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
                                  "). A kernel it launched read or wrote outside its buffers, or a launch was "
                                  "invalid; compute-sanitizer names the kernel and the line.");
  reply(nonce, wire::Status::Ok, result.bytes().data().data(), result.bytes().data().size());
}

void serve(unsigned char* arena) {
  std::vector<unsigned char> buffer(wire::kMaxMessage);
  for (;;) {
    const ssize_t got = recv(wire::kSocketFd, buffer.data(), buffer.size(), 0);
    if (got <= 0) return;  // the judge is done (or gone)
    std::uint64_t nonce = 0;
    try {
      wire::Reader message(buffer.data(), static_cast<std::size_t>(got));
      const auto header = message.get<wire::RequestHeader>();
      nonce = header.nonce;
      if (header.magic != wire::kRequestMagic) throw std::runtime_error("malformed request");
      if (header.op == wire::Op::Forget) {
        unmap_all();
        reply(nonce, wire::Status::Ok, nullptr, 0);
      } else if (header.op == wire::Op::Call && header.function < kFunctionCount) {
        call(nonce, kFunctions[header.function], message, arena);
      } else {
        throw std::runtime_error("malformed request: no such function");
      }
    } catch (const std::exception& error) {
      reply_error(nonce, error.what());
    }
  }
}

}  // namespace

void Arguments::expect(wire::ArgKind kind) {
  if (message_.get<wire::ArgKind>() != kind) throw std::runtime_error("malformed request: an argument's kind");
}

void* Arguments::raw_pointer() {
  switch (message_.get<wire::ArgKind>()) {
    case wire::ArgKind::Null: return nullptr;
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

}  // namespace kit::runner

int main() {
  unsigned char* arena = kit::runner::map_arena();
  const char hello = 1;  // the judge reads this process's id from the kernel's credentials on it
  if (send(kit::wire::kSocketFd, &hello, 1, MSG_NOSIGNAL) != 1) {
    std::perror("runner: no judge on the socket (the runner is started by a test program, not by hand)");
    return 2;
  }
  kit::runner::serve(arena);
  kit::runner::unmap_all();
  return 0;
}
