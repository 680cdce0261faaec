// The library peer of lab 11: cub::DeviceHistogram::HistogramEven, timed in the same process as
// the student's kernels on the same input. Kept in a file of its own so that only one test
// source compiles the CUB headers.
#pragma once

#include <cstdint>
#include <vector>

#include "kit/timing.cuh"

// CUB's histogram of the n bytes at d_data (device memory, n < 2^31) into 256 counters, timed
// with `options` and checked against `expected`; its rate in GB/s of input read.
kit::Ceiling cub_byte_histogram_ceiling(const std::uint8_t* d_data, std::int64_t n,
                                        const std::vector<unsigned>& expected, const kit::TimingOptions& options);

// The same for n floats into `bins` equal bins over [lo, hi).
kit::Ceiling cub_float_histogram_ceiling(const float* d_values, std::int64_t n, float lo, float hi, int bins,
                                         const std::vector<unsigned>& expected, const kit::TimingOptions& options);
