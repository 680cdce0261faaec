// Lab 09 starting conditions, shared by the tests and the demo: a random cloud
// and a Plummer sphere, both drawn from a seeded kit::Rng.
#pragma once

#include <vector_functions.h>  // make_float3, make_float4
#include <vector_types.h>      // float3, float4

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kit/parallel.hpp"
#include "kit/random.hpp"

namespace nbody_setups {

struct Bodies {
  std::vector<float4> pos;  // (x, y, z, mass)
  std::vector<float3> vel;
};

// Uniform doubles in [0, 1), taken one at a time, for rejection sampling (which
// takes as many as it needs). Drawn in chunks from counter-based kit::Rng streams,
// so the same seed gives the same bodies on every machine.
class Uniforms {
 public:
  explicit Uniforms(std::uint64_t seed) : seed_(seed) {}
  double next() {
    if (used_ == chunk_.size()) {
      chunk_ = kit::Rng(seed_ ^ (0x9E3779B97F4A7C15ull * ++chunks_)).uniform_doubles(kChunk, 0.0, 1.0);
      used_ = 0;
    }
    return chunk_[used_++];
  }

 private:
  static constexpr std::size_t kChunk = 1 << 16;
  std::uint64_t seed_;
  std::uint64_t chunks_ = 0;
  std::vector<double> chunk_;
  std::size_t used_ = 0;
};

struct Vec3 {
  double x, y, z;
};

// A direction uniform on the sphere: a point uniform in the unit ball (by
// rejection from the cube), scaled to length 1.
inline Vec3 random_direction(Uniforms& u) {
  for (;;) {
    const Vec3 p{2.0 * u.next() - 1.0, 2.0 * u.next() - 1.0, 2.0 * u.next() - 1.0};
    const double r2 = p.x * p.x + p.y * p.y + p.z * p.z;
    if (r2 > 1e-6 && r2 <= 1.0) {
      const double r = std::sqrt(r2);
      return {p.x / r, p.y / r, p.z / r};
    }
  }
}

// Masses uniform in [0.5, 1.5] times the mean, scaled so that they add up to
// `total`: unequal masses, so that a force that uses the wrong body's mass shows.
inline std::vector<float> random_masses(int n, double total, Uniforms& u) {
  std::vector<double> m(static_cast<std::size_t>(n));
  double sum = 0.0;
  for (auto& mass : m) sum += (mass = 0.5 + u.next());
  std::vector<float> masses(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) masses[i] = static_cast<float>(m[i] * total / sum);
  return masses;
}

// n bodies uniform in the cube [-1, 1]^3, at rest, with total mass 1.
inline Bodies random_cloud(int n, std::uint64_t seed) {
  Uniforms u(seed);
  const std::vector<float> masses = random_masses(n, 1.0, u);
  Bodies bodies{std::vector<float4>(static_cast<std::size_t>(n)), std::vector<float3>(static_cast<std::size_t>(n))};
  for (std::size_t i = 0; i < bodies.pos.size(); ++i) {
    bodies.pos[i] = make_float4(static_cast<float>(2.0 * u.next() - 1.0), static_cast<float>(2.0 * u.next() - 1.0),
                                static_cast<float>(2.0 * u.next() - 1.0), masses[i]);
    bodies.vel[i] = make_float3(0.0f, 0.0f, 0.0f);
  }
  return bodies;
}

// A Plummer sphere's bodies are drawn in blocks of this many, each block from a random stream of
// its own, so that every core can make a share (the timing makes a sphere of 262144 bodies for
// each timed call, while the class waits for the GPU) and a seed gives the same sphere whatever the
// number of threads.
constexpr std::size_t kPlummerBodiesPerBlock = 4096;

// A Plummer sphere in Henon units (G = 1, total mass 1, total energy -1/4, so the
// Plummer radius is 3 pi / 16 and a crossing time is about 2.8), centred on
// `centre` and moving as a whole with `bulk_velocity`. Radii from the inverse of the
// cumulative mass, cut at 10 Plummer radii; speeds by von Neumann rejection from
// the distribution function, as in Aarseth, Henon and Wielen (1974), A&A 37, 183.
// `threads`: how many make it (0: as many as the work is worth).
inline Bodies plummer_sphere(int n, std::uint64_t seed, Vec3 centre = {0, 0, 0}, Vec3 bulk_velocity = {0, 0, 0},
                             std::size_t threads = 0) {
  const double kPi = 3.14159265358979323846;
  const double scale = 3.0 * kPi / 16.0;
  Uniforms u(seed);
  const std::vector<float> masses = random_masses(n, 1.0, u);
  const std::size_t count = static_cast<std::size_t>(n);
  Bodies bodies{std::vector<float4>(count), std::vector<float3>(count)};
  const auto make_block = [&](std::size_t block) {
    Uniforms own(kit::detail::random_bits(seed, block));  // a stream for the block, apart from the masses'
    const std::size_t end = std::min(count, (block + 1) * kPlummerBodiesPerBlock);
    for (std::size_t i = block * kPlummerBodiesPerBlock; i < end; ++i) {
      double r = 0.0;
      do {
        const double mass_fraction = own.next();
        r = mass_fraction > 0.0 ? scale / std::sqrt(std::pow(mass_fraction, -2.0 / 3.0) - 1.0) : 1e30;
      } while (!(r <= 10.0 * scale));
      double q = 0.0, y = 1.0;
      do {
        q = own.next();
        y = 0.1 * own.next();
      } while (y > q * q * std::pow(1.0 - q * q, 3.5));
      const double speed = q * std::sqrt(2.0) * std::pow(r * r + scale * scale, -0.25);
      const Vec3 where = random_direction(own), heading = random_direction(own);
      bodies.pos[i] = make_float4(static_cast<float>(centre.x + r * where.x), static_cast<float>(centre.y + r * where.y),
                                  static_cast<float>(centre.z + r * where.z), masses[i]);
      bodies.vel[i] = make_float3(static_cast<float>(bulk_velocity.x + speed * heading.x),
                                  static_cast<float>(bulk_velocity.y + speed * heading.y),
                                  static_cast<float>(bulk_velocity.z + speed * heading.z));
    }
  };
  const std::size_t blocks = (count + kPlummerBodiesPerBlock - 1) / kPlummerBodiesPerBlock;
  kit::for_each_index(blocks, threads != 0 ? threads : kit::threads_for(static_cast<double>(blocks), 1.0), make_block);
  return bodies;
}

}  // namespace nbody_setups
