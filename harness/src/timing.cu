#include "kit/timing.cuh"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "kit/device_count.cuh"
#include "kit/grid_stride.cuh"
#include "kit/cuda_check.cuh"
#include "kit/device.hpp"
#include "kit/device_buffer.cuh"
#include "kit/parallel.hpp"
#include "kit/params.hpp"
#include "kit/remote.hpp"
#include "kit/results.hpp"

namespace kit {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::string show(double value, int precision);

// ---- the poison check ---------------------------------------------------------

// Whether an element still holds the fill the test wrote before the call.
template <class Word>
struct HoldsFill {
  const Word* data;
  Word fill;
  __device__ bool operator()(std::size_t i) const { return data[i] == fill; }
};

template <class Word>
Word repeated(unsigned char byte) {
  Word word;
  std::memset(&word, byte, sizeof(word));
  return word;
}

template <class Word>
std::size_t count_fill_on_device(const Output& output) {
  return count_where(output.count, HoldsFill<Word>{static_cast<const Word*>(output.data), repeated<Word>(output.fill)});
}

// Below this many bytes a thread of its own costs more than it saves, poisoning or counting.
constexpr double kHostBytesPerThread = 1 << 22;

// On every core, since a host output of a gigabyte is counted after every timed call while the class waits for
// the GPU. Each element is read as one word (memcpy: host memory may hold any type), which the compiler
// vectorizes: comparing it byte by byte ran at about 1 GB/s a core, a word at a time at 15 to 25.
template <class Word>
std::size_t count_fill_on_host(const Output& output) {
  const auto* bytes = static_cast<const unsigned char*>(output.data);
  const Word fill = repeated<Word>(output.fill);
  const std::size_t threads = threads_for(static_cast<double>(output.count * sizeof(Word)), kHostBytesPerThread);
  std::vector<std::size_t> counts(threads, 0);
  on_threads(threads, [&](std::size_t t) {
    std::size_t count = 0;
    for (std::size_t i = part_begin(output.count, threads, t), end = part_begin(output.count, threads, t + 1); i < end;
         ++i) {
      Word word;
      std::memcpy(&word, bytes + i * sizeof(Word), sizeof(Word));
      count += word == fill ? 1 : 0;
    }
    counts[t] = count;
  });
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}

template <class Word>
std::size_t count_fill(const Output& output) {
  return output.on_device ? count_fill_on_device<Word>(output) : count_fill_on_host<Word>(output);
}

// ---- reading an output at sampled positions ----------------------------------

template <class Word>
__global__ void gather_kernel(const Word* data, const std::size_t* positions, std::size_t count, Word* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = data[positions[i]];
}

template <class Word>
void gather_words(const void* data, const std::vector<std::size_t>& positions, void* out) {
  const DeviceBuffer<std::size_t> d_positions(positions);
  DeviceBuffer<Word> d_out(positions.size());
  gather_kernel<<<detail::grid_for(positions.size()), detail::kGridStrideBlock>>>(
      static_cast<const Word*>(data), d_positions.data(), positions.size(), d_out.data());
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpy(out, d_out.data(), d_out.bytes(), cudaMemcpyDeviceToHost));
}

// ---- emptying the L2 cache -----------------------------------------------------

// Reads every word of `data`. The sum is stored only if it matches a value the
// (zeroed) buffer never gives, which the compiler cannot know, so every read happens.
__global__ void read_all_kernel(const uint4* data, std::size_t count, unsigned* sink) {
  unsigned sum = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = data[i];
    sum ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (sum == 0xFFFFFFFFu) *sink = sum;
}

// Before each call, refresh and poison have just written inputs and outputs,
// which would otherwise still sit in L2 (50 MB on an H100) and make the call
// faster than one that starts from memory, as the ceilings do. Reading a clean
// buffer four times the size of L2 evicts them (dirty lines are written back
// now, outside the clock).
class CacheFlush {
 public:
  CacheFlush() : words_(l2_bytes() * 4 / sizeof(uint4)), buffer_(words_), sink_(1) {
    CUDA_CHECK(cudaMemset(buffer_.data(), 0, buffer_.bytes()));
  }
  void run() {
    read_all_kernel<<<detail::grid_for(words_), detail::kGridStrideBlock>>>(buffer_.data(), words_, sink_.data());
    CUDA_CHECK_LAUNCH();
  }

