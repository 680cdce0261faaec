// The machine-readable record of a test run.
//
// When $KIT_RESULTS names a file, the harness appends one JSON object per line:
// a "run" record (seed, GPU), a "case" record when each test case starts and
// ends (status and failure messages), and a "timing" record per measurement.
// The grader reads this file, never the program's console output. Each line is
// flushed as written, so a crash still leaves the record of what ran before it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kit {

// A JSON object built field by field: {"kind": "timing", "median_s": 0.001}.
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value);
  JsonObject& add(const std::string& key, double value);
  JsonObject& add(const std::string& key, long long value);
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add(const std::string& key, const std::vector<double>& values);
  JsonObject& add(const std::string& key, const std::vector<std::string>& values);
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // key, encoded value
};

std::string json_quote(const std::string& text);

// Append a record to $KIT_RESULTS (does nothing when it is unset).
void write_record(const JsonObject& record);
// Write from now on to the file $KIT_RESULTS names now: a judge that serves many runs (--kit-serve) has a
// results file for each.
void reopen_results();

// The name of the test case now running ("" outside a test case); the test
// runner sets it, and per-case random streams and timing records use it.
const std::string& current_case_name();
void set_current_case_name(const std::string& name);

}  // namespace kit
