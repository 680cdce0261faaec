#include <algorithm>
#include <cstdint>

#include "kit/cuda_check.cuh"
#include "picture_kernel.cuh"

// ---------------------------------------------------------------------------------------------
// Part 1: scale a float picture, one thread per pixel, on a 2D grid of 2D blocks.
// ---------------------------------------------------------------------------------------------

// Block shape: 16 x 16 = 256 threads. A warp is 32 consecutive threads in x, so with 16 in x
// it spans two rows of 16 pixels: two runs of 64 contiguous bytes, each a whole number of
// 32-byte memory sectors.
constexpr int kScaleBlockX = 16;  // threads per block along a row (x: columns)
constexpr int kScaleBlockY = 16;  // threads per block down the picture (y: rows)

// One thread per pixel: out = factor * in at (column x, row y). [22 points]
// May assume: in and out hold width * height floats, row by row.
// Must not: touch any element outside the picture (the grid sticks out past both edges).
__global__ void scale_picture_kernel(const float* in, float* out, int width, int height, float factor) {
  // BEGIN SOLUTION
  // TODO: give each thread one pixel: its column from the x parts of blockIdx, blockDim and
  //       threadIdx, its row from their y parts. Write out = factor * in for that pixel only
  //       when the column and the row both lie inside the picture: the grid is rounded up to
  //       whole blocks in both directions, so the last blocks stick out past the right and
  //       the bottom edges.
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < width && row < height) {
    const int i = row * width + col;  // < width * height < 2^31: no overflow
    out[i] = factor * in[i];
  }
  // END SOLUTION
}

