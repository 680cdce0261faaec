// Issue 20, N-body: how close lab 09's tiled force kernel comes to what the SMs can issue, and what limits it
// (the reference reached 1.90e12 interactions a second on an H100, 2026-11-25; the goal is 2.0e12). An interaction
// is about 13 instructions an SM issues at one a clock per scheduler (3 subtractions, 3 multiply-adds for the
// squared distance, the rsqrt, 3 multiplications for m / r^3, 3 multiply-adds into the sum) and a shared-memory
// read. So the ceiling is SMs x 4 schedulers x 32 lanes x the clock / 13 interactions a second, and the clock is the
// one the SMs keep while they run it, which each block measures here (clock64 against the GPU's global timer):
// under a full FP32 load the H100 may not hold its boost clock.
//
// The kernels: lab 09's tiled design (a tile of bodies in shared memory, one body a thread) at several block
// sizes, then B bodies a thread (each tile body read once for B interactions). Every acceleration is compared
// with that of the first, lab 09's reference design: all add the bodies in the same order, so they agree to the
// last bit.
//
//   bash docs/gpu-runs/scripts/sweeps.sh (builds every probe with the harness, then runs them)
//   ./nbody_probe [bodies, default 262144 as lab 09 times]
#include "sweep.cuh"

constexpr float kSoftening2 = 1e-4f;
constexpr double kInstructionsPerInteraction = 13.0;

__device__ __forceinline__ float fast_rsqrt(float x) {
  float result;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(x));
  return result;
}

__device__ __forceinline__ float3 interact(float4 me, float4 other, float3 a) {
  const float dx = other.x - me.x, dy = other.y - me.y, dz = other.z - me.z;
  const float dist2 = fmaf(dz, dz, fmaf(dy, dy, fmaf(dx, dx, kSoftening2)));
  const float inv = fast_rsqrt(dist2);
  const float strength = other.w * inv * inv * inv;
  return make_float3(fmaf(dx, strength, a.x), fmaf(dy, strength, a.y), fmaf(dz, strength, a.z));
}

// What each block saw: its SM's clock ticks and the global timer's nanoseconds from its start to its end.
struct BlockClock {
  long long ticks, nanoseconds;
};

