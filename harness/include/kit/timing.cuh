// Timing, for the timing cases that the grader's performance points are based
// on: one way to time work, guarded so that only work really done is measured.
//
// Method: `warmup` calls, then `repeats` timed samples. Before every request,
// outside the clock: fresh inputs (refresh), the poison written over every
// output, and the L2 cache emptied; then cudaDeviceSynchronize, the clock, the
// request's calls, cudaDeviceSynchronize (so work left on any stream is
// counted), the clock. A sample is one request of one call; or, for work that
// gives more sets of its buffers (TimedWork::sets_from) and runs in the
// runner, two requests, one of K calls back to back and one of a call alone,
// each call on a set of its own, whose difference is K - 1 calls' own time:
// what a request costs besides its calls (the path to the runner, and more
// that varies) cancels out. The median sample, in seconds per call, is
// reported with a rate (GB/s, GFLOP/s or a unit of the lab's own) and its
// ratio to ceilings measured in the same process.
//
// The guards, for a student's work (time_work):
// - after every request, outside the clock, no output may still hold the
//   poison: a call that skips work (because it was called before with the same
//   arguments, or on all but some calls) fails the timing case;
// - the inputs change before every request, so an output kept from an earlier
//   call is wrong; the output of every call of the last sample, and of as many
//   other samples chosen at random at run time as leaves fewer than half of
//   them unchecked, is compared with the CPU reference: a submission that
//   cheats on enough calls to move the median is always caught;
// - a rate above ceiling_margin times a bound ceiling (a limit of the hardware or
//   of the best library, measured in the same process) fails the timing case:
//   the call cannot have done the work.
// Library peers and ceilings are timed the same way, one call a request, without
// the guards (time_device_work).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/poison.hpp"
#include "kit/random.hpp"

namespace kit {

struct TimingOptions {
  int warmup = 3;
  int repeats = 15;
  // A measurement faster than ceiling_margin x a bound ceiling fails as implausible.
  double ceiling_margin = 0.0;
  // timing_warmup, timing_repeats and ceiling_margin from the lab's params.
  static TimingOptions from_params();
};

struct Timing {
  std::vector<double> samples_s;  // seconds per call, one per timed sample
  double median_s = 0.0;
  // What the path between the judge and the runner added to each call, taken off every sample
  // (kit::remote::path_overhead_s: a request's, or in a batch, a round trip's); 0 for work the
  // judge did itself.
  double path_overhead_s = 0.0;
  int batch_calls = 1;  // K, the calls of a sample's batched request (1: samples of one call)
  // The whole measurement's wall time: warm-up, samples, inputs, checks and the path's own
  // measurement. What grading pays for it, in the timing record for the class bench.
  double took_s = 0.0;
  // Where took_s went, for the class bench to say what a lab's timing costs a student and what
  // would cut it: the inputs made for each call (refresh), the sets of buffers made for a batch,
  // the GPU readied before each request (poison, cache flush, quiet test), the clocked requests,
  // the checks after each (quiet test, unwritten outputs), the comparisons with the reference
  // (verify), and the path's cost measured with the twin. The rest is the run's own set-up.
  struct Cost {
    double refresh_s = 0.0, sets_s = 0.0, set_up_s = 0.0, clocked_s = 0.0, after_s = 0.0, verify_s = 0.0,
           path_s = 0.0;
  } cost;
};

// One call of a timed work, as refresh and verify see it.
struct Call {
  int index = 0;       // 0-based over all calls, the warm-up calls first
  int warmup = 0;      // how many warm-up calls come first
  int repeats = 0;     // how many timed samples follow them
  int per_sample = 1;  // calls in each timed sample: 1, or K batched and one alone

  bool timed() const { return index >= warmup; }
  int sample() const { return (index - warmup) / per_sample + 1; }  // the timed sample, 1-based
  int set() const { return timed() ? (index - warmup) % per_sample : 0; }  // which set of buffers it uses
  // "warm-up call 2 of 3", "timed call 7 of 15" or "call 2 of 5 in timed sample 7 of 15", for messages.
  std::string name() const;
  // The running test case's random stream `stream`, different for every call:
  // refresh makes this call's inputs from it, and verify makes them again.
  Rng rng(const std::string& stream) const;
};

// Memory that every call must write in full: before each call the harness fills
// it with `fill` bytes (the poison), after it counts the elements that still hold
// them. `fill` must make a value that no correct output element can hold (NaN
// for floats); where every value is possible (bytes), choose the inputs so that
// one is not, and pass it.
struct Output {
  std::string name;  // as the student knows it, e.g. "c" or "the gray picture"
  void* data = nullptr;
  std::size_t count = 0;         // elements
  std::size_t element_size = 0;  // bytes per element: 1, 2, 4 or 8
  unsigned char fill = 0;
  bool on_device = true;