// Launches scale_picture_kernel over a width x height picture in device memory.
void launch_scale_picture(const float* d_in, float* d_out, int width, int height, float factor) {
  // BEGIN SOLUTION
  // TODO: launch scale_picture_kernel on blocks of kScaleBlockX x kScaleBlockY threads, with
  //       enough blocks in x to cover every column and in y to cover every row (round each
  //       division up), then check the launch with CUDA_CHECK_LAUNCH().
  const dim3 block(kScaleBlockX, kScaleBlockY);
  const dim3 grid((width + kScaleBlockX - 1) / kScaleBlockX, (height + kScaleBlockY - 1) / kScaleBlockY);
  scale_picture_kernel<<<grid, block>>>(d_in, d_out, width, height, factor);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Part 2: colour to grayscale.
// ---------------------------------------------------------------------------------------------

// BEGIN SOLUTION
// TODO: name the launch constants of rgb_to_gray_kernel here (threads per block, and anything
//       else that sets the grid), so that the kernel and launch_rgb_to_gray agree on them.

// Each thread converts 16 pixels: 48 input bytes, three 16-byte loads, and one 16-byte store.
// Wide accesses keep many bytes in flight per thread, which is what a memory-bound kernel needs.
constexpr int kGrayBlockSize = 256;
constexpr int kGrayPixelsPerThread = 16;
constexpr int kGrayPixelsPerBlock = kGrayBlockSize * kGrayPixelsPerThread;  // 4096 pixels, 12 KiB of colour
// END SOLUTION

// Grayscale: gray[p] = (299 R + 587 G + 114 B + 500) / 1000 for every pixel p of the picture,
// whose colour is rgb[3p], rgb[3p + 1], rgb[3p + 2]. [28 points, and 3 for speed]
// May assume: rgb holds 3 * width * height bytes and gray width * height bytes.
// Must not: write any byte outside gray's width * height.
__global__ void rgb_to_gray_kernel(const std::uint8_t* rgb, std::uint8_t* gray, int width, int height) {
  // BEGIN SOLUTION
  // TODO: convert every pixel to its luma, by the formula in picture_kernel.cuh, guarding
  //       against threads past the last pixel. Pixel p's colour is the three bytes from 3p on,
  //       so the input is three times as long as the output. The kernel does one multiply-add
  //       per byte: its speed is set by memory traffic, so make neighbouring threads read and
  //       write neighbouring bytes.

  // Exact integer arithmetic: the weights in thousandths, plus 500 to round halves up.
  auto luma = [](unsigned r, unsigned g, unsigned b) { return (299 * r + 587 * g + 114 * b + 500) / 1000; };

  // A block owns kGrayPixelsPerBlock consecutive pixels; 64-bit offsets, since 3 * pixels may
  // pass 2^31.
  const long long pixels = static_cast<long long>(width) * height;
  const long long first = static_cast<long long>(blockIdx.x) * kGrayPixelsPerBlock;
  const bool aligned = (reinterpret_cast<std::uintptr_t>(rgb) | reinterpret_cast<std::uintptr_t>(gray)) % 16 == 0;

  if (aligned && first + kGrayPixelsPerBlock <= pixels) {  // the same for every thread of the block
    // Stage the block's 12 KiB of colour in shared memory with 16-byte loads at consecutive
    // addresses: each warp instruction reads 512 contiguous bytes, whole 32-byte sectors.
    // Loading each thread's own 48 bytes straight from global memory would scatter every warp
    // instruction over 1.5 KiB with half of each sector unused.
    __shared__ uint4 staged[3 * kGrayBlockSize];
    const uint4* colour = reinterpret_cast<const uint4*>(rgb + 3 * first);
#pragma unroll
    for (int i = 0; i < 3; ++i) staged[threadIdx.x + i * kGrayBlockSize] = colour[threadIdx.x + i * kGrayBlockSize];
    __syncthreads();  // every thread reads bytes that other threads loaded

    // This thread's 16 pixels are the 48 bytes staged[3t], staged[3t + 1], staged[3t + 2]. A
    // quarter-warp's 16-byte reads at a 48-byte stride fall in 8 distinct groups of 4 banks:
    // no bank conflicts.
    const uint4 a = staged[3 * threadIdx.x], b = staged[3 * threadIdx.x + 1], c = staged[3 * threadIdx.x + 2];
    const unsigned words[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
    auto byte_at = [&](int i) { return (words[i / 4] >> (8 * (i % 4))) & 0xFFu; };  // little-endian
    unsigned packed[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < kGrayPixelsPerThread; ++k)  // unrolled: every index is a constant, so all stays in registers
      packed[k / 4] |= luma(byte_at(3 * k), byte_at(3 * k + 1), byte_at(3 * k + 2)) << (8 * (k % 4));
    reinterpret_cast<uint4*>(gray + first)[threadIdx.x] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  } else {
    // The last, partial block (or pointers not 16-byte aligned): one pixel at a time.
    const long long end = first + kGrayPixelsPerBlock < pixels ? first + kGrayPixelsPerBlock : pixels;
    for (long long p = first + threadIdx.x; p < end; p += kGrayBlockSize)
      gray[p] = static_cast<std::uint8_t>(luma(rgb[3 * p], rgb[3 * p + 1], rgb[3 * p + 2]));
  }
  // END SOLUTION
}

// Launches rgb_to_gray_kernel over a width x height picture in device memory.
void launch_rgb_to_gray(const std::uint8_t* d_rgb, std::uint8_t* d_gray, int width, int height) {
  // BEGIN SOLUTION
  // TODO: launch rgb_to_gray_kernel with a grid that covers every pixel of the picture (round
  //       up), then check the launch with CUDA_CHECK_LAUNCH().
  const long long pixels = static_cast<long long>(width) * height;
  const auto blocks = static_cast<unsigned>((pixels + kGrayPixelsPerBlock - 1) / kGrayPixelsPerBlock);
  rgb_to_gray_kernel<<<blocks, kGrayBlockSize>>>(d_rgb, d_gray, width, height);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}

// ---------------------------------------------------------------------------------------------
// Part 3: box blur.
// ---------------------------------------------------------------------------------------------

// BEGIN SOLUTION
// TODO: name the launch constants of box_blur_kernel here (block shape, and anything else that
//       sets the grid).

// A block computes a 32 x 32 tile of output pixels with 32 x 8 threads, each thread four rows
// of one column; a warp is one row of 32 consecutive pixels, so its reads are contiguous.
constexpr int kBlurBlockX = 32;
constexpr int kBlurBlockY = 8;
constexpr int kBlurTileX = kBlurBlockX;  // output columns per block
constexpr int kBlurTileY = 32;           // output rows per block
// Radii up to this go through a shared-memory tile (its size is fixed at compile time);
// wider windows, rare, read global memory directly.
constexpr int kMaxTileRadius = 8;
// END SOLUTION

// Box blur: out = the mean of in over the part of each pixel's (2 radius + 1)^2 window that
// lies inside the picture, rounded to nearest. [34 points, and 3 for speed]
// May assume: radius >= 0; in and out hold width * height bytes and do not overlap.
// Must not: write any byte outside out's width * height.
__global__ void box_blur_kernel(const std::uint8_t* in, std::uint8_t* out, int width, int height, int radius) {
  // BEGIN SOLUTION
  // TODO: make each output pixel the mean of the input pixels inside both its window and the
  //       picture: sum those and divide by how many there are, which near the edges and
  //       corners is fewer than (2 radius + 1)^2. Guard the output in both directions. A radius
  //       far larger than the picture must not make a thread step through (2 radius + 1)^2
  //       window positions, most of them outside the picture.

  // The input tile: this block's 32 x 32 pixels and a border of `radius` pixels on every side,
  // with zeros where the border leaves the picture, so that they add nothing to a sum.
  __shared__ std::uint8_t tile[kBlurTileY + 2 * kMaxTileRadius][kBlurTileX + 2 * kMaxTileRadius];
  // row_sums[i][j]: the sum of tile row i over the window of output column j.
  __shared__ unsigned row_sums[kBlurTileY + 2 * kMaxTileRadius][kBlurTileX];

  const int x0 = blockIdx.x * kBlurTileX, y0 = blockIdx.y * kBlurTileY;  // the tile's first output pixel
  const int tx = threadIdx.x, ty = threadIdx.y;
  const bool tiled = radius <= kMaxTileRadius;  // the same in every thread, so the barriers below are safe

  if (tiled) {
    // Each input byte is loaded once per block instead of once per window that holds it.
    const int tile_w = kBlurTileX + 2 * radius, tile_h = kBlurTileY + 2 * radius;
    for (int i = ty; i < tile_h; i += kBlurBlockY)
      for (int j = tx; j < tile_w; j += kBlurBlockX) {
        const int gy = y0 - radius + i, gx = x0 - radius + j;
        tile[i][j] = (gy >= 0 && gy < height && gx >= 0 && gx < width) ? in[gy * width + gx] : 0;
      }
    __syncthreads();  // the row sums read bytes other threads loaded

    // The window sum splits into row sums then a column sum: 2(2r + 1) additions per pixel
    // instead of (2r + 1)^2. A warp reads 32 + 2r consecutive bytes of one row: no bank conflicts.
    for (int i = ty; i < tile_h; i += kBlurBlockY) {
      unsigned sum = 0;
      for (int k = 0; k <= 2 * radius; ++k) sum += tile[i][tx + k];
      row_sums[i][tx] = sum;
    }
    __syncthreads();  // the column sums read row sums other threads wrote
  }

  for (int ly = ty; ly < kBlurTileY; ly += kBlurBlockY) {
    const int x = x0 + tx, y = y0 + ly;
    if (x >= width || y >= height) continue;  // this thread's pixel lies past an edge
    // The part of the window inside the picture.
    const int x_lo = max(x - radius, 0), x_hi = min(x + radius, width - 1);
    const int y_lo = max(y - radius, 0), y_hi = min(y + radius, height - 1);
    unsigned sum = 0;
    if (tiled) {
      for (int k = 0; k <= 2 * radius; ++k) sum += row_sums[ly + k][tx];
    } else {
      for (int yy = y_lo; yy <= y_hi; ++yy)
        for (int xx = x_lo; xx <= x_hi; ++xx) sum += in[yy * width + xx];
    }
    const unsigned count = (x_hi - x_lo + 1) * (y_hi - y_lo + 1);
    out[y * width + x] = static_cast<std::uint8_t>((sum + count / 2) / count);
  }
  // END SOLUTION
}

// Launches box_blur_kernel over a width x height picture in device memory.
void launch_box_blur(const std::uint8_t* d_in, std::uint8_t* d_out, int width, int height, int radius) {
  // BEGIN SOLUTION
  // TODO: launch box_blur_kernel with a 2D grid that covers every pixel (round up in both
  //       directions), then check the launch with CUDA_CHECK_LAUNCH().

  // A window wider than the picture covers all of it, just as one exactly as wide does;
  // clamping the radius keeps x + radius far from int overflow.
  const int r = std::min(radius, std::max(width, height));
  const dim3 block(kBlurBlockX, kBlurBlockY);
  const dim3 grid((width + kBlurTileX - 1) / kBlurTileX, (height + kBlurTileY - 1) / kBlurTileY);
  box_blur_kernel<<<grid, block>>>(d_in, d_out, width, height, r);
  CUDA_CHECK_LAUNCH();
  // END SOLUTION
}
