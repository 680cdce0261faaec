// Scan journey, an experiment beside the single pass: the same decoupled look-back, with each step of the
// look-back covering kLookBackDepth windows of 32 tiles instead of one, the status words read and written
// with .gpu-scope relaxed accesses instead of volatile (system-scope) ones, and a short sleep while a
// predecessor has published nothing yet.
//
// Why: single-pass.cu runs at about 1.6 TB/s whatever its tile's shape. If a block's look-back walks back
// to the newest published prefix one window of 32 tiles per round trip to L2, the scan can retire at most
// 32 tiles per round trip however many bytes a tile holds; four windows per round trip lift that bound
// fourfold. A journey run beside single-pass.cu says whether that is what limits it.
//
// Everything else is single-pass.cu's; see there for the design.
#include "kit/cuda_check.cuh"
#include "scan.cuh"

// A tile: kPassThreads threads holding kPassItems elements each in registers, laid out as the
// extra credit's register tiles: lane l of warp w holds elements w*kPassWarpItems + k*32 + l,
// so every load and store of a warp is 32 consecutive elements.
constexpr int kPassThreads = 256;
constexpr int kPassItems = 16;
constexpr int kPassWarps = kPassThreads / kWarpSize;
constexpr int kPassWarpItems = kWarpSize * kPassItems;
constexpr int kPassTileItems = kPassThreads * kPassItems;
static_assert(kPassWarps <= kWarpSize, "one warp scans the warps' totals, so a block has at most 32 warps");

// What a tile has published: its status in the high 32 bits of one 64-bit word, its value's bits
// in the low 32. A single 64-bit store or load moves both at once, so a reader never sees a status
// with a stale value and no memory fence is needed between them.
enum TileStatus : unsigned { kNothingYet = 0, kAggregate = 1, kInclusivePrefix = 2 };

__device__ unsigned value_bits(int value) { return static_cast<unsigned>(value); }
__device__ unsigned value_bits(float value) { return __float_as_uint(value); }
template <class T>
__device__ T value_from_bits(unsigned bits);
template <>
__device__ int value_from_bits<int>(unsigned bits) { return static_cast<int>(bits); }
template <>
__device__ float value_from_bits<float>(unsigned bits) { return __uint_as_float(bits); }

// Relaxed at GPU scope: atomic, visible to every block of the GPU, and no more (the status words never
// leave the GPU); single-pass.cu's volatile accesses are system-scope.
__device__ unsigned long long load_state(const unsigned long long* state) {
  unsigned long long word;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(state) : "memory");
  return word;
}
__device__ void store_state(unsigned long long* state, unsigned long long word) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"(state), "l"(word) : "memory");
}

template <class T>
__device__ void publish(unsigned long long* tile_states, int tile, TileStatus status, T value) {
  store_state(tile_states + tile, static_cast<unsigned long long>(status) << 32 | value_bits(value));
}

constexpr int kLookBackDepth = 4;  // windows of 32 tiles read in one round trip

// The sum of every element of tiles 0 ... tile-1, by looking back from tile-1, 32 * kLookBackDepth tiles
// at a time. Called by a whole warp; every lane returns the same value.
template <class T>
__device__ T look_back(const unsigned long long* tile_states, int tile) {
  const int lane = threadIdx.x % kWarpSize;
  // Before tile 0 everything is known: an inclusive prefix of 0.
  const unsigned long long before_the_first = static_cast<unsigned long long>(kInclusivePrefix) << 32;
  T prefix = T(0);
  for (int newest = tile - 1;; newest -= kWarpSize * kLookBackDepth) {
    unsigned long long words[kLookBackDepth];  // words[j]: the tile j * 32 + lane before `newest`
    for (;;) {
      bool waiting = false;
#pragma unroll
      for (int j = 0; j < kLookBackDepth; ++j) {
        const int predecessor = newest - j * kWarpSize - lane;
        words[j] = predecessor >= 0 ? load_state(tile_states + predecessor) : before_the_first;
        waiting |= (words[j] >> 32) == kNothingYet;
      }
      if (!__any_sync(kFullMask, waiting)) break;
      __nanosleep(32);
    }
    // The nearest tile with its inclusive prefix ends the look-back; none: every aggregate read counts.
    int last = kWarpSize * kLookBackDepth - 1;  // the farthest tile that counts, as a distance from `newest`
    bool found = false;                         // the same in every lane: it comes from ballots
#pragma unroll
    for (int j = kLookBackDepth - 1; j >= 0; --j) {  // nearest last, so the nearest prefix wins
      const unsigned have_prefix = __ballot_sync(kFullMask, (words[j] >> 32) == kInclusivePrefix);
      if (have_prefix != 0) {
        last = j * kWarpSize + __ffs(have_prefix) - 1;
        found = true;
      }
    }
    T value = T(0);
#pragma unroll
    for (int j = 0; j < kLookBackDepth; ++j)
      if (j * kWarpSize + lane <= last) value += value_from_bits<T>(static_cast<unsigned>(words[j]));
    // A butterfly: every lane ends with the same sum (each step adds the same two values).
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullMask, value, offset);
    prefix += value;
    if (found) return prefix;
  }
}

