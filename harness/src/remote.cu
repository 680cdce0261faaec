#include "kit/remote.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include "kit/cuda_check.cuh"
#include "kit/gpu_wait.hpp"
#include "kit/memory_pool.hpp"
#include "kit/results.hpp"

namespace kit::remote {
namespace {

using Clock = std::chrono::steady_clock;

// How many TimedSections are alive (kit/remote.hpp): while one is, the runner runs only during a call.
int& paused_sections();

// The cores this process may run on (its CPU affinity, which a cluster's allocation sets).
int cores_allowed() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 1;
  return CPU_COUNT(&allowed);
}

// The shared host arena grows in steps of this much, up to what a call needs (see Runner::arena_for).
constexpr std::size_t kArenaStep = std::size_t{64} << 20;

// Variables a CUDA program needs; the runner gets these, the tools' below, and nothing else of the judge's.
// CUDA_DEVICE_ORDER too, so that GPU number d is the same GPU in both processes (a test that passes a
// device number, as lab 00's does, compares the runner's answer with the judge's own for that number).
// KIT_GPU_WAIT too: how the runner's CUDA waits use the CPU, as the judge's (kit/gpu_wait.hpp); and
// CUDA_DEVICE_MAX_CONNECTIONS, the hardware work queues of its context (the grader's judge.py says why).
constexpr const char* kPassedThrough[] = {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                          "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LANG",
                                          "KIT_GPU_WAIT", "CUDA_DEVICE_MAX_CONNECTIONS"};

// What compute-sanitizer, Nsight Compute and Nsight Systems put in a program's environment to follow
// it into the processes it starts: a student who runs one of them on the test program must see their
// own kernels, which run in the runner. A graded judge has none of these: the grader gives it its
// environment, and starts a tool on the runner itself (KIT_RUNNER_PREFIX).
bool is_tool_variable(const std::string& name) {
  for (const char* exact : {"LD_PRELOAD", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"})
    if (name == exact) return true;
  for (const char* prefix : {"NV_", "NSYS_", "COMPUTE_SANITIZER"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> lines_of(const char* text) {
  std::vector<std::string> lines;
  std::istringstream in(text ? text : "");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}


std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                  strsignal(WTERMSIG(status)) + ")";
  const int code = WEXITSTATUS(status);
  if (code > 128 && code < 128 + 65)  // the sandbox reports its child's death by signal N as 128 + N
    return "was killed by signal " + std::to_string(code - 128) + " (" + strsignal(code - 128) + ")";
  return "exited with code " + std::to_string(code);
}

// The most a file of this process may hold (RLIMIT_FSIZE): growing a memfd past it kills the process
// with SIGXFSZ, so the arena and shared host memory stop short of it with a message.
std::size_t file_size_limit() {
  rlimit file_limit{};
  if (getrlimit(RLIMIT_FSIZE, &file_limit) == 0 && file_limit.rlim_cur != RLIM_INFINITY)
    return static_cast<std::size_t>(file_limit.rlim_cur);
  return SIZE_MAX;
}

std::string own_program() {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) throw std::runtime_error("cannot find this test program's own path to start a runner");
  return std::string(self, static_cast<std::size_t>(length));
}

// The runner process, started as the test program starts (start_runner) or at the first call, and
// ended when the test program ends. The twin is a runner of the judge's own (this program, started
// with --kit-twin): it answers every call with an empty kernel, so timing it measures what the path
// between the two processes costs a call, with nothing of the student's in it. Either one makes its
// CUDA context before its first message, the hello: started, it gets on with that while the judge
// goes on, and the judge waits for the hello (ready) only when it first needs the process.
class Runner {
 public:
  static Runner& get() {
    static Runner runner(false);
    return runner;
  }
  static Runner& twin() {
    static Runner runner(true);
    return runner;
  }
  long long calls() const { return calls_; }

  bool started() const { return child_ > 0; }

  void ensure_started() {
    if (started() || !broken_.empty()) return;
    start();
  }

  // Waits, the first time, until the process has started: its hello, after its CUDA context.
  void ready() {
    if (started() && pid_ <= 0) pid_ = hello_pid();
  }

  // Sends a request (`header` and the arguments that follow it), waits for its reply; returns the
  // reply's payload. Throws StudentError.
  // `fd`, where given, goes with the request (SCM_RIGHTS): the memfd of host memory the runner maps.
  std::vector<unsigned char> exchange(wire::RequestHeader header, const wire::Writer& arguments, const char* what,
                                      int fd = -1) {
    ensure_started();
    if (!broken_.empty()) throw StudentError(broken_);
    ready();
    header.nonce = next_nonce();
    wire::Writer request;
    request.put(header);
    request.put_bytes(arguments.data().data(), arguments.data().size());
    iovec data{const_cast<unsigned char*>(request.data().data()), request.data().size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    if (fd >= 0) {
      message.msg_control = control;
      message.msg_controllen = sizeof(control);
      cmsghdr* rights = CMSG_FIRSTHDR(&message);
      rights->cmsg_level = SOL_SOCKET;
      rights->cmsg_type = SCM_RIGHTS;
      rights->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(rights), &fd, sizeof(int));
    }
    if (sendmsg(socket_, &message, MSG_NOSIGNAL) != static_cast<ssize_t>(request.data().size()))
      fail(std::string("sending ") + what);
    ++calls_;
    std::vector<unsigned char> reply(wire::kMaxMessage);
    const ssize_t got = receive(reply);
    if (got <= 0) fail(std::string("running ") + what);
    wire::Reader in(reply.data(), static_cast<std::size_t>(got));
    const auto answer = in.get<wire::ReplyHeader>();
    if (answer.magic != wire::kReplyMagic || answer.bytes != in.left())
      fail(std::string("reading the reply to ") + what + " (the reply is malformed)");
    if (answer.nonce != header.nonce)
      fail(std::string("waiting for ") + what + " (it answered a request it had not been sent yet)");
    const unsigned char* payload = in.take(answer.bytes);
    if (answer.status == wire::Status::Error)
      throw StudentError(std::string(what) + " failed in your code: " +
                         std::string(reinterpret_cast<const char*>(payload), answer.bytes));
    return {payload, payload + answer.bytes};
  }

  // The reply to a request. In a timed section the judge spins for it: blocked, its core would sleep
  // through the call and wake late, later the longer the call (a deeper idle state), a cost that the
  // twin's empty calls do not have, so that it would stay in every timed call. Timing runs alone on
  // the machine's GPU, so the core it takes is free, unless this process may run on one core only
  // (a cluster job's allocation, say), where spinning would take it from the runner. A runner that
  // never answers spins the judge until the test case's timeout, as it would block it.
  ssize_t receive(std::vector<unsigned char>& into) const {
    static const bool spin = cores_allowed() >= 2;
    if (paused_sections() == 0 || !spin) return recv(socket_, into.data(), into.size(), 0);
    for (;;) {
      const ssize_t got = recv(socket_, into.data(), into.size(), MSG_DONTWAIT);
      if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return got;
    }
  }

  // The arena, its first `bytes` bytes usable by both processes. The memfd behind it is only as long
  // as the largest call so far needed, never the whole mapping: growing a file past RLIMIT_FSIZE
  // (the grader's sandbox sets it, [grading] file_limit_mb) kills the process with SIGXFSZ, so a call
  // whose host buffers need more fails with a message instead.
  unsigned char* arena_for(std::size_t bytes, const std::string& what) {
    if (arena_ == nullptr) throw StudentError(broken_.empty() ? "the runner could not be started" : broken_);
    if (bytes > arena_bytes_) grow_arena(bytes, what);
    return arena();
  }
  unsigned char* arena() const { return static_cast<unsigned char*>(arena_); }

  void stop() {
    ready();
    if (pid_ > 0) signal_and_wait(SIGSTOP);
  }
  void cont() {
    ready();
    if (pid_ > 0) kill(pid_, SIGCONT);
  }

  // Ends the process: closing the socket tells it to exit. Returns its wait status.
  int end() {
    try {
      cont();
    } catch (const StudentError&) {
      return ended_status_;  // it died before its hello: fail() reaped it
    }
    close(socket_);
    socket_ = -1;
    const int status = reap(std::chrono::seconds(20));
    child_ = -1;
    pid_ = -1;
    return status;
  }

  // Back to how it was before it started, the arena unmapped: a judge that serves many runs (--kit-serve) starts
  // a fresh process for each. Call it once the process has ended (end, finish).
  void forget() {
    if (arena_ != nullptr) munmap(arena_, wire::kArenaBytes);
    if (arena_fd_ >= 0) close(arena_fd_);
    arena_ = nullptr;
    arena_fd_ = -1;
    arena_bytes_ = 0;
    calls_ = 0;
    ended_status_ = 0;
    broken_.clear();
  }

  // Ends the runner and records how it ended.
  int finish() {
    if (!started()) return 0;
    const int status = end();
    write_record(JsonObject()
                     .add("kind", "runner")
                     .add("exit_code", static_cast<long long>(WIFEXITED(status) ? WEXITSTATUS(status) : -1))
                     .add("signal", static_cast<long long>(WIFSIGNALED(status) ? WTERMSIG(status) : 0)));
    if (WIFSIGNALED(status)) {
      std::printf("Your code's process (the runner) %s at the end of the test program.\n",
                  describe_status(status).c_str());
      return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
  }

 private:
  explicit Runner(bool twin) : twin_(twin) {}

  std::vector<std::string> command() const {
    if (twin_) return {own_program(), "--kit-twin"};
    std::vector<std::string> argv = lines_of(std::getenv("KIT_RUNNER_PREFIX"));
    const char* given = std::getenv("KIT_RUNNER");
    argv.push_back(given != nullptr ? given : own_program() + "-runner");
    return argv;
  }

  void start() {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) throw_errno("socketpair");
    const int on = 1;
    setsockopt(ends[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));  // the hello carries the runner's real pid
    // Empty for now (arena_for grows it); both processes map all of kArenaBytes at once, so growing
    // it later needs no new mapping on either side.
    const int arena_fd = memfd_create("kit-host-arena", MFD_CLOEXEC);
    if (arena_fd < 0) throw_errno("memfd_create");
    void* arena = mmap(nullptr, wire::kArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, arena_fd, 0);
    if (arena == MAP_FAILED) throw_errno("mmap of the host arena");
    arena_ = arena;
    arena_fd_ = arena_fd;

    std::vector<std::string> argv = command();
    std::vector<std::string> env;
    for (const char* name : kPassedThrough)
      if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string variable(*entry);
      if (is_tool_variable(variable.substr(0, variable.find('=')))) env.push_back(variable);
    }
    env.push_back("HOME=/tmp");
    std::vector<char*> c_argv, c_env;
    for (auto& arg : argv) c_argv.push_back(arg.data());
    for (auto& entry : env) c_env.push_back(entry.data());
    c_argv.push_back(nullptr);
    c_env.push_back(nullptr);

    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t child = fork();
    if (child < 0) throw_errno("fork");
    if (child == 0) {  // only async-signal-safe calls from here to exec
      // Both move above the numbers they go to first: a dup2 onto the same number is a no-op that
      // leaves close-on-exec set, and the socket's dup2 could overwrite the arena's source (a judge
      // started with stdin closed gets its socket ends as fds 0 and 3).
      const int socket_end = fcntl(ends[1], F_DUPFD, wire::kArenaFd + 1);
      const int arena_end = fcntl(arena_fd, F_DUPFD, wire::kArenaFd + 1);
      dup2(socket_end, wire::kSocketFd);
      dup2(arena_end, wire::kArenaFd);
      const int null_in = open("/dev/null", O_RDONLY);
      if (null_in >= 0) dup2(null_in, 0);
      if (twin_) {  // it prints nothing of use, and may outlive this run's output file (keep_twin_between_runs)
        const int null_out = open("/dev/null", O_WRONLY);
        if (null_out >= 0) dup2(null_out, 1), dup2(null_out, 2);
      }
      for (int fd = wire::kArenaFd + 1; fd < 1024; ++fd) close(fd);
      execvpe(c_argv[0], c_argv.data(), c_env.data());
      _exit(127);
    }
    close(ends[1]);
    child_ = child;
    socket_ = ends[0];
  }

  // The runner's first message: its process id as the kernel vouches for it (SCM_CREDENTIALS).
  pid_t hello_pid() {
    char byte = 0;
    iovec data{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    if (recvmsg(socket_, &message, 0) != 1) fail("starting your code's process (the runner)");
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred credentials;
        std::memcpy(&credentials, CMSG_DATA(c), sizeof(credentials));
        return credentials.pid;
      }
    fail("starting the runner (its first message carried no process id)");
  }

  // Stops the runner and waits until the kernel shows it stopped.
  void signal_and_wait(int signal) {
    if (kill(pid_, signal) != 0) return;
    const auto deadline = Clock::now() + std::chrono::milliseconds(200);
    while (Clock::now() < deadline) {
      std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      const std::size_t close_paren = text.rfind(')');
      if (close_paren == std::string::npos || close_paren + 2 >= text.size()) return;  // gone
      const char state = text[close_paren + 2];
      if (state == 'T' || state == 't' || state == 'Z' || state == 'X') return;
      std::this_thread::yield();
    }
  }

  void grow_arena(std::size_t bytes, const std::string& what) {
    const std::size_t most = std::min(wire::kArenaBytes, file_size_limit());
    if (bytes > most)
      throw std::logic_error(what + ": host buffers of " + std::to_string(bytes >> 20) + " MiB in one call, more " +
                             "than the " + std::to_string(most >> 20) + " MiB the test program may share with " +
                             "the runner (its file-size limit, [grading] file_limit_mb in lab.toml)");
    const std::size_t size = std::min(most, (bytes + kArenaStep - 1) / kArenaStep * kArenaStep);
    if (ftruncate(arena_fd_, static_cast<off_t>(size)) != 0)
      throw std::runtime_error(std::string("growing the host arena shared with the runner failed: ") +
                               std::strerror(errno));
    arena_bytes_ = size;
  }

  int reap(std::chrono::milliseconds patience) {
    int status = 0;
    const auto deadline = Clock::now() + patience;
    while (waitpid(child_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(child_, SIGKILL);
        waitpid(child_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return status;
  }

  [[noreturn]] void fail(const std::string& what) {
    std::string why = "Your code's process (the runner, which runs your functions apart from the tests) stopped "
                      "answering while " + what;
    if (child_ > 0) {
      if (socket_ >= 0) close(socket_);
      socket_ = -1;
      ended_status_ = reap(std::chrono::seconds(5));
      why += ": it " + describe_status(ended_status_);
      child_ = -1;
      pid_ = -1;
    }
    why += ". A crash there is usually a host pointer used wrongly (a device pointer read on the host, or an array "
           "indexed past its end); the output above may say more. Later calls in this test program fail too.";
    broken_ = why;
    throw StudentError(why);
  }

  // From the operating system's entropy once, then a generator whose state only the judge holds.
  std::uint64_t next_nonce() {
    static std::mt19937_64 draw((static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}());
    return draw();
  }

  [[noreturn]] static void throw_errno(const char* call) {
    throw std::runtime_error(std::string(call) + " failed while starting the runner: " + std::strerror(errno));
  }

  bool twin_;
  long long calls_ = 0;  // requests sent
  pid_t child_ = -1;  // what the judge started (the sandbox, or the runner itself)
  pid_t pid_ = -1;    // the runner process, once its hello has come
  int ended_status_ = 0;  // how it ended, where fail() reaped it
  int socket_ = -1;
  void* arena_ = nullptr;
  int arena_fd_ = -1;
  std::size_t arena_bytes_ = 0;  // the memfd's length: what of the mapping either process may touch
  std::string broken_;
};

// The judge's IPC handles, one per allocation: getting one costs a few microseconds.
std::unordered_map<unsigned long long, cudaIpcMemHandle_t>& exported() {
  static std::unordered_map<unsigned long long, cudaIpcMemHandle_t> handles;
  return handles;
}

}  // namespace
}  // namespace kit::remote

// Defined (grader/calls.py's JUDGE_MARK) by the judge's proxies, which every split test program links. A test
// program built in one process (-DKIT_ONE_PROCESS=ON, to measure what the split costs) has none, and no runner.
extern "C" const char kit_judge_has_runner __attribute__((weak));

namespace kit::remote {
namespace {

bool has_runner() { return &kit_judge_has_runner != nullptr; }

// Host memory both processes map: a memfd of the judge's, sent to the runner, found here by address.
// In a test program without a runner, it is the test's own memory, found the same way.
struct SharedHost {
  std::uint64_t id;
  std::size_t bytes;
  bool registered;       // page-locked here (cudaHostRegister) as in the runner
  bool student_made;     // the mirror of an allocation of the student's, freed through their function
};

std::map<std::uintptr_t, SharedHost>& shared_memory() {
  static std::map<std::uintptr_t, SharedHost> by_base;
  return by_base;
}

// The shared memory that holds `pointer` (its base in `*base`), or null.
const SharedHost* shared_holding(const void* pointer, std::uintptr_t* base) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  auto& table = shared_memory();
  auto after = table.upper_bound(address);
  if (after == table.begin()) return nullptr;
  const auto found = std::prev(after);
  if (address >= found->first + std::max<std::size_t>(found->second.bytes, 1)) return nullptr;
  *base = found->first;
  return &found->second;
}

std::uint64_t next_shared_id() {
  static std::uint64_t last = 0;
  return ++last;
}

// A memfd of `bytes` bytes, mapped here; its descriptor in *fd (the caller sends and closes it).
void* make_shared(std::size_t bytes, const std::string& what, int* fd) {
  const std::size_t length = std::max<std::size_t>(bytes, 1);  // mmap refuses an empty mapping
  if (length > file_size_limit())
    throw std::logic_error(what + ": " + std::to_string(bytes >> 20) + " MiB of host memory shared with the runner, " +
                           "more than the test program's file-size limit allows");
  *fd = memfd_create("kit-shared-host", MFD_CLOEXEC);
  if (*fd < 0) throw std::runtime_error(what + ": memfd_create failed: " + std::strerror(errno));
  if (ftruncate(*fd, static_cast<off_t>(length)) != 0) {
    const int error = errno;
    close(*fd);
    throw std::runtime_error(what + ": sizing the shared host memory failed: " + std::strerror(error));
  }
  void* here = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (here == MAP_FAILED) {
    const int error = errno;
    close(*fd);
    throw std::runtime_error(what + ": mapping the shared host memory failed: " + std::strerror(error));
  }
  return here;
}

// Forgets shared memory on the judge's side: unregistered, unmapped.
void drop_shared(std::uintptr_t base) {
  auto& table = shared_memory();
  const auto found = table.find(base);
  if (found == table.end()) return;
  if (found->second.registered) cudaHostUnregister(reinterpret_cast<void*>(base));  // cannot be undone if it fails
  munmap(reinterpret_cast<void*>(base), std::max<std::size_t>(found->second.bytes, 1));
  table.erase(found);
}

// The judge's stream as the runner knows it.
wire::StreamArg stream_arg(cudaStream_t stream, const std::string& what) {
  wire::StreamArg arg{};
  if (stream == nullptr || stream == cudaStreamLegacy) return arg;  // id 0: the legacy default stream
  if (stream == cudaStreamPerThread)
    throw std::logic_error(what + ": the per-thread default stream means nothing in another process; pass a "
                           "stream of the test's own (kit::Stream) or the legacy default stream (nullptr)");
  unsigned long long id = 0;
  unsigned int flags = 0;
  CUDA_CHECK(cudaStreamGetId(stream, &id));
  CUDA_CHECK(cudaStreamGetFlags(stream, &flags));
  if (id == 0) throw std::logic_error(what + ": the stream's id is 0, which means the legacy default stream here");
  arg.id = id;
  arg.flags = flags;
  return arg;
}

__global__ void fence_kernel() {}

// Two driver functions, found through the runtime: linking libcuda would stop the test program
// from starting at all on a machine without the driver, where its CPU tests must still run.
struct DriverCalls {
  decltype(&cuMemGetAddressRange) address_range = nullptr;
  decltype(&cuPointerGetAttribute) pointer_attribute = nullptr;
};

template <class F>
void find_driver_call(const char* name, F* call) {
  cudaDriverEntryPointQueryResult found{};
  void* address = nullptr;
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &address, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || address == nullptr)
    throw std::runtime_error(std::string("the CUDA driver has no ") + name + ", which the judge needs");
  *call = reinterpret_cast<F>(address);
}

const DriverCalls& driver() {
  static const DriverCalls calls = [] {
    DriverCalls found;
    find_driver_call("cuMemGetAddressRange", &found.address_range);
    find_driver_call("cuPointerGetAttribute", &found.pointer_attribute);
    return found;
  }();
  return calls;
}

int& paused_sections() {
  static int depth = 0;
  return depth;
}

}  // namespace

Call::Call(std::uint32_t function, const char* name) : function_(function), name_(name) {}

namespace {

// The judge's device allocation that holds `pointer`, as the runner maps it; false where `pointer` is not
// in memory allocated with cudaMalloc.
bool find_device_arg(const void* pointer, wire::DeviceArg* arg) {
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  const auto address = reinterpret_cast<CUdeviceptr>(pointer);
  unsigned long long buffer_id = 0;
  if (driver().address_range(&base, &bytes, address) != CUDA_SUCCESS ||
      driver().pointer_attribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base) != CUDA_SUCCESS)
    return false;
  auto& handles = exported();
  auto found = handles.find(buffer_id);
  if (found == handles.end()) {
    cudaIpcMemHandle_t handle;
    CUDA_CHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)));
    found = handles.emplace(buffer_id, handle).first;
  }
  static_assert(sizeof(arg->handle) == sizeof(cudaIpcMemHandle_t), "an IPC handle is 64 bytes");
  std::memcpy(arg->handle, &found->second, sizeof(arg->handle));
  arg->buffer_id = buffer_id;
  arg->judge_base = base;
  arg->allocation_bytes = bytes;
  arg->offset = address - base;
  return true;
}

}  // namespace