  template <class T>
  static Output device(const std::string& name, T* data, std::size_t count, int fill = poison_byte<T>()) {
    return {name, data, count, sizeof(T), static_cast<unsigned char>(fill), true};
  }
  // Host memory (pageable or page-locked), checked on the CPU.
  template <class T>
  static Output host(const std::string& name, T* data, std::size_t count, int fill = poison_byte<T>()) {
    return {name, data, count, sizeof(T), static_cast<unsigned char>(fill), false};
  }
};

// Writes the fill over an output (on the default stream, for device memory).
void poison(const Output& output);
// How many of the output's elements hold the fill, every byte of them.
std::size_t count_unwritten(const Output& output);

enum class RateUnit { GBps, GFLOPs, Custom };

// What a measurement is compared against, measured in the same process.
struct Ceiling {
  std::string name;   // e.g. "device-to-device copy", "cuBLAS SGEMM"
  double rate = 0.0;  // in the measurement's unit
  // A limit no correct run of the work can pass by much: the memory system (a
  // device-to-device copy), the arithmetic units, the best library. Not a peer
  // that a good kernel may beat (a naive kernel, a sequential version).
  bool bound = false;
  // Optional, for a bound: measures it again and returns it (its name may change, as "the slowest
  // stage" may be another stage the second time). A measurement that beats the bound has it
  // measured again before it is called implausible (confirm_bounds).
  std::function<Ceiling()> measure_again;
};

// One set of a work's buffers: a call on them, what it writes, and how its inputs are made and
// its output checked.
struct WorkSet {
  std::function<void()> call;  // one call of the work
  std::vector<Output> outputs;  // everything one call must write
  // Optional: writes this call's inputs (from call.rng), outside the clock.
  std::function<void(const Call&)> refresh;
  // Compares the output of the call just made with the CPU reference for that
  // call's inputs, reporting any mismatch (kit::expect_*); returns whether it
  // was right.
  std::function<bool(const Call&)> verify;
};

// A student's work to time, and everything the guards need: its first set of buffers, and where
// the work is short, how to make more.
struct TimedWork : WorkSet {
  std::string name;            // the measurement's name, as lab.toml's [[perf]] entries give it
  double work_per_call = 0.0;  // bytes moved or floating-point operations, per call
  RateUnit unit = RateUnit::GBps;
  std::string custom_unit;    // the unit's name when unit == RateUnit::Custom (e.g. "interactions/s")
  double custom_scale = 1.0;  // rate = work / time / custom_scale for a custom unit
  std::vector<Ceiling> ceilings;
  std::string look_at;  // where the student should look when a guard fails
  // Optional: makes another set, on buffers of its own that its functions own (hold them in a
  // std::shared_ptr the lambdas copy). Where it is given and the calls go to the runner, the
  // samples are batched (see the top): K + 1 sets, K about 4 ms of calls, 2 to 8.
  std::function<WorkSet()> another_set;

  // The first set from `make`, and `make` for the others: a timing case writes its buffers and
  // functions once, in `make`.
  void sets_from(std::function<WorkSet()> make) {
    static_cast<WorkSet&>(*this) = make();
    another_set = std::move(make);
  }
};

struct Measurement {
  std::string name;  // the name the lab config refers to, e.g. "vector_add_kernel"
  Timing timing;
  double work_per_run = 0;  // bytes moved or floating-point operations, per run
  RateUnit unit = RateUnit::GBps;
  std::string custom_unit;    // the unit's name when unit == RateUnit::Custom (e.g. "interactions/s")
  double custom_scale = 1.0;  // rate = work / time / custom_scale for a custom unit
  std::vector<Ceiling> ceilings;
  double ceiling_margin = 0.0;      // needed when a ceiling is a bound: see TimingOptions
  bool guarded = false;             // timed by time_work, with the guards
  std::vector<int> verified_samples;  // the timed samples (1-based) whose outputs were compared with the reference

