// Is there a GPU, and which one.
#pragma once

#include <string>

namespace kit {

struct DeviceInfo {
  bool available = false;
  std::string why_not;  // set when !available: the CUDA error that said so
  std::string name;
  std::string driver;  // the kernel driver version (e.g. 580.159.04) where readable
  int cuda_driver_api = 0;
  int compute_capability = 0;  // e.g. 90
  int multiprocessors = 0;
  double memory_gib = 0.0;
};

// Probed once per process; cheap afterwards.
const DeviceInfo& device_info();

}  // namespace kit
