// Lab 08 public tests: the ones you can run yourself (make 08-streams).
#include <cstdio>

#include "sequential.cuh"
#include "streams_checks.cuh"

using namespace streams_checks;

// ---------------------------------------------------------------------------
// Part 1: the window

TEST_CASE("launch_apply_window: every sample of a few signals of 1024 samples") {
  const auto signals = static_cast<std::size_t>(kit::param_int("window_signals"));
  check_window(signals, 1024, std::to_string(signals) + " signals of 1024 samples");
}

TEST_CASE("launch_apply_window: odd signal lengths with nothing written past the end") {
  const auto signals = static_cast<std::size_t>(kit::param_int("window_signals"));
  for (const auto n : kit::param_ints("window_odd_ns"))
    check_window(signals, static_cast<int>(n),
                 std::to_string(signals) + " signals of " + std::to_string(n) + " samples, not a power of two");
}

// ---------------------------------------------------------------------------
// Part 2: host memory

TEST_CASE("allocate_host_samples: page-locked memory that keeps what is written to it") {
  const auto count = static_cast<std::size_t>(kit::param_int("host_test_samples"));
  cufftComplex* h_samples = allocate_host_samples(count);
  REQUIRE_MESSAGE(h_samples != nullptr, "allocate_host_samples(" << count << ") returned nullptr");
  CHECK_MESSAGE(is_page_locked(h_samples),
                "allocate_host_samples returned ordinary (pageable) memory: the CUDA runtime does not know it as "
                "page-locked host memory, so a copy engine cannot reach it on its own and cudaMemcpyAsync "
                "from it cannot overlap with anything.\nLook at: allocate_host_samples in streams.cu");

  // Every sample must be usable: write them all, send them to the GPU and back.
  const std::vector<float> pattern = make_signals(count, 1, "pattern");
  float* floats = reinterpret_cast<float*>(h_samples);
  std::memcpy(floats, pattern.data(), pattern.size() * sizeof(float));
  kit::DeviceBuffer<float> d_copy(pattern.size());
  CUDA_CHECK(cudaMemcpy(d_copy.data(), floats, pattern.size() * sizeof(float), cudaMemcpyHostToDevice));
  std::memset(floats, kit::poison_byte<float>(), pattern.size() * sizeof(float));
  CUDA_CHECK(cudaMemcpy(floats, d_copy.data(), pattern.size() * sizeof(float), cudaMemcpyDeviceToHost));
  kit::expect_equal(std::vector<float>(floats, floats + pattern.size()), pattern,
                    {std::to_string(count) + " samples written, sent to the GPU and back",
                     "allocate_host_samples in streams.cu: room for count complex samples"});
  CHECK_NOTHROW(free_host_samples(h_samples));
}

// ---------------------------------------------------------------------------
// Part 3: the pipeline. Each dataset is checked sample by sample against a CPU
// reference, and the tests also check that nothing is written past the output
// and that the output is complete when run_pipeline returns.

TEST_CASE("run_pipeline: a single signal") {
  check_pipeline(setup_for(fft_n(), streams(), small_budget()), 1, "1 signal");
}

TEST_CASE("run_pipeline: a dataset that fits in one chunk") {
  const auto signals = static_cast<std::size_t>(kit::param_int("one_chunk_signals"));
  check_pipeline(setup_for(fft_n(), streams(), small_budget()), signals,
                 std::to_string(signals) + " signals, fewer than one stream's share of the budget holds");
}

TEST_CASE("run_pipeline: chunk count not a multiple of the stream count") {
  const auto signals = static_cast<std::size_t>(kit::param_int("odd_chunks_signals"));
  check_pipeline(setup_for(fft_n(), streams(), small_budget()), signals,
                 std::to_string(signals) + " signals: a few chunks, the last one short, not a multiple of the streams");
}

TEST_CASE("run_pipeline: many chunks through every stream") {
  const auto signals = static_cast<std::size_t>(kit::param_int("many_chunks_signals"));
  check_pipeline(setup_for(fft_n(), streams(), small_budget()), signals,
                 std::to_string(signals) + " signals: over a hundred chunks, each stream reusing its buffers many times");
}

TEST_CASE("run_pipeline: a dataset larger than the budget with device memory held within it") {
  const std::size_t budget = static_cast<std::size_t>(kit::param_int("budget_test_mib")) * kMiB;
  const int n = fft_n();
  const std::size_t signals =
      static_cast<std::size_t>(kit::param_int("budget_test_dataset_mib")) * kMiB / (n * sizeof(cufftComplex)) + 13;
  check_budget(setup_for(n, streams(), budget), signals,
               std::to_string(signals) + " signals, several times the budget");
}

