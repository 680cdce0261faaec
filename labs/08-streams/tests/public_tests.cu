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

// The compute stage alone on the signals at d_data: your window, then the test's transform. It is reported, never
// scored (the points divide by the copies alone), so class grading, which times only what scores
// (kit::measured), leaves it out, and with it the plan for the whole dataset.
kit::Measurement time_compute(cufftComplex* d_data, std::size_t signals, int n, std::size_t bytes,
                              const kit::TimingOptions& options) {
  kit::Measurement compute{"stage_compute", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  cufftHandle plan = 0;
  CUFFT_CHECK(cufftPlan1d(&plan, n, CUFFT_C2C, static_cast<int>(signals)));
  compute.timing = kit::time_device_work(
      [&] {
        launch_apply_window(d_data, signals, n, nullptr);
        kit::remote::synchronize(nullptr);  // the window runs in your code's process; the transform waits for it
        CUFFT_CHECK(cufftExecC2C(plan, d_data, d_data, CUFFT_FORWARD));
      },
      options);
  cufftDestroy(plan);
  return compute;
}

// Each stage alone, on the whole dataset at once: copy in, compute (where measured), copy out.
std::vector<kit::Measurement> time_stages(cufftComplex* pinned_in, cufftComplex* pinned_out, std::size_t signals,
                                          int n, std::size_t bytes, const kit::TimingOptions& options) {
  kit::Measurement copy_in{"stage_copy_in", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  kit::Measurement copy_out{"stage_copy_out", {}, static_cast<double>(bytes), kit::RateUnit::GBps};
  kit::DeviceBuffer<float> d_all(2 * signals * n);
  auto* d_data = reinterpret_cast<cufftComplex*>(d_all.data());
  copy_in.timing = kit::time_device_work(
      [&] { CUDA_CHECK(cudaMemcpyAsync(d_data, pinned_in, bytes, cudaMemcpyHostToDevice, nullptr)); }, options);
  std::vector<kit::Measurement> stages{copy_in};
  if (kit::measured("stage_compute")) stages.push_back(time_compute(d_data, signals, n, bytes, options));
  copy_out.timing = kit::time_device_work(
      [&] { CUDA_CHECK(cudaMemcpyAsync(pinned_out, d_data, bytes, cudaMemcpyDeviceToHost, nullptr)); }, options);
  stages.push_back(copy_out);
  return stages;
}

// How the report names a sequential baseline: "sequential with pinned memory", or pageable.
std::string baseline_title(const std::string& measurement) {
  return measurement == "sequential_pinned" ? "sequential with pinned memory" : "sequential with pageable memory";
}

TEST_CASE("run_pipeline timing: a large dataset against its stages and the sequential baselines" * KIT_TIMING) {
  const int n = fft_n();
  const std::size_t budget = static_cast<std::size_t>(kit::param_int("budget_mib")) * kMiB;
  const std::size_t bytes = static_cast<std::size_t>(kit::param_int("timing_dataset_mib")) * kMiB;
  const std::size_t signals = bytes / (n * sizeof(cufftComplex));
  const std::size_t samples = signals * n;
  const std::string input = std::to_string(signals) + " signals (" + std::to_string(bytes / kMiB) + " MiB), " +
                            describe(setup_for(n, streams(), budget));
  const kit::TimingOptions options = kit::TimingOptions::from_params();

  // The dataset repeats timing_period_signals random signals, whose CPU reference is computed once.
  const std::vector<float> base = make_signals(
      std::min<std::size_t>(signals, static_cast<std::size_t>(kit::param_int("timing_period_signals"))), n);
  const TiledSignals datasets(base, n, signals);
  const std::size_t distinct = datasets.distinct();
  const Expected base_expected = expected_spectra(base, 0, distinct, n);

  // Pageable copies of the input and output, for the pageable baseline, left uninitialised (a
  // vector would zero each gigabyte on one core first): the copy below writes every page of the
  // input, the baseline's warm-up call every page of the output. Class grading times only what
  // scores (kit::measured), and the baselines are reported for comparison only.
  const bool pageable_baseline = kit::measured("sequential_pageable");
  const bool pinned_baseline = kit::measured("sequential_pinned");
  std::unique_ptr<float[]> pageable_in, pageable_out;
  if (pageable_baseline) {
    pageable_in.reset(new float[2 * samples]);
    pageable_out.reset(new float[2 * samples]);
    datasets.copy_to_host(0, pageable_in.get());
  }

  HostSamples h_in(samples), h_out(samples);
  datasets.copy_to_host(0, h_in.floats());
  // The stages and the pinned baseline need page-locked memory, whatever allocate_host_samples gives.
  const bool page_locked = is_page_locked(h_in.data()) && is_page_locked(h_out.data());
  std::unique_ptr<kit::PinnedBuffer<cufftComplex>> own_in, own_out;
  cufftComplex* pinned_in = h_in.data();
  cufftComplex* pinned_out = h_out.data();
  if (!page_locked) {
    own_in = std::make_unique<kit::PinnedBuffer<cufftComplex>>(samples);
    own_out = std::make_unique<kit::PinnedBuffer<cufftComplex>>(samples);
    datasets.copy_to_host(0, reinterpret_cast<float*>(own_in->data()));
    pinned_in = own_in->data();
    pinned_out = own_out->data();
  }

  const auto time_all_stages = [&] { return time_stages(pinned_in, pinned_out, signals, n, bytes, options); };
  const std::vector<kit::Measurement> stages = time_all_stages();

  // The sequential baselines, then the pipeline, all within the same budget; no baseline's plan is made
  // where neither is measured.
  std::vector<kit::Measurement> baselines;
  if (pageable_baseline || pinned_baseline) {
    SequentialBaseline baseline(n, budget);
    const auto time_baseline = [&](const std::string& name, const cufftComplex* in, cufftComplex* out) {
      baselines.push_back({name, kit::time_device_work([&] { baseline.run(in, out, signals); }, options),
                           static_cast<double>(bytes), kit::RateUnit::GBps});
    };
    if (pageable_baseline)
      time_baseline("sequential_pageable", reinterpret_cast<const cufftComplex*>(pageable_in.get()),
                    reinterpret_cast<cufftComplex*>(pageable_out.get()));
    if (pinned_baseline) time_baseline("sequential_pinned", pinned_in, pinned_out);
  }
  const kit::Measurement* slowest = &kit::slowest_stage(stages);
  for (const kit::Measurement& stage : stages) kit::report(stage);
  for (const kit::Measurement& m : baselines) kit::report(m);

  // The pipeline. Every timed call gets the dataset repeated from a new, random base signal;
  // the harness checks that every sample of the output is written each time, and after calls
  // chosen at random the output is compared with the CPU reference on whole signals drawn at
  // random after the call.
  const PipelineSetup setup = setup_for(n, streams(), budget);
  PipelineHandle pipeline = make_pipeline(setup);
  const auto shift_of = [&](const kit::Call& call) {
    return static_cast<std::size_t>(call.rng("shift").uniform_ints(1, 0, static_cast<int>(distinct) - 1)[0]);
  };
  float last_at_return = 0.0f;
  kit::TimedWork work;
  work.name = "pipelined";
  work.call = [&] {
    run_pipeline(pipeline.get(), h_in.data(), h_out.data(), signals);
    last_at_return = h_out.floats()[2 * samples - 1];  // the caller may read h_out the moment it returns
  };
  work.work_per_call = static_cast<double>(bytes);
  // A pipeline overlaps its stages, so it cannot be faster than the slowest of them alone. Five
  // samples of a PCIe copy can come out slow together; a pipeline that beats the bound has the
  // stages timed again, and each keeps its faster timing, before it is called implausible.
  work.ceilings = {kit::slowest_stage_bound(stages, time_all_stages)};
  for (const kit::Measurement& m : baselines) work.ceilings.push_back({baseline_title(m.name), m.rate()});
  work.outputs = {kit::Output::host("h_out", h_out.floats(), 2 * samples)};  // NaN: no spectrum holds one
  work.refresh = [&](const kit::Call& call) { datasets.copy_to_host(shift_of(call), h_in.floats()); };
  work.verify = [&](const kit::Call& call) {
    const std::string what = input + "; the dataset of " + call.name();
    if (kit::is_poison(last_at_return)) {
      FAIL_CHECK("For input: " << what << ", the last sample still held the poison when run_pipeline returned.\n"
                               << "Look at: " << kLookAtWait);
      return false;
    }
    return expect_sampled_spectra(h_out.floats(), signals, shift_of(call), base_expected, n, what);
  };
  work.look_at = kLookAtPipeline;
  const kit::Measurement pipelined = kit::time_work(work, options);

  std::printf("[overlap] pipelined time / slowest stage alone (%s) = %.2f   (1.00: everything else hidden behind it)\n",
              slowest->name.c_str(), pipelined.timing.median_s / slowest->timing.median_s);
  if (pageable_baseline && pinned_baseline)  // baselines[0] is the pageable one, [1] the pinned one
    std::printf("[speedup] pipelined is %.2fx as fast as sequential with pinned memory, %.2fx with pageable memory\n",
                baselines[1].timing.median_s / pipelined.timing.median_s,
                baselines[0].timing.median_s / pipelined.timing.median_s);
  if (!page_locked)
    std::printf("[note] the memory from allocate_host_samples is not page-locked: copies from it cannot overlap\n");
  std::fflush(stdout);
}
