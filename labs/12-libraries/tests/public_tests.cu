// Lab 12 public tests: the ones you can run yourself (make 12-libraries).
#include <cstdio>
#include <optional>

#include "libraries_checks.cuh"

using namespace libraries_checks;

// ---------------------------------------------------------------------------
// Part 1: the filter kernel

TEST_CASE("launch_apply_response: every bin of a few spectra of a long signal") {
  const auto spectra = static_cast<std::size_t>(kit::param_int("response_spectra"));
  const int bins = static_cast<int>(kit::param_int("response_bins"));
  check_response(spectra, bins, std::to_string(spectra) + " spectra of " + std::to_string(bins) + " bins");
}

TEST_CASE("launch_apply_response: odd spectrum lengths with nothing written past the end") {
  const auto spectra = static_cast<std::size_t>(kit::param_int("response_spectra"));
  for (const auto bins : kit::param_ints("response_odd_bins")) {
    check_response(1, static_cast<int>(bins), "1 spectrum of " + std::to_string(bins) + " bins");
    check_response(spectra, static_cast<int>(bins),
                   std::to_string(spectra) + " spectra of " + std::to_string(bins) + " bins");
  }
}

TEST_CASE("launch_apply_response: work queued on the stream it is given") {
  const auto spectra = static_cast<std::size_t>(kit::param_int("response_spectra"));
  const int bins = static_cast<int>(kit::param_int("response_bins"));
  check_response(spectra, bins,
                 std::to_string(spectra) + " spectra of " + std::to_string(bins) + " bins, arriving late on the stream",
                 true);
}

// ---------------------------------------------------------------------------
// Part 2: beams with cuBLAS

TEST_CASE("mix_beams: one frame with as many beams as channels") {
  for (const MixShape& shape : mix_shapes("mix_square")) check_mix(shape, describe(shape));
}

TEST_CASE("mix_beams: many frames with fewer beams than channels") {
  for (const MixShape& shape : mix_shapes("mix_many")) check_mix(shape, describe(shape));
}

TEST_CASE("mix_beams: awkward shapes with nothing written past the end") {
  for (const MixShape& shape : mix_shapes("mix_awkward")) check_mix(shape, describe(shape));
}

TEST_CASE("mix_beams: work queued on the stream of the handle") {
  for (const MixShape& shape : mix_shapes("mix_many"))
    check_mix(shape, describe(shape) + ", arriving late on the handle's stream", true);
}

// ---------------------------------------------------------------------------
// Part 3: unit RMS with Thrust and CUB

TEST_CASE("normalize_beams: unit RMS for many long beams") {
  const auto count = static_cast<std::size_t>(kit::param_int("normalize_count"));
  const int n = static_cast<int>(kit::param_int("normalize_n"));
  check_normalize(count, n, std::to_string(count) + " beams of " + std::to_string(n) + " samples");
}

TEST_CASE("normalize_beams: a beam of zeros stays zero") {
  const auto count = static_cast<std::size_t>(kit::param_int("normalize_count"));
  const int n = static_cast<int>(kit::param_int("normalize_n"));
  const auto every = static_cast<std::size_t>(kit::param_int("normalize_silent_every"));
  check_normalize(count, n,
                  std::to_string(count) + " beams of " + std::to_string(n) + " samples, every " +
                      std::to_string(every) + "th one (from beam 0) all zeros: its RMS is 0 and it must stay zeros",
                  every);
}

TEST_CASE("normalize_beams: odd beam lengths and counts with nothing written past the end") {
  const auto pairs = kit::param_ints("normalize_odd");
  REQUIRE_MESSAGE(pairs.size() % 2 == 0, "lab parameter 'normalize_odd' must list [count, n] pairs");
  for (std::size_t i = 0; i < pairs.size(); i += 2) {
    const auto count = static_cast<std::size_t>(pairs[i]);
    const int n = static_cast<int>(pairs[i + 1]);
    check_normalize(count, n, std::to_string(count) + " beams of " + std::to_string(n) + " samples");
  }
}

TEST_CASE("normalize_beams: work queued on the stream it is given without waiting for it") {
  const auto count = static_cast<std::size_t>(kit::param_int("normalize_count"));
  const int n = static_cast<int>(kit::param_int("normalize_n"));
  check_normalize(count, n,
                  std::to_string(count) + " beams of " + std::to_string(n) + " samples, arriving late on the stream", 0,
                  true);
}

// ---------------------------------------------------------------------------
// Part 4: the pipeline. Each dataset is checked value by value against the CPU
// reference; the tests also check that nothing is written past the outputs and
// that the outputs are complete when run_pipeline returns.

namespace {

std::size_t period() { return static_cast<std::size_t>(kit::param_int("pipeline_period_frames")); }

}  // namespace

