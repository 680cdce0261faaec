#include <stdexcept>
#include <string>

#include "convolution.cuh"
#include "kit/cuda_check.cuh"

// The filter, in constant memory. All the threads of a warp read the same weight at the same
// moment, and the constant cache hands one word to all 32 of them at once; an instruction can
// even take its operand straight from it. 900 bytes of the 64 KiB.
__constant__ float c_filter[kMaxFilterTaps];

// ---------------------------------------------------------------------------------------------
// Part 1: the filter.
// ---------------------------------------------------------------------------------------------

// Copies the (2 radius + 1)^2 weights of h_filter into c_filter. [tested through both kernels]
void upload_filter(const float* h_filter, int radius) {
  if (radius < 0 || radius > kMaxFilterRadius)
    throw std::invalid_argument("upload_filter: radius " + std::to_string(radius) + " is outside 0.." +
                                std::to_string(kMaxFilterRadius));
  // BEGIN SOLUTION
  // TODO: copy the (2 radius + 1)^2 floats of h_filter into c_filter with cudaMemcpyToSymbol
  //       (its size argument counts bytes), inside CUDA_CHECK(...).
  const int side = 2 * radius + 1;
  CUDA_CHECK(cudaMemcpyToSymbol(c_filter, h_filter, side * side * sizeof(float)));
  // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Part 2: one thread per output pixel, the window read from global memory.
// ---------------------------------------------------------------------------------------------

// 32 x 8 = 256 threads per block. A warp is one row of 32 neighbouring pixels, so each of its
// loads, and its store, touches 128 contiguous bytes.
constexpr int kNaiveBlockX = 32;  // threads per block along a row (x: columns)
constexpr int kNaiveBlockY = 8;   // threads per block down the picture (y: rows)

// out(x, y) = the sum of c_filter(dx, dy) * in(x + dx, y + dy) over the window, with pixels
// outside the picture counted as 0. One thread per output pixel.
// [27 points with the hidden tests, and 5 for speed]
// May assume: in and out hold width * height floats; 0 <= radius <= kMaxFilterRadius.
// Must not: read in, or write out, outside the picture.
__global__ void convolve_naive_kernel(const float* in, float* out, int width, int height, int radius) {
  // BEGIN SOLUTION
  // TODO: find this thread's pixel (x, y) from the x and y parts of blockIdx, blockDim and
  //       threadIdx, and leave at once if it lies outside the picture. Sum the weight of each
  //       tap (dx, dy) times the input pixel (x + dx, y + dy), skipping the taps whose pixel lies
  //       outside the picture (they add 0), and write the sum to out.
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const int side = 2 * radius + 1;
  float sum = 0.0f;
  for (int dy = -radius; dy <= radius; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= height) continue;  // a row above or below the picture adds nothing
    for (int dx = -radius; dx <= radius; ++dx) {
      const int xx = x + dx;
      if (xx < 0 || xx >= width) continue;  // nor does a column left or right of it
      sum += c_filter[(dy + radius) * side + (dx + radius)] * in[yy * width + xx];
    }
  }
  out[y * width + x] = sum;
  // END SOLUTION
}

