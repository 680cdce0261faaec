#include "kit/params.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace kit {
namespace {

std::string params_path() {
  if (const char* path = std::getenv("KIT_PARAMS")) return path;
  char exe[4096];
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length <= 0) throw std::runtime_error("cannot find the test executable's folder; set KIT_PARAMS");
  std::string dir(exe, static_cast<std::size_t>(length));
  return dir.substr(0, dir.rfind('/')) + "/params.txt";
}

std::map<std::string, std::string> load(const std::string& path) {
  std::ifstream file(path);
  if (!file)
    throw std::runtime_error("cannot read the lab parameters file " + path +
                             " (it is made when CMake configures the lab; rebuild with `make`)");
  std::map<std::string, std::string> values;
  std::string line;
  while (std::getline(file, line)) {
    const auto equals = line.find('=');
    if (line.empty() || line[0] == '#' || equals == std::string::npos) continue;
    values[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return values;
}

const std::map<std::string, std::string>& params() {
  static const std::map<std::string, std::string> values = load(params_path());
  return values;
}

const std::string& raw(const std::string& key) {
  const auto found = params().find(key);
  if (found == params().end())
    throw std::runtime_error("the lab config has no parameter '" + key + "' (add it under [params] in lab.toml)");
  return found->second;
}

template <class T>
T parse(const std::string& key, const std::string& text) {
  std::istringstream stream(text);
  T value{};
  stream >> value;
  if (stream.fail() || !stream.eof())
    throw std::runtime_error("lab parameter '" + key + "' = '" + text +
                             "' is not a number of the kind the test expects");
  return value;
}

}  // namespace

bool has_param(const std::string& key) { return params().count(key) > 0; }
std::int64_t param_int(const std::string& key) { return parse<std::int64_t>(key, raw(key)); }
double param_double(const std::string& key) { return parse<double>(key, raw(key)); }
std::string param_string(const std::string& key) { return raw(key); }

std::vector<std::int64_t> param_ints(const std::string& key) {
  std::vector<std::int64_t> values;
  std::istringstream list(raw(key));
  std::string item;
  while (std::getline(list, item, ',')) values.push_back(parse<std::int64_t>(key, item));
  return values;
}

}  // namespace kit
