// Lab 08 hidden tests: run by the grader only. Each targets a mistake students make.
#include "streams_checks.cuh"

using namespace streams_checks;

// Offsets and sizes of a short last chunk: read from and written to the wrong
// place, copied at full size (past the end of the output), or dropped. The
// sizes sit one either side of multiples of the natural chunk of 32 signals.
TEST_CASE("run_pipeline (hidden): short last chunks at many dataset sizes with nothing written past the end") {
  const PipelineSetup setup = setup_for(fft_n(), streams(), small_budget());
  for (const auto signals : kit::param_ints("partial_chunk_signals"))
    check_pipeline(setup, static_cast<std::size_t>(signals),
                   std::to_string(signals) + " signals, next to a multiple of a chunk size");
}

// Large chunks (4 MiB) keep the GPU busy for milliseconds after the last one is
// queued: a run_pipeline that returns without waiting leaves the end of the
// output unwritten when the caller reads it.
TEST_CASE("run_pipeline (hidden): every result is in place the moment run_pipeline returns") {
  const std::size_t budget = static_cast<std::size_t>(kit::param_int("late_budget_mib")) * kMiB;
  const auto signals = static_cast<std::size_t>(kit::param_int("late_signals"));
  check_pipeline(setup_for(fft_n(), streams(), budget), signals,
                 std::to_string(signals) + " signals in chunks of several MiB");
}

// Each stream count with several chunks per stream in flight, 2 MiB of budget
// per stream: buffers shared between streams, a plan run on the wrong stream or
// a lane picked with the wrong count all corrupt chunks here.
TEST_CASE("run_pipeline (hidden): one to eight streams with many chunks in flight") {
  const int n = fft_n();
  const std::size_t signal_bytes = static_cast<std::size_t>(n) * sizeof(cufftComplex);
  const std::size_t lane_budget = static_cast<std::size_t>(kit::param_int("lane_budget_mib")) * kMiB;
  for (const auto count : kit::param_ints("stream_counts")) {
    const int lanes = static_cast<int>(count);
    const std::size_t chunk = lane_budget / signal_bytes;
    const std::size_t signals = chunk * (3 * lanes + 1) + 77;
    check_pipeline(setup_for(n, lanes, lane_budget * lanes), signals,
                   std::to_string(signals) + " signals, about " + std::to_string(3 * lanes + 2) + " chunks");
  }
}

// A pipeline is made once and run many times: nothing in it may depend on the
// first dataset, and no state may carry over from one run to the next.
TEST_CASE("run_pipeline (hidden): one pipeline reused for datasets of different sizes") {
  const PipelineSetup setup = setup_for(fft_n(), streams(), small_budget());
  PipelineHandle pipeline = make_pipeline(setup);
  int run = 0;
  for (const auto signals : kit::param_ints("reuse_signals")) {
    ++run;
    check_dataset(pipeline.get(), setup, static_cast<std::size_t>(signals),
                  "run " + std::to_string(run) + " of one pipeline, " + signals_text(static_cast<std::size_t>(signals)) + "; " +
                      describe(setup),
                  "run " + std::to_string(run));
  }
}

// Nothing may assume 1024 samples, 4 streams or the public budget.
TEST_CASE("run_pipeline (hidden): another signal length and stream count within another budget") {
  const int n = static_cast<int>(kit::param_int("other_n"));
  const int lanes = static_cast<int>(kit::param_int("other_streams"));
  const std::size_t budget = static_cast<std::size_t>(kit::param_int("other_budget_mib")) * kMiB;
  const std::size_t signals = 3 * budget / (static_cast<std::size_t>(n) * sizeof(cufftComplex)) + 11;
  check_budget(setup_for(n, lanes, budget), signals,
               std::to_string(signals) + " signals of " + std::to_string(n) + " samples, 3 times the budget");
}

// Under compute-sanitizer's memcheck (hidden.toml): every read and write of the window kernel
// stays inside the signals, also a load whose value is never stored (two samples loaded at once
// past an odd end); then a small dataset through the whole pipeline.
TEST_CASE("launch_apply_window (hidden): no read or write outside the signals (compute-sanitizer memcheck)") {
  const auto signals = static_cast<std::size_t>(kit::param_int("window_signals"));
  for (const auto n : kit::param_ints("sanitizer_window_ns"))
    check_window(
        signals, static_cast<int>(n),
        std::to_string(signals) + " signals of " + std::to_string(n) + " samples in a buffer of exactly their size", 0);
}

TEST_CASE("run_pipeline (hidden): no read or write outside the device buffers (compute-sanitizer memcheck)") {
  const auto signals = static_cast<std::size_t>(kit::param_int("sanitizer_pipeline_signals"));
  check_pipeline(setup_for(fft_n(), streams(), small_budget()), signals, signals_text(signals));
}
