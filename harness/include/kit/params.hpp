// Lab parameters (sizes, tolerances, timing repetitions) from the lab's config.
//
// The grader renders the [params] tables of labs/<lab>/lab.toml (and of
// solutions/<lab>/hidden.toml, where present) into a flat key=value file at
// configure time; tests read it through these functions so that an instructor
// changes a size or tolerance in config, never in C++. The file is the one named
// by $KIT_PARAMS, else params.txt next to the test executable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kit {

std::int64_t param_int(const std::string& key);
double param_double(const std::string& key);
std::string param_string(const std::string& key);
std::vector<std::int64_t> param_ints(const std::string& key);
bool has_param(const std::string& key);

// A list of small numbers (radii, counts) as int.
inline std::vector<int> param_int_list(const std::string& key) {
  std::vector<int> values;
  for (const auto value : param_ints(key)) values.push_back(static_cast<int>(value));
  return values;
}

}  // namespace kit