Call& Call::device(const void* pointer, const char* parameter) {
  ++args_;
  if (pointer == nullptr) {
    message_.put(wire::ArgKind::Null);
    return *this;
  }
  wire::DeviceArg arg{};
  if (!find_device_arg(pointer, &arg))
    throw std::logic_error(std::string("the test passes ") + name_ + "'s " + parameter +
                           " a pointer that is not device memory allocated with cudaMalloc; a host buffer needs a "
                           "count in the lab's [host_buffers] table (lab.toml)");
  passes_device_memory_ = true;
  message_.put(wire::ArgKind::Device);
  message_.put(arg);
  return *this;
}

Call& Call::host(const void* pointer, std::size_t bytes, bool read_only, const char* parameter) {
  ++args_;
  if (pointer == nullptr) {
    message_.put(wire::ArgKind::Null);
    return *this;
  }
  std::uintptr_t base = 0;
  if (const SharedHost* shared = shared_holding(pointer, &base)) {  // both processes see it: no copy
    const std::size_t offset = reinterpret_cast<std::uintptr_t>(pointer) - base;
    if (bytes > shared->bytes - offset)
      throw std::logic_error(std::string("the test passes ") + name_ + "'s " + parameter + " " +
                             std::to_string(bytes) + " bytes of host memory at offset " + std::to_string(offset) +
                             " of a shared allocation of " + std::to_string(shared->bytes) + " bytes");
    message_.put(wire::ArgKind::Shared);
    message_.put(wire::SharedArg{shared->id, offset, bytes});
    return *this;
  }
  Runner& runner = Runner::get();
  runner.ensure_started();
  const std::size_t offset = arena_used_;
  const std::size_t end = offset + bytes;
  arena_used_ = (end + wire::kArenaAlignment - 1) / wire::kArenaAlignment * wire::kArenaAlignment;
  std::memcpy(runner.arena_for(end, std::string(name_) + "'s " + parameter) + offset, pointer, bytes);
  if (!read_only) copies_back_.push_back({const_cast<void*>(pointer), offset, bytes});
  message_.put(wire::ArgKind::Host);
  message_.put(wire::HostArg{offset, bytes});
  return *this;
}

