// The judge/runner split (kit/remote.hpp, harness/runner/): the pretend lab of remote_lab.hpp
// runs in a runner process, called through the proxies grader/calls.py made from its header.
// The cases in the cpu suite pass host buffers, values, objects, structs, shared host memory and
// the legacy stream only, so that CI proves them without a GPU; the "remote (GPU)" cases (streams
// of the test's, work queued on them, page-locked mirrors) run where there is one.
//
// CMakeLists.txt runs these cases with KIT_RESULTS, KIT_SEED, PREFIX_SAYS=1 and NV_TOOL_SAYS=3 set
// for the judge, and KIT_RUNNER_PREFIX = `env PREFIX_SAYS=7`. A case that ends the runner is named
// "remote (ends the runner): ..." and runs in a test program of its own: a judge whose runner
// is gone stays without one.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "kit/remote.hpp"
#include "remote_lab.hpp"

namespace {

constexpr int kRunnerPrefixSays = 7;  // what KIT_RUNNER_PREFIX sets PREFIX_SAYS to (CMakeLists.txt)
constexpr std::size_t kMiB = std::size_t{1} << 20;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the StudentError that `call` throws; a failed check where it throws none.
template <class Call>
std::string student_error_of(Call call) {
  try {
    call();
  } catch (const kit::remote::StudentError& error) {
    return error.what();
  }
  FAIL_CHECK("the call was expected to throw kit::remote::StudentError");
  return "";
}

std::vector<float> ramp(int n) {
  std::vector<float> values(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(i) - 3.0f;
  return values;
}

// A crash: the message names the function and the ending, and a later call fails at once with
// the same message instead of starting another runner.
void expect_runner_gone(Ending how, const std::string& ending) {
  const std::string why = student_error_of([&] { crash_now(how); });
  INFO("the message: " << why);
  CHECK(contains(why, "crash_now"));
  CHECK(contains(why, ending));
  const int values[] = {1, 2, 3};
  const auto start = std::chrono::steady_clock::now();
  CHECK(student_error_of([&] { sum_host(values, 3); }) == why);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1.0);
}

}  // namespace

TEST_CASE("remote: the student's functions run in a process of their own" * KIT_CPU_ONLY) {
  const int runner = runner_process_id();
  CHECK(runner > 0);
  CHECK(runner != static_cast<int>(getpid()));
  CHECK(runner_process_id() == runner);  // one runner serves every call
}

TEST_CASE("remote: host inputs and values arrive and host outputs come back" * KIT_CPU_ONLY) {
  const int n = 1001;  // not a multiple of the arena's alignment: the next buffer starts past a gap
  const std::vector<float> in = ramp(n);
  std::vector<float> out = kit::poisoned_vector<float>(static_cast<std::size_t>(n));
  scale_host(in.data(), out.data(), n, 2.5f);
  for (int i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(out[static_cast<std::size_t>(i)] == 2.5f * in[static_cast<std::size_t>(i)]);
  }
  CHECK(in == ramp(n));
}

TEST_CASE("remote: elements the runner does not write keep the test's poison" * KIT_CPU_ONLY) {
  const int n = 101;
  std::vector<float> out = kit::poisoned_vector<float>(static_cast<std::size_t>(n));
  fill_even(out.data(), n, 4.0f);
  for (int i = 0; i < n; ++i) {
    INFO("element " << i);
    if (i % 2 == 0)
      REQUIRE(out[static_cast<std::size_t>(i)] == 4.0f);
    else
      REQUIRE(kit::is_poison(out[static_cast<std::size_t>(i)]));
  }
}

TEST_CASE("remote: a read-only input is not copied back, whatever the runner does to it" * KIT_CPU_ONLY) {
  const int n = 64;
  const std::vector<float> in = ramp(n);
  CHECK(scribble_on_input(in.data(), n) == n);  // the runner did overwrite its copy
  CHECK(in == ramp(n));
}

