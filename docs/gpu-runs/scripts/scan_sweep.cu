// Issue 20's scan sweep: which single-pass scan with decoupled look-back comes closest to CUB's inclusive scan
// on 2^28 elements, for the scan journey's last step (solutions/06-scan/journey/). The journey's single pass
// keeps its elements warp-striped and scans each of a thread's 16 with a warp scan of its own (7 shuffles an
// element); it reached 0.61 of Thrust's scan on an H100 (2026-11-26). Each configuration here keeps a thread's
// elements consecutive instead ("blocked"), loaded and stored as float4s: a thread adds its own run serially,
// and one warp scan of the threads' totals, one of the warps' totals and the look-back give every thread the
// offset of its run. Parameters: threads a block, elements a thread.
//
// Every int result is compared with CUB's exactly (the same kernel scans floats, so this is the structural
// check); every float result with a scan in double of the same inputs, within the rounding bound of the additions
// on any element's path. Timing: the median of REPEATS runs by CUDA events after WARMUP, the tile states' reset
// included (CUB's own initialization kernel is in its time); CUB and a device-to-device copy in the same run.
//
//   bash docs/gpu-runs/scripts/sweeps.sh (builds every probe with the harness, then runs them)
//   ./scan_sweep [log2 of the length, default 28]
#include <cub/device/device_scan.cuh>

#include <type_traits>

#include "sweep.cuh"


constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

// What a tile has published, in one 64-bit word so that a reader sees status and value together: the status
// in the high half, the value's bits in the low half.
enum TileStatus : unsigned { kNothingYet = 0, kAggregate = 1, kInclusivePrefix = 2 };

__device__ inline unsigned bits_of(int value) { return static_cast<unsigned>(value); }
__device__ inline unsigned bits_of(float value) { return __float_as_uint(value); }
template <class T>
__device__ inline T from_bits(unsigned bits);
template <>
__device__ inline int from_bits<int>(unsigned bits) { return static_cast<int>(bits); }
template <>
__device__ inline float from_bits<float>(unsigned bits) { return __uint_as_float(bits); }

template <class T>
__device__ inline void publish(unsigned long long* states, int tile, TileStatus status, T value) {
  *reinterpret_cast<volatile unsigned long long*>(states + tile) =
      static_cast<unsigned long long>(status) << 32 | bits_of(value);
}

template <class T>
__device__ inline T warp_inclusive(T value) {
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int offset = 1; offset < kWarp; offset *= 2) {
    const T below = __shfl_up_sync(kFullMask, value, offset);
    if (lane >= offset) value += below;
  }
  return value;
}

// The sum of tiles 0 ... tile - 1, looking back from tile - 1, 32 tiles a round (a lane each); by a whole warp,
// every lane returning it.
template <class T>
__device__ T look_back(const unsigned long long* states, int tile) {
  const int lane = threadIdx.x % kWarp;
  T prefix = T(0);
  for (int newest = tile - 1;; newest -= kWarp) {
    const int predecessor = newest - lane;
    const unsigned long long known_zero = static_cast<unsigned long long>(kInclusivePrefix) << 32;
    unsigned long long word;
    do {
      word = predecessor >= 0 ? *reinterpret_cast<const volatile unsigned long long*>(states + predecessor)
                              : known_zero;
    } while (__any_sync(kFullMask, (word >> 32) == kNothingYet));
    const unsigned with_prefix = __ballot_sync(kFullMask, (word >> 32) == kInclusivePrefix);
    const int last = with_prefix != 0 ? __ffs(with_prefix) - 1 : kWarp - 1;
    T value = lane <= last ? from_bits<T>(static_cast<unsigned>(word)) : T(0);
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullMask, value, offset);
    prefix += value;
    if (with_prefix != 0) return prefix;
  }
}

