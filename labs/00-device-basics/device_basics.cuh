// Lab 00: the device and its limits. The functions the tests call; you write them in
// device_basics.cu.
//
// Nothing here is fast or clever: the lab asks the GPU what it is, where your threads run,
// how long a kernel takes, and how many threads an SM can hold for a given kernel. Every
// later lab leans on these numbers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>

// ---------------------------------------------------------------------------
// Part 1: the device.

// What the CUDA runtime says about one GPU, and two figures worked out from it.
struct DeviceFacts {
  char name[256];                  // e.g. "NVIDIA H100 80GB HBM3", ending in '\0'
  int compute_major;               // compute capability, e.g. 9 and 0 for an H100 (sm_90):
  int compute_minor;               //   the SM's architecture, which nvcc's -arch must match
  int sm_count;                    // streaming multiprocessors
  int warp_size;                   // threads per warp
  int max_threads_per_block;
  int max_threads_per_sm;          // threads one SM holds at once
  int max_blocks_per_sm;           // blocks one SM holds at once
  int max_warps_per_sm;            // worked out: max_threads_per_sm / warp_size
  int registers_per_sm;            // 32-bit registers in one SM's register file
  int registers_per_block;         // the most one block may use
  std::size_t shared_bytes_per_sm;              // shared memory of one SM
  std::size_t shared_bytes_per_block;           // what a block gets without asking for more
  std::size_t shared_bytes_per_block_optin;     // the most a block can get when it asks
  std::size_t shared_bytes_reserved_per_block;  // what the driver keeps for each resident block
  std::size_t l2_bytes;            // the L2 cache
  std::size_t global_bytes;        // device memory
  int copy_engines;                // copies that can run at once beside kernels (asyncEngineCount)
  int memory_clock_khz;            // the device memory's clock
  int memory_bus_bits;             // the device memory's bus width
  double peak_bandwidth_gb_s;      // worked out: 2 transfers per clock x clock x bus width in
                                   // bytes, in 10^9 bytes per second
};

// The facts of GPU number `device` (0 is the first), as cudaGetDeviceProperties and
// cudaDeviceGetAttribute give them, and the two worked-out figures. Leaves the current
// device as it found it. 0 <= device < the number of GPUs. [tested against the runtime]
DeviceFacts query_device(int device);

// ---------------------------------------------------------------------------
// Part 2: where your threads run.

// Where thread i of a launch ran.
struct ThreadPlace {
  int block;  // blockIdx.x
  int warp;   // its warp within its block: threads 0-31 of a block are warp 0, 32-63 warp 1, ...
  int lane;   // its place within that warp, 0 to 31
  int sm;     // the SM that ran its block (sm_id() below)
};

// Launches `count` threads in blocks of `threads_per_block` (the last block may be partly
// empty) and writes d_places[i] for each thread i = blockIdx.x * blockDim.x + threadIdx.x
// below count; writes nothing else. When print_block >= 0, the threads of block
// print_block also print their place with printf (the handout's exercise); the tests pass
// -1. count >= 1, 1 <= threads_per_block <= 1024; d_places holds count places in device
// memory. Configures and launches the kernel and nothing else (no synchronization).
void record_places(ThreadPlace* d_places, int count, int threads_per_block, int print_block);

// ---------------------------------------------------------------------------
// Part 3 and 4: the lab's kernels, timed and measured.
//
// Five kernels, defined at the end of this header, each for one lesson. They have one
// signature, (float* data, int n, int rounds, unsigned long long* launches), and every
// launch adds 1 to *launches (unless launches is null), so the tests can count them.
enum class LabKernel : int {
  kScale = 0,          // x = 0.999 x + 0.001, `rounds` times, on each of data[0, n): memory bound
  kManyRegisters = 1,  // 128 values per thread kept in registers, `rounds` steps on each: many registers
  kSpilling = 2,       // the same work, with __launch_bounds__ capping it at 64 registers: the rest spill
  kSharedTile = 3,     // each block reverses tiles of data through 32 KiB of shared memory
  kSpin = 4,           // does no work: thread 0 of each block waits `rounds` microseconds on the GPU's clock
};

