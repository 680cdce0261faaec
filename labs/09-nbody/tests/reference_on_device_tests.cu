// The forces the checks compare against are summed on the GPU where they are many
// (gpu_reference_forces, forces_on_device.cu); here those sums are checked against the CPU's sums of
// the same terms (cpu_reference_forces). The two add the same doubles in different orders, so each sum may
// differ by the rounding of its additions: at most (n - 1) units of 2^-53 times the magnitude of its
// terms for either, and a few more for each term's own operations, which the GPU may fuse. The
// allowance, 2 (n + 4) 2^-53 times the magnitude, is some 10^-12 here, while a wrong term (softening
// left out, a body skipped or counted twice) moves a sum by far more.
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "nbody_checks.cuh"

using namespace nbody_checks;

namespace {

// The sums of `gpu` that differ from `cpu`'s by more than the allowance, each of n terms.
std::size_t sums_apart(const Forces& gpu, const Forces& cpu, std::size_t n) {
  const double allowance = 2.0 * static_cast<double>(n + 4) * 0x1.0p-53;
  std::size_t apart = 0;
  for (std::size_t k = 0; k < cpu.a.size(); ++k)
    if (!(std::fabs(gpu.a[k] - cpu.a[k]) <= allowance * cpu.magnitude[k / 3])) ++apart;
  for (std::size_t t = 0; t < cpu.magnitude.size(); ++t)
    if (!(std::fabs(gpu.magnitude[t] - cpu.magnitude[t]) <= allowance * cpu.magnitude[t])) ++apart;
  return apart;
}

void expect_same_forces(const std::vector<float4>& pos, const std::string& what) {
  CAPTURE(what);
  const State s = to_state(pos, {});
  const std::size_t n = pos.size();
  const kit::remote::JudgeAlone alone("the reference forces");  // as every caller of gpu_reference_forces
  const Forces cpu = cpu_reference_forces(s, softening2());
  const Forces gpu = gpu_reference_forces(s, softening2());
  REQUIRE(gpu.a.size() == 3 * n);
  CHECK(sums_apart(gpu, cpu, n) == 0);
  // Chosen bodies, as a timed call's check asks: the first, one in the middle twice, and the last.
  const std::vector<std::size_t> targets{0, n / 2, n / 2, n - 1};
  const Forces cpu_at = cpu_reference_forces(s, softening2(), targets);
  const Forces gpu_at = gpu_reference_forces(s, softening2(), targets);
  REQUIRE(gpu_at.magnitude.size() == targets.size());
  CHECK(sums_apart(gpu_at, cpu_at, n) == 0);
  for (std::size_t t = 0; t < targets.size(); ++t) CHECK(gpu_at.magnitude[t] == gpu.magnitude[targets[t]]);
}

}  // namespace

TEST_CASE("nbody reference: the forces summed on the GPU agree with the CPU's") {
  // 1 and 2 bodies, a cloud of a thousand, a prime count that fills no block of 256 threads, and a
  // Plummer sphere, dense in its centre.
  for (const int n : {1, 2, 1000, 4099})
    expect_same_forces(nbody_setups::random_cloud(n, case_seed("cloud" + std::to_string(n))).pos,
                       "a random cloud of " + std::to_string(n) + " bodies");
  expect_same_forces(nbody_setups::plummer_sphere(3001, case_seed("plummer")).pos, "a Plummer sphere of 3001 bodies");
  // Bodies three at a place: the r = 0 pairs add exactly nothing, on both sides.
  std::vector<float4> stacked;
  for (const float4& p : nbody_setups::random_cloud(300, case_seed("stacked")).pos)
    for (int copy = 0; copy < 3; ++copy) stacked.push_back(p);
  expect_same_forces(stacked, "300 places with three bodies at each");
}
