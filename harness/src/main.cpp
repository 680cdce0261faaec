// The test program's entry point, shared by every lab.
//
// It probes for a GPU (without one, only the "cpu" suite runs and the rest is
// reported as skipped, and the end of the output says plainly that none of the student's code was
// tested), records the run (the seed if public, GPU, driver) and, through a
// doctest listener, each test case's outcome in $KIT_RESULTS.
//
// With --kit-serve, a judge (the test program of a lab split into judge and runner) serves many runs, one
// after another, each as one start of the program would run: class grading sends each student's runs to a
// few such judges instead of starting one per run, and so makes one CUDA context where it made hundreds
// (grader/run/servers.py says why that matters).
#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "kit/device.hpp"
#include "kit/gpu_wait.hpp"
#include "kit/random.hpp"
#include "kit/remote.hpp"
#include "kit/results.hpp"

namespace kit {
namespace {

// Test cases the last run left out (filtered: without a GPU, every one that needs it).
int skipped_cases = 0;
int ran_cases = 0;

// Writes the outcome of every test case to the results file.
class ResultsListener : public doctest::IReporter {
 public:
  explicit ResultsListener(const doctest::ContextOptions&) {}

  void report_query(const doctest::QueryData& query) override {
    for (unsigned i = 0; i < query.num_data; ++i)
      write_record(JsonObject()
                       .add("kind", "listed")
                       .add("case", query.data[i]->m_name)
                       .add("suite", query.data[i]->m_test_suite));
  }
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    skipped_cases = static_cast<int>(stats.numTestCases - stats.numTestCasesPassingFilters);
    ran_cases = static_cast<int>(stats.numTestCasesPassingFilters);
  }

  void test_case_start(const doctest::TestCaseData& data) override {
    if (std::string(data.m_test_suite) == "timing") remote::start_twin();  // its start overlaps the case's set-up
    set_current_case_name(data.m_name);
    messages_.clear();
    remote::take_gpu_found_busy();  // what an earlier case found is not this one's
    write_record(JsonObject().add("kind", "case_start").add("case", data.m_name).add("suite", data.m_test_suite));
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}

  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    remote::end_of_case();  // the runner lets go of this case's device buffers, streams and cuBLAS handles
    write_record(JsonObject()
                     .add("kind", "case")
                     .add("case", current_case_name())
                     .add("status", stats.testCaseSuccess ? "passed" : "failed")
                     .add("seconds", stats.seconds)
                     .add("gpu_busy", remote::take_gpu_found_busy())
                     .add("messages", messages_));
    set_current_case_name("");
  }

  void test_case_exception(const doctest::TestCaseException& exception) override {
    messages_.push_back(std::string(exception.is_crash ? "The program crashed: " : "Exception thrown: ") +
                        exception.error_string.c_str());
  }
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}

  void log_assert(const doctest::AssertData& data) override {
    if (!data.m_failed) return;
    std::string text = std::string(data.m_file) + ":" + std::to_string(data.m_line) + ": check failed: " + data.m_expr +
                       " with values " + data.m_decomp.c_str();
    if (data.m_exception.size() > 0) text += "; exception: " + std::string(data.m_exception.c_str());
    messages_.push_back(text);
  }
  void log_message(const doctest::MessageData& data) override {
    if (data.m_severity & doctest::assertType::is_warn) return;  // MESSAGE and WARN are not failures
    messages_.push_back(data.m_string.c_str());
  }
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  std::vector<std::string> messages_;
};

void record_run() {
  const DeviceInfo& device = device_info();
  JsonObject record;
  record.add("kind", "run").add("gpu_available", device.available);
  if (device.available)
    record.add("gpu", device.name)
        .add("driver", device.driver)
        .add("cuda_driver_api", static_cast<long long>(device.cuda_driver_api))
        .add("compute_capability", static_cast<long long>(device.compute_capability));
  else
    record.add("why_no_gpu", device.why_not);
  // The seed only when it is the public one. The grader chose the secret one and keeps it for the TA
  // (results.json's extra_data), so no copy of it need sit in a file of the program's own folder,
  // whose records (and the text read from them) are on their way to what a student reads.
  try {
    const bool shown = seed_is_public();
    record.add("seed_public", shown);
    if (shown) record.add("seed", static_cast<long long>(run_seed()));
  } catch (const std::exception& error) {
    record.add("params_error", error.what());
  }
  write_record(record);
}