// An inclusive scan of n elements (n a multiple of THREADS * ITEMS), one tile a block, tiles in the order blocks
// start; thread t of a tile holds elements t * ITEMS ... t * ITEMS + ITEMS - 1 of it. Its results are stored
// as each thread's float4s, or, with STORE_VIA_SHARED, turned warp-striped through shared memory first, so that
// each store of a warp writes 128 contiguous bytes.
template <class T, int THREADS, int ITEMS, bool STORE_VIA_SHARED>
__global__ void __launch_bounds__(THREADS)
    blocked_scan(const T* __restrict__ in, T* __restrict__ out, unsigned long long* states, int* next_tile) {
  static_assert(ITEMS % 4 == 0 && sizeof(T) == 4, "float4-sized loads of 32-bit elements");
  constexpr int kWarps = THREADS / kWarp;
  static_assert(THREADS % kWarp == 0 && kWarps <= kWarp, "one warp scans the warps' totals");
  __shared__ int tile_taken;
  __shared__ T warp_offsets[kWarps];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (threadIdx.x == 0) tile_taken = atomicAdd(next_tile, 1);
  __syncthreads();
  const int tile = tile_taken;
  const std::size_t first = (static_cast<std::size_t>(tile) * THREADS + threadIdx.x) * ITEMS;

  T items[ITEMS];
#pragma unroll
  for (int v = 0; v < ITEMS / 4; ++v) {
    const int4 word = reinterpret_cast<const int4*>(in + first)[v];
    items[4 * v + 0] = from_bits<T>(static_cast<unsigned>(word.x));
    items[4 * v + 1] = from_bits<T>(static_cast<unsigned>(word.y));
    items[4 * v + 2] = from_bits<T>(static_cast<unsigned>(word.z));
    items[4 * v + 3] = from_bits<T>(static_cast<unsigned>(word.w));
  }
#pragma unroll
  for (int i = 1; i < ITEMS; ++i) items[i] += items[i - 1];  // the thread's own run

  const T through_me = warp_inclusive(items[ITEMS - 1]);
  T before_me = __shfl_up_sync(kFullMask, through_me, 1);
  if (lane == 0) before_me = T(0);
  if (lane == kWarp - 1) warp_offsets[warp] = through_me;
  __syncthreads();

  if (warp == 0) {
    const T total = lane < kWarps ? warp_offsets[lane] : T(0);
    const T warps_through = warp_inclusive(total);
    T warps_before = __shfl_up_sync(kFullMask, warps_through, 1);
    if (lane == 0) warps_before = T(0);
    const T aggregate = __shfl_sync(kFullMask, warps_through, kWarp - 1);
    T prefix = T(0);
    if (tile == 0) {
      if (lane == 0) publish(states, 0, kInclusivePrefix, aggregate);
    } else {
      if (lane == 0) publish(states, tile, kAggregate, aggregate);
      prefix = look_back<T>(states, tile);
      if (lane == 0) publish(states, tile, kInclusivePrefix, prefix + aggregate);
    }
    if (lane < kWarps) warp_offsets[lane] = prefix + warps_before;
  }
  __syncthreads();

  const T offset = warp_offsets[warp] + before_me;
  if constexpr (STORE_VIA_SHARED) {
    // Each warp its own 32 x ITEMS elements, one padding word after every 32 so that the lanes' blocked writes
    // (ITEMS words apart) and striped reads fall in different banks.
    constexpr int kWarpItems = kWarp * ITEMS;
    __shared__ T striped[kWarps][kWarpItems + kWarpItems / kWarp];
    const auto at = [](int x) { return x + x / kWarp; };
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) striped[warp][at(lane * ITEMS + i)] = offset + items[i];
    __syncwarp();
    T* warp_out = out + static_cast<std::size_t>(tile) * THREADS * ITEMS + static_cast<std::size_t>(warp) * kWarpItems;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) warp_out[i * kWarp + lane] = striped[warp][at(i * kWarp + lane)];
  } else {
#pragma unroll
    for (int v = 0; v < ITEMS / 4; ++v) {
      int4 word;
      word.x = static_cast<int>(bits_of(offset + items[4 * v + 0]));
      word.y = static_cast<int>(bits_of(offset + items[4 * v + 1]));
      word.z = static_cast<int>(bits_of(offset + items[4 * v + 2]));
      word.w = static_cast<int>(bits_of(offset + items[4 * v + 3]));
      reinterpret_cast<int4*>(out + first)[v] = word;
    }
  }
}

