// Issue 20's GEMM sweep: which register-tiled FP32 kernel design comes closest to cuBLAS's FP32 SGEMM, for the
// journey's last step (solutions/04-tiled-matmul/journey/). Each configuration is one instance of the lab's
// extra-credit design (a block tile staged in shared memory, A transposed there, double buffered through
// registers; a thread tile of 4 x 4 pieces; float4 loads and stores), with its sizes, the blocks per SM it asks
// for and the order in which blocks walk the tiles of C as parameters. Every result is checked against cuBLAS on
// the GPU, each element within the rounding error bound that both products carry; the timing is the median of
// REPEATS runs by CUDA events after WARMUP, cuBLAS timed the same way in the same run.
//
//   bash docs/gpu-runs/scripts/sweeps.sh (builds every probe with the harness, then runs them)
//   ./gemm_sweep [size, default 4096]
//
// The matrices are square and a multiple of every tile here, so the kernels carry no edge handling: that is the
// journey step's part, once the sweep has picked its design.
#include "kit/cublas.hpp"
#include "sweep.cuh"
#include "tiled_matmul.cuh"  // lab 04's reference, built in beside this file (sweeps.sh)

#ifndef GEMM_LINKED
#define GEMM_LINKED "lab 04's reference kernel"
#endif

// A block computes a BM x BN tile of C, stepping along K by BK; each thread a TM x TN block of it, as
// (TM / 4) x (TN / 4) pieces of 4 x 4, the pieces of one thread kThreadRows * 4 rows (and kThreadCols * 4
// columns) apart, so that the threads of a warp read contiguous float4s of a shared tile.
template <int BM, int BN, int BK, int TM, int TN>
struct Shape {
  static constexpr int kThreadRows = BM / TM;
  static constexpr int kThreadCols = BN / TN;
  static constexpr int kThreads = kThreadRows * kThreadCols;
  static constexpr int kAPitch = BM + 4;  // the transposed A tile's row: 16-byte aligned, stores spread over banks
  static constexpr int kALoads = BM * BK / 4 / kThreads;  // float4s of A each thread loads a step
  static constexpr int kBLoads = BK * BN / 4 / kThreads;
  static constexpr int kATileFloats = BK * kAPitch;
  static constexpr int kBTileFloats = BK * BN;
  static constexpr std::size_t kSharedBytes = 2 * (kATileFloats + kBTileFloats) * sizeof(float);
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "4 x 4 pieces and float4 loads along K");
  static_assert(kALoads >= 1 && BM * BK == 4 * kALoads * kThreads, "the A tile splits evenly into float4s");
  static_assert(kBLoads >= 1 && BK * BN == 4 * kBLoads * kThreads, "the B tile splits evenly into float4s");
};

// The tile of C that block `block` computes: row by row, or, with `group` block rows, column by column
// within each group of that many rows, so that the blocks running at once share rows of A and columns of B
// in L2.
__device__ inline void tile_of(int block, int tiles_m, int tiles_n, int group, int& tile_m, int& tile_n) {
  if (group == 0) {
    tile_m = block / tiles_n;
    tile_n = block % tiles_n;
    return;
  }
  const int per_group = group * tiles_n;
  const int first_m = (block / per_group) * group;
  const int rows = min(tiles_m - first_m, group);
  const int within = block % per_group;
  tile_m = first_m + within % rows;
  tile_n = within / rows;
}

// Where a thread's pieces of C lie in the block's grid of threads. kWarpRows == 0: thread tid at row
// tid / kThreadCols, so a warp spans 32 / kThreadCols rows of threads (2 for 8 x 8 of 128 x 128). Otherwise
// each warp spans kWarpRows x (32 / kWarpRows) threads: 4 x 8 reads, for each k, 4 distinct float4s of the A
// tile and 8 of the B tile (one 128-byte shared-memory wavefront each) where 2 x 16 reads 2 and 16 (one and two).
template <class S, int kWarpRows>
__device__ inline void thread_place(int tid, int& thread_row, int& thread_col) {
  if constexpr (kWarpRows == 0) {
    thread_row = tid / S::kThreadCols;
    thread_col = tid % S::kThreadCols;
  } else {
    constexpr int kWarpCols = 32 / kWarpRows;
    static_assert(S::kThreadCols % kWarpCols == 0 && S::kThreadRows % kWarpRows == 0, "whole warps tile the block");
    constexpr int kWarpsAcross = S::kThreadCols / kWarpCols;
    const int warp = tid / 32, lane = tid % 32;
    thread_row = (warp / kWarpsAcross) * kWarpRows + lane / kWarpCols;
    thread_col = (warp % kWarpsAcross) * kWarpCols + lane % kWarpCols;
  }
}

