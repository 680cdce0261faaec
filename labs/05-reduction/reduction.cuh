// Lab 05: reduction. The functions the tests call; you write them in reduction.cu.
//
// Every launch_reduce_* function sums n floats that are already in device
// memory and leaves the sum in device memory; the four of them are the steps
// of the classic progression, from the simplest tree to a kernel that reads
// memory about as fast as the GPU allows. sum_ints does the same for integers,
// exactly, and brings the sum back to the host.
#pragma once

#include <cstdint>

// Floats of device scratch space that the caller passes as d_partials for an
// input of n elements: room for one partial sum per 32 elements, plus 4096.
// That covers a tree of passes with blocks of 64 threads or more (each pass
// leaves at most 1/64 of its input) and a grid-stride kernel of up to 4096 blocks.
inline std::int64_t partials_capacity(std::int64_t n) { return n / 32 + 4096; }

// The contract shared by the four launch_reduce_* functions:
//   computes  *d_sum = d_in[0] + d_in[1] + ... + d_in[n - 1]  (float arithmetic,
//             in any order: the tests allow for the rounding, see the handout);
//   may assume n >= 1, possibly more than 2^31 (so indices need 64 bits);
//             d_in is 16-byte aligned (cudaMalloc gives 256);
//             d_partials holds partials_capacity(n) floats of garbage, yours to use;
//   must not  read outside d_in[0, n), write outside *d_sum and d_partials,
//             synchronize or copy to the host: only enqueue work on the
//             default stream (the tests copy *d_sum back themselves).

// Step 1: interleaved pairs, one element per thread; arrays longer than one
// block are summed pass after pass over the blocks' partial sums.
void launch_reduce_interleaved(const float* d_in, std::int64_t n, float* d_sum, float* d_partials);

// Step 2: sequential addressing (the active threads stay packed in the low
// warps), otherwise like step 1.
void launch_reduce_sequential(const float* d_in, std::int64_t n, float* d_sum, float* d_partials);

// Step 3: a grid just large enough to fill the GPU; each thread adds many
// elements while loading them (grid-stride), then a second pass sums the
// blocks' partial sums.
void launch_reduce_grid_stride(const float* d_in, std::int64_t n, float* d_sum, float* d_partials);

// Step 4: 16-byte loads, several independent partial sums per thread, a
// warp-shuffle finish and one atomicAdd per block into *d_sum.
void launch_reduce_warp_shuffle(const float* d_in, std::int64_t n, float* d_sum, float* d_partials);

// The exact sum of n ints in device memory, returned to the host: the same
// design as step 4 with 64-bit integer partial sums, so no sum overflows and
// nothing is rounded. n >= 1 (possibly more than 2^31). This function waits
// for the GPU: the sum it returns is the finished one.
long long sum_ints(const int* d_in, std::int64_t n);