// Inputs the same on every run: ints in [-8, 8], floats in [-1, 1).
__global__ void fill(int* ints, float* floats, double* doubles, double* magnitudes, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    ints[i] = static_cast<int>(hashed(i, 1u) % 17u) - 8;
    floats[i] = uniform_from(hashed(i, 2u));
    doubles[i] = floats[i];
    magnitudes[i] = fabs(doubles[i]);
  }
}

__global__ void count_int_mismatches(const int* got, const int* want, std::size_t n, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    mine += got[i] != want[i];
  if (mine) atomicAdd(wrong, mine);
}

struct Data {
  std::size_t n;
  int *ints, *ints_out, *ints_want;
  float *floats, *floats_out;
  double *exact, *magnitude;  // the scans, in double, of the floats and of their magnitudes
  unsigned long long* wrong;
};

// A scan reads and writes every element once: 8 bytes an element, as lab 06 counts it.
double gb_per_s(std::size_t n, double ms) { return 8.0 * static_cast<double>(n) / (ms * 1e-3) / 1e9; }

unsigned long long mismatches(const Data& d) {
  unsigned long long wrong = 0;
  CUDA_CHECK(cudaMemcpy(&wrong, d.wrong, sizeof(wrong), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemset(d.wrong, 0, sizeof(*d.wrong)));
  return wrong;
}

template <int THREADS, int ITEMS, bool STORE_VIA_SHARED = false>
void sweep_one(const Data& d, double cub_ms, double copy_ms) {
  constexpr std::size_t kTileItems = static_cast<std::size_t>(THREADS) * ITEMS;
  if (d.n % kTileItems != 0) {
    std::printf("%4d threads x %2d: the length is not a multiple of its tile, skipped\n", THREADS, ITEMS);
    return;
  }
  const int tiles = static_cast<int>(d.n / kTileItems);
  const std::size_t state_bytes = (static_cast<std::size_t>(tiles) + 1) * sizeof(unsigned long long);
  unsigned long long* states = nullptr;
  CUDA_CHECK(cudaMalloc(&states, state_bytes));
  int* next_tile = reinterpret_cast<int*>(states + tiles);
  const auto scan = [&](auto* in, auto* out) {
    using T = std::remove_pointer_t<std::remove_cv_t<std::remove_pointer_t<decltype(in)>>>;
    CUDA_CHECK(cudaMemsetAsync(states, 0, state_bytes));  // nothing published, no tile taken
    blocked_scan<T, THREADS, ITEMS, STORE_VIA_SHARED><<<tiles, THREADS>>>(in, out, states, next_tile);
  };
  CUDA_CHECK(cudaMemset(d.ints_out, 0xFF, d.n * sizeof(int)));
  CUDA_CHECK(cudaMemset(d.floats_out, 0xFF, d.n * sizeof(float)));  // NaN: an element never written is caught
  scan(d.ints, d.ints_out);
  scan(d.floats, d.floats_out);
  CUDA_CHECK(cudaGetLastError());
  count_int_mismatches<<<1024, 256>>>(d.ints_out, d.ints_want, d.n, d.wrong);
  const unsigned long long ints_wrong = mismatches(d);
  // On an element's path: its thread's run, the warp scan, the warps' scan, and a look-back adding at most
  // one value a tile before it, each an addition that rounds (double the count, for the float bound's slack).
  const double additions = ITEMS + 2 * 5 + static_cast<double>(tiles);
  // A float scan's element i is within (additions on its path) x u x (the sum of |x_j| for j <= i) of the exact one.
  count_outside<<<1024, 256>>>(d.floats_out, d.exact, d.magnitude, d.n, 2.0 * additions * 0x1p-24, d.wrong);
  CUDA_CHECK(cudaGetLastError());
  const unsigned long long floats_wrong = mismatches(d);
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, blocked_scan<float, THREADS, ITEMS, STORE_VIA_SHARED>));
  const double ms = median_ms([&] { scan(d.floats, d.floats_out); });
  std::printf("%4d threads x %2d, stores %-8s %3d regs  %8.3f ms  %6.0f GB/s  %.3f of CUB  %.3f of the copy  "
              "%llu ints wrong, %llu floats wrong\n",
              THREADS, ITEMS, STORE_VIA_SHARED ? "striped" : "float4", attributes.numRegs, ms, gb_per_s(d.n, ms),
              cub_ms / ms, copy_ms / ms, ints_wrong,
              floats_wrong);
  CUDA_CHECK(cudaFree(states));
}

