// Lab 10 public tests: the ones you can run yourself (make 10-convolution).
#include <cmath>

#include "convolution_checks.cuh"
#include "fft_convolution.cuh"

using namespace convolution_checks;

// ---- Part 2: naive ---------------------------------------------------------------------------

TEST_CASE("convolve_naive: a one-tap filter shifts the picture and fills the edges with zeros") {
  check_shift(naive());
}
TEST_CASE("convolve_naive: random filters of every radius from 0 to 7") { check_every_radius(naive()); }
TEST_CASE("convolve_naive: one pixel and pictures one pixel wide or tall") { check_lines(naive()); }
TEST_CASE("convolve_naive: nothing written past the end") { check_guard(naive()); }
TEST_CASE("convolve_naive: a large picture") { check_large(naive()); }

// ---- Part 3: tiled ---------------------------------------------------------------------------

TEST_CASE("convolve_tiled: a one-tap filter shifts the picture and fills the edges with zeros") {
  check_shift(tiled());
}
TEST_CASE("convolve_tiled: random filters of every radius from 0 to 7") { check_every_radius(tiled()); }
TEST_CASE("convolve_tiled: one pixel and pictures one pixel wide or tall") { check_lines(tiled()); }

TEST_CASE("convolve_tiled: pictures whose sides are not multiples of the tile") {
  const int radius = int_param("tile_radius");
  for (const Size& size : kit::picture_sizes("tile_sizes"))
    if (!check_random(tiled(), size, radius, size.describe() + ", the last tiles partly outside it", kLookAtTileEdges))
      return;
}

TEST_CASE("convolve_tiled: nothing written past the end") { check_guard(tiled()); }
TEST_CASE("convolve_tiled: a large picture") { check_large(tiled()); }

// ---- Timing ----------------------------------------------------------------------------------