TEST_CASE("run_pipeline: a single frame") { check_pipeline(pipeline_scenario(), 1, period(), "1 frame"); }

TEST_CASE("run_pipeline: a dataset of one batch") {
  const auto frames = static_cast<std::size_t>(kit::param_int("one_batch_frames"));
  check_pipeline(pipeline_scenario(), frames, period(), frames_text(frames) + ", fewer than one batch holds");
}

TEST_CASE("run_pipeline: batch count not a multiple of the stream count") {
  const auto frames = static_cast<std::size_t>(kit::param_int("odd_batches_frames"));
  check_pipeline(pipeline_scenario(), frames, period(),
                 frames_text(frames) + ": a few batches, the last one short, not a multiple of the streams");
}

TEST_CASE("run_pipeline: many batches through every stream") {
  const auto frames = static_cast<std::size_t>(kit::param_int("many_batches_frames"));
  check_pipeline(pipeline_scenario(), frames, period(),
                 frames_text(frames) + ": dozens of batches, each stream reusing its buffers many times");
}

// ---------------------------------------------------------------------------
// Timing: the stages alone, the pipeline on one stream, and the pipeline.

namespace {

// A batched cuFFT plan of the test's own, on the legacy default stream.
class TestPlan {
 public:
  TestPlan(int n, cufftType type, int batch) { CUFFT_CHECK(cufftPlan1d(&plan_, n, type, batch)); }
  ~TestPlan() { cufftDestroy(plan_); }
  TestPlan(const TestPlan&) = delete;
  TestPlan& operator=(const TestPlan&) = delete;
  cufftHandle get() const { return plan_; }

 private:
  cufftHandle plan_ = 0;
};

}  // namespace