int main(int argc, char** argv) try {
  const int log2_n = argc > 1 ? std::atoi(argv[1]) : 28;
  if (log2_n < 16 || log2_n > 29) {
    std::fprintf(stderr, "the length is 2^k for k from 16 to 29 (a multiple of every tile here)\n");
    return 2;
  }
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  Data d{std::size_t{1} << log2_n};
  std::printf("%s, %d SMs; inclusive scan of 2^%d floats, median of %d runs after %d\n", properties.name,
              properties.multiProcessorCount, log2_n, kRepeats, kWarmup);
  CUDA_CHECK(cudaMalloc(&d.ints, d.n * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d.ints_out, d.n * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d.ints_want, d.n * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d.floats, d.n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d.floats_out, d.n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d.exact, d.n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&d.magnitude, d.n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&d.wrong, sizeof(*d.wrong)));
  CUDA_CHECK(cudaMemset(d.wrong, 0, sizeof(*d.wrong)));
  double *doubles = nullptr, *magnitudes = nullptr;  // the floats, and their magnitudes, in double
  CUDA_CHECK(cudaMalloc(&doubles, d.n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&magnitudes, d.n * sizeof(double)));
  fill<<<1024, 256>>>(d.ints, d.floats, doubles, magnitudes, d.n);
  CUDA_CHECK(cudaGetLastError());

  // CUB's scans: of the ints (the exact answer), of the doubles and magnitudes, and the timed one of the floats.
  std::size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, doubles, d.exact, d.n));
  std::size_t float_temp_bytes = 0;
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, float_temp_bytes, d.floats, d.floats_out, d.n));
  temp_bytes = std::max(temp_bytes, float_temp_bytes);
  void* temp = nullptr;
  CUDA_CHECK(cudaMalloc(&temp, temp_bytes));
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, d.ints, d.ints_want, d.n));
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, doubles, d.exact, d.n));
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, magnitudes, d.magnitude, d.n));
  CUDA_CHECK(cudaFree(doubles));
  CUDA_CHECK(cudaFree(magnitudes));
  const double cub_ms = median_ms(
      [&] { CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, d.floats, d.floats_out, d.n)); });
  const double copy_ms = median_ms([&] {
    CUDA_CHECK(cudaMemcpyAsync(d.floats_out, d.floats, d.n * sizeof(float), cudaMemcpyDeviceToDevice));
  });
  std::printf("cub::DeviceScan::InclusiveSum   %8.3f ms  %6.0f GB/s\n", cub_ms, gb_per_s(d.n, cub_ms));
  std::printf("device-to-device copy           %8.3f ms  %6.0f GB/s\n", copy_ms, gb_per_s(d.n, copy_ms));

  sweep_one<256, 16>(d, cub_ms, copy_ms);  // the journey's tile, blocked
  sweep_one<256, 8>(d, cub_ms, copy_ms);
  sweep_one<256, 32>(d, cub_ms, copy_ms);
  sweep_one<128, 16>(d, cub_ms, copy_ms);
  sweep_one<128, 32>(d, cub_ms, copy_ms);
  sweep_one<512, 8>(d, cub_ms, copy_ms);
  sweep_one<512, 16>(d, cub_ms, copy_ms);
  sweep_one<1024, 8>(d, cub_ms, copy_ms);
  sweep_one<256, 16, true>(d, cub_ms, copy_ms);
  sweep_one<128, 32, true>(d, cub_ms, copy_ms);
  sweep_one<512, 16, true>(d, cub_ms, copy_ms);

  CUDA_CHECK(cudaFree(temp));
  for (void* p : {static_cast<void*>(d.ints), static_cast<void*>(d.ints_out), static_cast<void*>(d.ints_want),
                  static_cast<void*>(d.floats), static_cast<void*>(d.floats_out), static_cast<void*>(d.exact),
                  static_cast<void*>(d.magnitude), static_cast<void*>(d.wrong)})
    CUDA_CHECK(cudaFree(p));
  return 0;
} catch (const std::exception& error) {
  return failed(error);
}