// Scans one tile per block, in the order blocks start, and publishes its aggregate and then its
// inclusive prefix in tile_states (zeroed before the launch, as is *next_tile).
// May assume: blockDim.x == kPassThreads; a block per tile.
// Must not: read or write at index n or beyond.
template <class T>
__global__ void __launch_bounds__(kPassThreads)
    single_pass_scan_kernel(const T* in, T* out, int n, bool inclusive, unsigned long long* tile_states,
                            int* next_tile) {
  __shared__ int tile_taken;
  __shared__ T warp_offsets[kPassWarps];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if (threadIdx.x == 0) tile_taken = atomicAdd(next_tile, 1);
  __syncthreads();  // every thread reads the tile thread 0 took
  const int tile = tile_taken;

  const long long first = static_cast<long long>(tile) * kPassTileItems + warp * kPassWarpItems + lane;
  T items[kPassItems];
#pragma unroll
  for (int k = 0; k < kPassItems; ++k) {  // all loads first: many in flight per thread
    const long long i = first + k * kWarpSize;
    items[k] = i < n ? in[i] : T(0);
  }

  // The warp's run in order: item k of every lane after item k-1 of every lane. For an exclusive
  // scan lane l takes lane l-1's inclusive result (subtracting its own item would round twice).
  T warp_total = T(0);
#pragma unroll
  for (int k = 0; k < kPassItems; ++k) {
    const T through_me = warp_inclusive_scan(items[k]);
    T before_me = __shfl_up_sync(kFullMask, through_me, 1);
    if (lane == 0) before_me = T(0);
    items[k] = warp_total + (inclusive ? through_me : before_me);
    warp_total += __shfl_sync(kFullMask, through_me, kWarpSize - 1);
  }
  if (lane == 0) warp_offsets[warp] = warp_total;
  __syncthreads();  // warp 0 reads every warp's total

  if (warp == 0) {
    const T total = lane < kPassWarps ? warp_offsets[lane] : T(0);
    const T through_me = warp_inclusive_scan(total);
    T before_me = __shfl_up_sync(kFullMask, through_me, 1);
    if (lane == 0) before_me = T(0);
    const T aggregate = __shfl_sync(kFullMask, through_me, kWarpSize - 1);  // lanes past the warps hold 0
    T prefix = T(0);
    if (tile == 0) {
      if (lane == 0) publish(tile_states, 0, kInclusivePrefix, aggregate);
    } else {
      // The aggregate first, so that later tiles can look past this one while it looks back.
      if (lane == 0) publish(tile_states, tile, kAggregate, aggregate);
      prefix = look_back<T>(tile_states, tile);
      if (lane == 0) publish(tile_states, tile, kInclusivePrefix, prefix + aggregate);
    }
    if (lane < kPassWarps) warp_offsets[lane] = prefix + before_me;  // each lane rewrites only its own slot
  }
  __syncthreads();  // every warp reads its offset, written by warp 0

  const T offset = warp_offsets[warp];
#pragma unroll
  for (int k = 0; k < kPassItems; ++k) {
    const long long i = first + k * kWarpSize;
    if (i < n) out[i] = offset + items[k];
  }
}

template <class T>
void launch_single_pass_scan(const T* d_in, T* d_out, int n, bool inclusive) {
  const int tiles = static_cast<int>((static_cast<long long>(n) + kPassTileItems - 1) / kPassTileItems);
  // A word per tile, then the tile counter, all zero before the kernel starts: nothing published,
  // no tile taken. In stream order on stream 0, as the launch itself.
  const size_t bytes = (static_cast<size_t>(tiles) + 1) * sizeof(unsigned long long);
  unsigned long long* d_tile_states = nullptr;
  CUDA_CHECK(cudaMallocAsync(&d_tile_states, bytes, 0));
  CUDA_CHECK(cudaMemsetAsync(d_tile_states, 0, bytes, 0));
  int* d_next_tile = reinterpret_cast<int*>(d_tile_states + tiles);
  single_pass_scan_kernel<T><<<tiles, kPassThreads>>>(d_in, d_out, n, inclusive, d_tile_states, d_next_tile);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(d_tile_states, 0));
}

void launch_register_tiled_inclusive_scan(const int* d_in, int* d_out, int n) {
  launch_single_pass_scan<int>(d_in, d_out, n, true);
}
void launch_register_tiled_inclusive_scan(const float* d_in, float* d_out, int n) {
  launch_single_pass_scan<float>(d_in, d_out, n, true);
}
void launch_register_tiled_exclusive_scan(const int* d_in, int* d_out, int n) {
  launch_single_pass_scan<int>(d_in, d_out, n, false);
}
void launch_register_tiled_exclusive_scan(const float* d_in, float* d_out, int n) {
  launch_single_pass_scan<float>(d_in, d_out, n, false);
}
