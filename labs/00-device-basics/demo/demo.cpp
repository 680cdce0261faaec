// Lab 00 demo: your functions of device_basics.cu put to work on this machine's GPU, printed as
// a report for the written analysis (QUESTIONS.md), with the occupancy sweep also written to
// <folder>/occupancy.csv. `make 00-device-basics-demo` builds it and runs it with the folder
// build/00-device-basics/demo. Not graded: change it as you like to try things.
//
// Order matters: the first launch of a kernel is timed before anything else touches the
// kernels, since loading them is part of what makes it slow.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "device_basics.cuh"
#include "kit/cuda_check.cuh"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

const char* kernel_name(LabKernel kernel) {
  switch (kernel) {
    case LabKernel::kScale: return "kScale";
    case LabKernel::kManyRegisters: return "kManyRegisters";
    case LabKernel::kSpilling: return "kSpilling";
    case LabKernel::kSharedTile: return "kSharedTile";
    case LabKernel::kSpin: return "kSpin";
  }
  return "?";
}

const LabKernel kKernels[] = {LabKernel::kScale, LabKernel::kManyRegisters, LabKernel::kSpilling,
                              LabKernel::kSharedTile, LabKernel::kSpin};

// Device memory the timed kernels work on, zeros to start with (they stay finite), and a launch counter.
struct Workspace {
  float* data = nullptr;
  unsigned long long* launches = nullptr;
  explicit Workspace(int n) {
    CUDA_CHECK(cudaMalloc(&data, sizeof(float) * static_cast<std::size_t>(n)));
    CUDA_CHECK(cudaMemset(data, 0, sizeof(float) * static_cast<std::size_t>(n)));
    CUDA_CHECK(cudaMalloc(&launches, sizeof(unsigned long long)));
  }
  ~Workspace() {
    cudaFree(data);
    cudaFree(launches);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
};

constexpr int kScaleN = 1 << 26;       // 256 MiB of floats: far beyond the L2, so the memory sets the time
constexpr int kChainN = 1 << 21;       // elements for the register-hungry kernels
constexpr int kChainRounds = 64;       // their steps per element: enough arithmetic to hide memory
constexpr int kSweepStep = 32;         // the sweep's block sizes: whole warps, 32 to 1024
constexpr int kPrintThreads = 160;     // the printf exercise: blocks of 64, the third one partly empty
constexpr int kPrintBlockSize = 64;
constexpr int kPrintBlock = 1;

// Runs one part of the report; a CUDA error or an unfinished function says so and the report goes on.
template <class Part>
void part(const char* title, Part run) {
  std::printf("\n== %s\n", title);
  try {
    run();
  } catch (const std::exception& error) {
    std::printf("   (stopped: %s)\n", error.what());
  }
  std::fflush(stdout);
}

void first_launch() {
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  std::printf("   CUDA_MODULE_LOADING = %s\n", loading ? loading : "(not set: LAZY since CUDA 12.2)");
  const auto start = Clock::now();
  CUDA_CHECK(cudaFree(nullptr));  // the first CUDA call creates the context
  std::printf("   creating the context (first CUDA call):      %9.3f ms, host clock\n", ms_since(start));
  Workspace work(kScaleN);
  const KernelLaunch launch{LabKernel::kScale, kScaleN / 256, 256, kScaleN, 1};
  const float first = time_kernel_ms(launch, work.data, work.launches, 0, 1);
  const float second = time_kernel_ms(launch, work.data, work.launches, 0, 1);
  const float steady = time_kernel_ms(launch, work.data, work.launches, 3, 20);
  std::printf("   kScale over 2^26 floats, first launch:       %9.3f ms\n", first);
  std::printf("   the second launch:                           %9.3f ms\n", second);
  std::printf("   average of 20 after 3 warm-up launches:      %9.3f ms  (%.0f GB/s read and written)\n", steady,
              2.0 * sizeof(float) * kScaleN / (steady * 1e6));
}

void device_facts(DeviceFacts* out) {
  const DeviceFacts f = query_device(0);
  *out = f;
  std::printf("   %s, compute capability %d.%d (sm_%d%d)\n", f.name, f.compute_major, f.compute_minor, f.compute_major,
              f.compute_minor);
  std::printf("   %d SMs; warps of %d threads\n", f.sm_count, f.warp_size);
  std::printf("   per SM: %d threads (%d warps), %d blocks, %d registers, %zu bytes of shared memory\n",
              f.max_threads_per_sm, f.max_warps_per_sm, f.max_blocks_per_sm, f.registers_per_sm, f.shared_bytes_per_sm);
  std::printf("   per block: %d threads, %d registers, %zu bytes of shared memory (%zu on request), %zu reserved\n",
              f.max_threads_per_block, f.registers_per_block, f.shared_bytes_per_block, f.shared_bytes_per_block_optin,
              f.shared_bytes_reserved_per_block);
  std::printf("   L2 %zu bytes; device memory %zu bytes; %d copy engines\n", f.l2_bytes, f.global_bytes, f.copy_engines);
  std::printf("   memory: %d kHz x %d bits, peak %.1f GB/s\n", f.memory_clock_khz, f.memory_bus_bits,
              f.peak_bandwidth_gb_s);
  if (f.max_threads_per_sm > 0 && f.registers_per_sm > 0)
    std::printf("   so at full occupancy a thread may use %d registers\n", f.registers_per_sm / f.max_threads_per_sm);
}

void places(const DeviceFacts& facts) {
  const int blocks = std::max(1, 4 * facts.sm_count);
  const int block_size = 128;
  const int count = blocks * block_size;
  ThreadPlace* d_places = nullptr;
  CUDA_CHECK(cudaMalloc(&d_places, sizeof(ThreadPlace) * count));
  CUDA_CHECK(cudaMemset(d_places, 0xFF, sizeof(ThreadPlace) * count));
  record_places(d_places, count, block_size, -1);
  std::vector<ThreadPlace> got(count);
  CUDA_CHECK(cudaMemcpy(got.data(), d_places, sizeof(ThreadPlace) * count, cudaMemcpyDeviceToHost));
  std::map<int, int> blocks_per_sm;
  for (int b = 0; b < blocks; ++b) ++blocks_per_sm[got[static_cast<std::size_t>(b) * block_size].sm];
  int fewest = blocks, most = 0;
  for (const auto& [sm, n] : blocks_per_sm) {
    fewest = std::min(fewest, n);
    most = std::max(most, n);
  }
  std::printf("   %d blocks of %d threads ran on %zu different SMs, %d to %d blocks each\n", blocks, block_size,
              blocks_per_sm.size(), fewest, most);
  std::printf("   block 0 on SM %d, block 1 on SM %d, block 2 on SM %d, block %d on SM %d\n", got[0].sm,
              got[block_size].sm, got[2 * block_size].sm, blocks - 1,
              got[static_cast<std::size_t>(blocks - 1) * block_size].sm);
  std::printf("   printf from block %d of a launch of %d threads in blocks of %d:\n", kPrintBlock, kPrintThreads,
              kPrintBlockSize);
  std::fflush(stdout);
  record_places(d_places, kPrintThreads, kPrintBlockSize, kPrintBlock);
  CUDA_CHECK(cudaDeviceSynchronize());  // the kernel's printf output comes out here
  CUDA_CHECK(cudaFree(d_places));
}

void kernels() {
  std::printf("   %-15s %10s %12s %14s %11s %7s %5s\n", "kernel", "registers", "local bytes", "static shared",
              "max threads", "binary", "ptx");
  for (const LabKernel kernel : kKernels) {
    const KernelFacts k = kernel_facts(kernel);
    std::printf("   %-15s %10d %12d %14d %11d %7d %5d\n", kernel_name(kernel), k.registers_per_thread,
                k.local_bytes_per_thread, k.static_shared_bytes, k.max_threads_per_block, k.binary_arch, k.ptx_arch);
  }
}

// The occupancy of each kernel at every whole-warp block size, and for kScale (memory bound) and
// kManyRegisters (arithmetic bound) the time of one full wave: as many blocks as fit on every SM at once.
void sweep(const DeviceFacts& facts, const std::string& folder) {
  std::ofstream csv(folder + "/occupancy.csv");
  csv << "kernel,block_size,blocks_per_sm,warps_per_sm,occupancy,time_ms\n";
  Workspace work(kScaleN);
  for (const LabKernel kernel : kKernels) {
    const KernelFacts k = kernel_facts(kernel);
    std::vector<int> sizes;
    for (int size = kSweepStep; size <= k.max_threads_per_block; size += kSweepStep) sizes.push_back(size);
    std::vector<Occupancy> rows(sizes.size(), Occupancy{0, 0, 0.0f});
    occupancy_sweep(kernel, 0, sizes.data(), rows.data(), static_cast<int>(sizes.size()));
    const BlockSizeChoice choice = choose_block_size(kernel, 0, 0);
    const bool timed = kernel == LabKernel::kScale || kernel == LabKernel::kManyRegisters;
    std::printf("\n   %s: the runtime suggests blocks of %d (at least %d blocks)\n", kernel_name(kernel),
                choice.block_size, choice.min_grid_size);
    std::printf("   %6s %9s %9s %9s%s\n", "block", "blocks/SM", "warps/SM", "occupancy", timed ? "   one wave (ms)" : "");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const Occupancy& row = rows[i];
      float ms = 0.0f;
      if (timed && row.blocks_per_sm > 0) {
        const int n = kernel == LabKernel::kScale ? kScaleN : kChainN;
        const int rounds = kernel == LabKernel::kScale ? 1 : kChainRounds;
        const KernelLaunch launch{kernel, facts.sm_count * row.blocks_per_sm, sizes[i], n, rounds};
        ms = time_kernel_ms(launch, work.data, work.launches, 2, 10);
      }
      std::printf("   %6d %9d %9d %9.3f", sizes[i], row.blocks_per_sm, row.warps_per_sm, row.occupancy);
      if (timed) std::printf("   %15.3f", ms);
      std::printf("\n");
      csv << kernel_name(kernel) << ',' << sizes[i] << ',' << row.blocks_per_sm << ',' << row.warps_per_sm << ','
          << row.occupancy << ',' << (timed ? std::to_string(ms) : "") << '\n';
    }
  }
}