TEST_CASE("remote: a 64-bit value and a 64-bit return value arrive whole" * KIT_CPU_ONLY) {
  const std::vector<int> values(3, 2'000'000'000);  // the sum needs more than 32 bits
  CHECK(sum_host(values.data(), static_cast<std::int64_t>(values.size())) == 6'000'000'000LL);
  CHECK(sum_host(values.data(), 0) == 0);
}

TEST_CASE("remote: a null host pointer arrives as null" * KIT_CPU_ONLY) { CHECK(sum_host(nullptr, 5) == -1); }

// The arena grows with the calls' needs (the other cases need far less than one 64 MiB step), not
// past RLIMIT_FSIZE: growing a file past it would kill the judge with SIGXFSZ.
TEST_CASE("remote: host buffers grow the shared arena up to the file-size limit, and past it fail with a message" *
          KIT_CPU_ONLY) {
  const int n = static_cast<int>(96 * kMiB / sizeof(float));
  std::vector<float> out = kit::poisoned_vector<float>(static_cast<std::size_t>(n));
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
  rlimit lowered = before;
  lowered.rlim_cur = 32 * kMiB;  // the grader's sandbox sets one too ([grading] file_limit_mb)
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lowered) == 0);
  std::string why;
  try {
    fill_even(out.data(), n, 1.5f);
  } catch (const std::logic_error& error) {
    why = error.what();
  }
  REQUIRE(setrlimit(RLIMIT_FSIZE, &before) == 0);
  INFO("the message: " << why);
  CHECK(contains(why, "fill_even's h_out"));
  CHECK(contains(why, "file-size limit"));

  fill_even(out.data(), n, 1.5f);  // within the limit again
  CHECK(out.front() == 1.5f);
  CHECK(out[static_cast<std::size_t>(n) - 2] == 1.5f);
  CHECK(kit::is_poison(out[static_cast<std::size_t>(n) - 1]));
}

TEST_CASE("remote: an exception in the student's function arrives with its message, and the runner goes on" *
          KIT_CPU_ONLY) {
  const std::string cuda = student_error_of([] { fail_with(Failure::kCudaError); });
  INFO("the CUDA error's message: " << cuda);
  CHECK(contains(cuda, "fail_with failed in your code"));
  CHECK(contains(cuda, "cudaErrorInvalidValue"));
  CHECK(contains(cuda, "remote_lab.cpp:"));  // CUDA_CHECK's file and line
  const std::string runtime = student_error_of([] { fail_with(Failure::kRuntimeError); });
  CHECK(contains(runtime, "the pretend student gave up at step 42"));
  const std::string other = student_error_of([] { fail_with(Failure::kNotAnException); });
  CHECK(contains(other, "not a std::exception"));
  const int values[] = {4, 5};
  CHECK(sum_host(values, 2) == 9);
}

TEST_CASE("remote: the runner's environment holds nothing of the judge's" * KIT_CPU_ONLY) {
  REQUIRE_MESSAGE(std::getenv("KIT_RESULTS") != nullptr, "run through ctest, which sets KIT_RESULTS and KIT_SEED");
  REQUIRE(std::getenv("KIT_SEED") != nullptr);
  CHECK(judge_variables_seen() == 0);
}

TEST_CASE("remote: the NVIDIA tools' variables reach the runner, so a tool run on the judge follows it" *
          KIT_CPU_ONLY) {
  REQUIRE_MESSAGE(std::getenv("NV_TOOL_SAYS") != nullptr, "run through ctest, which sets NV_TOOL_SAYS");
  CHECK(tool_says() == 3);
}

TEST_CASE("remote: the runner is started through $KIT_RUNNER_PREFIX" * KIT_CPU_ONLY) {
  REQUIRE_MESSAGE(std::getenv("KIT_RUNNER_PREFIX") != nullptr, "run through ctest, which sets KIT_RUNNER_PREFIX");
  CHECK(prefix_says() == kRunnerPrefixSays);  // the judge's own PREFIX_SAYS (1) is not passed on
}

TEST_CASE("remote (ends the runner): killed by SIGSEGV, said so, and later calls fail at once" * KIT_CPU_ONLY) {
  expect_runner_gone(Ending::kSegfault, "killed by signal " + std::to_string(SIGSEGV));
}

TEST_CASE("remote (ends the runner): killed by abort(), said so, and later calls fail at once" * KIT_CPU_ONLY) {
  expect_runner_gone(Ending::kAbort, "killed by signal " + std::to_string(SIGABRT));
}