Call& Call::stream(cudaStream_t stream, const char* parameter) {
  ++args_;
  message_.put(wire::ArgKind::Stream);
  message_.put(stream_arg(stream, std::string(name_) + "'s " + parameter));
  return *this;
}

Call& Call::blas(const void* handle, cudaStream_t stream, int math_mode, const char* parameter) {
  ++args_;
  wire::BlasArg arg{};
  arg.handle = reinterpret_cast<std::uintptr_t>(handle);
  arg.stream = stream_arg(stream, std::string(name_) + "'s " + parameter + " (the stream it is bound to)");
  arg.math_mode = static_cast<std::uint32_t>(math_mode);
  message_.put(wire::ArgKind::Blas);
  message_.put(arg);
  return *this;
}

Call& Call::object(const void* object) {
  ++args_;
  if (object == nullptr) {
    message_.put(wire::ArgKind::Null);
    return *this;
  }
  message_.put(wire::ArgKind::Object);
  message_.put(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(object)));
  return *this;
}

Call& Call::shared_host(const void* pointer, const char* parameter) {
  ++args_;
  if (pointer == nullptr) {
    message_.put(wire::ArgKind::Null);
    return *this;
  }
  std::uintptr_t base = 0;
  const SharedHost* shared = shared_holding(pointer, &base);
  if (shared == nullptr)
    throw std::logic_error(std::string("the test passes ") + name_ + "'s " + parameter + " host memory that the " +
                           "runner does not share: a host pointer without a count in [host_buffers] must point into "
                           "memory from the lab's allocator or a kit::remote::SharedHostBuffer");
  message_.put(wire::ArgKind::Shared);
  message_.put(wire::SharedArg{shared->id, reinterpret_cast<std::uintptr_t>(pointer) - base, 0});
  return *this;
}

