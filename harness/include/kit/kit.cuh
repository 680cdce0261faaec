// Everything a lab's tests use from the shared harness.
#pragma once

#include <doctest/doctest.h>

#include "kit/check.hpp"
#include "kit/cuda_check.cuh"
#include "kit/device.hpp"
#include "kit/device_buffer.cuh"
#include "kit/guarded_buffer.cuh"
#include "kit/parallel.hpp"
#include "kit/params.hpp"
#include "kit/poison.hpp"
#include "kit/random.hpp"
#include "kit/results.hpp"
#include "kit/timing.cuh"

// Test cases that run without a GPU go in this suite; on a machine without a GPU
// only they run, and every other test case is reported as skipped.
#define KIT_CPU_ONLY doctest::test_suite("cpu")
// Timing cases, which the grader runs for performance points.
#define KIT_TIMING doctest::test_suite("timing")