TEST_CASE("remote (ends the runner): a reply sent ahead of its request is refused" * KIT_CPU_ONLY) {
  expect_runner_gone(Ending::kForgedReply, "answered a request it had not been sent yet");
}

TEST_CASE("remote (ends the runner): exit(3) is reported as exiting with code 3" * KIT_CPU_ONLY) {
  expect_runner_gone(Ending::kExit3, "exited with code 3");
}

// ---- objects, structs by reference, shared host memory, streams ----

TEST_CASE("remote: an object the runner's code made is known by a number the runner hands out" * KIT_CPU_ONLY) {
  const int extras[] = {10, 20, 30};
  CounterSetup setup;
  setup.start = 1;
  setup.step = 5;
  setup.h_extras = extras;  // a pointer member: the runner reads its own copy
  setup.extras = 3;
  Counter* counter = make_counter(setup);
  REQUIRE(counter != nullptr);
  CHECK(count_up(counter) == 61);
  CHECK(count_up(counter) == 66);  // the same object, kept in the runner between calls
  Counter* other = make_counter(CounterSetup{});
  CHECK(other != counter);
  CHECK(count_up(other) == 0);
  CHECK(count_up(counter) == 71);
  end_counter(other);
  end_counter(counter);
}

TEST_CASE("remote: the runner refuses an object number it did not hand out, and one already destroyed" * KIT_CPU_ONLY) {
  const std::string forged = student_error_of([] { count_up(reinterpret_cast<Counter*>(std::uintptr_t{4242})); });
  INFO("the message: " << forged);
  CHECK(contains(forged, "count_up failed in your code"));
  CHECK(contains(forged, "a Counter* that no function of yours returned"));
  Counter* counter = make_counter(CounterSetup{});
  end_counter(counter);
  CHECK(contains(student_error_of([&] { count_up(counter); }), "destroyed already"));
  CHECK(contains(student_error_of([&] { end_counter(counter); }), "destroyed already"));  // no double delete
}

TEST_CASE("remote: an object survives the end of a test case" * KIT_CPU_ONLY) {
  Counter* counter = make_counter(CounterSetup{});
  kit::remote::end_of_case();
  CHECK(count_up(counter) == 0);
  end_counter(counter);
}

TEST_CASE("remote: host memory the runner's code allocates is one memory for both, with no copy" * KIT_CPU_ONLY) {
  const std::size_t count = 1000;
  float* h_values = allocate_floats(count);
  REQUIRE(h_values != nullptr);
  for (std::size_t i = 0; i < count; ++i) h_values[i] = static_cast<float>(i);  // the judge writes
  add_to_shared(h_values + 10, 90, 0.5f);  // the runner reads and writes from an offset, no count given
  for (std::size_t i = 0; i < count; ++i) {
    INFO("element " << i);
    REQUIRE(h_values[i] == static_cast<float>(i) + (i >= 10 && i < 100 ? 0.5f : 0.0f));
  }
  // A counted host buffer inside it travels as a place, not a copy: two pointers to one element arrive as one.
  CHECK(same_place(h_values + 7, h_values + 7));
  const std::vector<float> ordinary(1, 1.0f);
  CHECK_FALSE(same_place(ordinary.data(), ordinary.data()));  // the arena: one copy each
  free_floats(h_values);  // the runner's free_floats throws unless it gets what allocate_floats returned
}

TEST_CASE("remote: an allocator that returns null returns null to the test, and freeing null passes null" *
          KIT_CPU_ONLY) {
  CHECK(allocate_floats(0) == nullptr);
  CHECK(contains(student_error_of([] { free_floats(nullptr); }), "never returned"));  // the student's free got null
}

TEST_CASE("remote: the judge refuses to free or share memory that is not shared with the runner" * KIT_CPU_ONLY) {
  std::vector<float> ordinary(4, 0.0f);
  CHECK_THROWS_WITH_AS(free_floats(ordinary.data()), doctest::Contains("allocator did not return"), std::logic_error);
  CHECK_THROWS_WITH_AS(add_to_shared(ordinary.data(), 4, 1.0f), doctest::Contains("does not share"), std::logic_error);
  float* h_values = allocate_floats(4);
  free_floats(h_values);
  CHECK_THROWS_WITH_AS(free_floats(h_values), doctest::Contains("freed already"), std::logic_error);
}

