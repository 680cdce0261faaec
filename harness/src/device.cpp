#include "kit/device.hpp"

#include <cuda_runtime.h>

#include <cctype>
#include <fstream>
#include <sstream>

namespace kit {
namespace {

// The kernel driver's version as nvidia-smi shows it (e.g. 580.159.04): the first
// dotted number on the first line of the driver's own file.
std::string kernel_driver_version() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(file, line)) return "";
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    const bool dotted_number = word.find('.') != std::string::npos &&
                               word.find_first_not_of("0123456789.") == std::string::npos && std::isdigit(word[0]);
    if (dotted_number) return word;
  }
  return "";
}

DeviceInfo probe() {
  DeviceInfo info;
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    info.why_not = error != cudaSuccess ? std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error)
                                        : "cudaGetDeviceCount found no device";
    cudaGetLastError();  // clear it
    return info;
  }
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess) {
    info.why_not = "cudaGetDeviceProperties failed";
    return info;
  }
  info.available = true;
  info.name = properties.name;
  info.compute_capability = properties.major * 10 + properties.minor;
  info.multiprocessors = properties.multiProcessorCount;
  info.memory_gib = static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  cudaDriverGetVersion(&info.cuda_driver_api);
  info.driver = kernel_driver_version();
  return info;
}

}  // namespace

const DeviceInfo& device_info() {
  static const DeviceInfo info = probe();
  return info;
}

}  // namespace kit