Call& Call::release(const void* pointer, const char* parameter) {
  ++args_;
  if (pointer == nullptr) {
    message_.put(wire::ArgKind::Null);
    return *this;
  }
  const auto found = shared_memory().find(reinterpret_cast<std::uintptr_t>(pointer));
  if (found == shared_memory().end() || !found->second.student_made)
    throw std::logic_error(std::string("the test passes ") + name_ + "'s " + parameter + " a pointer that the " +
                           "lab's allocator did not return (or that was freed already)");
  message_.put(wire::ArgKind::Shared);
  message_.put(wire::SharedArg{found->second.id, 0, 0});
  released_ = pointer;
  return *this;
}

std::vector<unsigned char> Call::send_and_wait(int fd) {
  // The test's own work on these buffers (inputs, poison) sits on the judge's streams, which the
  // runner's work does not wait for: it must be done before the runner starts, or the poison may
  // land on top of the student's output. A timed call needs no wait here: the timing loop waited
  // before it started the clock.
  if (passes_device_memory_ && paused_sections() == 0) CUDA_CHECK(cudaDeviceSynchronize());
  Runner& runner = Runner::get();
  std::vector<unsigned char> reply;
  try {
    reply = runner.exchange(wire::RequestHeader{wire::kRequestMagic, wire::Op::Call, function_, args_}, message_,
                            name_, fd);
  } catch (...) {
    if (released_ != nullptr) drop_shared(reinterpret_cast<std::uintptr_t>(released_));
    throw;
  }
  // The student's free has run (or failed: the memory is theirs to lose either way); the mirror goes.
  if (released_ != nullptr) drop_shared(reinterpret_cast<std::uintptr_t>(released_));
  for (const HostCopy& copy : copies_back_) std::memcpy(copy.judge, runner.arena() + copy.offset, copy.bytes);
  return reply;
}