TEST_CASE("remote: host memory the test shares reaches the runner with no copy" * KIT_CPU_ONLY) {
  kit::remote::SharedHostBuffer<float> shared(64, false);  // page-locking it would need a GPU
  for (std::size_t i = 0; i < shared.size(); ++i) shared[i] = 1.0f;
  add_to_shared(shared.data(), 64, 2.0f);
  for (std::size_t i = 0; i < shared.size(); ++i) {
    INFO("element " << i);
    REQUIRE(shared[i] == 3.0f);
  }
  CHECK(same_place(shared.data() + 3, shared.data() + 3));
}

TEST_CASE("remote: the legacy default stream arrives as the legacy default stream, and the test can wait for it" *
          KIT_CPU_ONLY) {
  CHECK(on_legacy_stream(nullptr));
  kit::remote::synchronize(nullptr);
  kit::remote::end_of_case();
  CHECK(on_legacy_stream(nullptr));
}

// ---- on a GPU ----

namespace {

bool page_locked(const void* host) {
  cudaPointerAttributes attributes{};
  CUDA_CHECK(cudaPointerGetAttributes(&attributes, host));
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

TEST_CASE("remote (GPU): a call on a stream returns at once and its work queues behind what the test put there") {
  constexpr double kDelayMs = 300.0;
  const int n = 1000;
  const std::vector<float> values = ramp(n);
  kit::DeviceBuffer<float> d_staging(values), d_values(static_cast<std::size_t>(n));
  d_values.poison();
  kit::Stream stream;
  add_on_stream(d_values.data(), n, 0.0f, stream.get());  // loads the kernel, which may wait for the device
  kit::remote::synchronize(stream.get());
  CUDA_CHECK(cudaDeviceSynchronize());
  kit::remote::queue_delay(stream.get(), kDelayMs);
  kit::remote::copy_on_stream(d_values.data(), d_staging.data(), d_values.bytes(), stream.get());
  const auto start = std::chrono::steady_clock::now();
  add_on_stream(d_values.data(), n, 1.0f, stream.get());
  const double took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK_MESSAGE(took_ms < kDelayMs / 2, "the call took " << took_ms << " ms: the runner waited for its stream");
  kit::remote::synchronize(stream.get());
  const std::vector<float> got = d_values.download();
  for (int i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(got[static_cast<std::size_t>(i)] == values[static_cast<std::size_t>(i)] + 1.0f);
  }
}

TEST_CASE("remote (GPU): the legacy default stream and a whole-device wait reach the runner's work") {
  const int n = 4096;
  kit::DeviceBuffer<float> d_values(std::vector<float>(static_cast<std::size_t>(n), 2.0f));
  add_on_stream(d_values.data(), n, 3.0f, nullptr);
  kit::remote::synchronize_device();
  CHECK(d_values.download() == std::vector<float>(static_cast<std::size_t>(n), 5.0f));
}

namespace {

// Free device memory as the judge reads it: device-wide, so the runner's memory pool counts.
std::size_t device_bytes_free() {
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

}  // namespace

TEST_CASE("remote (GPU): while a timing runs, the runner's memory pool keeps what its code frees, and gives it back "
          "after") {
  int device = 0, pools = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
  if (pools == 0) {
    MESSAGE("this GPU has no stream-ordered allocator (cudaDevAttrMemoryPoolsSupported), so no pool to keep");
    return;
  }
  constexpr std::size_t kScratch = std::size_t{256} << 20;
  constexpr std::size_t kSlack = std::size_t{64} << 20;  // what the driver may set aside meanwhile
  const std::size_t before = device_bytes_free();
  scratch_on_device(kScratch);
  CHECK(device_bytes_free() + kSlack > before);  // outside a timing the pool hands it back as the call waits
  {
    kit::remote::TimedSection section;
    section.resume();
    scratch_on_device(kScratch);
    section.pause();
    INFO("free device memory before: " << before << " bytes, after a timed call: " << device_bytes_free());
    CHECK(device_bytes_free() + kScratch <= before + kSlack);  // kept, for the next timed call to reuse
  }
  CHECK(device_bytes_free() + kSlack > before);  // given back as the timing ended
}

TEST_CASE("remote (GPU): memory the runner's code page-locks is page-locked for the test, and one memory") {
  const std::size_t count = 1 << 20;
  float* h_values = allocate_pinned_floats(count);
  REQUIRE(h_values != nullptr);
  CHECK(page_locked(h_values));
  for (std::size_t i = 0; i < count; ++i) h_values[i] = 1.0f;
  add_to_shared(h_values, static_cast<int>(count), 1.0f);  // the runner writes the same pages
  CHECK(h_values[0] == 2.0f);
  CHECK(h_values[count - 1] == 2.0f);
  kit::DeviceBuffer<float> d_copy(count);
  CUDA_CHECK(cudaMemcpy(d_copy.data(), h_values, count * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(d_copy.download() == std::vector<float>(count, 2.0f));
  free_pinned_floats(h_values);

  float* h_pageable = allocate_floats(count);  // ordinary memory: its mirror is not page-locked
  REQUIRE(h_pageable != nullptr);
  CHECK_FALSE(page_locked(h_pageable));
  free_floats(h_pageable);

  kit::remote::SharedHostBuffer<float> shared(count);  // the test's own: page-locked in both
  CHECK(page_locked(shared.data()));
}

namespace {

// A timed work of doubling n floats, each set on buffers of its own: short enough (a few
// microseconds) that a request through the runner makes the most calls it may.
struct BatchedDoubling {
  static constexpr int kN = 1 << 16;
  int verified = 0;  // calls whose output was compared

  kit::WorkSet make_set(void (*student)(const float*, float*, int)) {
    struct Buffers {
      kit::DeviceBuffer<float> in{kN}, out{kN};
    };
    const auto buffers = std::make_shared<Buffers>();
    kit::WorkSet set;
    set.call = [buffers, student] { student(buffers->in.data(), buffers->out.data(), kN); };
    set.outputs = {kit::Output::device("out", buffers->out.data(), kN)};
    set.refresh = [buffers](const kit::Call& call) {
      kit::fill_uniform_floats(buffers->in.data(), kN, call.rng("in"), -1.0f, 1.0f);
    };
    set.verify = [this, buffers](const kit::Call& call) {
      ++verified;
      const std::vector<float> in = call.rng("in").uniform_floats(kN, -1.0f, 1.0f);
      const std::vector<float> out = buffers->out.download();
      for (std::size_t i = 0; i < in.size(); ++i)
        if (out[i] != 2.0f * in[i]) return false;
      return true;
    };
    return set;
  }

  kit::TimedWork work(void (*student)(const float*, float*, int)) {
    kit::TimedWork work;
    work.name = "double_values";
    work.work_per_call = 2.0 * kN * sizeof(float);
    work.sets_from([this, student] { return make_set(student); });
    return work;
  }
};

kit::TimingOptions batch_options() {
  kit::TimingOptions options;
  options.warmup = 2;
  options.repeats = 5;
  return options;
}

}  // namespace

TEST_CASE("remote (GPU): a short work is timed in batched samples, each call on its own set, every call checked") {
  BatchedDoubling test;
  const kit::GuardedRun run = kit::run_guarded(test.work(double_values), batch_options());
  REQUIRE(run.failure == "");
  const int batch = run.timing.batch_calls;
  CHECK(batch > 1);  // a few microseconds of work beside a path of a few hundred
  CHECK(run.timing.samples_s.size() == 5);
  CHECK(run.verified_samples.back() == 5);
  // A verified sample's calls: the batch and the call alone.
  CHECK(test.verified == static_cast<int>(run.verified_samples.size()) * (batch + 1));
}

TEST_CASE("remote (GPU): a call of a batched sample that does nothing is caught by its set's poison") {
  BatchedDoubling test;
  const kit::GuardedRun run = kit::run_guarded(test.work(double_values_mostly), batch_options());
  INFO("the failure: " << run.failure);
  CHECK(contains(run.failure, "unwritten"));
  CHECK(contains(run.failure, "in timed sample 1 of 5"));  // the fourth call: two warm-ups, then the second of sample 1
}