 private:
  static std::size_t l2_bytes() {
    int device = 0, bytes = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
    return std::max<std::size_t>(static_cast<std::size_t>(bytes), 1);
  }
  std::size_t words_;
  DeviceBuffer<uint4> buffer_;
  DeviceBuffer<unsigned> sink_;
};

// ---- the one timing loop -------------------------------------------------------

std::string unwritten_message(const TimedWork& work, const Call& call, const Output& output, std::size_t unwritten) {
  std::ostringstream text;
  text << work.name << ": " << call.name() << " left " << unwritten << " of " << output.count << " elements of "
       << output.name << " unwritten: they still hold the poison the test wrote there just before the call.\n"
       << "Every call must do the whole work. A function that skips work when it is called again with the same "
          "arguments, or does it on some calls only, is not allowed; the correctness tests call it once, the timing "
          "calls it many times.";
  if (!work.look_at.empty()) text << "\nLook at: " << work.look_at;
  return text.str();
}

std::string wrong_message(const TimedWork& work, const Call& call) {
  std::ostringstream text;
  text << work.name << ": the output of " << call.name()
       << " is wrong (the comparison with the CPU reference is above). The test gives every call new inputs and "
          "checks the output of calls chosen at random when the test runs: every call must compute its result from "
          "the inputs it is given, not return one kept from an earlier call.";
  if (!work.look_at.empty()) text << "\nLook at: " << work.look_at;
  return text.str();
}

std::string busy_message(const TimedWork& work, const Call& call, double took_s) {
  std::ostringstream text;
  text << work.name << ": after " << call.name() << " returned, your code still had work running on the GPU ("
       << show(took_s * 1e3, 2) << " ms later, the GPU had not yet given the test a turn). A call must finish all of "
       << "its work before it returns (a pipeline whose results land in host memory the test shares is answered as "
          "it returns, so it must wait for its streams itself); work left running is not allowed: it could work on "
          "the next call's inputs before the clock starts.";
  if (!work.look_at.empty()) text << "\nLook at: " << work.look_at;
  return text.str();
}

// Batched samples (TimedWork::another_set), through the runner. A request costs more than its
// calls' own time: the path (the twin's, about 0.3 ms) and a residual the twin does not see,
// which grows with the data a request touches (0.2-0.5 ms on an H200 for a gigabyte) and varies
// from run to run (measured before the judge spun for replies, remote.cu's Runner::receive, which
// removed most of what the split cost short calls). So a sample is two requests, in an order drawn
// at random: `K` calls back to back on sets of their own, and one call alone on another set, the
// sets dealt at random (split_sample). Both bear a request's costs once; their difference, less
// the twin's cost of K - 1 more round trips, is K - 1 calls' own time. A submission cannot tell,
// when a call arrives, which of the two requests it is in, by its buffers or by its place.
//
// Calls of kBatchBelowS or more are timed alone: the residual is then under 5% of a call. K brings
// the batch to about kBatchTargetS (so the difference is well above the residual's noise: with
// batches of 2, two timings of lab 06's 1 ms scan in one self-check differed by 1.47x), at
// least 2, at most kMostCallsPerBatch (every call of a verified sample is checked, on the CPU,
// while the class waits for the GPU), within the memory the sets may take.
constexpr double kBatchBelowS = 10e-3;
constexpr double kBatchTargetS = 4e-3;
constexpr int kMostCallsPerBatch = 8;
// The sets beyond the first take at most this share of the device memory free, and this much.
constexpr double kSetsMemoryShare = 0.25;
constexpr double kMostSetsBytes = 16.0 * (1 << 30);

double free_device_bytes() {
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return static_cast<double>(free);
}

// How many calls a batch makes, where one call took about `one_call_s` on the GPU (1: no batch).
int batch_for(double one_call_s) {
  if (one_call_s >= kBatchBelowS) return 1;
  if (!(one_call_s > 0)) return kMostCallsPerBatch;
  const double calls = std::ceil(kBatchTargetS / one_call_s);
  return static_cast<int>(std::clamp(calls, 2.0, static_cast<double>(kMostCallsPerBatch)));
}