void* Call::run_allocating(std::size_t bytes) {
  Runner::get().ensure_started();
  int fd = -1;
  void* here = make_shared(bytes, name_, &fd);
  const std::uint64_t id = next_shared_id();
  ++args_;
  message_.put(wire::ArgKind::Allocation);
  message_.put(wire::AllocationArg{id, bytes, 0, 0});
  wire::AllocationReply reply{};
  try {
    const std::vector<unsigned char> answer = send_and_wait(fd);
    close(fd);
    fd = -1;
    reply = reply_as<wire::AllocationReply>(answer);
    if (reply.id != 0 && reply.id != id)
      throw StudentError(std::string(name_) + ": the runner answered for another allocation than the one it was sent");
    if (reply.id != 0 && reply.page_locked != 0) CUDA_CHECK(cudaHostRegister(here, std::max<std::size_t>(bytes, 1),
                                                                             cudaHostRegisterDefault));
  } catch (...) {
    if (fd >= 0) close(fd);
    munmap(here, std::max<std::size_t>(bytes, 1));
    throw;
  }
  if (reply.id == 0) {  // the allocator returned null: so does this, for the test to report
    munmap(here, std::max<std::size_t>(bytes, 1));
    return nullptr;
  }
  shared_memory()[reinterpret_cast<std::uintptr_t>(here)] = SharedHost{id, bytes, reply.page_locked != 0, true};
  return here;
}

