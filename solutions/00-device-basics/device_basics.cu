#include <cstdio>
#include <cstring>

#include "device_basics.cuh"
#include "kit/cuda_check.cuh"

// ---------------------------------------------------------------------------
// Part 1: the device.

// What one GPU is: its properties, then two figures worked out from them. [18 pts]
DeviceFacts query_device(int device) {
  DeviceFacts facts{};
  // BEGIN SOLUTION
  // TODO: fill every field of facts for GPU `device`. cudaGetDeviceProperties gives most of
  //       them in one call (read the cudaDeviceProp fields' comments in the CUDA Runtime API
  //       documentation: per block and per multiprocessor are different fields). CUDA 13 took
  //       the memory clock out of cudaDeviceProp: ask cudaDeviceGetAttribute for it. Then work
  //       out max_warps_per_sm and peak_bandwidth_gb_s as the header says (double arithmetic:
  //       the product overflows an int). Copy the name with its terminating '\0'.
  //       Wrap every CUDA call in CUDA_CHECK(...).
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  static_assert(sizeof(facts.name) == sizeof(prop.name), "both names are 256 chars, the last a terminating 0");
  std::memcpy(facts.name, prop.name, sizeof(facts.name));
  facts.compute_major = prop.major;
  facts.compute_minor = prop.minor;
  facts.sm_count = prop.multiProcessorCount;
  facts.warp_size = prop.warpSize;
  facts.max_threads_per_block = prop.maxThreadsPerBlock;
  facts.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  facts.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  facts.max_warps_per_sm = prop.maxThreadsPerMultiProcessor / prop.warpSize;
  facts.registers_per_sm = prop.regsPerMultiprocessor;
  facts.registers_per_block = prop.regsPerBlock;
  facts.shared_bytes_per_sm = prop.sharedMemPerMultiprocessor;
  facts.shared_bytes_per_block = prop.sharedMemPerBlock;
  facts.shared_bytes_per_block_optin = prop.sharedMemPerBlockOptin;
  facts.shared_bytes_reserved_per_block = prop.reservedSharedMemPerBlock;
  facts.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  facts.global_bytes = prop.totalGlobalMem;
  facts.copy_engines = prop.asyncEngineCount;
  CUDA_CHECK(cudaDeviceGetAttribute(&facts.memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  facts.memory_bus_bits = prop.memoryBusWidth;
  // Double data rate: two transfers per clock, each as wide as the bus.
  facts.peak_bandwidth_gb_s = 2.0 * facts.memory_clock_khz * 1e3 * (facts.memory_bus_bits / 8.0) / 1e9;
  // END SOLUTION
  return facts;
}

// ---------------------------------------------------------------------------
// Part 2: where your threads run.

// One thread per place: where thread i ran.
// May assume: places points to at least count ThreadPlaces in device memory.
// Must not: write any place at index count or beyond.
__global__ void record_places_kernel(ThreadPlace* places, int count, int print_block) {
  // BEGIN SOLUTION
  // TODO: work out this thread's index i over the whole grid, and return at once when it is
  //       count or more (the last block is usually partly empty). Fill a ThreadPlace: its
  //       block, its warp within the block and its lane within the warp (from threadIdx.x
  //       and warpSize, not from i: a block need not be a whole number of warps), and sm_id().
  //       Store it at places[i]. When blockIdx.x is print_block, also printf it: one line a
  //       thread, which appears on your terminal once the host waits for the kernel.
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  ThreadPlace place;
  place.block = blockIdx.x;
  place.warp = threadIdx.x / warpSize;
  place.lane = threadIdx.x % warpSize;
  place.sm = sm_id();
  places[i] = place;
  if (static_cast<int>(blockIdx.x) == print_block)
    printf("block %d warp %d lane %2d: thread %4d on SM %d\n", place.block, place.warp, place.lane, i, place.sm);
  // END SOLUTION
}

// Launches record_places_kernel over count threads. [18 pts, with the kernel]
void record_places(ThreadPlace* d_places, int count, int threads_per_block, int print_block) {
  // BEGIN SOLUTION
  // TODO: launch record_places_kernel with threads_per_block threads per block and enough
  //       blocks for count threads (round the division up), then CUDA_CHECK_LAUNCH().
  const int blocks = (count + threads_per_block - 1) / threads_per_block;
  record_places_kernel<<<blocks, threads_per_block>>>(d_places, count, print_block);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------
// Part 3: timing a kernel.

// The average time of one launch after `warmup` untimed ones. [18 pts]
float time_kernel_ms(KernelLaunch launch, float* d_data, unsigned long long* d_launches, int warmup, int repeats) {
  // BEGIN SOLUTION
  // TODO: 1. launch the kernel warmup times with launch_lab_kernel (checking each launch):
  //          the first launch of a kernel in a program pays for loading its code;
  //       2. create two CUDA events, record the first, launch repeats times, record the
  //          second. A record is queued like a launch: the GPU stamps the time when it gets there;
  //       3. wait for the second event to happen (the launches return before the kernels
  //          run), then cudaEventElapsedTime gives the milliseconds between the two;
  //       4. destroy the events and return the time of one launch.
  // SKELETON: return 0.0f;
  for (int i = 0; i < warmup; ++i) {
    launch_lab_kernel(launch, d_data, d_launches);
    CUDA_CHECK_LAUNCH();
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < repeats; ++i) {
    launch_lab_kernel(launch, d_data, d_launches);
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float total_ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&total_ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return total_ms / static_cast<float>(repeats);
  // END SOLUTION
}

// ---------------------------------------------------------------------------
// Part 4: what the compiler made, and what fits on an SM.

// Registers, spills and shared memory of one lab kernel. [5 pts]
KernelFacts kernel_facts(LabKernel kernel) {
  KernelFacts facts{};
  // BEGIN SOLUTION
  // TODO: cudaFuncGetAttributes(&attributes, lab_kernel(kernel)) describes the compiled
  //       kernel; copy the six fields the header names from it.
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, lab_kernel(kernel)));
  facts.registers_per_thread = attributes.numRegs;
  facts.local_bytes_per_thread = static_cast<int>(attributes.localSizeBytes);
  facts.static_shared_bytes = static_cast<int>(attributes.sharedSizeBytes);
  facts.max_threads_per_block = attributes.maxThreadsPerBlock;
  facts.binary_arch = attributes.binaryVersion;
  facts.ptx_arch = attributes.ptxVersion;
  // END SOLUTION
  return facts;
}

// What one SM holds of a kernel at each block size. [16 pts]
void occupancy_sweep(LabKernel kernel, std::size_t dynamic_shared_bytes, const int* h_block_sizes,
                     Occupancy* h_rows, int count) {
  // BEGIN SOLUTION
  // TODO: read the SM's maximum of resident threads and the warp size of the current device
  //       (cudaGetDevice, then cudaDeviceGetAttribute or cudaGetDeviceProperties) once. For each
  //       block size, cudaOccupancyMaxActiveBlocksPerMultiprocessor says how many blocks of
  //       lab_kernel(kernel) fit on one SM beside each other; a block of 33 threads still takes
  //       two whole warps. Fill h_rows[i].
  int device = 0, max_threads_per_sm = 0, warp_size = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&warp_size, cudaDevAttrWarpSize, device));
  const int max_warps_per_sm = max_threads_per_sm / warp_size;
  for (int i = 0; i < count; ++i) {
    const int block_size = h_block_sizes[i];
    int blocks = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, lab_kernel(kernel), block_size,
                                                             dynamic_shared_bytes));
    const int warps_per_block = (block_size + warp_size - 1) / warp_size;
    h_rows[i].blocks_per_sm = blocks;
    h_rows[i].warps_per_sm = blocks * warps_per_block;
    h_rows[i].occupancy = static_cast<float>(h_rows[i].warps_per_sm) / static_cast<float>(max_warps_per_sm);
  }
  // END SOLUTION
}

// The runtime's suggested block size. [10 pts]
BlockSizeChoice choose_block_size(LabKernel kernel, std::size_t dynamic_shared_bytes, int block_size_limit) {
  BlockSizeChoice choice{};
  // BEGIN SOLUTION
  // TODO: one call of cudaOccupancyMaxPotentialBlockSize for lab_kernel(kernel), passing the
  //       dynamic shared memory and the limit on.
  CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&choice.min_grid_size, &choice.block_size, lab_kernel(kernel),
                                                dynamic_shared_bytes, block_size_limit));
  // END SOLUTION
  return choice;
}
