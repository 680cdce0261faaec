// The library peer of lab 05: thrust::reduce, timed in the same process as the
// student's kernels. Kept in a file of its own so that only one test source
// compiles the Thrust headers.
#pragma once

#include <cstdint>

#include "kit/timing.cuh"

// thrust::reduce over d_in[0, n) (device memory), each call returning the sum to
// the host; its rate in GB/s of input read.
kit::Ceiling thrust_reduce_ceiling(const float* d_in, std::int64_t n, const kit::TimingOptions& options);