// C = A B, all row-major, m, n and k multiples of the tile.
template <int BM, int BN, int BK, int TM, int TN, int MIN_BLOCKS, int kWarpRows>
__global__ void __launch_bounds__(Shape<BM, BN, BK, TM, TN>::kThreads, MIN_BLOCKS)
    sgemm(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n, int k,
          int group) {
  using S = Shape<BM, BN, BK, TM, TN>;
  extern __shared__ __align__(16) float shared[];
  float* a_tiles = shared;                       // [2][BK][kAPitch]: a_tiles[s][kk][mm] = A[row0 + mm][k0 + kk]
  float* b_tiles = shared + 2 * S::kATileFloats;  // [2][BK][BN]:      b_tiles[s][kk][nn] = B[k0 + kk][col0 + nn]

  int tile_m, tile_n;
  tile_of(blockIdx.x, m / BM, n / BN, group, tile_m, tile_n);
  const int row0 = tile_m * BM, col0 = tile_n * BN;
  const int tid = threadIdx.x;
  int thread_row, thread_col;
  thread_place<S, kWarpRows>(tid, thread_row, thread_col);

  float4 a_next[S::kALoads], b_next[S::kBLoads];
  const auto load = [&](int k0) {
#pragma unroll
    for (int i = 0; i < S::kALoads; ++i) {
      const int f = tid + i * S::kThreads, r = f / (BK / 4), c4 = f % (BK / 4);
      a_next[i] = *reinterpret_cast<const float4*>(a + static_cast<std::size_t>(row0 + r) * k + k0 + c4 * 4);
    }
#pragma unroll
    for (int i = 0; i < S::kBLoads; ++i) {
      const int f = tid + i * S::kThreads, r = f / (BN / 4), c4 = f % (BN / 4);
      b_next[i] = *reinterpret_cast<const float4*>(b + static_cast<std::size_t>(k0 + r) * n + col0 + c4 * 4);
    }
  };
  const auto store = [&](int s) {
    float* a_tile = a_tiles + s * S::kATileFloats;
    float* b_tile = b_tiles + s * S::kBTileFloats;
#pragma unroll
    for (int i = 0; i < S::kALoads; ++i) {
      const int f = tid + i * S::kThreads, r = f / (BK / 4), c4 = f % (BK / 4);
      a_tile[(c4 * 4 + 0) * S::kAPitch + r] = a_next[i].x;  // transposed: k becomes the row
      a_tile[(c4 * 4 + 1) * S::kAPitch + r] = a_next[i].y;
      a_tile[(c4 * 4 + 2) * S::kAPitch + r] = a_next[i].z;
      a_tile[(c4 * 4 + 3) * S::kAPitch + r] = a_next[i].w;
    }
#pragma unroll
    for (int i = 0; i < S::kBLoads; ++i) {
      const int f = tid + i * S::kThreads, r = f / (BN / 4), c4 = f % (BN / 4);
      *reinterpret_cast<float4*>(b_tile + r * BN + c4 * 4) = b_next[i];
    }
  };

  float acc[TM][TN] = {};
  const int steps = k / BK;
  load(0);
  store(0);
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int s = step % 2;
    const bool more = step + 1 < steps;
    if (more) load((step + 1) * BK);  // on its way from global memory while this step computes
    const float* a_tile = a_tiles + s * S::kATileFloats;
    const float* b_tile = b_tiles + s * S::kBTileFloats;
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a_frag[TM], b_frag[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(a_tile + kk * S::kAPitch + g * S::kThreadRows * 4 +
                                                          thread_row * 4);
        a_frag[g * 4 + 0] = v.x, a_frag[g * 4 + 1] = v.y, a_frag[g * 4 + 2] = v.z, a_frag[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(b_tile + kk * BN + g * S::kThreadCols * 4 + thread_col * 4);
        b_frag[g * 4 + 0] = v.x, b_frag[g * 4 + 1] = v.y, b_frag[g * 4 + 2] = v.z, b_frag[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    if (more) store(1 - s);  // the other copy was last read before the previous barrier
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + (i / 4) * S::kThreadRows * 4 + thread_row * 4 + i % 4;
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const int col = col0 + g * S::kThreadCols * 4 + thread_col * 4;
      *reinterpret_cast<float4*>(c + static_cast<std::size_t>(row) * n + col) =
          make_float4(acc[i][g * 4 + 0], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
    }
  }
}

// Uniform values in [-1, 1): the same matrices on every run.
__global__ void fill(float* data, std::size_t count, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] = uniform_from(hashed(i, seed));
}

__global__ void absolute(const float* in, float* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = fabsf(in[i]);
}

struct Matrices {
  int size;
  float *a, *b, *c, *want, *bound;
  std::size_t count() const { return static_cast<std::size_t>(size) * size; }
};

// Row-major C = A B through column-major cuBLAS: C^T = B^T A^T.
void cublas_gemm(const float* a, const float* b, float* c, int size) {
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasSgemm(kit::cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, b, size, a, size,
                           &zero, c, size));
}

