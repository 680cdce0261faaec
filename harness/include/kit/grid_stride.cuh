// The launch shape of the harness's own grid-stride kernels: random fills, poison counts,
// gathers, counts on the device (kit/device_count.cuh).
#pragma once

#include <algorithm>
#include <cstddef>

#include "kit/device.hpp"

namespace kit::detail {

constexpr int kGridStrideBlock = 256;
constexpr int kGridStrideBlocksPerSm = 8;  // grid-stride loops over this many blocks per SM keep memory busy

// Blocks for a grid-stride loop over `count` elements: enough to fill the GPU, no more than
// needed, and at least one.
inline unsigned grid_for(std::size_t count) {
  const std::size_t most = static_cast<std::size_t>(device_info().multiprocessors) * kGridStrideBlocksPerSm;
  const std::size_t needed = (count + kGridStrideBlock - 1) / kGridStrideBlock;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(needed, most)));
}

}  // namespace kit::detail
