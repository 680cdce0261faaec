// The starting conditions themselves (nbody_setups.hpp), checked without a GPU. The timing's
// Plummer sphere is made on every core, so it must be one sphere for a seed whatever the number of
// threads, and still the model the handout describes: the tests are only as good as their inputs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kit/kit.cuh"
#include "nbody_setups.hpp"

using namespace nbody_setups;

namespace {

constexpr double kPlummerRadius = 3.0 * 3.14159265358979323846 / 16.0;

bool same_bits(const Bodies& a, const Bodies& b) {
  return a.pos.size() == b.pos.size() && a.vel.size() == b.vel.size() &&
         std::memcmp(a.pos.data(), b.pos.data(), a.pos.size() * sizeof(float4)) == 0 &&
         std::memcmp(a.vel.data(), b.vel.data(), a.vel.size() * sizeof(float3)) == 0;
}

}  // namespace

TEST_CASE("nbody setups: a Plummer sphere is the same for a seed on any number of threads" * KIT_CPU_ONLY) {
  const int block = static_cast<int>(kPlummerBodiesPerBlock);
  // One body, one block and a part, and three blocks and a part.
  for (const int n : {1, block + 1, 3 * block + 5}) {
    const Bodies alone = plummer_sphere(n, 17, {0, 0, 0}, {0, 0, 0}, 1);
    for (const std::size_t threads : {2, 5, 16}) {
      INFO("n = " << n << ", " << threads << " threads");
      CHECK(same_bits(alone, plummer_sphere(n, 17, {0, 0, 0}, {0, 0, 0}, threads)));
    }
  }
  // Each block draws from a stream of its own: no block repeats another, and another seed gives another sphere.
  const Bodies two = plummer_sphere(2 * block, 17);
  CHECK(std::memcmp(two.pos.data(), two.pos.data() + block, kPlummerBodiesPerBlock * sizeof(float4)) != 0);
  CHECK_FALSE(same_bits(plummer_sphere(block + 1, 17), plummer_sphere(block + 1, 18)));
}

TEST_CASE("nbody setups: a Plummer sphere has the model's total mass and half-mass radius and kinetic energy" *
          KIT_CPU_ONLY) {
  const int n = 262144;  // the timing's sphere
  const Bodies bodies = plummer_sphere(n, 29);
  double mass = 0.0, kinetic = 0.0;
  std::vector<double> radii, kinetic_shares;  // each body's kinetic energy times n: its share of the mean
  for (std::size_t i = 0; i < bodies.pos.size(); ++i) {
    const float4 p = bodies.pos[i];
    const float3 v = bodies.vel[i];
    const double speed2 = double(v.x) * v.x + double(v.y) * v.y + double(v.z) * v.z;
    mass += p.w;
    kinetic += 0.5 * p.w * speed2;
    radii.push_back(std::sqrt(double(p.x) * p.x + double(p.y) * p.y + double(p.z) * p.z));
    kinetic_shares.push_back(0.5 * n * p.w * speed2);
  }
  // Masses are scaled to add up to 1 in double, then each rounded to float: off by 2^-24 of the total at most.
  CHECK(mass == doctest::Approx(1.0).epsilon(1e-6));
  // Radii are cut at 10 Plummer radii (float positions: a rounding more).
  CHECK(*std::max_element(radii.begin(), radii.end()) <= 10.0 * kPlummerRadius * (1.0 + 1e-6));

  // The mass inside r is M(r) = r^3 / (r^2 + a^2)^(3/2); cut at 10 a it keeps M(10 a) = 0.985185, so half the
  // bodies lie within r_h = 0.758392, where the radii's density is 0.744227. A sample median of n radii is off
  // by 1 / (2 density sqrt(n)) in one standard error: this allows six.
  std::nth_element(radii.begin(), radii.begin() + n / 2, radii.end());
  const double median = radii[static_cast<std::size_t>(n / 2)];
  const double median_error = 1.0 / (2.0 * 0.744227 * std::sqrt(double(n)));
  INFO("median radius " << median << ", the model's 0.758392, one standard error " << median_error);
  CHECK(std::fabs(median - 0.758392) <= 6.0 * median_error);

  // Speeds drawn from the distribution function give <v^2> = 1 / (2 sqrt(r^2 + a^2)) at radius r, so the cut
  // model's kinetic energy is 0.253336 (1/4 uncut); the sum is a mean of n independent shares: six standard
  // errors of it.
  double mean = 0.0, square = 0.0;
  for (const double share : kinetic_shares) mean += share / n;
  for (const double share : kinetic_shares) square += (share - mean) * (share - mean) / (n - 1);
  const double kinetic_error = std::sqrt(square / n);
  INFO("kinetic energy " << kinetic << ", the model's 0.253336, one standard error " << kinetic_error);
  CHECK(std::fabs(kinetic - 0.253336) <= 6.0 * kinetic_error);
}