namespace {

// The cuFFT convolution of the picture that `picture` made (already in d_in) with the same
// filter, timed with `options` and checked: its rate (GB/s, counted as for the kernel) as a peer.
kit::Ceiling fft_convolution_ceiling(const float* d_in, const kit::Rng& picture, float low, float high,
                                     const Size& size, const std::vector<float>& filter, int radius, double bytes,
                                     const kit::TimingOptions& options) {
  FftConvolution fft(size.width, size.height, filter, radius);
  kit::DeviceBuffer<float> d_fft_out(size.pixels());
  const kit::Timing timing = kit::time_device_work([&] { fft.run(d_in, d_fft_out.data()); }, options);

  // The yardstick must do the same job. Its error is bounded in the 2-norm (lab.toml explains
  // the bound): ||got - exact||_2 <= (2 eta + 5u) ||filter||_1 ||picture||_2, with
  // eta = fft_error_factor * log2(transform size) * u, u = 2^-24; the error on some rows is
  // at most the error on all of them.
  d_fft_out.poison();
  fft.run(d_in, d_fft_out.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string input = "the cuFFT yardstick on the timing picture (a problem of the lab, not of your code)";
  if (expect_all_written_on_device(
          d_fft_out.data(), size.pixels(),
          {input, "labs/10-convolution/tests/fft_convolution.cu", static_cast<std::size_t>(size.width)})) {
    const std::vector<int> rows = rows_to_check(size.height);
    const convolution_reference::Expected expected = convolution_reference::convolve_rows(
        picture_rows(picture, low, high, size, radius, rows), filter, radius, rows);
    const std::vector<float> got = download_rows(d_fft_out.data(), size.width, rows);
    double error2 = 0.0, filter1 = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) error2 += std::pow(got[i] - expected.value[i], 2);
    for (const float f : filter) filter1 += std::fabs(f);
    const double picture2 = sum_of_squares(picture, low, high, size);
    const double u = 0x1.0p-24;
    const double eta = kit::param_double("fft_error_factor") *
                       std::log2(static_cast<double>(fft.padded_width()) * fft.padded_height()) * u;
    const double bound = (2 * eta + 5 * u) * filter1 * std::sqrt(picture2);
    CHECK_MESSAGE(std::sqrt(error2) <= bound, input << ": the 2-norm of its error on " << rows_text(rows) << " is "
                                                    << std::sqrt(error2) << ", above the bound " << bound);
  }
  return {"cuFFT convolution (padded to " + std::to_string(fft.padded_width()) + "x" +
              std::to_string(fft.padded_height()) + ")",
          bytes / timing.median_s / 1e9, /*bound=*/false};  // a peer: a direct convolution may beat it
}

// Times `kernel` on the timing picture with a random filter of `radius`, against a
// device-to-device copy of as many bytes (a bound: the least any convolution moves) and, when
// `fft_peer`, the cuFFT convolution (a peer, not a bound: a direct convolution may beat it).
// Every call gets a new picture, written on the GPU from its own random stream; the filter stays
// in constant memory. The harness checks that every output pixel is written each time; after
// calls it chooses at random, the output is checked to be finite everywhere and 65536 pixels
// drawn after the call are compared on the GPU with the convolution in double
// (expect_timed_output). A fast kernel takes a fraction of a millisecond, so the harness may make
// several sets of the pictures and time several calls in a row, each on its own set.
void time_convolution(const Kernel& kernel, const std::string& measurement, int radius, bool fft_peer) {
  const Size size = kit::picture_size("timing_size");
  const std::size_t pixels = size.pixels();
  constexpr float kLow = 0.0f, kHigh = 1.0f;  // brightness, as random_picture makes it
  const std::vector<float> filter = random_filter(radius);
  upload_filter(filter.data(), radius);
  const auto options = kit::TimingOptions::from_params();
  // Every pixel read once and written once: the least any convolution moves.
  const double bytes = 2.0 * static_cast<double>(pixels) * sizeof(float);
  const std::string input = "the timing picture, " + size.describe() + ", filter radius " + std::to_string(radius);

  kit::TimedWork work;
  work.name = measurement;
  work.work_per_call = bytes;
  if (fft_peer) {  // timed and checked on a picture of its own, gone before the sets are made
    const kit::Rng picture = kit::Rng::for_case("fft picture");
    kit::DeviceBuffer<float> d_picture(pixels);
    kit::fill_uniform_floats(d_picture.data(), pixels, picture, kLow, kHigh);
    work.ceilings.push_back(
        fft_convolution_ceiling(d_picture.data(), picture, kLow, kHigh, size, filter, radius, bytes, options));
  }
  // A bound (copy_ceiling marks it so): the work is memory-bound, and no convolution moves fewer bytes.
  work.ceilings.push_back(kit::copy_ceiling(static_cast<std::size_t>(bytes), options));
  work.look_at = kernel.look_at;
  work.sets_from([&] {
    const auto d_in = kit::shared_device_buffer<float>(pixels), d_out = kit::shared_device_buffer<float>(pixels);
    kit::WorkSet set;
    set.call = [=, &kernel] { kernel.launch(d_in->data(), d_out->data(), size.width, size.height, radius); };
    set.outputs = {kit::Output::device("out", d_out->data(), pixels)};
    set.refresh = [=](const kit::Call& call) {
      kit::fill_uniform_floats(d_in->data(), pixels, call.rng("picture"), kLow, kHigh);
    };
    set.verify = [=, &kernel](const kit::Call& call) {
      return expect_timed_output(d_out->data(), call.rng("picture"), kLow, kHigh, size, filter, radius,
                                 input + ", the picture of " + call.name(), kernel.look_at);
    };
    return set;
  });
  kit::time_work(work, options);
}

}  // namespace

TEST_CASE("convolution timing: naive kernel with radius 2 on a picture far larger than the L2 cache" * KIT_TIMING) {
  time_convolution(naive(), "convolve_naive", int_param("timing_radius"), false);
}

TEST_CASE("convolution timing: tiled kernel with radius 2 on a picture far larger than the L2 cache" * KIT_TIMING) {
  time_convolution(tiled(), "convolve_tiled", int_param("timing_radius"), false);
}

TEST_CASE("convolution timing: tiled kernel with radius 7 against a convolution by cuFFT" * KIT_TIMING) {
  time_convolution(tiled(), "convolve_tiled_large_filter", int_param("large_filter_radius"), true);
}