__device__ __forceinline__ long long global_ns() {
  long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Lab 09's tiled kernel with BODIES bodies a thread, THREADS apart; n a multiple of THREADS * BODIES.
template <int THREADS, int BODIES>
__global__ void __launch_bounds__(THREADS)
    tiled(const float4* __restrict__ pos, float3* __restrict__ acc, int n, BlockClock* clocks) {
  __shared__ float4 tile[THREADS];
  const long long ticks0 = clock64(), ns0 = global_ns();
  const int first = blockIdx.x * THREADS * BODIES + threadIdx.x;
  float4 me[BODIES];
  float3 a[BODIES];
#pragma unroll
  for (int b = 0; b < BODIES; ++b) {
    me[b] = pos[first + b * THREADS];
    a[b] = make_float3(0.0f, 0.0f, 0.0f);
  }
  for (int start = 0; start < n; start += THREADS) {
    tile[threadIdx.x] = pos[start + threadIdx.x];
    __syncthreads();
#pragma unroll 16
    for (int k = 0; k < THREADS; ++k) {
      const float4 other = tile[k];
#pragma unroll
      for (int b = 0; b < BODIES; ++b) a[b] = interact(me[b], other, a[b]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int b = 0; b < BODIES; ++b) acc[first + b * THREADS] = a[b];
  if (threadIdx.x == 0) clocks[blockIdx.x] = {clock64() - ticks0, global_ns() - ns0};
}

// A Plummer-like cloud from hashed bits: positions in a unit cube around the origin, equal masses 1 / n.
__global__ void fill(float4* pos, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    pos[i] = make_float4(uniform_from(hashed(i, 1u)), uniform_from(hashed(i, 2u)), uniform_from(hashed(i, 3u)),
                         1.0f / n);
}

__global__ void count_different(const float3* got, const float3* want, int n, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    mine += !(got[i].x == want[i].x && got[i].y == want[i].y && got[i].z == want[i].z);
  if (mine) atomicAdd(wrong, mine);
}

struct Bodies {
  int n;
  float4* pos;
  float3 *acc, *want;
  unsigned long long* wrong;
  int sms;
};

// The clock the SMs kept: the blocks' ticks over their nanoseconds, weighted by time.
double clock_ghz(const std::vector<BlockClock>& clocks) {
  double ticks = 0.0, ns = 0.0;
  for (const BlockClock& c : clocks) ticks += static_cast<double>(c.ticks), ns += static_cast<double>(c.nanoseconds);
  return ns > 0.0 ? ticks / ns : 0.0;
}

template <int THREADS, int BODIES>
void probe(const Bodies& x, bool is_baseline) {
  if (x.n % (THREADS * BODIES) != 0) {
    std::printf("%4d threads x %d bodies: n is not a multiple of its block's bodies, skipped\n", THREADS, BODIES);
    return;
  }
  const int blocks = x.n / (THREADS * BODIES);
  BlockClock* d_clocks = nullptr;
  CUDA_CHECK(cudaMalloc(&d_clocks, blocks * sizeof(BlockClock)));
  float3* out = is_baseline ? x.want : x.acc;
  const auto launch = [&] { tiled<THREADS, BODIES><<<blocks, THREADS>>>(x.pos, out, x.n, d_clocks); };
  CUDA_CHECK(cudaMemset(out, 0xFF, x.n * sizeof(float3)));  // NaN: an acceleration never written is caught
  launch();
  CUDA_CHECK(cudaGetLastError());
  unsigned long long wrong = 0;
  if (!is_baseline) {
    CUDA_CHECK(cudaMemset(x.wrong, 0, sizeof(*x.wrong)));
    count_different<<<1024, 256>>>(x.acc, x.want, x.n, x.wrong);
    CUDA_CHECK(cudaMemcpy(&wrong, x.wrong, sizeof(wrong), cudaMemcpyDeviceToHost));
  }
  const double ms = median_ms(launch);
  std::vector<BlockClock> clocks(blocks);  // of the last timed run
  CUDA_CHECK(cudaMemcpy(clocks.data(), d_clocks, blocks * sizeof(BlockClock), cudaMemcpyDeviceToHost));
  const double ghz = clock_ghz(clocks);
  const double per_second = static_cast<double>(x.n) * x.n / (ms * 1e-3);
  const double ceiling = x.sms * 128.0 * ghz * 1e9 / kInstructionsPerInteraction;
  std::printf("%4d threads x %d bodies  %8.3f ms  %.3e interactions/s  SM clock %.3f GHz  %.2f of the issue "
              "ceiling at that clock (%.3e)  %llu differ from one body a thread\n",
              THREADS, BODIES, ms, per_second, ghz, per_second / ceiling, ceiling, wrong);
  CUDA_CHECK(cudaFree(d_clocks));
}

int main(int argc, char** argv) try {
  Bodies x{argc > 1 ? std::atoi(argv[1]) : 262144};
  if (x.n <= 0 || x.n % 4096 != 0) {
    std::fprintf(stderr, "the number of bodies must be a positive multiple of 4096\n");
    return 2;
  }
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  x.sms = properties.multiProcessorCount;
  int max_clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&max_clock_khz, cudaDevAttrClockRate, 0));
  std::printf("%s, %d SMs, clock up to %.3f GHz; forces among %d bodies, median of %d runs after %d\n",
              properties.name, x.sms, max_clock_khz * 1e-6, x.n, kRepeats, kWarmup);
  CUDA_CHECK(cudaMalloc(&x.pos, x.n * sizeof(float4)));
  CUDA_CHECK(cudaMalloc(&x.acc, x.n * sizeof(float3)));
  CUDA_CHECK(cudaMalloc(&x.want, x.n * sizeof(float3)));
  CUDA_CHECK(cudaMalloc(&x.wrong, sizeof(*x.wrong)));
  fill<<<1024, 256>>>(x.pos, x.n);
  CUDA_CHECK(cudaGetLastError());

  probe<256, 1>(x, true);  // lab 09's reference design: every other result is compared with its accelerations
  probe<128, 1>(x, false);
  probe<512, 1>(x, false);
  probe<1024, 1>(x, false);
  probe<256, 2>(x, false);
  probe<128, 2>(x, false);
  probe<256, 4>(x, false);
  probe<128, 4>(x, false);

  CUDA_CHECK(cudaFree(x.pos));
  CUDA_CHECK(cudaFree(x.acc));
  CUDA_CHECK(cudaFree(x.want));
  CUDA_CHECK(cudaFree(x.wrong));
  return 0;
} catch (const std::exception& error) {
  return failed(error);
}
