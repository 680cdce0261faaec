// The test program's entry point, shared by every lab.
//
// It probes for a GPU (without one, only the "cpu" suite runs and the rest is
// reported as skipped, and the end of the output says plainly that none of the student's code was
// tested), records the run (the seed if public, GPU, driver) and, through a
// doctest listener, each test case's outcome in $KIT_RESULTS.
#include <doctest/doctest.h>

#include <cstdio>
#include <exception>
#include <string>
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

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--kit-twin") return kit::remote::serve_twin();
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  kit::apply_gpu_wait();
  if (!kit::listing_only(argc, argv)) kit::remote::start_runner();  // it starts while this process does
  kit::record_run();
  const kit::DeviceInfo& device = kit::device_info();
  const bool no_gpu = !device.available && !kit::listing_only(argc, argv);
  const std::string plain = kit::plain_reason(device.why_not);
  const std::string why = plain.empty() ? device.why_not : device.why_not + "; that is: " + plain;
  if (no_gpu) {
    // ctest (KIT_GPU_SKIP_REGEX) and the grader read this line's first words: a test that found no GPU skipped.
    std::printf("No CUDA GPU available (%s): test cases that need a GPU are skipped; only CPU test cases run.\n",
                why.c_str());
    context.addFilter("test-suite", "cpu");
  }
  const int result = context.run();
  if (no_gpu && kit::skipped_cases > 0 && !context.shouldExit()) {
    // After doctest's "Status: SUCCESS!", which here counts the CPU test cases alone.
    const int ran = kit::ran_cases;
    std::printf("\nNOT TESTED: no usable CUDA GPU was found (%s).\nNone of your code was run: every test case "
                "that needs a GPU was skipped, and the status above counts only the %d CPU test case%s that ran. Run "
                "the tests on a machine with an NVIDIA GPU and its driver to test your code.\n",
                plain.empty() ? device.why_not.c_str() : plain.c_str(), ran, ran == 1 ? "" : "s");
    std::fflush(stdout);
  }
  // The runner's exit code, when it ended badly, is the program's: compute-sanitizer reports its
  // findings through it (the grader reads it as the sanitizer's own), and a runner that died
  // fails the program even where every test passed.
  const int runner_code = kit::remote::finish();
  return runner_code != 0 ? runner_code : result;
}
