#include "kit/timing.cuh"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "kit/cuda_check.cuh"
#include "kit/device_buffer.cuh"
#include "kit/params.hpp"
#include "kit/results.hpp"

namespace kit {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace

TimingOptions TimingOptions::from_params() {
  TimingOptions options;
  options.warmup = static_cast<int>(param_int("timing_warmup"));
  options.repeats = static_cast<int>(param_int("timing_repeats"));
  options.batch = static_cast<int>(param_int("timing_batch"));
  return options;
}

Timing time_device_work(const std::function<void()>& work, const TimingOptions& options) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < options.warmup; ++i) work();
  CUDA_CHECK(cudaDeviceSynchronize());

  Timing timing;
  for (int sample = 0; sample < options.repeats; ++sample) {
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto start = Clock::now();
    for (int i = 0; i < options.batch; ++i) work();
    CUDA_CHECK(cudaDeviceSynchronize());  // every stream's work is done before the clock is read
    const std::chrono::duration<double> elapsed = Clock::now() - start;
    timing.samples_s.push_back(elapsed.count() / options.batch);
  }
  timing.median_s = median(timing.samples_s);
  return timing;
}

double Measurement::rate() const {
  const double per_second = work_per_run / timing.median_s;
  switch (unit) {
    case RateUnit::GBps:
    case RateUnit::GFLOPs: return per_second / 1e9;
    case RateUnit::Custom: return per_second / custom_scale;
  }
  return per_second;
}

std::string Measurement::unit_name() const {
  switch (unit) {
    case RateUnit::GBps: return "GB/s";
    case RateUnit::GFLOPs: return "GFLOP/s";
    case RateUnit::Custom: return custom_unit;
  }
  return "";
}

void report(const Measurement& m) {
  std::printf("[timing] %-32s %10.3f ms  %10.1f %s", m.name.c_str(), m.timing.median_s * 1e3, m.rate(),
              m.unit_name().c_str());
  for (const auto& ceiling : m.ceilings)
    std::printf("  (%.2f of %s at %.1f)", m.rate() / ceiling.rate, ceiling.name.c_str(), ceiling.rate);
  std::printf("\n");
  std::fflush(stdout);

  JsonObject record;
  record.add("kind", "timing")
      .add("case", current_case_name())
      .add("name", m.name)
      .add("median_s", m.timing.median_s)
      .add("samples_s", m.timing.samples_s)
      .add("work_per_run", m.work_per_run)
      .add("rate", m.rate())
      .add("unit", m.unit_name());
  std::vector<std::string> names;
  std::vector<double> rates;
  for (const auto& ceiling : m.ceilings) {
    names.push_back(ceiling.name);
    rates.push_back(ceiling.rate);
  }
  record.add("ceiling_names", names).add("ceiling_rates", rates);
  write_record(record);
}

Ceiling copy_ceiling(std::size_t bytes_moved, const TimingOptions& options) {
  const std::size_t bytes = bytes_moved / 2;  // each byte copied is read once and written once
  DeviceBuffer<unsigned char> source(bytes), destination(bytes);
  CUDA_CHECK(cudaMemset(source.data(), 1, bytes));
  const Timing timing = time_device_work(
      [&] { CUDA_CHECK(cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice)); },
      options);
  return {"device-to-device copy", 2.0 * bytes / timing.median_s / 1e9};
}

}  // namespace kit