  double rate() const;
  std::string unit_name() const;
};

// What the guarded run of a work found.
struct GuardedRun {
  Timing timing;                    // all samples and their median, when nothing failed
  std::vector<int> verified_samples;  // the timed samples (1-based) chosen for verification
  std::string failure;              // empty, or why the run stopped: an unwritten output or a wrong one
};

// Times a student's work with the guards and reports it: prints the [timing]
// line, writes the timing record, and fails the test case when a guard fails
// (then it stops the case) or the rate is implausible. The one function a
// timing case calls; returns the measurement.
Measurement time_work(const TimedWork& work, const TimingOptions& options);

// The guarded run alone, reporting nothing (time_work's first half; the
// harness's own tests call it to see what the guards catch). Throws
// std::invalid_argument when the work lacks a call, outputs or a verify.
GuardedRun run_guarded(const TimedWork& work, const TimingOptions& options);

// A library peer or a ceiling: the same timing, without the guards on outputs (no poison, no
// check). It still waits for a quiet GPU before each sample, and fails the test case when the
// runner's work keeps it busy (a kernel a submission left running, to spoil a ceiling).
Timing time_device_work(const std::function<void()>& call, const TimingOptions& options);

// A batched sample's calls, one a set, split at random (with `entropy`) into the batch and the
// call alone. Which set runs alone, and the batch's order, change from sample to sample: a
// submission that knew the call alone by its buffers could slow that call down, and the batch,
// measured against it, would look faster than it is.
struct SampleSplit {
  std::vector<Call> batch;
  Call alone;
};
SampleSplit split_sample(std::vector<Call> calls, std::uint64_t entropy);

// Which timed samples (1-based, ascending) are verified, every call of them: the
// last, and repeats / 2 of the others drawn with `entropy`, so that fewer than half
// of the samples go unverified.
std::vector<int> choose_verified_samples(int repeats, std::uint64_t entropy);

// Where a verify compares a timed call's output when comparing all of it on the CPU would
// cost far more than the call (a quarter of a gigabyte, made again for each verified call):
// `samples` positions, one in each of `samples` equal parts of [0, size), drawn from the
// operating system's entropy after the call, so the submission cannot know them; and the
// first and the last element; ascending, repeats possible where size < samples. Enough, with
// the poison check, which still covers every element: a call that skips work leaves poison,
// and one that writes wrong values into a fraction f of the output escapes one verified call
// with probability at most (1 - f)^samples (e^-65 for f = 0.1% and 65536 samples), and must
// escape every verified call. A run of size / samples wrong elements in a row never escapes.
std::vector<std::size_t> sample_positions(std::size_t size, std::size_t samples);

// The elements of device memory `data` at `positions`, read on the GPU (elements of 1, 2, 4 or 8 bytes).
void gather_elements(const void* data, std::size_t element_size, const std::vector<std::size_t>& positions,
                     void* out);
template <class T>
std::vector<T> gather(const T* data, const std::vector<std::size_t>& positions) {
  std::vector<T> values(positions.size());
  gather_elements(data, sizeof(T), positions, values.data());
  return values;
}

// Why a measurement is faster than a bound ceiling allows ("" when it is not):
// its rate above measurement.ceiling_margin x the ceiling's.
std::string implausibility(const Measurement& measurement);

// A pipeline's stages, each timed alone on the whole work: overlap hides the other stages behind
// the slowest and cannot make that one faster, so the slowest stage alone bounds the pipeline.
const Measurement& slowest_stage(const std::vector<Measurement>& stages);
// That bound as a ceiling, measured again with `time_stages` (the same stages in the same order)
// before a pipeline that beats it is called implausible, each stage keeping its faster timing.
Ceiling slowest_stage_bound(const std::vector<Measurement>& stages,
                            std::function<std::vector<Measurement>()> time_stages);

// Where the measurement beats a bound ceiling that can be measured again, measures it again, twice
// at most, and keeps the higher rate: noise only ever slows a measurement, so one slow measurement
// of the bound (a PCIe copy that a moment of contention slowed) must not fail a correct run as
// faster than the hardware. A run that really beats the bound still beats it.
void confirm_bounds(Measurement& measurement);

// Prints one line for the student and appends a "timing" record for the grader;
// fails the test case when the measurement is implausible.
void report(const Measurement& measurement);

// Whether to take the measurement `name`: always, unless the grader lists the measurements a run
// needs in $KIT_MEASURE_ONLY (comma-separated). Class grading lists those that earn points and
// those they are divided by, so a timing case skips what it only reports for comparison (lab 08's
// sequential baselines, for one; docs/adding-a-lab.md lists them): seconds of every student's time
// alone on the GPU. A test case asks before it times such a measurement, and before it makes the inputs.
bool measured(const std::string& name);

namespace detail {
// The names in a comma-separated list such as $KIT_MEASURE_ONLY; none (nullopt) when there is no list.
std::optional<std::vector<std::string>> measurements_listed(const char* list);
}  // namespace detail

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes
// written, for a copy that moves `bytes_moved` in all: the bound for
// memory-bound kernels.
Ceiling copy_ceiling(std::size_t bytes_moved, const TimingOptions& options);

}  // namespace kit