double gflops(int size, double ms) { return 2.0 * size * size * static_cast<double>(size) / (ms * 1e-3) / 1e9; }

struct Row {
  unsigned long long wrong;
  double ms;
};

// Checks one launch's C against cuBLAS's, then times it.
template <class Launch>
Row check_and_time(const Launch& launch, const Matrices& x, unsigned long long* d_wrong) {
  CUDA_CHECK(cudaMemset(x.c, 0xFF, x.count() * sizeof(float)));  // NaN: an element never written is caught
  launch();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemset(d_wrong, 0, sizeof(*d_wrong)));
  // |A| |B| bounds |a_ik b_kj| summed over k: each of two FP32 products of length k is within k u of that bound of
  // the exact one (u = 2^-24), so they are within 2 k u of each other.
  count_outside<<<1024, 256>>>(x.c, x.want, x.bound, x.count(), 2.0 * x.size * 0x1p-24, d_wrong);
  CUDA_CHECK(cudaGetLastError());
  Row row{};
  CUDA_CHECK(cudaMemcpy(&row.wrong, d_wrong, sizeof(row.wrong), cudaMemcpyDeviceToHost));
  row.ms = median_ms(launch);
  return row;
}

template <int BM, int BN, int BK, int TM, int TN, int MIN_BLOCKS, int kWarpRows = 0>
void sweep_one(const char* name, int group, const Matrices& x, double cublas_ms, unsigned long long* d_wrong) {
  using S = Shape<BM, BN, BK, TM, TN>;
  const auto kernel = sgemm<BM, BN, BK, TM, TN, MIN_BLOCKS, kWarpRows>;
  if (x.size % BM != 0 || x.size % BN != 0 || x.size % BK != 0) {
    std::printf("%-34s size %d is not a multiple of its tile: skipped\n", name, x.size);
    return;
  }
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(S::kSharedBytes)));
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  int blocks_per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, S::kThreads, S::kSharedBytes));
  const unsigned grid = static_cast<unsigned>((x.size / BM) * (x.size / BN));
  const Row row = check_and_time(
      [&] { kernel<<<grid, S::kThreads, S::kSharedBytes>>>(x.a, x.b, x.c, x.size, x.size, x.size, group); }, x,
      d_wrong);
  std::printf("%-34s group %2d  %3d threads  %3d regs  %4zu B spilled  %zu B shared  %d blocks/SM  "
              "%8.3f ms  %8.0f GFLOP/s  %.3f of cuBLAS  %llu wrong\n",
              name, group, S::kThreads, attributes.numRegs, attributes.localSizeBytes, S::kSharedBytes, blocks_per_sm,
              row.ms, gflops(x.size, row.ms), cublas_ms / row.ms, row.wrong);
}

// Lab 04's reference itself (solutions/04-tiled-matmul/tiled_matmul.cu, or the file GEMM_LINKED names, linked
// in): the first row's design with the edge checks, int indices and runtime float4 test that any m, k, n need.
// Beside the first row, it says how much of the gap to cuBLAS the kernel's generality costs, and how much the
// grader's timing adds.
void reference_row(const Matrices& x, double cublas_ms, unsigned long long* d_wrong) {
  const Row row = check_and_time([&] { launch_register_tiled_matmul(x.a, x.b, x.c, x.size, x.size, x.size); }, x,
                                 d_wrong);
  std::printf("%-34s %8.3f ms  %8.0f GFLOP/s  %.3f of cuBLAS  %llu wrong\n", GEMM_LINKED, row.ms,
              gflops(x.size, row.ms), cublas_ms / row.ms, row.wrong);
}