// One launch of a lab kernel: `blocks` blocks of `threads_per_block` threads over data[0, n).
// The kernels loop over their data (grid-stride), so any number of blocks covers any n.
struct KernelLaunch {
  LabKernel kernel;
  int blocks;
  int threads_per_block;
  int n;
  int rounds;  // work per element; for kSpin, microseconds each block waits
};

// The average time of one launch of `launch`, in milliseconds, measured with CUDA events:
// first `warmup` launches that are not timed, then `repeats` timed launches (one pair of
// events around them all, or a pair per launch: either is right). Launches the kernel
// warmup + repeats times in all, with launch_lab_kernel(launch, d_data, d_launches), and
// returns once they are done. warmup >= 0, repeats >= 1; d_data holds n floats and
// d_launches one counter, both in device memory. [tested against the kernel's known time and the
// tests' own events]
float time_kernel_ms(KernelLaunch launch, float* d_data, unsigned long long* d_launches, int warmup, int repeats);

// What the compiler made of a kernel (cudaFuncGetAttributes).
struct KernelFacts {
  int registers_per_thread;
  int local_bytes_per_thread;  // local memory: where registers that did not fit spill
  int static_shared_bytes;     // __shared__ arrays the kernel declares
  int max_threads_per_block;   // the largest block it can be launched with
  int binary_arch;             // the SASS it runs, e.g. 90 for sm_90
  int ptx_arch;                // the PTX it was compiled from, e.g. 90 for compute_90
};

// The facts of one of the lab's kernels. [tested against the runtime]
KernelFacts kernel_facts(LabKernel kernel);

// What one SM holds at once of a kernel launched with blocks of `block_size` threads.
struct Occupancy {
  int blocks_per_sm;  // cudaOccupancyMaxActiveBlocksPerMultiprocessor
  int warps_per_sm;   // blocks_per_sm x the warps of one block (a partly filled warp counts whole)
  float occupancy;    // warps_per_sm / the SM's maximum of resident warps, from 0 to 1
};

// For each i below count: h_rows[i] is the occupancy of `kernel` with blocks of
// h_block_sizes[i] threads and `dynamic_shared_bytes` of dynamic shared memory per block.
// Every block size is from 1 to the kernel's max_threads_per_block, and dynamic_shared_bytes
// at most what a block may have beside the kernel's own (48 KiB in all). count >= 1; both
// arrays are in host memory. [tested against the runtime]
void occupancy_sweep(LabKernel kernel, std::size_t dynamic_shared_bytes, const int* h_block_sizes,
                     Occupancy* h_rows, int count);

// The block size the runtime suggests for a kernel.
struct BlockSizeChoice {
  int block_size;     // the block size that gives the most resident warps per SM
  int min_grid_size;  // the fewest blocks that fill every SM at that block size
};

// cudaOccupancyMaxPotentialBlockSize's choice for `kernel` with `dynamic_shared_bytes` of
// dynamic shared memory per block, among block sizes up to `block_size_limit` (0: no limit
// but the kernel's own). [tested against the runtime]
BlockSizeChoice choose_block_size(LabKernel kernel, std::size_t dynamic_shared_bytes, int block_size_limit);

// ---------------------------------------------------------------------------
// GPU code the lab gives you: nvcc compiles it into your file and into the tests, so both
// measure the same kernels. (A C++ compiler without CUDA sees only the declarations above.)
#ifdef __CUDACC__

// The SM running the calling thread. The numbers need not be consecutive: they stay below
// the %nsmid of PTX, which may exceed the SM count.
static __device__ inline int sm_id() {
  unsigned int id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return static_cast<int>(id);
}

// The GPU's clock in nanoseconds (%globaltimer), the same for every SM.
static __device__ inline unsigned long long global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

constexpr int kChainValues = 128;  // kManyRegisters' values per thread: more than 64 registers hold
constexpr int kTileFloats = 8192;  // kSharedTile's tile: 32 KiB of shared memory per block