// The same work with its values in registers and spilled to local memory, at one launch shape
// both kernels allow.
void spilling(const DeviceFacts& facts) {
  Workspace work(kChainN);
  const int block_size = 256;
  for (const LabKernel kernel : {LabKernel::kManyRegisters, LabKernel::kSpilling}) {
    const KernelFacts k = kernel_facts(kernel);
    const KernelLaunch launch{kernel, facts.sm_count * 4, block_size, kChainN, kChainRounds};
    const float ms = time_kernel_ms(launch, work.data, work.launches, 2, 10);
    std::printf("   %-15s %3d registers, %4d local bytes: %8.3f ms for %d elements x %d rounds\n", kernel_name(kernel),
                k.registers_per_thread, k.local_bytes_per_thread, ms, kChainN, kChainRounds);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string folder = argc > 1 ? argv[1] : ".";
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("No CUDA GPU here: the demo runs your functions on one.\n");
    return 1;
  }
  DeviceFacts facts{};
  part("The first launch", [] { first_launch(); });
  part("The device (query_device)", [&] { device_facts(&facts); });
  part("Where threads run (record_places)", [&] { places(facts); });
  part("What the compiler made (kernel_facts)", [] { kernels(); });
  part("Occupancy (occupancy_sweep, choose_block_size) and time", [&] { sweep(facts, folder); });
  part("Registers against spills", [&] { spilling(facts); });
  std::printf("\nThe sweep is also in %s/occupancy.csv\n", folder.c_str());
  return 0;
}
