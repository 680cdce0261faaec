// Your file for lab 06-scan: fill in every TODO below (the handout: labs/06-scan/README.md).
// Only scan.cu is taken when you are graded: the tests and headers are not yours to change.

#include "kit/cuda_check.cuh"
#include "scan.cuh"

// ===========================================================================
// Part 1: Kogge-Stone, inclusive, one section per block  [15 pts]
// ===========================================================================

// One thread per element of a section.
constexpr int kKoggeStoneThreads = kKoggeStoneSection;

// Inclusive scan of this block's section: log2(kKoggeStoneSection) steps; in the
// step with offset d, element t adds the element d places to its left.
// May assume: blockDim.x == kKoggeStoneThreads; in and out hold n floats.
// Must not: read or write at index n or beyond.
__global__ void kogge_stone_scan_kernel(const float* in, float* out, int n) {
  // TODO: load this block's section into shared memory (0 past the end of the array: it
  //       changes no sum), then run the steps with a doubling offset. In a step, a thread
  //       reads an element that another thread writes, so read from one buffer and write the
  //       other (swap them every step) and let the whole block finish a step before the next
  //       one starts. Store the results of the elements that exist.
}

// Launches kogge_stone_scan_kernel: one block per section. [tested with part 1]
void launch_kogge_stone_scan(const float* d_in, float* d_out, int n) {
  // TODO: one block of kKoggeStoneThreads threads for every section, the last one possibly
  //       partial (round up, without letting n + kKoggeStoneSection overflow an int), then
  //       check the launch with CUDA_CHECK_LAUNCH().
}

// ===========================================================================
// Part 2: work-efficient (Blelloch), exclusive, one section per block  [15 pts]
// ===========================================================================

// Two elements per thread: the widest level of the tree has kWorkEfficientSection / 2 sums.
constexpr int kWorkEfficientThreads = kWorkEfficientSection / 2;

// Exclusive scan of this block's section in a shared-memory tree: the up-sweep
// adds pairs at strides 1, 2, 4, ... until the last element holds the section's
// total; the down-sweep clears that root and sends prefixes back down (a left
// child gets its parent's value, a right child the parent's value plus the old
// left child).
// May assume: blockDim.x == kWorkEfficientThreads; in and out hold n floats.
// Must not: read or write at index n or beyond.
__global__ void work_efficient_scan_kernel(const float* in, float* out, int n) {
  // TODO: load the section into shared memory (0 past the end of the array), with
  //       consecutive threads reading consecutive elements so each warp reads whole lines.
  //       Up-sweep, set the root to 0 (the exclusive prefix of the section's first element),
  //       down-sweep, then store the elements that exist. Every level reads what other threads
  //       wrote at the level before: the block must finish a level before starting the next.
}

// Launches work_efficient_scan_kernel: one block per section. [tested with part 2]
void launch_work_efficient_scan(const float* d_in, float* d_out, int n) {
  // TODO: one block of kWorkEfficientThreads threads for every section, the last one possibly
  //       partial (round up without overflowing an int), then CUDA_CHECK_LAUNCH().
}

// ===========================================================================
// Part 3: a scan of any length, the classic multi-block design  [44 pts + 16 performance]
// ===========================================================================
// Three steps, as in part 2's sections but joined up: scan every tile on its own
// and write each tile's sum; scan the tile sums (exclusive, by the same function,
// recursively); add each tile's offset to all of its elements. Each step is
// tested on its own first (launch_warp_scan, launch_tile_scan, launch_add_offsets).

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;  // every lane of the warp takes part in a shuffle

// A tile of kScanTile elements (scan.cuh) is scanned by one block of kScanThreads
// threads, each holding kScanItems consecutive elements. Any multiple of 32 that
// divides kScanTile, up to 1024, works; the tests do not depend on it. 512 threads
// of 4 items: enough threads per SM to keep memory busy, few enough items that
// the per-thread loop stays short.
constexpr int kScanThreads = 512;
constexpr int kScanItems = kScanTile / kScanThreads;
constexpr int kScanWarps = kScanThreads / kWarpSize;
static_assert(kScanTile % kScanThreads == 0 && kScanThreads % kWarpSize == 0 && kScanWarps <= kWarpSize,
              "whole items per thread, whole warps, and at most 32 warps: one warp scans the warps' totals");