// The CUDA error that said there is no GPU, in a student's words (empty where there are none better).
std::string plain_reason(const std::string& why_not) {
  static const char* const kReasons[][2] = {
      {"cudaErrorInsufficientDriver", "no NVIDIA driver or GPU on this machine"},
      {"cudaErrorNoDevice", "no NVIDIA driver or GPU on this machine"},
      {"cudaErrorSystemDriverMismatch", "the NVIDIA driver and its kernel module differ: reboot, or reinstall the driver"},
      {"cudaErrorCompatNotSupportedOnDevice", "this GPU is too old for the CUDA toolkit's driver"},
      {"cudaErrorDevicesUnavailable", "the GPU is busy: another program holds it in exclusive mode"},
  };
  for (const auto& reason : kReasons)
    if (why_not.find(reason[0]) != std::string::npos) return reason[1];
  return "";
}

// --list-test-cases and friends: doctest then lists what passes the filters,
// and a listing must show every case, GPU or not.
bool listing_only(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-ltc" || arg == "-lts" || arg.find("--list-") == 0 || arg.find("--dt-list-") == 0) return true;
  }
  return false;
}

}  // namespace

}  // namespace kit

DOCTEST_REGISTER_LISTENER("kit-results", 1, kit::ResultsListener);

namespace kit {
namespace {

// One run of the test program: the doctest cases its arguments select, the runner started and ended.
int run_tests(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  if (!listing_only(argc, argv)) remote::start_runner();  // it starts while this process does
  record_run();
  const DeviceInfo& device = device_info();
  const bool no_gpu = !device.available && !listing_only(argc, argv);
  const std::string plain = plain_reason(device.why_not);
  const std::string why = plain.empty() ? device.why_not : device.why_not + "; that is: " + plain;
  if (no_gpu) {
    // ctest (KIT_GPU_SKIP_REGEX) and the grader read this line's first words: a test that found no GPU skipped.
    std::printf("No CUDA GPU available (%s): test cases that need a GPU are skipped; only CPU test cases run.\n",
                why.c_str());
    context.addFilter("test-suite", "cpu");
  }
  const int result = context.run();
  if (no_gpu && skipped_cases > 0 && !context.shouldExit()) {
    // After doctest's "Status: SUCCESS!", which here counts the CPU test cases alone.
    const int ran = ran_cases;
    std::printf("\nNOT TESTED: no usable CUDA GPU was found (%s).\nNone of your code was run: every test case "
                "that needs a GPU was skipped, and the status above counts only the %d CPU test case%s that ran. Run "
                "the tests on a machine with an NVIDIA GPU and its driver to test your code.\n",
                plain.empty() ? device.why_not.c_str() : plain.c_str(), ran, ran == 1 ? "" : "s");
  }
  // The runner's exit code, when it ended badly, is the program's: compute-sanitizer reports its
  // findings through it (the grader reads it as the sanitizer's own), and a runner that died
  // fails the program even where every test passed.
  const int runner_code = remote::finish();
  // All of it written now, what finish() said too: a judge that serves many runs sends the next run's output
  // elsewhere, and what was left in a buffer would land there.
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  return runner_code != 0 ? runner_code : result;
}

// A run sent to a judge that serves many (--kit-serve): what one start of the test program is given.
struct ServedRun {
  std::vector<std::string> args;                            // after the program's name
  std::vector<std::pair<std::string, std::string>> env;     // its whole environment
  std::string cwd;
  std::string output;  // the file its standard output and error go to (the runner's too)
};

// The next run from `in`: fields "arg=...", "env=NAME=value", "cwd=...", "out=...", each ended by a NUL, the
// run by an empty field. False at the end of the input: the grader is done with this judge.
bool read_run(std::FILE* in, ServedRun* run) {
  *run = ServedRun{};
  char* line = nullptr;
  std::size_t size = 0;
  bool complete = false;
  for (ssize_t got; (got = getdelim(&line, &size, '\0', in)) > 0 && line[got - 1] == '\0';) {
    const std::string field(line, static_cast<std::size_t>(got - 1));
    if (field.empty()) {
      complete = true;
      break;
    }
    const std::size_t equals = field.find('=');
    const std::string key = field.substr(0, equals), value = field.substr(equals + 1);
    if (key == "arg") {
      run->args.push_back(value);
    } else if (key == "env" && value.find('=') != std::string::npos) {
      run->env.emplace_back(value.substr(0, value.find('=')), value.substr(value.find('=') + 1));
    } else if (key == "cwd") {
      run->cwd = value;
    } else if (key == "out") {
      run->output = value;
    }
  }
  std::free(line);
  return complete;
}

// Standard output and error (and so the runner's, which it inherits) to `path`; /dev/null between runs.
bool output_to(const char* path) {
  const int file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (file < 0) return false;
  dup2(file, 1);
  dup2(file, 2);
  close(file);
  return true;
}

// The run's environment, folder, output and results file, in place of the last run's.
bool enter(const ServedRun& run) {
  clearenv();
  for (const auto& [name, value] : run.env) setenv(name.c_str(), value.c_str(), 1);
  reopen_results();
  return chdir(run.cwd.c_str()) == 0 && output_to(run.output.c_str());
}

// After a run: whatever the judge's CUDA context was left with. An error there (a sticky one above all, from a
// kernel of the judge's that faulted on what a student's code wrote) would fail every later run, so the judge
// retires instead.
bool context_usable() {
  if (!device_info().available) return true;
  const cudaError_t synchronized = cudaDeviceSynchronize();
  const cudaError_t last = cudaGetLastError();
  return synchronized == cudaSuccess && last == cudaSuccess;
}

// --kit-serve: runs sent on standard input, one at a time, until it closes. Each reply is one line on standard
// output, "done <exit code> ok", or "... retire" when this judge must not serve again. Between runs, and for the
// runner, standard input and output are elsewhere: the runner must not reach the grader's channel.
int serve_runs(const char* program) {
  std::FILE* const jobs = fdopen(fcntl(0, F_DUPFD_CLOEXEC, 10), "r");
  const int replies = fcntl(1, F_DUPFD_CLOEXEC, 10);
  if (jobs == nullptr || replies < 0 || !output_to("/dev/null")) return 2;
  const int null_in = open("/dev/null", O_RDONLY);
  dup2(null_in, 0);
  close(null_in);
  apply_gpu_wait();
  if (device_info().available) cudaFree(nullptr);  // the CUDA context, once for every run
  remote::keep_twin_between_runs();
  const struct TwinEnds {
    ~TwinEnds() { remote::end_twin(); }
  } twin_ends;
  dprintf(replies, "ready\n");
  for (ServedRun run; read_run(jobs, &run);) {
    if (!enter(run)) {
      dprintf(replies, "done 125 retire\n");
      return 2;
    }
    std::vector<char*> argv{const_cast<char*>(program)};
    for (std::string& arg : run.args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const int code = run_tests(static_cast<int>(argv.size()) - 1, argv.data());
    const bool usable = context_usable();
    output_to("/dev/null");
    dprintf(replies, "done %d %s\n", code, usable ? "ok" : "retire");
    if (!usable) return 0;
  }
  return 0;
}

}  // namespace
}  // namespace kit

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--kit-twin") return kit::remote::serve_twin();
  if (argc == 2 && std::string(argv[1]) == "--kit-serve") return kit::serve_runs(argv[0]);
  kit::apply_gpu_wait();
  return kit::run_tests(argc, argv);
}