int main(int argc, char** argv) try {
  const int size = argc > 1 ? std::atoi(argv[1]) : 4096;
  if (size <= 0 || size % 256 != 0) {
    std::fprintf(stderr, "the size must be a positive multiple of 256 (every tile here divides it)\n");
    return 2;
  }
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  std::printf("%s, %d SMs; C = A B, %d x %d x %d FP32, median of %d runs after %d\n", properties.name,
              properties.multiProcessorCount, size, size, size, kRepeats, kWarmup);

  Matrices x{size};
  for (float** p : {&x.a, &x.b, &x.c, &x.want, &x.bound}) CUDA_CHECK(cudaMalloc(p, x.count() * sizeof(float)));
  unsigned long long* d_wrong = nullptr;
  CUDA_CHECK(cudaMalloc(&d_wrong, sizeof(*d_wrong)));
  fill<<<1024, 256>>>(x.a, x.count(), 12345u);
  fill<<<1024, 256>>>(x.b, x.count(), 67890u);
  CUDA_CHECK(cudaGetLastError());

  // kit::cublas_handle(): the harness's, in plain FP32 math (no TF32), as lab 04's peer
  {  // the bound |A| |B|, in the C and want buffers for now
    absolute<<<1024, 256>>>(x.a, x.c, x.count());
    absolute<<<1024, 256>>>(x.b, x.want, x.count());
    CUDA_CHECK(cudaGetLastError());
    cublas_gemm(x.c, x.want, x.bound, size);
  }
  cublas_gemm(x.a, x.b, x.want, size);
  const double cublas_ms = median_ms([&] { cublas_gemm(x.a, x.b, x.c, size); });
  std::printf("%-34s %8.3f ms  %8.0f GFLOP/s\n", "cuBLAS SGEMM (FP32)", cublas_ms, gflops(size, cublas_ms));

  // The lab's reference design first (128 x 128 x 8 tiles, 8 x 8 a thread, two blocks an SM), then its variations.
  reference_row(x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 8, 8, 2>("128x128x8, 8x8 (the reference's)", 0, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 8, 8, 1>("128x128x8, 8x8, no register cap", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 64, 8, 8, 8, 4>("128x64x8, 8x8", 8, x, cublas_ms, d_wrong);
  sweep_one<64, 128, 8, 8, 8, 4>("64x128x8, 8x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 8, 8, 2>("128x128x8, 8x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 8, 8, 2>("128x128x8, 8x8", 16, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 16, 8, 8, 1>("128x128x16, 8x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 16, 8, 2>("128x128x8, 16x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 8, 16, 2>("128x128x8, 8x16", 8, x, cublas_ms, d_wrong);
  sweep_one<64, 128, 8, 8, 8, 3>("64x128x8, 8x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 256, 8, 8, 16, 1>("128x256x8, 8x16", 8, x, cublas_ms, d_wrong);
  sweep_one<256, 128, 8, 16, 8, 1>("256x128x8, 16x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 256, 16, 8, 16, 1>("128x256x16, 8x16", 8, x, cublas_ms, d_wrong);
  sweep_one<256, 128, 16, 16, 8, 1>("256x128x16, 16x8", 8, x, cublas_ms, d_wrong);
  // Warps of 4 x 8 and 8 x 4 threads (the rows above: 2 x 16), and K steps of 16 held to two blocks an SM.
  sweep_one<128, 128, 8, 8, 8, 2, 4>("128x128x8, 8x8, warps 4x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 8, 8, 2, 8>("128x128x8, 8x8, warps 8x4", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 8, 8, 8, 2, 4>("128x128x8, 8x8, warps 4x8", 16, x, cublas_ms, d_wrong);
  sweep_one<128, 64, 8, 8, 8, 4, 4>("128x64x8, 8x8, warps 4x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 16, 8, 8, 2>("128x128x16, 8x8, 2 blocks/SM", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 128, 16, 8, 8, 2, 4>("128x128x16, 8x8, 2/SM, warps 4x8", 8, x, cublas_ms, d_wrong);
  sweep_one<128, 256, 8, 8, 16, 1, 4>("128x256x8, 8x16, warps 4x8", 8, x, cublas_ms, d_wrong);

  for (float* p : {x.a, x.b, x.c, x.want, x.bound}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaFree(d_wrong));
  return 0;
} catch (const std::exception& error) {
  return failed(error);
}