// Inclusive scan across a warp: lane l returns the sum of the values of lanes 0..l.
// May assume: all 32 lanes of the warp call it together.  [tested with launch_warp_scan]
template <class T>
__device__ T warp_inclusive_scan(T value) {
  // TODO: Kogge-Stone once more, in registers instead of shared memory: log2(32) steps, each
  //       lane adding the value of the lane `offset` below it, when there is one. Shuffles
  //       exchange registers within the warp, so no barrier and no shared buffer is needed.
  return value;
}

// Runs warp_inclusive_scan on every run of 32 elements, one element per lane, so
// that it can be tested on its own. Written for you.
__global__ void warp_scan_kernel(const int* in, int* out, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Lanes past n take part with 0 (every lane must reach the shuffles) and store nothing.
  const int value = warp_inclusive_scan(i < n ? in[i] : 0);
  if (i < n) out[i] = value;
}

void launch_warp_scan(const int* d_in, int* d_out, int n) {
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>((static_cast<long long>(n) + kThreads - 1) / kThreads);
  warp_scan_kernel<<<blocks, kThreads>>>(d_in, d_out, n);
  CUDA_CHECK_LAUNCH();
}

// Scans tile b (elements b*kScanTile ... b*kScanTile + kScanTile - 1, those below n)
// on its own, inclusive or exclusive as asked, and writes the tile's sum to
// tile_sums[b] (nothing when tile_sums is nullptr). in may equal out: a block
// reads its whole tile before it writes.
// May assume: blockDim.x == kScanThreads; one block per tile.
// Must not: read or write at index n or beyond.
template <class T>
__global__ void tile_scan_kernel(const T* in, T* out, T* tile_sums, int n, bool inclusive) {
  // TODO: 1. load the tile into shared memory (consecutive threads, consecutive elements:
  //          whole lines per warp; 0 past n, and indices in 64 bits: for n near 2^31 the last
  //          tile reaches past INT_MAX);
  //       2. each thread scans its kScanItems consecutive elements in registers;
  //       3. warp_inclusive_scan of the threads' totals, then one warp scans the warps' totals
  //          through shared memory (barriers: warps read what other warps wrote);
  //       4. add the offsets, write back to shared memory and store the elements that exist;
  //          the last thread writes the tile's sum.
  //       For an exclusive scan, item k takes item k-1's inclusive result (item 0: the offset
  //       before the thread): subtracting the item instead would add a rounding error for floats.
}

// Adds tile_offsets[b] to every element of tile b (those below n), in place.
// May assume: one block per tile.
// Must not: read or write at index n or beyond.
template <class T>
__global__ void add_offsets_kernel(T* out, const T* tile_offsets, int n) {
  // TODO: every thread of the block adds the block's tile offset to some of the tile's
  //       elements, consecutive threads on consecutive elements (whole lines per warp).
}

// Launches tile_scan_kernel: one block per tile. [tested on its own]
void launch_tile_scan(const int* d_in, int* d_out, int* d_tile_sums, int n, bool inclusive) {
  // TODO: one block of kScanThreads threads for every tile, the last one possibly partial
  //       (round up without overflowing an int), then CUDA_CHECK_LAUNCH().
}

// Launches add_offsets_kernel: one block per tile. [tested on its own]
void launch_add_offsets(int* d_out, const int* d_tile_offsets, int n) {
  // TODO: one block for every tile, as in launch_tile_scan, then CUDA_CHECK_LAUNCH().
}

// The scan of n elements: tile scans with their sums, the exclusive scan of the
// sums (by this function, recursively, until they fit in one tile), then the
// offsets added.
template <class T>
void launch_scan(const T* d_in, T* d_out, int n, bool inclusive) {
  // TODO: count the tiles (round up without overflowing an int). One tile: scan it with no
  //       sums (nullptr), done. More: allocate a device array for the tile sums, scan the
  //       tiles writing them, turn the sums into each tile's offset (the sum of all tiles
  //       before it: which kind of scan is that?) with launch_scan itself, add the offsets,
  //       and free the array. cudaMallocAsync / cudaFreeAsync on stream 0 keep the allocation
  //       in stream order (cudaFree would wait for the whole device). Check every call and launch.
}

void launch_inclusive_scan(const int* d_in, int* d_out, int n) { launch_scan(d_in, d_out, n, true); }
void launch_inclusive_scan(const float* d_in, float* d_out, int n) { launch_scan(d_in, d_out, n, true); }
void launch_exclusive_scan(const int* d_in, int* d_out, int n) { launch_scan(d_in, d_out, n, false); }
void launch_exclusive_scan(const float* d_in, float* d_out, int n) { launch_scan(d_in, d_out, n, false); }