TEST_CASE("run_pipeline timing: a large dataset against the stages alone and one stream" * KIT_TIMING) {
  const Scenario s = scenario_param("timing_shape", "timing_streams", "timing_batch_frames");
  const std::size_t n = static_cast<std::size_t>(s.n), bins = n / 2 + 1;
  const std::size_t frame_bytes = static_cast<std::size_t>(s.channels) * n * sizeof(float);
  const std::size_t frames = static_cast<std::size_t>(kit::param_int("timing_dataset_mib")) * (1 << 20) / frame_bytes;
  const std::size_t in_bytes = frames * frame_bytes;
  const std::size_t signals = frames * s.channels, beam_count = frames * s.beams;
  const std::string input = frames_text(frames) + " (" + std::to_string(in_bytes >> 20) + " MiB in), " + describe(s);
  const kit::TimingOptions options = kit::TimingOptions::from_params();
  const auto rate = [&](const char* name) {  // every rate in GB of frames in per second, so that they compare
    return kit::Measurement{name, {}, static_cast<double>(in_bytes), kit::RateUnit::GBps};
  };

  const PipelineInputs inputs(s);
  const ExpectedFrames expected(s, inputs, static_cast<std::size_t>(kit::param_int("timing_period_frames")), "frames");
  Dataset data(s, expected, frames);  // page-locked input and outputs

  // The compute stage alone: the test's transforms with your Part 1-3 functions, its own plans and handle, on
  // the legacy default stream. It is reported, never scored (the points divide by the copies alone), so class
  // grading, which times only what scores (kit::measured), leaves it out, and with it the gigabytes of buffers
  // and the plans it needs. Runs on the frames on the GPU and writes the beams and RMS values there.
  const auto time_compute = [&](float* d_frames, float* d_beams, float* d_rms) {
    kit::Measurement compute = rate("stage_compute");
    kit::DeviceBuffer<float> d_filtered(signals * n), d_weights(inputs.weights);
    kit::DeviceBuffer<cufftComplex> d_spectra(signals * bins), d_response(inputs.response);
    const TestPlan forward(s.n, CUFFT_R2C, static_cast<int>(signals)),
        inverse(s.n, CUFFT_C2R, static_cast<int>(signals));
    const TestBlas blas(nullptr);
    const std::size_t scratch_bytes = normalize_scratch_bytes(beam_count, s.n);
    kit::DeviceBuffer<char> d_scratch(std::max<std::size_t>(scratch_bytes, 1));
    // The input (d_frames) is never written, so nothing needs refreshing between runs. The test's transforms
    // run here and your functions in your code's process: each side waits for the other's step before its own.
    compute.timing = kit::time_device_work(
        [&] {
          CUFFT_CHECK(cufftExecR2C(forward.get(), d_frames, d_spectra.data()));
          CUDA_CHECK(cudaDeviceSynchronize());
          launch_apply_response(d_spectra.data(), signals, static_cast<int>(bins), d_response.data(), 1.0f / s.n,
                                nullptr);
          kit::remote::synchronize(nullptr);
          CUFFT_CHECK(cufftExecC2R(inverse.get(), d_spectra.data(), d_filtered.data()));
          CUDA_CHECK(cudaDeviceSynchronize());
          mix_beams(blas.get(), d_filtered.data(), d_weights.data(), d_beams, frames, s.channels, s.beams, s.n);
          normalize_beams(d_beams, d_rms, beam_count, s.n, d_scratch.data(), scratch_bytes, nullptr);
          kit::remote::synchronize(nullptr);
        },
        options);
    return compute;
  };

  // Each stage alone, on the whole dataset at once: copy in, compute (where measured), copy out.
  const auto time_stages = [&] {
    kit::Measurement copy_in = rate("stage_copy_in"), copy_out = rate("stage_copy_out");
    kit::DeviceBuffer<float> d_frames(signals * n), d_beams(beam_count * n), d_rms(beam_count);
    CUDA_CHECK(cudaMemcpy(d_frames.data(), data.in(), in_bytes, cudaMemcpyHostToDevice));

    copy_in.timing = kit::time_device_work(
        [&] { CUDA_CHECK(cudaMemcpyAsync(d_frames.data(), data.in(), in_bytes, cudaMemcpyHostToDevice, nullptr)); },
        options);
    std::vector<kit::Measurement> stages{copy_in};
    if (kit::measured("stage_compute")) stages.push_back(time_compute(d_frames.data(), d_beams.data(), d_rms.data()));
    copy_out.timing = kit::time_device_work(
        [&] {
          CUDA_CHECK(cudaMemcpyAsync(data.beams(), d_beams.data(), d_beams.bytes(), cudaMemcpyDeviceToHost, nullptr));
          CUDA_CHECK(cudaMemcpyAsync(data.rms(), d_rms.data(), d_rms.bytes(), cudaMemcpyDeviceToHost, nullptr));
        },
        options);
    stages.push_back(copy_out);
    return stages;
  };
  const std::vector<kit::Measurement> stages = time_stages();

  // The same pipeline with a single stream: every step of a batch waits for the one before. It is reported
  // for comparison only, so class grading, which times only what scores (kit::measured), leaves it out.
  std::optional<kit::Measurement> one_stream;
  if (kit::measured("one_stream")) {
    Scenario single = s;
    single.streams = 1;
    PipelineHandle pipeline = make_pipeline(single, inputs);
    one_stream = rate("one_stream");
    one_stream->timing = kit::time_device_work(
        [&] { run_pipeline(pipeline.get(), data.in(), data.beams(), data.rms(), frames); }, options);
  }

  const kit::Measurement* slowest = &kit::slowest_stage(stages);
  for (const kit::Measurement& stage : stages) kit::report(stage);
  if (one_stream) kit::report(*one_stream);

  // The pipeline, guarded: its outputs poisoned before every call and checked after it, random calls
  // compared with the CPU reference on whole frames drawn at random after the call. The input stays the
  // same from call to call: every call must still bring its whole input over PCIe, so an output kept
  // from an earlier call and copied back cannot beat the slowest stage alone, copy-in, which is the bound.
  PipelineHandle pipeline = make_pipeline(s, inputs);
  const auto check_frames = static_cast<std::size_t>(kit::param_int("timing_check_frames"));
  kit::TimedWork work;
  work.name = "pipelined";
  work.call = [&] { run_pipeline(pipeline.get(), data.in(), data.beams(), data.rms(), frames); };
  work.work_per_call = static_cast<double>(in_bytes);
  // Five samples of a PCIe copy can come out slow together: a pipeline that beats the bound has the stages
  // timed again, and each keeps its faster timing, before it is called implausible.
  work.ceilings = {kit::slowest_stage_bound(stages, time_stages)};
  if (one_stream) work.ceilings.push_back({"one stream", one_stream->rate()});
  work.outputs = {kit::Output::host("the beams", data.beams(), beam_count * n),  // NaN: no beam holds one
                  kit::Output::host("the RMS values", data.rms(), beam_count)};
  work.verify = [&](const kit::Call& call) {
    return data.outputs_right_sampled(check_frames, input + "; " + call.name());
  };
  work.look_at = kLookAtPipelineBeams;
  const kit::Measurement pipelined = kit::time_work(work, options);
  std::printf("[overlap] pipelined time / slowest stage alone (%s) = %.2f   (1.00: everything else hidden behind it)\n",
              slowest->name.c_str(), pipelined.timing.median_s / slowest->timing.median_s);
  if (one_stream)
    std::printf("[speedup] pipelined is %.2fx as fast as the same pipeline on one stream\n",
                one_stream->timing.median_s / pipelined.timing.median_s);
  std::fflush(stdout);

  // A last run on poisoned outputs: the results must be in place when run_pipeline returns (compared
  // on sampled frames, as the timed calls are).
  data.check(pipeline.get(), input, frames, check_frames);
}
