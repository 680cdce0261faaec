// Your file for lab 00-device-basics: fill in every TODO below (the handout: labs/00-device-basics/README.md).
// Only device_basics.cu is taken when you are graded: the tests and headers are not yours to change.

#include <cstdio>
#include <cstring>

#include "device_basics.cuh"
#include "kit/cuda_check.cuh"

// ---------------------------------------------------------------------------
// Part 1: the device.

// What one GPU is: its properties, then two figures worked out from them. [18 pts]
DeviceFacts query_device(int device) {
  DeviceFacts facts{};
  // TODO: fill every field of facts for GPU `device`. cudaGetDeviceProperties gives most of
  //       them in one call (read the cudaDeviceProp fields' comments in the CUDA Runtime API
  //       documentation: per block and per multiprocessor are different fields). CUDA 13 took
  //       the memory clock out of cudaDeviceProp: ask cudaDeviceGetAttribute for it. Then work
  //       out max_warps_per_sm and peak_bandwidth_gb_s as the header says (double arithmetic:
  //       the product overflows an int). Copy the name with its terminating '\0'.
  //       Wrap every CUDA call in CUDA_CHECK(...).
  return facts;
}

// ---------------------------------------------------------------------------
// Part 2: where your threads run.

// One thread per place: where thread i ran.
// May assume: places points to at least count ThreadPlaces in device memory.
// Must not: write any place at index count or beyond.
__global__ void record_places_kernel(ThreadPlace* places, int count, int print_block) {
  // TODO: work out this thread's index i over the whole grid, and return at once when it is
  //       count or more (the last block is usually partly empty). Fill a ThreadPlace: its
  //       block, its warp within the block and its lane within the warp (from threadIdx.x
  //       and warpSize, not from i: a block need not be a whole number of warps), and sm_id().
  //       Store it at places[i]. When blockIdx.x is print_block, also printf it: one line a
  //       thread, which appears on your terminal once the host waits for the kernel.
}

// Launches record_places_kernel over count threads. [18 pts, with the kernel]
void record_places(ThreadPlace* d_places, int count, int threads_per_block, int print_block) {
  // TODO: launch record_places_kernel with threads_per_block threads per block and enough
  //       blocks for count threads (round the division up), then CUDA_CHECK_LAUNCH().
}

// ---------------------------------------------------------------------------
// Part 3: timing a kernel.

// The average time of one launch after `warmup` untimed ones. [18 pts]
float time_kernel_ms(KernelLaunch launch, float* d_data, unsigned long long* d_launches, int warmup, int repeats) {
  // TODO: 1. launch the kernel warmup times with launch_lab_kernel (checking each launch):
  //          the first launch of a kernel in a program pays for loading its code;
  //       2. create two CUDA events, record the first, launch repeats times, record the
  //          second. A record is queued like a launch: the GPU stamps the time when it gets there;
  //       3. wait for the second event to happen (the launches return before the kernels
  //          run), then cudaEventElapsedTime gives the milliseconds between the two;
  //       4. destroy the events and return the time of one launch.
  return 0.0f;
}

// ---------------------------------------------------------------------------
// Part 4: what the compiler made, and what fits on an SM.

// Registers, spills and shared memory of one lab kernel. [5 pts]
KernelFacts kernel_facts(LabKernel kernel) {
  KernelFacts facts{};
  // TODO: cudaFuncGetAttributes(&attributes, lab_kernel(kernel)) describes the compiled
  //       kernel; copy the six fields the header names from it.
  return facts;
}

// What one SM holds of a kernel at each block size. [16 pts]
void occupancy_sweep(LabKernel kernel, std::size_t dynamic_shared_bytes, const int* h_block_sizes,
                     Occupancy* h_rows, int count) {
  // TODO: read the SM's maximum of resident threads and the warp size of the current device
  //       (cudaGetDevice, then cudaDeviceGetAttribute or cudaGetDeviceProperties) once. For each
  //       block size, cudaOccupancyMaxActiveBlocksPerMultiprocessor says how many blocks of
  //       lab_kernel(kernel) fit on one SM beside each other; a block of 33 threads still takes
  //       two whole warps. Fill h_rows[i].
}

// The runtime's suggested block size. [10 pts]
BlockSizeChoice choose_block_size(LabKernel kernel, std::size_t dynamic_shared_bytes, int block_size_limit) {
  BlockSizeChoice choice{};
  // TODO: one call of cudaOccupancyMaxPotentialBlockSize for lab_kernel(kernel), passing the
  //       dynamic shared memory and the limit on.
  return choice;
}
