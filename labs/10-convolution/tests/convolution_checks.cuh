// Lab 10 checks shared by the public and the hidden tests: inputs, device pictures with guard
// zones, the tolerance, and the comparisons with the CPU reference (convolution_reference.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "convolution.cuh"
#include "convolution_reference.hpp"
#include "kit/device_check.cuh"
#include "kit/device_count.cuh"
#include "kit/kit.cuh"
#include "kit/picture.hpp"

namespace convolution_checks {

// One of the two kernels, as the tests see it.
struct Kernel {
  std::string name;  // the launch function, as the test names say it
  void (*launch)(const float* d_in, float* d_out, int width, int height, int radius);
  std::string look_at;
  std::string look_at_guard;
};

inline Kernel naive() {
  return {"launch_convolve_naive", launch_convolve_naive,
          "convolve_naive_kernel and launch_convolve_naive in convolution.cu (and upload_filter)",
          "the bounds check in convolve_naive_kernel: a thread whose column is width or more, or whose row is "
          "height or more, must not write"};
}
inline Kernel tiled() {
  return {"launch_convolve_tiled", launch_convolve_tiled,
          "convolve_tiled_kernel and launch_convolve_tiled_radius in convolution.cu (and upload_filter)",
          "the store at the end of convolve_tiled_kernel: an output whose column is width or more, or whose row is "
          "height or more, must not be written"};
}

inline const std::string kLookAtOrientation =
    "the index of the weight: tap (dx, dy) weighs the pixel dx columns to the right and dy rows below, "
    "filter[(dy + r) * (2r + 1) + (dx + r)] times in(x + dx, y + dy), with 0 for pixels outside the picture";
inline const std::string kLookAtTileEdges =
    "the tile's edges in convolve_tiled_kernel and the grid in launch_convolve_tiled_radius: the last tiles in x "
    "and in y stick out past the picture, their halo pixels outside the picture are 0, and their outputs outside "
    "it are not written";
// What a NaN output means, added to every check's hint.
inline const std::string kNanHint =
    " (an output of nan means the window read something outside the picture: the tests put NaN before and after "
    "the input, so look at the bounds checks on the pixels a window reads)";

using Size = kit::PictureSize;

inline int int_param(const std::string& key) { return static_cast<int>(kit::param_int(key)); }

// ---------------------------------------------------------------------------------------------
// Inputs.

// A random picture, brightness uniform in [0, 1).
inline std::vector<float> random_picture(const Size& size, const std::string& stream = "picture") {
  return kit::Rng::for_case(stream + " " + size.text()).uniform_floats(size.pixels(), 0.0f, 1.0f);
}

// A random filter: weights uniform in [-1, 1], so no two taps are alike and a weight read from
// the wrong place, or a window turned round, changes the result.
inline std::vector<float> random_filter(int radius, const std::string& stream = "filter") {
  const int side = 2 * radius + 1;
  return kit::Rng::for_case(stream + " radius " + std::to_string(radius))
      .uniform_floats(static_cast<std::size_t>(side) * side, -1.0f, 1.0f);
}

// A filter whose only nonzero weight, 1, is tap (dx, dy): it moves the picture dx columns left
// and dy rows up, and fills what comes in from outside with zeros.
inline std::vector<float> one_tap_filter(int radius, int dx, int dy) {
  const int side = 2 * radius + 1;
  std::vector<float> filter(static_cast<std::size_t>(side) * side, 0.0f);
  filter[(dy + radius) * side + dx + radius] = 1.0f;
  return filter;
}

// ---------------------------------------------------------------------------------------------
// Device memory.

// Floats in a guard zone: guard_rows whole rows plus guard_extra, enough for any window that
// ignores the picture's edges (it reaches at most kMaxFilterRadius rows past them).
inline std::size_t guard_size(const Size& size) {
  return static_cast<std::size_t>(kit::param_int("guard_rows")) * static_cast<std::size_t>(size.width) +
         static_cast<std::size_t>(kit::param_int("guard_extra"));
}

// A picture in device memory between two guard zones of NaN (kit::GuardedInput): a window that
// reads before the first row or past the last one adds NaN, and its output shows it.
inline kit::GuardedInput<float> guarded_picture(const std::vector<float>& picture, const Size& size) {
  return kit::GuardedInput<float>(picture, guard_size(size));
}

// ---------------------------------------------------------------------------------------------
// The comparison.

// How far a float result may be from the exact one: a sum of at most (2r + 1)^2 products lies
// within γ_k · Σ |weight| |pixel| of it (convolution_reference::float_sum_gamma), times
// dot_error_units (1: the rigorous bound; lab.toml).
inline double error_bound(int radius) {
  const int side = 2 * radius + 1;
  return kit::param_double("dot_error_units") * convolution_reference::float_sum_gamma(side * side);
}

// `got` (some rows of a picture, one after the other) against the reference for those rows.
inline bool expect_rows(const std::vector<float>& got, const convolution_reference::Expected& expected, int radius,
                        const kit::CaseContext& context) {
  const double units = error_bound(radius);
  return kit::expect_within(
      got, expected.value, [&](std::size_t i) { return units * expected.magnitude[i]; }, context);
}

// Uploads `filter`, runs `kernel` on the picture (from guarded_picture) into a poisoned output
// followed by a poisoned guard zone, `repeats` times, and checks each result against the CPU
// reference and the guard zone. Returns false at the first failure.
inline bool check_picture(const Kernel& kernel, const std::vector<float>& picture, const Size& size,
                          const std::vector<float>& filter, int radius, const std::string& input,
                          const std::string& look_at, int repeats = 1) {
  const convolution_reference::Expected expected =
      convolution_reference::convolve(picture, size.width, size.height, filter, radius);
  const std::size_t n = size.pixels();
  auto d_in = guarded_picture(picture, size);
  kit::DeviceBuffer<float> d_out(n + guard_size(size));
  const auto row = static_cast<std::size_t>(size.width);
  const std::string text = input + ", filter radius " + std::to_string(radius);
  upload_filter(filter.data(), radius);
  for (int run = 1; run <= repeats; ++run) {
    d_out.poison();
    kernel.launch(d_in.data(), d_out.data(), size.width, size.height, radius);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> all = d_out.download();
    const std::vector<float> got(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<float> past_end(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
    const std::string context =
        repeats > 1 ? text + " (run " + std::to_string(run) + " of " + std::to_string(repeats) + ")" : text;
    const bool right = expect_rows(got, expected, radius, {context, look_at + kNanHint, row});
    const bool clean = kit::expect_guard_untouched(past_end, n, {context, kernel.look_at_guard, row});
    if (!right || !clean) return false;
  }
  return true;
}

// A random picture of `size` through `kernel` with a random filter of `radius`.
inline bool check_random(const Kernel& kernel, const Size& size, int radius, const std::string& input,
                         const std::string& look_at, int repeats = 1) {
  return check_picture(kernel, random_picture(size), size, random_filter(radius), radius, input, look_at, repeats);
}

// The picture and the output in buffers of exactly their size, with no guard zones, so that a
// memory checker (compute-sanitizer) sees any access outside them as an access outside an
// allocation. The values are checked too.
inline bool check_exact_buffers(const Kernel& kernel, const Size& size, int radius, const std::string& input) {
  const std::vector<float> picture = random_picture(size), filter = random_filter(radius);
  const convolution_reference::Expected expected =
      convolution_reference::convolve(picture, size.width, size.height, filter, radius);
  kit::DeviceBuffer<float> d_in(picture), d_out(size.pixels());
  d_out.poison();
  upload_filter(filter.data(), radius);
  kernel.launch(d_in.data(), d_out.data(), size.width, size.height, radius);
  CUDA_CHECK(cudaDeviceSynchronize());
  return expect_rows(d_out.download(), expected, radius,
                     {input + ", filter radius " + std::to_string(radius) + ", in buffers of exactly its size",
                      kernel.look_at, static_cast<std::size_t>(size.width)});
}

// ---- What the public and hidden tests share --------------------------------------------------

// A one-tap filter (shift_tap in lab.toml) moves the picture: an exact result, with zeros where
// the window reaches past the edge.
inline void check_shift(const Kernel& kernel) {
  const Size size = kit::picture_size("shift_size");
  const int radius = int_param("shift_radius");
  const std::vector<int> tap = kit::param_int_list("shift_tap");
  const std::vector<float> filter = one_tap_filter(radius, tap.at(0), tap.at(1));
  check_picture(kernel, random_picture(size), size, filter, radius,
                size.describe() + " and a filter whose only weight, 1, is tap (dx, dy) = (" + std::to_string(tap[0]) +
                    ", " + std::to_string(tap[1]) + "): out(x, y) = in(x + " + std::to_string(tap[0]) + ", y + " +
                    std::to_string(tap[1]) + "), 0 where that pixel is outside the picture",
                kLookAtOrientation);
}

// Random filters of every radius the header allows, one after the other on one picture.
inline void check_every_radius(const Kernel& kernel) {
  const Size size = kit::picture_size("small_size");
  const std::vector<float> picture = random_picture(size);
  for (int radius = 0; radius <= kMaxFilterRadius; ++radius)
    if (!check_picture(kernel, picture, size, random_filter(radius), radius, size.describe() + " of random pixels",
                       kernel.look_at))
      return;
}

inline void check_lines(const Kernel& kernel) {
  const int radius = int_param("line_radius");
  for (const Size& size : kit::picture_sizes("line_sizes"))
    if (!check_random(kernel, size, radius, size.describe(), kernel.look_at)) return;
}

inline void check_guard(const Kernel& kernel) {
  const Size size = kit::picture_size("guard_size");
  check_random(kernel, size, int_param("guard_radius"),
               size.describe() + ": the last blocks have threads past the right and bottom edges", kernel.look_at);
}

inline void check_large(const Kernel& kernel) {
  const Size size = kit::picture_size("large_size");
  check_random(kernel, size, int_param("large_radius"), size.describe("large"), kernel.look_at);
}

// ---------------------------------------------------------------------------------------------
// Timing pictures: a quarter of a gigabyte, too large to copy and convolve in full on the CPU
// for every check while the whole class waits for the GPU. So the check counts the outputs that
// are not finite on the GPU (every one of them), and compares whole rows (and with them both
// edges and every tile boundary along a row) with the CPU reference, made from the input rows
// their windows read and no others: the first and last kMaxFilterRadius + 1, where the window
// leaves the picture, the rows either side of where 64-row tiles meet near the middle, and
// timing_check_rows more drawn from the operating system's entropy when the check runs, after
// the call, so that a submission cannot know them.

inline std::vector<int> rows_to_check(int height) {
  std::vector<int> rows;
  for (int y = 0; y <= kMaxFilterRadius && y < height; ++y) rows.push_back(y);
  for (int y = std::max(0, height - kMaxFilterRadius - 1); y < height; ++y) rows.push_back(y);
  const int middle = height / 2 / 64 * 64;
  for (int y = middle - 1; y <= middle; ++y)
    if (y >= 0) rows.push_back(y);
  const auto drawn = static_cast<std::size_t>(kit::param_int("timing_check_rows"));
  for (const std::size_t y : kit::sample_positions(static_cast<std::size_t>(height), drawn))
    rows.push_back(static_cast<int>(y));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

inline std::string rows_text(const std::vector<int>& rows) {
  return std::to_string(rows.size()) + " rows (the first and last " + std::to_string(kMaxFilterRadius + 1) +
         ", two where tiles meet, and random ones)";
}

// The input rows that the windows of output rows `rows` read, of the picture that `picture`
// makes (Rng::uniform_floats(width * height, low, high), as kit::fill_uniform_floats writes it
// on the GPU), made with Rng::uniform_float_at on every core without the rest of the picture.
inline convolution_reference::PictureRows picture_rows(const kit::Rng& picture, float low, float high, const Size& size,
                                                       int radius, const std::vector<int>& rows) {
  return {size.width, size.height, radius, rows, [&](std::size_t i) { return picture.uniform_float_at(i, low, high); }};
}

// The sum of the squares of every pixel of the picture that `picture` makes, on every core.
inline double sum_of_squares(const kit::Rng& picture, float low, float high, const Size& size) {
  const auto row = static_cast<std::size_t>(size.width);
  std::vector<double> row_sums(static_cast<std::size_t>(size.height));
  kit::parallel_for(row_sums.size(), static_cast<double>(size.pixels()), convolution_reference::kWorkPerThread,
                    [&](std::size_t y) {
                      double sum = 0.0;
                      for (std::size_t x = 0; x < row; ++x) {
                        const double p = picture.uniform_float_at(y * row + x, low, high);
                        sum += p * p;
                      }
                      row_sums[y] = sum;
                    });
  double sum = 0.0;
  for (const double part : row_sums) sum += part;
  return sum;
}

// The rows `rows` of a width-wide picture in device memory, one after the other.
inline std::vector<float> download_rows(const float* d_picture, int width, const std::vector<int>& rows) {
  const auto row = static_cast<std::size_t>(width);
  std::vector<float> out(rows.size() * row);
  for (std::size_t r = 0; r < rows.size(); ++r)
    CUDA_CHECK(cudaMemcpy(out.data() + r * row, d_picture + static_cast<std::size_t>(rows[r]) * row,
                          row * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

// Every output written and finite (finite pixels and weights give finite sums): none still
// holds the poison, and none is NaN from a read outside the picture.
inline bool expect_all_written(const std::vector<float>& got, const kit::CaseContext& context) {
  kit::detail::MismatchLog log(got.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!std::isfinite(got[i]))
      log.add(i, kit::is_poison(got[i]), [&] {
        return std::pair{std::string("a finite value"), kit::detail::show(got[i])};
      });
  return log.report("result", context);
}

// How many of the `count` floats at d_data (device memory) are not finite, counted on the GPU
// (convolution_checks.cu).
std::size_t count_not_finite(const float* d_data, std::size_t count);

// expect_all_written for a picture in device memory, counted on the GPU; only when some output
// is not finite is the whole picture copied to the CPU, to name the first ones.
inline bool expect_all_written_on_device(const float* d_picture, std::size_t count, const kit::CaseContext& context) {
  if (count_not_finite(d_picture, count) == 0) return true;
  std::vector<float> got(count);
  CUDA_CHECK(cudaMemcpy(got.data(), d_picture, count * sizeof(float), cudaMemcpyDeviceToHost));
  return expect_all_written(got, context);
}

// Where the convolution of the picture `picture` makes (every pixel, made again on the GPU from
// its stream, never read from the call's input) with `filter` differs from d_out by more than
// `units` times the sum of |weight| x |pixel| over the window, at any of its pixels: in double on
// the GPU, adding the window in the CPU reference's order, so each sum is the CPU's bit for bit
// (convolution_checks.cu).
kit::Found find_wrong_pixels(const float* d_out, const kit::Rng& picture, float low, float high, const Size& size,
                             const std::vector<float>& filter, int radius, double units);

// find_wrong_pixels at the pixels `positions` only (indices into the picture, row by row): its
// count is of those positions, and its first is a pixel's index.
kit::Found find_wrong_pixels_at(const float* d_out, const kit::Rng& picture, float low, float high, const Size& size,
                                const std::vector<float>& filter, int radius, double units,
                                const std::vector<std::size_t>& positions);

// A timed output (the whole picture, in device memory) against the reference for the picture that
// `picture` made: every pixel written and finite, then timing_check_pixels pixels compared on the
// GPU, one in each of as many equal parts of the picture (kit::sample_positions, drawn after the
// call from the operating system's entropy, so a submission cannot know them) and the first and
// last. Comparing every pixel took 14 ms a check at radius 7 (225 products in double a pixel), and
// a measurement checks some 50 calls while the class waits for the GPU; a call that gets a fraction
// f of its pixels wrong escapes one check with probability (1 - f)^samples (e^-65 for f = 0.1%), and
// must escape every checked call. The hidden tests still compare every pixel of every output they
// grade. When a compared pixel is wrong, every pixel is compared (find_wrong_pixels) for the
// report, and the CPU reference convolves the rows of the first few, for the message and as a
// second opinion (kit::report_found_on_device).
inline bool expect_timed_output(const float* d_out, const kit::Rng& picture, float low, float high, const Size& size,
                                const std::vector<float>& filter, int radius, const std::string& input,
                                const std::string& look_at) {
  const auto row = static_cast<std::size_t>(size.width);
  const kit::CaseContext context{input + ", every pixel compared", look_at + kNanHint, row};
  if (!expect_all_written_on_device(d_out, size.pixels(), context)) return false;
  const double units = error_bound(radius);
  const std::vector<std::size_t> sampled =
      kit::sample_positions(size.pixels(), static_cast<std::size_t>(kit::param_int("timing_check_pixels")));
  const kit::Found wrong_sampled = find_wrong_pixels_at(d_out, picture, low, high, size, filter, radius, units, sampled);
  if (wrong_sampled.count == 0) return true;
  // The same comparison on every pixel finds at least the sampled ones; should it not, the report
  // names the two references' disagreement as the tests' fault (the CPU finds more than it counts).
  const kit::Found every = find_wrong_pixels(d_out, picture, low, high, size, filter, radius, units);
  const kit::Found wrong = every.count > 0 ? every : wrong_sampled;
  const auto log_window = [&](const std::vector<float>& got, const std::vector<std::size_t>& positions,
                              kit::detail::MismatchLog& log) {
    std::vector<int> rows;  // the rows the positions lie in, ascending
    for (const std::size_t p : positions)
      if (rows.empty() || rows.back() != static_cast<int>(p / row)) rows.push_back(static_cast<int>(p / row));
    const convolution_reference::Expected expected = convolution_reference::convolve_rows(
        picture_rows(picture, low, high, size, radius, rows), filter, radius, rows);
    const auto at = [&](std::size_t i) {  // where positions[i] lies in `expected`
      return (positions[i] / row - static_cast<std::size_t>(rows.front())) * row + positions[i] % row;
    };
    std::vector<double> value(positions.size());
    for (std::size_t i = 0; i < positions.size(); ++i) value[i] = expected.value[at(i)];
    kit::detail::log_outside(
        got, value, [&](std::size_t i) { return units * expected.magnitude[at(i)]; },
        [&](std::size_t i) { return positions[i]; }, log);
  };
  return kit::report_found_on_device(d_out, size.pixels(), wrong, log_window, context);
}

}  // namespace convolution_checks
