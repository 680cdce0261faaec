#include "kit/results.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kit {

std::string json_quote(const std::string& text) {
  std::string quoted = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': quoted += "\\\""; break;
      case '\\': quoted += "\\\\"; break;
      case '\n': quoted += "\\n"; break;
      case '\t': quoted += "\\t"; break;
      case '\r': quoted += "\\r"; break;
      default:
        if (c < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof(escape), "\\u%04x", c);
          quoted += escape;
        } else {
          quoted += static_cast<char>(c);
        }
    }
  }
  return quoted + "\"";
}

namespace {
std::string number(double value) {
  if (!std::isfinite(value)) return "null";  // JSON has no NaN or infinity
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}
}  // namespace

JsonObject& JsonObject::add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, json_quote(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, const char* value) { return add(key, std::string(value)); }
JsonObject& JsonObject::add(const std::string& key, double value) {
  fields_.emplace_back(key, number(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, long long value) {
  fields_.emplace_back(key, std::to_string(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, bool value) {
  fields_.emplace_back(key, value ? "true" : "false");
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, const std::vector<double>& values) {
  std::string list = "[";
  for (std::size_t i = 0; i < values.size(); ++i) list += (i ? "," : "") + number(values[i]);
  fields_.emplace_back(key, list + "]");
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, const std::vector<std::string>& values) {
  std::string list = "[";
  for (std::size_t i = 0; i < values.size(); ++i) list += (i ? "," : "") + json_quote(values[i]);
  fields_.emplace_back(key, list + "]");
  return *this;
}

std::string JsonObject::str() const {
  std::string text = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i)
    text += (i ? ", " : "") + json_quote(fields_[i].first) + ": " + fields_[i].second;
  return text + "}";
}

namespace {
std::string& running_case() {
  static std::string name;
  return name;
}
}  // namespace

const std::string& current_case_name() { return running_case(); }
void set_current_case_name(const std::string& name) { running_case() = name; }

namespace {
// The results file of the run now going on: $KIT_RESULTS as it was when first written to, or at reopen_results.
std::FILE*& results_file() {
  static std::FILE* file = [] {
    const char* path = std::getenv("KIT_RESULTS");
    return path ? std::fopen(path, "a") : nullptr;
  }();
  return file;
}
}  // namespace

void write_record(const JsonObject& record) {
  std::FILE* file = results_file();
  if (file == nullptr) return;
  std::fputs((record.str() + "\n").c_str(), file);
  std::fflush(file);
}

void reopen_results() {
  std::FILE*& file = results_file();
  if (file != nullptr) std::fclose(file);
  const char* path = std::getenv("KIT_RESULTS");
  file = path ? std::fopen(path, "a") : nullptr;
}

}  // namespace kit