// Launches convolve_naive_kernel over a width x height picture in device memory.
void launch_convolve_naive(const float* d_in, float* d_out, int width, int height, int radius) {
  // BEGIN SOLUTION
  // TODO: launch convolve_naive_kernel on blocks of kNaiveBlockX x kNaiveBlockY threads, with
  //       enough blocks in x to cover every column and in y to cover every row (round each
  //       division up), then check the launch with CUDA_CHECK_LAUNCH().
  const dim3 block(kNaiveBlockX, kNaiveBlockY);
  const dim3 grid((width + kNaiveBlockX - 1) / kNaiveBlockX, (height + kNaiveBlockY - 1) / kNaiveBlockY);
  convolve_naive_kernel<<<grid, block>>>(d_in, d_out, width, height, radius);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Part 3: a tile and its halo in shared memory.
// ---------------------------------------------------------------------------------------------

// A block computes a strip of kStripTiles tiles, one below the other, each of kTileWidth x
// kTileHeight output pixels, with kTileWidth x kTileThreadsY threads; each thread computes
// kRowsPerThread outputs of a tile, one below the other, in one column. While the block computes
// one tile, the loads of the next are already on their way, so memory never waits for the
// arithmetic. You may change the values (kTileWidth a multiple of 32, so that a warp is one row;
// kStripTiles = 1, one tile per block, is the version to get right first).
constexpr int kTileWidth = 32;                               // output columns per block = threads in x
constexpr int kTileThreadsY = 4;                             // threads per block in y
constexpr int kRowsPerThread = 8;                            // output rows per thread
constexpr int kStripTiles = 8;                               // tiles per block, one below the other
constexpr int kTileHeight = kTileThreadsY * kRowsPerThread;  // 32 output rows per tile
constexpr int kStripHeight = kStripTiles * kTileHeight;      // 256 output rows per block
constexpr int kTileThreads = kTileWidth * kTileThreadsY;     // 128 threads per block

// The same result as convolve_naive_kernel for a filter of radius R, known when the kernel is
// compiled: the tile's shared array, (kTileWidth + 2R) x (kTileHeight + 2R) floats, must have a
// size known at compile time, and loops over the window can be unrolled into straight-line
// code. Block (bx, by) computes the outputs of columns bx * kTileWidth .. + kTileWidth - 1 and
// rows by * kStripHeight .. + kStripHeight - 1, a tile at a time. [36 points with the hidden
// tests, and 20 for speed]
// May assume: blockDim = (kTileWidth, kTileThreadsY); in and out hold width * height floats.
// Must not: read in, or write out, outside the picture.
template <int R>
__global__ void __launch_bounds__(kTileThreads)
    convolve_tiled_kernel(const float* in, float* out, int width, int height) {
  // BEGIN SOLUTION
  // TODO: for each tile of the block's strip, from the top (stop at the picture's last row):
  //       1. load the tile's input into shared memory: its output pixels plus a halo of R
  //          pixels on every side, with 0 for the pixels that lie outside the picture. Let
  //          neighbouring threads load neighbouring pixels, so that the loads are coalesced.
  //       2. wait until the whole tile is in shared memory: every window holds pixels that
  //          other threads loaded.
  //       3. compute each of the thread's outputs from the tile and c_filter, and write those
  //          that lie inside the picture.
  //       Before loading the next tile into the shared array, wait until every thread has
  //       finished reading the windows of this one. Then make it fast: load each tile into
  //       registers first, and start the next tile's loads (into registers) before computing
  //       this tile, so that they are in flight while the block computes.
  constexpr int kSide = 2 * R + 1;
  constexpr int kInWidth = kTileWidth + 2 * R;  // the tile with its halo
  constexpr int kInHeight = kTileHeight + 2 * R;
  constexpr int kInPixels = kInWidth * kInHeight;
  constexpr int kLoadsPerThread = (kInPixels + kTileThreads - 1) / kTileThreads;
  __shared__ float tile[kInHeight][kInWidth];

  const int x0 = blockIdx.x * kTileWidth;  // the strip's first output column
  const int thread = threadIdx.y * kTileWidth + threadIdx.x;

  // The thread's share of the input of the tile whose first output row is y0, into registers.
  // The threads walk the input tile as one array, row after row: consecutive threads load
  // consecutive pixels of a row, and each thread's loads are independent of each other, so the
  // unrolled loop has all of them in flight at once.
  float staged[kLoadsPerThread];
  const auto load = [&](int y0) {
#pragma unroll
    for (int k = 0; k < kLoadsPerThread; ++k) {
      const int i = thread + k * kTileThreads;
      const int row = i / kInWidth, col = i % kInWidth;
      const int gx = x0 - R + col, gy = y0 - R + row;
      staged[k] = (i < kInPixels && gx >= 0 && gx < width && gy >= 0 && gy < height) ? in[gy * width + gx] : 0.0f;
    }
  };

  int y0 = blockIdx.y * kStripHeight;  // the current tile's first output row
  load(y0);
  for (int t = 0; t < kStripTiles && y0 < height; ++t, y0 += kTileHeight) {  // the same for the whole block
    __syncthreads();  // every window of the previous tile is read: its pixels may be overwritten
#pragma unroll
    for (int k = 0; k < kLoadsPerThread; ++k) {
      const int i = thread + k * kTileThreads;
      if (i < kInPixels) tile[i / kInWidth][i % kInWidth] = staged[k];
    }
    __syncthreads();  // the windows below read pixels that other threads loaded
    if (t + 1 < kStripTiles) load(y0 + kTileHeight);  // in flight while this tile is computed

    // The thread's outputs are rows first .. first + kRowsPerThread - 1 of the tile, in column
    // threadIdx.x. Tile row `row` meets filter row row - s for output s: it is read from shared
    // memory once, into registers, and used by every output whose window holds it, which takes
    // (kRowsPerThread + 2R)(2R + 1) shared loads for kRowsPerThread (2R + 1)^2 multiply-adds. A
    // warp reads 32 consecutive floats of one row: no bank conflicts.
    const int first = threadIdx.y * kRowsPerThread;
    float sum[kRowsPerThread];
#pragma unroll
    for (int s = 0; s < kRowsPerThread; ++s) sum[s] = 0.0f;
#pragma unroll
    for (int row = 0; row < kRowsPerThread + 2 * R; ++row) {
      float window[kSide];
#pragma unroll
      for (int dx = 0; dx < kSide; ++dx) window[dx] = tile[first + row][threadIdx.x + dx];
#pragma unroll
      for (int s = 0; s < kRowsPerThread; ++s) {
        const int fy = row - s;  // the filter row that meets this tile row for output s
        if (fy >= 0 && fy < kSide) {
#pragma unroll
          for (int dx = 0; dx < kSide; ++dx) sum[s] += c_filter[fy * kSide + dx] * window[dx];
        }
      }
    }

    const int x = x0 + threadIdx.x;
#pragma unroll
    for (int s = 0; s < kRowsPerThread; ++s) {
      const int y = y0 + first + s;
      if (x < width && y < height) out[y * width + x] = sum[s];
    }
  }
  // END SOLUTION
}

// Launches convolve_tiled_kernel<R> over a width x height picture in device memory.
template <int R>
void launch_convolve_tiled_radius(const float* d_in, float* d_out, int width, int height) {
  // BEGIN SOLUTION
  // TODO: launch convolve_tiled_kernel<R> on blocks of kTileWidth x kTileThreadsY threads, with
  //       enough blocks to cover every column (kTileWidth per block) and every row
  //       (kStripHeight per block), rounding both up; then check the launch with
  //       CUDA_CHECK_LAUNCH().
  const dim3 block(kTileWidth, kTileThreadsY);
  const dim3 grid((width + kTileWidth - 1) / kTileWidth, (height + kStripHeight - 1) / kStripHeight);
  convolve_tiled_kernel<R><<<grid, block>>>(d_in, d_out, width, height);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// Given: picks the kernel compiled for the filter's radius.
void launch_convolve_tiled(const float* d_in, float* d_out, int width, int height, int radius) {
  static_assert(kMaxFilterRadius == 7, "launch_convolve_tiled needs a case for every radius up to kMaxFilterRadius");
  switch (radius) {
    case 0: launch_convolve_tiled_radius<0>(d_in, d_out, width, height); break;
    case 1: launch_convolve_tiled_radius<1>(d_in, d_out, width, height); break;
    case 2: launch_convolve_tiled_radius<2>(d_in, d_out, width, height); break;
    case 3: launch_convolve_tiled_radius<3>(d_in, d_out, width, height); break;
    case 4: launch_convolve_tiled_radius<4>(d_in, d_out, width, height); break;
    case 5: launch_convolve_tiled_radius<5>(d_in, d_out, width, height); break;
    case 6: launch_convolve_tiled_radius<6>(d_in, d_out, width, height); break;
    case 7: launch_convolve_tiled_radius<7>(d_in, d_out, width, height); break;
    default:
      throw std::invalid_argument("launch_convolve_tiled: radius " + std::to_string(radius) + " is outside 0.." +
                                  std::to_string(kMaxFilterRadius));
  }
}
