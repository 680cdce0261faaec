// A picture's size, and lists of sizes from the lab's config, for the labs whose inputs are
// pictures (02 picture kernel, 10 convolution).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/params.hpp"

namespace kit {

struct PictureSize {
  int width = 0;
  int height = 0;
  std::size_t pixels() const { return static_cast<std::size_t>(width) * static_cast<std::size_t>(height); }
  std::string text() const { return std::to_string(width) + "x" + std::to_string(height); }
  // e.g. "a 33x65 picture (width 33, height 65)", or with a word before the size, "a large 33x65 ..."
  std::string describe(const std::string& what = "") const {
    return "a " + (what.empty() ? "" : what + " ") + text() + " picture (width " + std::to_string(width) +
           ", height " + std::to_string(height) + ")";
  }
};

// Sizes from the config, written there as (width, height) pairs one after the other.
inline std::vector<PictureSize> picture_sizes(const std::string& key) {
  const std::vector<std::int64_t> values = param_ints(key);
  if (values.size() % 2 != 0)
    throw std::runtime_error("lab parameter '" + key + "' must hold (width, height) pairs");
  std::vector<PictureSize> sizes;
  for (std::size_t i = 0; i < values.size(); i += 2)
    sizes.push_back({static_cast<int>(values[i]), static_cast<int>(values[i + 1])});
  return sizes;
}

inline PictureSize picture_size(const std::string& key) {
  const std::vector<PictureSize> sizes = picture_sizes(key);
  if (sizes.size() != 1) throw std::runtime_error("lab parameter '" + key + "' must hold one (width, height) pair");
  return sizes[0];
}

}  // namespace kit
