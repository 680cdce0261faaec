// Lab 12 hidden tests: run by the grader only. Each targets a mistake students make.
#include "libraries_checks.cuh"

using namespace libraries_checks;

// Grid rounding shows at block edges: lengths one either side of multiples of 32, 256 and 512.
TEST_CASE("launch_apply_response (hidden): spectrum lengths next to multiples of common block sizes") {
  const auto spectra = static_cast<std::size_t>(kit::param_int("response_boundary_spectra"));
  for (const auto bins : kit::param_ints("response_boundary_bins"))
    check_response(spectra, static_cast<int>(bins),
                   std::to_string(spectra) + " spectra of " + std::to_string(bins) + " bins");
}

// One channel (a product with an inner dimension of 1), more beams than
// channels (a leading dimension taken from the wrong matrix is too small, or
// reads the wrong rows), and thousands of frames.
TEST_CASE("mix_beams (hidden): one channel and more beams than channels over thousands of frames") {
  for (const MixShape& shape : mix_shapes("mix_hidden")) check_mix(shape, describe(shape));
}

// One segment far longer than a block, and a hundred thousand segments of one
// sample (whose RMS is the sample's magnitude and whose normalized value is +-1).
TEST_CASE("normalize_beams (hidden): a very long beam and many one-sample beams") {
  const auto pairs = kit::param_ints("normalize_hidden");
  REQUIRE_MESSAGE(pairs.size() % 2 == 0, "lab parameter 'normalize_hidden' must list [count, n] pairs");
  for (std::size_t i = 0; i < pairs.size(); i += 2) {
    const auto count = static_cast<std::size_t>(pairs[i]);
    const int n = static_cast<int>(pairs[i + 1]);
    check_normalize(count, n,
                    std::to_string(count) + (count == 1 ? " beam of " : " beams of ") + std::to_string(n) +
                        (n == 1 ? " sample" : " samples"));
  }
}

// Offsets and sizes of a short last batch (read from and written to the wrong
// place, copied at full size past the end of the outputs, or dropped), next to
// multiples of the batch; one pipeline for all of them, so nothing may depend
// on the first dataset or carry over from one run to the next.
TEST_CASE("run_pipeline (hidden): short last batches at many dataset sizes through one pipeline") {
  const Scenario s = pipeline_scenario();
  const PipelineInputs inputs(s);
  PipelineHandle pipeline = make_pipeline(s, inputs);
  int run = 0;
  for (const auto value : kit::param_ints("partial_batch_frames")) {
    const auto frames = static_cast<std::size_t>(value);
    ++run;
    const ExpectedFrames expected(s, inputs, frames, "frames " + std::to_string(run));
    Dataset dataset(s, expected, frames);
    dataset.check(pipeline.get(),
                  "run " + std::to_string(run) + " of one pipeline, " + frames_text(frames) + "; " + describe(s),
                  frames);
  }
}

// Batches of 16 MiB keep the GPU busy for milliseconds after the last one is
// queued: a run_pipeline that returns without waiting leaves the end of the
// outputs unwritten when the caller reads them, and a step on the wrong stream
// runs long before its batch has arrived.
TEST_CASE("run_pipeline (hidden): every result is in place the moment run_pipeline returns") {
  const Scenario s = scenario_param("late_shape", "late_streams", "late_batch_frames");
  const auto frames = static_cast<std::size_t>(kit::param_int("late_frames"));
  const PipelineInputs inputs(s);
  const ExpectedFrames expected(s, inputs, static_cast<std::size_t>(kit::param_int("late_period_frames")), "frames");
  Dataset dataset(s, expected, frames);
  PipelineHandle pipeline = make_pipeline(s, inputs);
  dataset.check(pipeline.get(), frames_text(frames) + " in batches of several MiB; " + describe(s),
                static_cast<std::size_t>(kit::param_int("late_check_block")));
}

// Each stream count with several batches per stream in flight: buffers shared
// between streams, a plan or a handle left on the default stream, or a lane
// picked with the wrong count all corrupt batches here.
TEST_CASE("run_pipeline (hidden): one to eight streams with many batches in flight") {
  Scenario s = scenario_param("lane_shape", "pipeline_streams", "lane_batch_frames");
  const PipelineInputs inputs(s);
  const ExpectedFrames expected(s, inputs, static_cast<std::size_t>(kit::param_int("lane_period_frames")), "frames");
  for (const auto count : kit::param_ints("stream_counts")) {
    s.streams = static_cast<int>(count);
    const std::size_t frames = static_cast<std::size_t>(s.frames_per_batch) * (3 * s.streams + 1) + 5;
    Dataset dataset(s, expected, frames);
    PipelineHandle pipeline = make_pipeline(s, inputs);
    dataset.check(pipeline.get(), frames_text(frames) + "; " + describe(s), frames);
  }
}

// Nothing may assume 1024 samples, 8 channels, fewer beams than channels, 4
// streams or 16-frame batches; a beam whose weights are all zero is silent and
// must come out as zeros with an RMS of 0.
TEST_CASE("run_pipeline (hidden): another signal length with more beams than channels and a silent beam") {
  Scenario s = scenario_param("other_shape", "other_streams", "other_batch_frames");
  s.silent_beam = static_cast<int>(kit::param_int("other_silent_beam"));
  check_pipeline(s, static_cast<std::size_t>(kit::param_int("other_frames")),
                 static_cast<std::size_t>(kit::param_int("pipeline_period_frames")),
                 frames_text(static_cast<std::size_t>(kit::param_int("other_frames"))));
}

// Every function once, in buffers of exactly their size (no guards): run
// under compute-sanitizer's memory checker (hidden.toml), any access past the
// end of one is reported even where it changes no result.
TEST_CASE("libraries (hidden): every function once on tiny sizes in buffers of exactly their size") {
  constexpr std::size_t kExact = 0;
  const auto tiny = kit::param_ints("tiny_response");  // [spectra, bins]
  REQUIRE(tiny.size() == 2);
  check_response(
      static_cast<std::size_t>(tiny[0]), static_cast<int>(tiny[1]),
      std::to_string(tiny[0]) + " spectra of " + std::to_string(tiny[1]) + " bins, in buffers of exactly that size",
      false, kExact);
  for (const MixShape& shape : mix_shapes("tiny_mix"))
    check_mix(shape, describe(shape) + ", in buffers of exactly that size", false, kExact);
  const auto normalize = kit::param_ints("tiny_normalize");  // [count, n]
  REQUIRE(normalize.size() == 2);
  check_normalize(static_cast<std::size_t>(normalize[0]), static_cast<int>(normalize[1]),
                  std::to_string(normalize[0]) + " beams of " + std::to_string(normalize[1]) +
                      " samples, in buffers of exactly that size",
                  0, false, kExact);

  const Scenario s = scenario_param("tiny_shape", "tiny_streams", "tiny_batch_frames");
  const auto frames = static_cast<std::size_t>(kit::param_int("tiny_frames"));
  const PipelineInputs inputs(s);
  const ExpectedFrames expected(s, inputs, frames, "frames");
  Dataset dataset(s, expected, frames, 0);
  PipelineHandle pipeline = make_pipeline(s, inputs);
  dataset.check(pipeline.get(), frames_text(frames) + " in host buffers of exactly their size; " + describe(s), frames);
}
