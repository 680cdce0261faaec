// Lab 11: histograms. The functions the tests call; you write them in histogram.cu.
//
// A histogram counts how many values fall into each bin. Parts 1 to 3 count bytes: 256 bins,
// bin b counting the bytes equal to b, each time with a different way of adding up. Part 4
// counts floats into equal-width bins over a range.
//
// For every function: the input is in device memory, 16-byte aligned (cudaMalloc gives 256);
// 1 <= n < 2^32, so every count fits in an unsigned int, and n may pass 2^31, so indices need
// 64 bits. d_bins points to the counters in device memory, whatever they hold on entry: the
// function must set every one of them. It only enqueues work on the default stream: no
// synchronization, no copies to the host (the tests copy the counters back themselves).
#pragma once

#include <cstdint>

constexpr int kByteBins = 256;       // parts 1 to 3: one counter per byte value
constexpr int kMaxFloatBins = 4096;  // part 4: at most this many bins (16 KiB of counters)

// Part 1. Every byte adds 1 to its counter in global memory with an atomic addition.
// d_bins[b] = the number of i < n with d_data[i] == b, for 0 <= b < 256.
void launch_histogram_global(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins);

// Part 2. The same counts, privatized: each block counts into its own 256 counters in shared
// memory, then adds them to d_bins.
void launch_histogram_shared(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins);

// Part 3. The same counts, privatized and warp-aggregated: the lanes of a warp that hold the
// same byte value make one atomic addition between them, of their number.
void launch_histogram_warp_aggregated(const std::uint8_t* d_data, std::int64_t n, unsigned* d_bins);

// Part 4. Floats into `bins` equal-width bins over [lo, hi): d_bins[b] = the number of values v
// with lo <= v < hi whose bin is b, where a value's bin is
//     floor((v - lo) / (hi - lo) * bins),
// and bins - 1 where rounding makes that come out as bins (for a v just below hi). Values
// below lo, at or above hi, infinite or NaN are not counted. Computing the bin in float,
// whether by multiplying by bins / (hi - lo) or by dividing, may put a value within rounding
// of an edge between two bins into the neighbouring bin; the tests never use such values
// (except lo itself and the largest float below hi, whose bins are exact).
// May assume: lo < hi, both finite and hi - lo finite; 1 <= bins <= kMaxFloatBins.
void launch_histogram_floats(const float* d_values, std::int64_t n, float lo, float hi, int bins, unsigned* d_bins);