void Call::run() {
  const std::vector<unsigned char> reply = send_and_wait();
  if (!reply.empty()) throw StudentError(std::string(name_) + ": the runner returned a value from a void function");
}

namespace {

// The default memory pools of the runner, where the student's calls run, and of the judge, where a peer's
// do, through a timing (kit::keep_freed_device_memory).
void keep_pools(bool keep) {
  Runner& runner = Runner::get();
  if (runner.started()) {
    wire::Writer argument;
    argument.put(static_cast<std::uint8_t>(keep ? 1 : 0));
    runner.exchange(wire::RequestHeader{wire::kRequestMagic, wire::Op::KeepPool, 0, 0}, argument,
                    keep ? "setting the memory pool for a timing" : "setting the memory pool back after a timing");
  }
  CUDA_CHECK(kit::keep_freed_device_memory(keep));
}

}  // namespace

TimedSection::TimedSection() {
  if (paused_sections()++ != 0) return;
  try {
    keep_pools(true);
  } catch (...) {
    --paused_sections();  // no section began
    throw;
  }
  Runner::get().stop();
  if (Runner::twin().started()) Runner::twin().stop();  // started with the case: its start is over by now
}
TimedSection::~TimedSection() {
  if (--paused_sections() != 0) return;
  Runner::get().cont();
  try {
    keep_pools(false);
  } catch (const std::exception& error) {
    // A runner that is gone has failed its case already; the judge's own pool keeping its memory costs the
    // later cases of this program only free memory, which the message says.
    std::fprintf(stderr, "after a timing, the memory pools were not set back: %s\n", error.what());
  }
}
void TimedSection::resume() { Runner::get().cont(); }
void TimedSection::pause() { Runner::get().stop(); }