// Adds sets made by work.another_set until there are `wanted`, or the memory they may take is
// spent (the first extra set shows what one takes).
void add_sets(const TimedWork& work, int wanted, std::vector<WorkSet>& sets) {
  const double budget = std::min(kMostSetsBytes, kSetsMemoryShare * free_device_bytes());
  double per_set = 0.0;
  while (static_cast<int>(sets.size()) < wanted) {
    if (sets.size() >= 2 && per_set * static_cast<double>(sets.size()) > budget) return;
    const double before = free_device_bytes();
    sets.push_back(work.another_set());
    if (sets.size() == 2) per_set = std::max(before - free_device_bytes(), 1.0);
  }
}

// Adds the seconds from its making to its end to `total` (a part of Timing::Cost).
class CostClock {
 public:
  explicit CostClock(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~CostClock() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  CostClock(const CostClock&) = delete;
  CostClock& operator=(const CostClock&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

// Warm-up calls, one a request, then the timed samples, with whichever guards `work` has: a
// peer has only a call.
//
// Where the work is a student's in a runner process, the runner is stopped between requests:
// it cannot see the next inputs being written or work on them before the clock starts, and
// before the clock starts the GPU must be free of its work. The clock brackets a request's
// calls, the replies (the runner has waited for its device, unless the call's results land in
// host memory both processes map: then the student's function must have) and a fence of the
// judge's own, which waits for any of the runner's work that is still on the GPU
// (kit::remote::fence); the GPU must be quiet after it, or the case fails. A sample is one
// request of one call, less the twin's path; or, where the work gives more sets, the batched
// pair described above.
GuardedRun run_calls(const TimedWork& work, const TimingOptions& options, std::vector<int> verified) {
  if (options.warmup < 0 || options.repeats < 1)
    throw std::invalid_argument("timing needs timing_warmup >= 0 and timing_repeats >= 1");
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  remote::TimedSection section;
  CacheFlush flush;
  GuardedRun run;
  run.verified_samples = std::move(verified);
  std::vector<WorkSet> sets{work};
  bool through_runner = false;  // whether the calls went to the runner: then the path's cost comes off
  double took_s = 0.0;
  // What the GPU does between the inputs and the clock; whether it is then quiet. The twin that
  // measures the path's cost repeats it, so that both find the GPU in the same state.
  const auto set_up_gpu = [&] {
    for (const WorkSet& set : sets)
      for (const Output& output : set.outputs)
        if (output.on_device) poison(output);
    flush.run();
    CUDA_CHECK(cudaDeviceSynchronize());
    return remote::gpu_free(&took_s);
  };
  // Before a request, host outputs are poisoned too. That is the CPU's work and leaves the GPU as it was, so the
  // twin skips it: lab 08's gigabyte of host output took 1.3 s to poison over the twin's 41 calls, a class's
  // student's every time, alone on the GPU.
  const auto set_up = [&] {
    for (const WorkSet& set : sets)
      for (const Output& output : set.outputs)
        if (!output.on_device) poison(output);
    return set_up_gpu();
  };
  Timing::Cost& cost = run.timing.cost;
  // The path's cost as the twin measures it (remote::path_overhead_s), its time booked.
  const auto path_overhead = [&](int calls_per_request) {
    const CostClock clock(cost.path_s);
    return remote::path_overhead_s(set_up_gpu, calls_per_request);
  };
  // One request: the calls, each on its set, as `calls` names them; verified where the sample is
  // one of those chosen. Returns its time, or nothing when a guard failed (run.failure says why).
  const auto request = [&](const std::vector<Call>& calls) -> std::optional<double> {
    {
      const CostClock clock(cost.refresh_s);
      for (const Call& call : calls)
        if (sets[call.set()].refresh) sets[call.set()].refresh(call);
    }
    {
      const CostClock clock(cost.set_up_s);
      if (!set_up()) {
        run.failure = busy_message(work, calls.front(), took_s);
        return std::nullopt;
      }
    }
    const long long calls_before = remote::calls_made();
    const auto start = Clock::now();
    section.resume();
    for (const Call& call : calls) sets[call.set()].call();
    remote::fence();  // every stream's work is done, the runner's too, before the clock is read
    const std::chrono::duration<double> elapsed = Clock::now() - start;
    section.pause();
    cost.clocked_s += elapsed.count();
    {
      const CostClock clock(cost.after_s);
      // Runner work still on the GPU now escaped the clock, and would slow the next request or the
      // twin (inflating what is taken off every sample). Stopped, the runner can start no more.
      if (!remote::gpu_free(&took_s)) {
        run.failure = busy_message(work, calls.back(), took_s);
        return std::nullopt;
      }
      through_runner = through_runner || remote::calls_made() != calls_before;
      for (const Call& call : calls)
        for (const Output& output : sets[call.set()].outputs)
          if (const std::size_t unwritten = count_unwritten(output); unwritten > 0) {
            run.failure = unwritten_message(work, call, output, unwritten);
            return std::nullopt;
          }
    }
    const Call& first = calls.front();
    const bool chosen = first.timed() && std::binary_search(run.verified_samples.begin(),
                                                            run.verified_samples.end(), first.sample());
    const CostClock verifying(cost.verify_s);
    for (const Call& call : calls)
      if (chosen && !sets[call.set()].verify(call)) {
        run.failure = wrong_message(work, call);
        return std::nullopt;
      }
    return elapsed.count();
  };

  double last_warmup_s = 0.0;
  for (int index = 0; index < options.warmup; ++index) {
    const std::optional<double> took = request({Call{index, options.warmup, options.repeats, 1}});
    if (!took) return run;
    last_warmup_s = *took;
  }
  if (work.another_set && through_runner) {  // K in a batch, and one more alone
    const int wanted = batch_for(last_warmup_s - path_overhead(1));
    const CostClock making(cost.sets_s);
    if (wanted > 1) add_sets(work, wanted + 1, sets);
    if (sets.size() < 3) sets.resize(1);  // memory for no batch of 2: samples of one call
  }
  const int per_sample = static_cast<int>(sets.size());
  const int batch = per_sample - 1;
  std::random_device entropy;
  std::mt19937_64 order((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
  std::vector<double> batched, alone;
  for (int r = 0; r < options.repeats; ++r) {
    std::vector<Call> calls;
    for (int j = 0; j < per_sample; ++j)
      calls.push_back(Call{options.warmup + r * per_sample + j, options.warmup, options.repeats, per_sample});
    if (batch < 2) {
      const std::optional<double> took = request(calls);
      if (!took) return run;
      run.timing.samples_s.push_back(*took);
      continue;
    }
    const SampleSplit split = split_sample(calls, order());
    const bool batch_first = order() % 2 == 0;
    const std::optional<double> first = batch_first ? request(split.batch) : request({split.alone});
    if (!first) return run;
    const std::optional<double> second = batch_first ? request({split.alone}) : request(split.batch);
    if (!second) return run;
    batched.push_back(batch_first ? *first : *second);
    alone.push_back(batch_first ? *second : *first);
  }
  if (batch < 2) {
    if (through_runner) {  // measured last: its set-up poisons the outputs the checks above read
      run.timing.path_overhead_s = path_overhead(1);
      for (double& sample : run.timing.samples_s) sample = std::max(sample - run.timing.path_overhead_s, 0.0);
    }
  } else {
    // The twin's cost of a round trip beyond a request's first, and each sample's K - 1 calls.
    run.timing.batch_calls = batch;
    run.timing.path_overhead_s = std::max(path_overhead(batch) - path_overhead(1), 0.0) / (batch - 1);
    for (std::size_t i = 0; i < batched.size(); ++i)
      run.timing.samples_s.push_back(
          std::max((batched[i] - alone[i]) / (batch - 1) - run.timing.path_overhead_s, 0.0));
  }
  run.timing.median_s = median(run.timing.samples_s);
  run.timing.took_s = std::chrono::duration<double>(Clock::now() - started).count();
  return run;
}

std::string show(double value, int precision) {
  std::ostringstream text;
  text.setf(std::ios::fixed);
  text.precision(precision);
  text << value;
  return text.str();
}

}  // namespace

TimingOptions TimingOptions::from_params() {
  TimingOptions options;
  options.warmup = static_cast<int>(param_int("timing_warmup"));
  options.repeats = static_cast<int>(param_int("timing_repeats"));
  options.ceiling_margin = param_double("ceiling_margin");
  return options;
}

std::string Call::name() const {
  if (!timed()) return "warm-up call " + std::to_string(index + 1) + " of " + std::to_string(warmup);
  const std::string sample_text = std::to_string(sample()) + " of " + std::to_string(repeats);
  if (per_sample == 1) return "timed call " + sample_text;
  return "call " + std::to_string(set() + 1) + " of " + std::to_string(per_sample) + " in timed sample " + sample_text;
}

Rng Call::rng(const std::string& stream) const {
  return Rng::for_case(stream + " (call " + std::to_string(index + 1) + ")");
}

void poison(const Output& output) {
  const std::size_t bytes = output.count * output.element_size;
  if (bytes == 0) return;
  if (output.on_device) {
    CUDA_CHECK(cudaMemset(output.data, output.fill, bytes));
    return;
  }
  const std::size_t threads = threads_for(static_cast<double>(bytes), kHostBytesPerThread);
  on_threads(threads, [&](std::size_t t) {
    const std::size_t begin = part_begin(bytes, threads, t);
    std::memset(static_cast<unsigned char*>(output.data) + begin, output.fill,
                part_begin(bytes, threads, t + 1) - begin);
  });
}

std::size_t count_unwritten(const Output& output) {
  if (output.count == 0) return 0;
  switch (output.element_size) {
    case 1: return count_fill<std::uint8_t>(output);
    case 2: return count_fill<std::uint16_t>(output);
    case 4: return count_fill<std::uint32_t>(output);
    case 8: return count_fill<unsigned long long>(output);
  }
  throw std::invalid_argument("output '" + output.name + "': elements of " + std::to_string(output.element_size) +
                              " bytes; declare it as an array of 1, 2, 4 or 8-byte elements (a float3 as 3 floats)");
}

SampleSplit split_sample(std::vector<Call> calls, std::uint64_t entropy) {
  if (calls.size() < 2) throw std::invalid_argument("a batched sample needs a batch and a call alone");
  std::mt19937_64 engine(entropy);
  std::shuffle(calls.begin(), calls.end(), engine);
  const Call alone = calls.back();
  calls.pop_back();
  return {std::move(calls), alone};
}

std::vector<int> choose_verified_samples(int repeats, std::uint64_t entropy) {
  // A sample moves the median only with at least half of the samples on its
  // side, so with fewer than half unverified, any set of calls that moves it
  // holds a verified one.
  std::vector<int> others(static_cast<std::size_t>(std::max(repeats - 1, 0)));
  std::iota(others.begin(), others.end(), 1);
  std::mt19937_64 engine(entropy);
  std::shuffle(others.begin(), others.end(), engine);
  std::vector<int> chosen(others.begin(), others.begin() + std::min<std::ptrdiff_t>(repeats / 2, others.size()));
  if (repeats >= 1) chosen.push_back(repeats);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

std::vector<std::size_t> sample_positions(std::size_t size, std::size_t samples) {
  if (size == 0) return {};
  std::random_device entropy;
  std::mt19937_64 engine((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
  std::vector<std::size_t> positions;
  positions.reserve(samples + 2);
  positions.push_back(0);
  for (std::size_t i = 0; i < samples; ++i) {  // ascending as drawn: no sort (a batched sample checks 9 calls)
    const std::size_t begin = part_begin(size, samples, i), end = part_begin(size, samples, i + 1);
    positions.push_back(end > begin ? std::uniform_int_distribution<std::size_t>(begin, end - 1)(engine)
                                    : std::min(begin, size - 1));
  }
  positions.push_back(size - 1);
  return positions;
}

void gather_elements(const void* data, std::size_t element_size, const std::vector<std::size_t>& positions, void* out) {
  if (positions.empty()) return;
  switch (element_size) {
    case 1: return gather_words<std::uint8_t>(data, positions, out);
    case 2: return gather_words<std::uint16_t>(data, positions, out);
    case 4: return gather_words<std::uint32_t>(data, positions, out);
    case 8: return gather_words<unsigned long long>(data, positions, out);
  }
  throw std::invalid_argument("gather: elements of " + std::to_string(element_size) +
                              " bytes; only 1, 2, 4 and 8-byte elements can be gathered");
}

GuardedRun run_guarded(const TimedWork& work, const TimingOptions& options) {
  if (!work.call || work.outputs.empty() || !work.verify)
    throw std::invalid_argument("timed work '" + work.name +
                                "' needs a call, the outputs it writes and a verify; a library peer is timed with "
                                "time_device_work");
  // From the operating system's entropy: the submission cannot know which calls are checked.
  std::random_device entropy;
  const std::uint64_t draw = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  return run_calls(work, options, choose_verified_samples(options.repeats, draw));
}

Timing time_device_work(const std::function<void()>& call, const TimingOptions& options) {
  TimedWork peer;
  peer.name = "a measurement the test compares yours with";
  peer.call = call;
  const GuardedRun run = run_calls(peer, options, {});
  // The GPU was not free (the runner's work still on it): the samples so far are no timing, and a
  // ceiling made of them would have no median, so that no rate could be implausible against it.
  if (!run.failure.empty()) FAIL(run.failure);
  return run.timing;
}

Measurement time_work(const TimedWork& work, const TimingOptions& options) {
  const GuardedRun run = run_guarded(work, options);
  Measurement m{work.name,         run.timing,    work.work_per_call,     work.unit, work.custom_unit,
                work.custom_scale, work.ceilings, options.ceiling_margin, true,      run.verified_samples};
  if (!run.failure.empty()) {
    std::printf("[timing] %-32s not measured: a guard failed (see the failure message)\n", work.name.c_str());
    std::fflush(stdout);
    FAIL(run.failure);
  }
  confirm_bounds(m);
  report(m);
  return m;
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

std::string implausibility(const Measurement& m) {
  for (const Ceiling& ceiling : m.ceilings) {
    if (!ceiling.bound) continue;
    if (!(m.ceiling_margin >= 1.0))
      throw std::logic_error("measurement '" + m.name + "' has a bound ceiling but no ceiling_margin >= 1");
    const double ratio = m.rate() / ceiling.rate;
    if (!(ratio <= m.ceiling_margin))  // a NaN or infinite rate is implausible too
      return m.name + ": " + show(m.rate(), 1) + " " + m.unit_name() + " is " + show(ratio, 2) + " times " +
             ceiling.name + " (" + show(ceiling.rate, 1) + " " + m.unit_name() +
             ", measured in this process), and no correct run exceeds " + show(m.ceiling_margin, 2) +
             " times it: faster than the hardware allows in this process, so the timed call cannot have done the "
             "work. Every call must do the whole work.";
  }
  return "";
}

const Measurement& slowest_stage(const std::vector<Measurement>& stages) {
  if (stages.empty()) throw std::invalid_argument("slowest_stage: a pipeline with no stages");
  return *std::max_element(stages.begin(), stages.end(), [](const Measurement& a, const Measurement& b) {
    return a.timing.median_s < b.timing.median_s;
  });
}

namespace {
Ceiling stage_ceiling(const Measurement& slowest) {
  return {"slowest stage alone (" + slowest.name + ")", slowest.rate(), true};
}
}  // namespace

Ceiling slowest_stage_bound(const std::vector<Measurement>& stages,
                            std::function<std::vector<Measurement>()> time_stages) {
  Ceiling bound = stage_ceiling(slowest_stage(stages));
  bound.measure_again = [best = stages, time_stages = std::move(time_stages)]() mutable {
    const std::vector<Measurement> again = time_stages();
    if (again.size() != best.size())
      throw std::logic_error("slowest_stage_bound: the stages timed again are not the stages timed first");
    for (std::size_t i = 0; i < best.size(); ++i)
      if (again[i].timing.median_s < best[i].timing.median_s) best[i] = again[i];
    return stage_ceiling(slowest_stage(best));
  };
  return bound;
}

void confirm_bounds(Measurement& m) {
  constexpr int kAttempts = 2;
  for (int attempt = 0; attempt < kAttempts && !implausibility(m).empty(); ++attempt)
    for (Ceiling& ceiling : m.ceilings) {
      if (!ceiling.bound || !ceiling.measure_again || m.rate() / ceiling.rate <= m.ceiling_margin) continue;
      Ceiling again = ceiling.measure_again();
      std::printf("[bound] %s beat %s (%.1f %s): measured it again: %s at %.1f\n", m.name.c_str(),
                  ceiling.name.c_str(), ceiling.rate, m.unit_name().c_str(), again.name.c_str(), again.rate);
      if (again.rate > ceiling.rate) {
        ceiling.name = std::move(again.name);
        ceiling.rate = again.rate;
      }
    }
  std::fflush(stdout);
}

namespace detail {

std::optional<std::vector<std::string>> measurements_listed(const char* list) {
  if (list == nullptr) return std::nullopt;
  std::vector<std::string> names;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) names.push_back(item);
  return names;
}

}  // namespace detail

bool measured(const std::string& name) {
  const auto only = detail::measurements_listed(std::getenv("KIT_MEASURE_ONLY"));  // read each time: see --kit-serve
  return !only || std::find(only->begin(), only->end(), name) != only->end();
}

void report(const Measurement& m) {
  const std::string implausible = implausibility(m);
  std::printf("[timing] %-32s %10.3f ms  %10.1f %s", m.name.c_str(), m.timing.median_s * 1e3, m.rate(),
              m.unit_name().c_str());
  if (m.timing.path_overhead_s > 0) std::printf("  (path %.3f ms a call taken off)", m.timing.path_overhead_s * 1e3);
  if (m.timing.batch_calls > 1) std::printf("  (batches of %d against one call)", m.timing.batch_calls);
  for (const auto& ceiling : m.ceilings)
    std::printf("  (%.2f of %s at %.1f)", m.rate() / ceiling.rate, ceiling.name.c_str(), ceiling.rate);
  if (!implausible.empty()) std::printf("  IMPLAUSIBLE");
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
  std::vector<std::string> names, bounds;
  std::vector<double> rates;
  for (const auto& ceiling : m.ceilings) {
    names.push_back(ceiling.name);
    rates.push_back(ceiling.rate);
    if (ceiling.bound) bounds.push_back(ceiling.name);
  }
  record.add("ceiling_names", names).add("ceiling_rates", rates).add("ceiling_bounds", bounds);
  if (!bounds.empty()) record.add("ceiling_margin", m.ceiling_margin);
  if (m.timing.path_overhead_s > 0) record.add("path_overhead_s", m.timing.path_overhead_s);
  if (m.timing.took_s > 0) {
    const Timing::Cost& cost = m.timing.cost;
    record.add("took_s", m.timing.took_s)
        .add("took_refresh_s", cost.refresh_s)
        .add("took_sets_s", cost.sets_s)
        .add("took_set_up_s", cost.set_up_s)
        .add("took_clocked_s", cost.clocked_s)
        .add("took_after_s", cost.after_s)
        .add("took_verify_s", cost.verify_s)
        .add("took_path_s", cost.path_s);
  }
  record.add("batch_calls", static_cast<long long>(m.timing.batch_calls));
  record.add("guarded", m.guarded)
      .add("verified_samples", std::vector<double>(m.verified_samples.begin(), m.verified_samples.end()))
      .add("implausible", !implausible.empty());
  write_record(record);
  if (!implausible.empty()) FAIL_CHECK(implausible);
}

Ceiling copy_ceiling(std::size_t bytes_moved, const TimingOptions& options) {
  const std::size_t bytes = bytes_moved / 2;  // each byte copied is read once and written once
  DeviceBuffer<unsigned char> source(bytes), destination(bytes);
  CUDA_CHECK(cudaMemset(source.data(), 1, bytes));
  const Timing timing = time_device_work(
      [&] { CUDA_CHECK(cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice)); },
      options);
  return {"device-to-device copy", 2.0 * bytes / timing.median_s / 1e9, true};
}

}  // namespace kit
