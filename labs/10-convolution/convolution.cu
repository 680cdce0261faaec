// Your file for lab 10-convolution: fill in every TODO below (the handout: labs/10-convolution/README.md).
// Only convolution.cu is taken when you are graded: the tests and headers are not yours to change.

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
  // TODO: copy the (2 radius + 1)^2 floats of h_filter into c_filter with cudaMemcpyToSymbol
  //       (its size argument counts bytes), inside CUDA_CHECK(...).
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
  // TODO: find this thread's pixel (x, y) from the x and y parts of blockIdx, blockDim and
  //       threadIdx, and leave at once if it lies outside the picture. Sum the weight of each
  //       tap (dx, dy) times the input pixel (x + dx, y + dy), skipping the taps whose pixel lies
  //       outside the picture (they add 0), and write the sum to out.
}

// Launches convolve_naive_kernel over a width x height picture in device memory.
void launch_convolve_naive(const float* d_in, float* d_out, int width, int height, int radius) {
  // TODO: launch convolve_naive_kernel on blocks of kNaiveBlockX x kNaiveBlockY threads, with
  //       enough blocks in x to cover every column and in y to cover every row (round each
  //       division up), then check the launch with CUDA_CHECK_LAUNCH().
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
}

// Launches convolve_tiled_kernel<R> over a width x height picture in device memory.
template <int R>
void launch_convolve_tiled_radius(const float* d_in, float* d_out, int width, int height) {
  // TODO: launch convolve_tiled_kernel<R> on blocks of kTileWidth x kTileThreadsY threads, with
  //       enough blocks to cover every column (kTileWidth per block) and every row
  //       (kStripHeight per block), rounding both up; then check the launch with
  //       CUDA_CHECK_LAUNCH().
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