void fence() {
  fence_kernel<<<1, 1>>>();
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

// An empty kernel of the judge's runs within this when the GPU has nothing else to do (about
// 10 us on an H100); work of the runner's still running holds it back by up to a time slice
// (about 2 ms). Three tries, so that a moment of CPU load alone does not fail a case.
constexpr double kQuietLimitS = 1e-3;
constexpr int kQuietTries = 3;
// How long JudgeAlone looks for a quiet moment beside other programs (remote.hpp says why).
constexpr double kBesideOthersWaitS = 1.0;

namespace {
bool& gpu_found_busy() {
  static bool busy = false;
  return busy;
}

// Quiet twice in a row. One fence can land at the end of the runner's time slice and run at once
// though the runner still has work; the GPU then gives the runner its next slice, and a second
// fence waits that slice out.
bool gpu_quiet_twice(double* took_s) {
  double first_s = 0.0, second_s = 0.0;
  const bool quiet = gpu_quiet(kQuietLimitS, &first_s) && gpu_quiet(kQuietLimitS, &second_s);
  if (took_s != nullptr) *took_s = std::max(first_s, second_s);
  return quiet;
}

bool gpu_free_now(double* took_s) {
  for (int attempt = 0; attempt < kQuietTries; ++attempt)
    if (gpu_quiet_twice(took_s)) return true;
  return false;
}

// gpu_free, trying again a few milliseconds apart for up to `wait_s` before it finds the GPU busy.
bool gpu_free_within(double wait_s, double* took_s) {
  const auto give_up = Clock::now() + std::chrono::duration<double>(wait_s);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (gpu_free_now(took_s)) return true;
    if (Clock::now() + pause > give_up) break;
    // Other programs' work comes in bursts: look again after a pause that grows, so that a long burst is
    // not polled every millisecond.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(32));
  }
  gpu_found_busy() = true;
  return false;
}
}  // namespace

bool gpu_free(double* took_s) { return gpu_free_within(0.0, took_s); }

JudgeAlone::JudgeAlone(const char* check) {
  CUDA_CHECK(cudaDeviceSynchronize());  // the judge's own work (inputs, poison) is not the runner's
  double took_s = 0.0;
  if (!gpu_free_within(gpu_shared_with_others() ? kBesideOthersWaitS : 0.0, &took_s))
    throw StudentError(std::string(check) + ": after your code returned, it still had work running on the GPU (" +
                       std::to_string(took_s * 1e3) + " ms later, the GPU had not yet given the test a turn), so " +
                       "the test could not check the result. A call must finish all of its GPU work before it " +
                       "returns: look for a kernel that never ends (a loop whose condition no thread changes) or " +
                       "work launched after the function's last synchronization.");
}

bool take_gpu_found_busy() { return std::exchange(gpu_found_busy(), false); }

bool gpu_quiet(double limit_s, double* took_s) {
  const auto start = Clock::now();
  fence();
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  if (took_s != nullptr) *took_s = took;
  return took <= limit_s;
}

void start_runner() {
  const char* given = std::getenv("KIT_RUNNER");
  if (given == nullptr && access((own_program() + "-runner").c_str(), X_OK) != 0) return;  // graded in one process
  Runner::get().ensure_started();
}

void start_twin() {
  if (Runner::get().started()) Runner::twin().ensure_started();
}

void end_of_case() {
  Runner& runner = Runner::get();
  if (!runner.started()) return;
  try {
    runner.exchange(wire::RequestHeader{wire::kRequestMagic, wire::Op::Forget, 0, 0}, wire::Writer(),
                    "the end of a test case");
  } catch (const StudentError&) {
    // the runner is gone: the test case that broke it has said so, and later calls will too
  }
}

namespace {

// A harness request to the runner (no function of the student's); throws StudentError where it fails.
void request(wire::Op op, const wire::Writer& arguments, const char* what, int fd = -1) {
  Runner::get().exchange(wire::RequestHeader{wire::kRequestMagic, op, 0, 0}, arguments, what, fd);
}

wire::DeviceArg device_arg(const void* pointer, const char* what) {
  wire::DeviceArg arg{};
  if (pointer == nullptr || !find_device_arg(pointer, &arg))
    throw std::logic_error(std::string(what) + ": a pointer that is not device memory allocated with cudaMalloc");
  return arg;
}

}  // namespace

void synchronize(cudaStream_t stream) {
  if (!Runner::get().started()) return;  // no runner: none of the student's work to wait for
  wire::Writer arguments;
  arguments.put(stream_arg(stream, "kit::remote::synchronize"));
  request(wire::Op::Synchronize, arguments, "waiting for your code's GPU work");
}