// ===========================================================================
// Extra credit: register tiles, 3 memory passes instead of 4  [6 pts + 6 performance]
// ===========================================================================
// Sum every tile, scan the tile sums (recursively), then scan every tile again
// starting from its offset: the input is read twice and the output written once,
// 3 memory passes where part 3's scan-then-add-offsets takes 4. warp_inclusive_scan
// (part 3) is yours to reuse. Leave this part as it is if you do not take it on.

// A tile is what one block scans: kRegisterThreads threads holding kItemsPerThread
// elements each in registers. Many items per thread give each thread many loads
// in flight (what it takes to keep HBM busy) and keep the recursion shallow:
// 4096^2 = 2^24 elements in two levels. At about 50 registers a thread, four
// blocks of 256 share an SM, so some load while others scan and store. Any
// multiple of 32 up to 1024 threads and any item count work; the tests do not
// depend on them.
constexpr int kRegisterThreads = 256;
constexpr int kItemsPerThread = 16;
constexpr int kRegisterWarps = kRegisterThreads / kWarpSize;
constexpr int kWarpItems = kWarpSize * kItemsPerThread;  // the run of consecutive elements a warp holds
constexpr int kRegisterTileItems = kRegisterThreads * kItemsPerThread;
static_assert(kRegisterThreads % kWarpSize == 0 && kRegisterWarps <= kWarpSize,
              "one warp scans the warps' totals, so a block has at most 32 warps");

// tile_sums[b] = the sum of tile b: elements b*kRegisterTileItems ...
// b*kRegisterTileItems + kRegisterTileItems - 1 (those below n). Lane l of warp w
// holds the tile's elements w*kWarpItems + k*32 + l.
// May assume: blockDim.x == kRegisterThreads; one block per tile.
// Must not: read at index n or beyond.
template <class T>
__global__ void register_tile_sum_kernel(const T* in, T* tile_sums, int n) {
  // TODO: each thread adds up its kItemsPerThread elements (indices in 64 bits: for n near
  //       2^31 the last tile can reach past INT_MAX), the warp combines its 32 sums, and the
  //       warps combine theirs through shared memory; one thread writes the tile's sum.
}

// Scans tile b (same layout as register_tile_sum_kernel), starting from tile_offsets[b],
// the sum of every element before the tile (nullptr: 0). Inclusive or exclusive
// as asked. in may equal out: a block reads its whole tile before it writes.
// May assume: blockDim.x == kRegisterThreads; one block per tile.
// Must not: read or write at index n or beyond.
template <class T>
__global__ void register_tile_scan_kernel(const T* in, T* out, const T* tile_offsets, int n, bool inclusive) {
  // TODO: 1. load the thread's items (0 past n);
  //       2. scan the warp's run in order: item k of every lane, after item k-1 of every lane
  //          (warp_inclusive_scan, then carry the warp's running total to the next k);
  //       3. scan the warps' totals through shared memory (barriers: warps read each other's);
  //       4. add the tile's and the warp's offsets and store the items that exist.
  //       For an exclusive scan, lane l takes lane l-1's inclusive result (lane 0: the running
  //       total): subtracting the item instead would add a rounding error for floats.
}

// The scan of n elements: tile sums, their exclusive scan (by this function,
// recursively, until they fit in one tile), then the tile scans.
template <class T>
void launch_register_tiled_scan(const T* d_in, T* d_out, int n, bool inclusive) {
  // TODO: count the tiles (round up without overflowing an int). One tile: scan it with no
  //       offsets, done. More: allocate a device array for the tile sums, fill it with
  //       register_tile_sum_kernel, turn it into each tile's offset (the sum of all tiles before it:
  //       which kind of scan is that?) with launch_register_tiled_scan itself, run register_tile_scan_kernel, and free
  //       the array. cudaMallocAsync / cudaFreeAsync on stream 0 keep the allocation in stream
  //       order (cudaFree would wait for the whole device). Check every call and launch.
}

void launch_register_tiled_inclusive_scan(const int* d_in, int* d_out, int n) {
  // TODO: (extra credit) launch_register_tiled_scan, inclusive.
}
void launch_register_tiled_inclusive_scan(const float* d_in, float* d_out, int n) {
  // TODO: (extra credit) launch_register_tiled_scan, inclusive.
}
void launch_register_tiled_exclusive_scan(const int* d_in, int* d_out, int n) {
  // TODO: (extra credit) launch_register_tiled_scan, exclusive.
}
void launch_register_tiled_exclusive_scan(const float* d_in, float* d_out, int n) {
  // TODO: (extra credit) launch_register_tiled_scan, exclusive.
}
