// Timing device work, for the timing cases that the grader's performance
// points are based on.
//
// Method: warm up, then take `repeats` samples; a sample runs the work `batch`
// times between two cudaDeviceSynchronize calls and reads the host clock after
// each, so work left on any stream is counted. The median sample is reported,
// as seconds per run of the work, with a rate (GB/s or GFLOP/s) and, where
// given, the ratio to a ceiling measured in the same process.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kit {

struct TimingOptions {
  int warmup = 3;
  int repeats = 20;
  int batch = 1;
  // timing_warmup, timing_repeats and timing_batch from the lab's params.
  static TimingOptions from_params();
};

struct Timing {
  std::vector<double> samples_s;  // seconds per run of the work, one per sample
  double median_s = 0.0;
};

Timing time_device_work(const std::function<void()>& work, const TimingOptions& options);

enum class RateUnit { GBps, GFLOPs, Custom };

// What a measurement is compared against, measured in the same process.
struct Ceiling {
  std::string name;   // e.g. "device-to-device copy", "cuBLAS SGEMM"
  double rate = 0.0;  // in the measurement's unit
};

struct Measurement {
  std::string name;  // the name the lab config refers to, e.g. "vector_add_kernel"
  Timing timing;
  double work_per_run = 0;  // bytes moved or floating-point operations, per run
  RateUnit unit = RateUnit::GBps;
  std::string custom_unit;    // the unit's name when unit == RateUnit::Custom (e.g. "interactions/s")
  double custom_scale = 1.0;  // rate = work / time / custom_scale for a custom unit
  std::vector<Ceiling> ceilings;

  double rate() const;
  std::string unit_name() const;
};

// Print one line for the student and append a "timing" record for the grader.
void report(const Measurement& measurement);

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes
// written, for a copy that moves `bytes_moved` in all: the ceiling for
// memory-bound kernels.
Ceiling copy_ceiling(std::size_t bytes_moved, const TimingOptions& options);

}  // namespace kit