void synchronize_device() {
  synchronize(nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
}

void queue_delay(cudaStream_t stream, double milliseconds) {
  wire::Writer arguments;
  arguments.put(stream_arg(stream, "kit::remote::queue_delay"));
  arguments.put(static_cast<std::uint64_t>(milliseconds * 1e6));
  request(wire::Op::Delay, arguments, "a delay the test queues on a stream");
}

void copy_on_stream(void* d_to, const void* d_from, std::size_t bytes, cudaStream_t stream) {
  const wire::DeviceArg to = device_arg(d_to, "kit::remote::copy_on_stream's destination");
  const wire::DeviceArg from = device_arg(d_from, "kit::remote::copy_on_stream's source");
  if (bytes > to.allocation_bytes - to.offset || bytes > from.allocation_bytes - from.offset)
    throw std::logic_error("kit::remote::copy_on_stream: " + std::to_string(bytes) + " bytes run past a buffer's end");
  wire::Writer arguments;
  arguments.put(stream_arg(stream, "kit::remote::copy_on_stream"));
  arguments.put(to);
  arguments.put(from);
  arguments.put(static_cast<std::uint64_t>(bytes));
  CUDA_CHECK(cudaDeviceSynchronize());  // the test's own writes to the source are done before the runner reads it
  request(wire::Op::Copy, arguments, "a copy the test queues on a stream");
}

void* share_host(std::size_t bytes, bool page_locked) {
  const bool runner = has_runner();
  if (runner) Runner::get().ensure_started();
  int fd = -1;
  void* here = make_shared(bytes, "kit::remote::share_host", &fd);
  const std::uint64_t id = next_shared_id();
  wire::Writer arguments;
  arguments.put(wire::ShareArg{id, bytes, page_locked ? 1u : 0u, 0});
  SharedHost& entry = shared_memory()[reinterpret_cast<std::uintptr_t>(here)] = SharedHost{id, bytes, false, false};
  try {
    if (page_locked) {
      CUDA_CHECK(cudaHostRegister(here, std::max<std::size_t>(bytes, 1), cudaHostRegisterDefault));
      entry.registered = true;
    }
    if (runner) request(wire::Op::Share, arguments, "sharing host memory with your code's process", fd);
  } catch (...) {
    close(fd);
    drop_shared(reinterpret_cast<std::uintptr_t>(here));
    throw;
  }
  close(fd);
  return here;
}

void unshare_host(void* pointer) noexcept {
  const auto base = reinterpret_cast<std::uintptr_t>(pointer);
  const auto found = shared_memory().find(base);
  if (found == shared_memory().end()) return;
  if (!has_runner()) {
    drop_shared(base);
    return;
  }
  try {
    wire::Writer arguments;
    arguments.put(found->second.id);
    request(wire::Op::Unshare, arguments, "unsharing host memory");
  } catch (const std::exception&) {
    // the runner is gone (its test case has said why): nothing of it maps the memory any more
  }
  drop_shared(base);
}

long long calls_made() { return Runner::get().calls(); }

double path_overhead_s(const std::function<void()>& before_each_call, int calls_per_request) {
  constexpr int kCalls = 41;
  Runner& twin = Runner::twin();
  const wire::RequestHeader request{wire::kRequestMagic, wire::Op::Call, 0, 0};
  const wire::Writer no_arguments;
  twin.cont();  // stopped after an earlier measurement in this timed section
  twin.exchange(request, no_arguments, "the twin's warm-up");
  std::vector<double> through_twin, alone;
  for (int i = 0; i < kCalls; ++i) {
    twin.stop();
    before_each_call();
    auto start = Clock::now();
    twin.cont();
    for (int call = 0; call < calls_per_request; ++call) twin.exchange(request, no_arguments, "a call of the twin");
    fence();
    through_twin.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    start = Clock::now();
    fence();
    alone.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  twin.stop();  // until the next measurement, or the end of the program (finish) or of the judge (end_twin)
  std::sort(through_twin.begin(), through_twin.end());
  std::sort(alone.begin(), alone.end());
  return std::max(0.0, through_twin[kCalls / 2] - alone[kCalls / 2]);
}

int serve_twin() {
  cudaFree(nullptr);  // the context first, as the runner does (its failure shows at the first request)
  const char hello = 1;
  if (send(wire::kSocketFd, &hello, 1, MSG_NOSIGNAL) != 1) return 2;
  std::vector<unsigned char> buffer(wire::kMaxMessage);
  for (ssize_t got; (got = recv(wire::kSocketFd, buffer.data(), buffer.size(), 0)) > 0;) {
    wire::Reader message(buffer.data(), static_cast<std::size_t>(got));
    const auto request = message.get<wire::RequestHeader>();
    fence_kernel<<<1, 1>>>();
    const bool ok = cudaDeviceSynchronize() == cudaSuccess;
    const wire::ReplyHeader reply{wire::kReplyMagic, ok ? wire::Status::Ok : wire::Status::Error, 0, 0, request.nonce};
    send(wire::kSocketFd, &reply, sizeof(reply), MSG_NOSIGNAL);
  }
  return 0;
}

namespace {
bool& twin_kept() {
  static bool kept = false;
  return kept;
}
}  // namespace

void keep_twin_between_runs() { twin_kept() = true; }

void end_twin() {
  if (Runner::twin().started()) Runner::twin().end();
  Runner::twin().forget();
}

int finish() {
  if (!twin_kept() || !Runner::twin().started()) end_twin();  // one that broke is forgotten, to start afresh
  const int code = Runner::get().finish();
  Runner::get().forget();
  // What the next run of a judge that serves many (--kit-serve) must not inherit: mirrors of host allocations
  // the student's code made and never freed, and IPC handles of buffers that are gone.
  while (!shared_memory().empty()) drop_shared(shared_memory().begin()->first);
  exported().clear();
  return code;
}

}  // namespace kit::remote