// ---------------------------------------------------------------------------
// Timing: the stages alone, the sequential baselines, and the pipeline.

TEST_CASE("run_pipeline timing: a large dataset against its stages and the sequential baselines" * KIT_TIMING) {
  const int n = fft_n();
  const std::size_t budget = static_cast<std::size_t>(kit::param_int("budget_mib")) * kMiB;
  const std::size_t bytes = static_cast<std::size_t>(kit::param_int("timing_dataset_mib")) * kMiB;
  const std::size_t signals = bytes / (n * sizeof(cufftComplex));
  const std::size_t samples = signals * n;
  const std::string input = std::to_string(signals) + " signals (" + std::to_string(bytes / kMiB) +
                            " MiB), " + describe(setup_for(n, streams(), budget));
  const kit::TimingOptions options = kit::TimingOptions::from_params();

  // Pageable copies of the input and output, for the pageable baseline and the final check.
  const std::vector<float> pageable_in =
      make_tiled_signals(signals, n, static_cast<std::size_t>(kit::param_int("timing_period_signals")));
  std::vector<float> pageable_out(2 * samples);
  const auto* in_samples = reinterpret_cast<const cufftComplex*>(pageable_in.data());
  auto* out_samples = reinterpret_cast<cufftComplex*>(pageable_out.data());

  HostSamples h_in(samples), h_out(samples);
  std::memcpy(h_in.data(), pageable_in.data(), bytes);
  // The stages and the pinned baseline need page-locked memory, whatever allocate_host_samples gives.
  const bool page_locked = is_page_locked(h_in.data()) && is_page_locked(h_out.data());
  std::unique_ptr<kit::PinnedBuffer<cufftComplex>> own_in, own_out;
  cufftComplex* pinned_in = h_in.data();
  cufftComplex* pinned_out = h_out.data();
  if (!page_locked) {
    own_in = std::make_unique<kit::PinnedBuffer<cufftComplex>>(samples);
    own_out = std::make_unique<kit::PinnedBuffer<cufftComplex>>(samples);
    std::memcpy(own_in->data(), pageable_in.data(), bytes);
    pinned_in = own_in->data();
    pinned_out = own_out->data();
  }

  // Each stage alone, on the whole dataset at once.
  kit::Measurement copy_in{"stage_copy_in", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  kit::Measurement compute{"stage_compute", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  kit::Measurement copy_out{"stage_copy_out", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  {
    kit::DeviceBuffer<float> d_all(2 * samples);
    auto* d_data = reinterpret_cast<cufftComplex*>(d_all.data());
    cufftHandle plan = 0;
    CUFFT_CHECK(cufftPlan1d(&plan, n, CUFFT_C2C, static_cast<int>(signals)));
    copy_in.timing = kit::time_device_work(
        [&] { CUDA_CHECK(cudaMemcpyAsync(d_data, pinned_in, bytes, cudaMemcpyHostToDevice, nullptr)); }, options);
    compute.timing = kit::time_device_work(
        [&] {
          launch_apply_window(d_data, signals, n, nullptr);
          CUFFT_CHECK(cufftExecC2C(plan, d_data, d_data, CUFFT_FORWARD));
        },
        options);
    copy_out.timing = kit::time_device_work(
        [&] { CUDA_CHECK(cudaMemcpyAsync(pinned_out, d_data, bytes, cudaMemcpyDeviceToHost, nullptr)); }, options);
    cufftDestroy(plan);
  }

  // The sequential baselines, then the pipeline, all within the same budget.
  kit::Measurement sequential_pageable{"sequential_pageable", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  kit::Measurement sequential_pinned{"sequential_pinned", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  {
    SequentialBaseline baseline(n, budget);
    sequential_pageable.timing =
        kit::time_device_work([&] { baseline.run(in_samples, out_samples, signals); }, options);
    sequential_pinned.timing = kit::time_device_work([&] { baseline.run(pinned_in, pinned_out, signals); }, options);
  }
  const PipelineSetup setup = setup_for(n, streams(), budget);
  PipelineHandle pipeline = make_pipeline(setup);
  kit::Measurement pipelined{"pipelined",
                             kit::time_device_work([&] { run_pipeline(pipeline.get(), h_in.data(), h_out.data(), signals); },
                                                   options),
                             static_cast<double>(bytes), kit::RateUnit::GBps};

  const kit::Measurement* slowest = &copy_in;
  for (const kit::Measurement* stage : {&compute, &copy_out})
    if (stage->timing.median_s > slowest->timing.median_s) slowest = stage;
  pipelined.ceilings.push_back({"slowest stage alone (" + slowest->name + ")", slowest->rate()});
  pipelined.ceilings.push_back({"sequential with pinned memory", sequential_pinned.rate()});
  pipelined.ceilings.push_back({"sequential with pageable memory", sequential_pageable.rate()});
  for (const kit::Measurement* m : {&copy_in, &compute, &copy_out, &sequential_pageable, &sequential_pinned, &pipelined})
    kit::report(*m);
  std::printf("[overlap] pipelined time / slowest stage alone (%s) = %.2f   (1.00: everything else hidden behind it)\n",
              slowest->name.c_str(), pipelined.timing.median_s / slowest->timing.median_s);
  std::printf("[speedup] pipelined is %.2fx as fast as sequential with pinned memory, %.2fx with pageable memory\n",
              sequential_pinned.timing.median_s / pipelined.timing.median_s,
              sequential_pageable.timing.median_s / pipelined.timing.median_s);
  if (!page_locked)
    std::printf("[note] the memory from allocate_host_samples is not page-locked: copies from it cannot overlap\n");
  std::fflush(stdout);

  // The timed code must also be right: run it once more on a poisoned output
  // and compare every sample with the sequential result (which came from the
  // same arithmetic), and a sample of the signals with the CPU reference.
  std::memset(h_out.data(), kit::poison_byte<float>(), bytes);
  run_pipeline(pipeline.get(), h_in.data(), h_out.data(), signals);
  const float last_at_return = h_out.floats()[2 * samples - 1];
  CUDA_CHECK(cudaDeviceSynchronize());
  CHECK_MESSAGE(!kit::is_poison(last_at_return),
                "For input: " << input << ", the last sample still held the poison when run_pipeline returned.\nLook at: "
                              << kLookAtWait);
  const std::size_t floats_per_signal = 2 * static_cast<std::size_t>(n);
  // Every sample against the sequential baseline's output, a block of signals
  // at a time (a whole second copy in double would take gigabytes).
  const auto block = static_cast<std::size_t>(kit::param_int("timing_check_block"));
  for (std::size_t first = 0; first < signals; first += block) {
    const std::size_t count = std::min(block, signals - first);
    const std::size_t begin = first * floats_per_signal, end = (first + count) * floats_per_signal;
    std::vector<double> allowed(count);
    for (std::size_t s = 0; s < count; ++s) {
      double norm2 = 0.0;
      for (std::size_t i = begin + s * floats_per_signal; i < begin + (s + 1) * floats_per_signal; ++i)
        norm2 += static_cast<double>(pageable_in[i]) * pageable_in[i];
      allowed[s] = 2.0 * allowed_error(std::sqrt(norm2), n);  // both results lie within one bound of the exact one
    }
    const bool right = kit::expect_within(
        std::vector<float>(h_out.floats() + begin, h_out.floats() + end),
        std::vector<double>(pageable_out.begin() + begin, pageable_out.begin() + end),
        [&](std::size_t i) { return allowed[i / floats_per_signal]; },
        {input + "; signals " + std::to_string(first) + " to " + std::to_string(first + count - 1) +
             " (row r is signal " + std::to_string(first) + " + r), compared with the sequential baseline's output",
         kLookAtPipeline, floats_per_signal});
    if (!right) break;  // one block's report says enough
  }

  // A sample of the signals against the CPU reference: the sequential baseline
  // uses your launch_apply_window, so this checks the window too.
  const auto every = static_cast<std::size_t>(kit::param_int("timing_check_every"));
  CpuSpectrum spectrum(n);
  std::vector<double> scratch(floats_per_signal), sampled_expected, sampled_allowed;
  std::vector<float> sampled_got;
  for (std::size_t s = 0; s < signals; s += every) {
    const double norm = spectrum.transform(pageable_in.data() + s * floats_per_signal, scratch.data());
    sampled_expected.insert(sampled_expected.end(), scratch.begin(), scratch.end());
    sampled_got.insert(sampled_got.end(), pageable_out.begin() + s * floats_per_signal,
                       pageable_out.begin() + (s + 1) * floats_per_signal);
    sampled_allowed.push_back(allowed_error(norm, n));
  }
  kit::expect_within(sampled_got, sampled_expected, [&](std::size_t i) { return sampled_allowed[i / floats_per_signal]; },
                     {"every " + std::to_string(every) + "th signal of the sequential baseline's output (row r is signal " +
                          std::to_string(every) + " x r)",
                      kLookAtWindow, floats_per_signal});
}