static __device__ inline void count_launch(unsigned long long* launches) {
  if (launches != nullptr && blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(launches, 1ull);
}

static __global__ void scale_kernel(float* data, int n, int rounds, unsigned long long* launches) {
  count_launch(launches);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float x = data[i];
    for (int r = 0; r < rounds; ++r) x = fmaf(x, 0.999f, 0.001f);
    data[i] = x;
  }
}

// Every value is read by its neighbour's next step, so all kChainValues stay live at once:
// the compiler must hold them in registers, or spill what does not fit.
static __device__ inline float chain(float x, int rounds) {
  float v[kChainValues];
#pragma unroll
  for (int j = 0; j < kChainValues; ++j) v[j] = x + static_cast<float>(j);
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int j = 0; j < kChainValues; ++j) v[j] = fmaf(v[(j + 1) % kChainValues], 0.001f, 0.999f * v[j]);
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kChainValues; ++j) sum += v[j];
  return sum;
}

static __global__ void many_registers_kernel(float* data, int n, int rounds, unsigned long long* launches) {
  count_launch(launches);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = chain(data[i], rounds);
}

// A block of 1024 threads must fit on one SM: 65536 registers / 1024 threads = 64 a thread, on every GPU
// since compute capability 7.5 (two such blocks an SM would leave 32, but some GPUs hold fewer than 2048 threads).
static __global__ void __launch_bounds__(1024, 1)
    spilling_kernel(float* data, int n, int rounds, unsigned long long* launches) {
  count_launch(launches);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = chain(data[i], rounds);
}

static __global__ void shared_tile_kernel(float* data, int n, int rounds, unsigned long long* launches) {
  __shared__ float tile[kTileFloats];
  count_launch(launches);
  for (long long base = static_cast<long long>(blockIdx.x) * kTileFloats; base < n;
       base += static_cast<long long>(gridDim.x) * kTileFloats) {
    const int length = static_cast<int>(n - base < kTileFloats ? n - base : kTileFloats);
    for (int j = threadIdx.x; j < length; j += blockDim.x) tile[j] = data[base + j];
    __syncthreads();
    for (int j = threadIdx.x; j < length; j += blockDim.x) {
      float x = tile[length - 1 - j];
      for (int r = 0; r < rounds; ++r) x = fmaf(x, 0.999f, 0.001f);
      data[base + j] = x;
    }
    __syncthreads();  // the tile is read to the end before the next one overwrites it
  }
}

static __global__ void spin_kernel(float* data, int n, int rounds, unsigned long long* launches) {
  count_launch(launches);
  (void)data;
  (void)n;
  if (threadIdx.x != 0) return;
  const unsigned long long start = global_time_ns();
  const unsigned long long wait_ns = static_cast<unsigned long long>(rounds) * 1000ull;
  while (global_time_ns() - start < wait_ns) {
  }
}

using LabKernelFunction = void (*)(float*, int, int, unsigned long long*);

// The kernel a LabKernel names: pass it to cudaFuncGetAttributes and the cudaOccupancy* calls.
// Throws std::invalid_argument for a value the enum does not name.
static inline LabKernelFunction lab_kernel(LabKernel kernel) {
  switch (kernel) {
    case LabKernel::kScale: return scale_kernel;
    case LabKernel::kManyRegisters: return many_registers_kernel;
    case LabKernel::kSpilling: return spilling_kernel;
    case LabKernel::kSharedTile: return shared_tile_kernel;
    case LabKernel::kSpin: return spin_kernel;
  }
  throw std::invalid_argument("lab_kernel: not one of the lab's kernels");
}

// Queues one launch of `launch` on `stream` and returns at once: no error check, no wait.
// Check it with CUDA_CHECK_LAUNCH() as any launch.
static inline void launch_lab_kernel(const KernelLaunch& launch, float* d_data, unsigned long long* d_launches,
                                     cudaStream_t stream = 0) {
  lab_kernel(launch.kernel)<<<launch.blocks, launch.threads_per_block, 0, stream>>>(d_data, launch.n, launch.rounds,
                                                                                 d_launches);
}

#endif  // __CUDACC__
