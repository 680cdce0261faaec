// Lab 09 checks shared by the public and the hidden tests: the reference in double
// precision (forces on the GPU, leapfrog, energy, momentum), the error bounds that
// lab.toml justifies, and the comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "kit/remote.hpp"
#include "nbody.cuh"
#include "nbody_setups.hpp"

namespace nbody_checks {

using nbody_setups::Bodies;

inline const std::string kLookAtInteraction = "add_body_acceleration in nbody.cu";
inline const std::string kLookAtNaive = "nbody_naive_kernel and launch_nbody_naive in nbody.cu";
inline const std::string kLookAtTiled = "nbody_tiled_kernel and launch_nbody_tiled in nbody.cu";
inline const std::string kLookAtLeapfrog =
    "leapfrog_kick_drift_kernel, leapfrog_kick_kernel, launch_leapfrog_step and nbody_simulate in nbody.cu";

// Unit roundoff of float: a correctly rounded operation is off by at most this
// much relative to its exact result.
constexpr double kUnitRoundoff = 0x1.0p-24;

using ForceLauncher = void (*)(const float4*, float3*, int, float);

struct Kernel {
  ForceLauncher launch;
  std::string name;     // e.g. "tiled kernel"
  std::string look_at;  // where the student should look
};
inline Kernel naive() { return {launch_nbody_naive, "naive kernel", kLookAtNaive}; }
inline Kernel tiled() { return {launch_nbody_tiled, "tiled kernel", kLookAtTiled}; }

inline float softening2() { return static_cast<float>(kit::param_double("softening2")); }
inline float time_step() { return static_cast<float>(kit::param_double("dt")); }
// NaN bodies after every array of bodies (positions, velocities, accelerations).
inline std::size_t guard_bodies() { return static_cast<std::size_t>(kit::param_int("guard_bodies")); }

// A seed for this test case's bodies, from its own kit::Rng stream.
inline std::uint64_t case_seed(const std::string& stream) { return kit::Rng::for_case(stream).seed(); }

// The CPU's double-precision sums (the energy, and the forces the GPU's are checked against) are O(n^2),
// so they run on every core (kit::parallel_for), a thread for every kInteractionsPerThread pair
// interactions or more: a quarter of a millisecond, far above a thread's start.
inline constexpr double kInteractionsPerThread = 1 << 18;

// ---------------------------------------------------------------------------
// The reference, in double precision.

// Positions and velocities as 3n doubles (x0, y0, z0, x1, ...), masses as n.
struct State {
  std::vector<double> x, v, m;
  std::size_t size() const { return m.size(); }
};

inline State to_state(const std::vector<float4>& pos, const std::vector<float3>& vel) {
  State s{std::vector<double>(3 * pos.size()), std::vector<double>(3 * pos.size(), 0.0), std::vector<double>(pos.size())};
  for (std::size_t i = 0; i < pos.size(); ++i) {
    s.x[3 * i] = pos[i].x, s.x[3 * i + 1] = pos[i].y, s.x[3 * i + 2] = pos[i].z, s.m[i] = pos[i].w;
    if (!vel.empty()) s.v[3 * i] = vel[i].x, s.v[3 * i + 1] = vel[i].y, s.v[3 * i + 2] = vel[i].z;
  }
  return s;
}

struct Forces {
  std::vector<double> a;          // 3 per target body
  std::vector<double> magnitude;  // per target: sum over j of |m_j r_ij| / (r_ij^2 + eps^2)^(3/2)
};

// Accelerations of the bodies `targets` (all n when empty) due to all n bodies, on the CPU: the
// reference where the pairs are few (reference_forces), and what the GPU's sums are checked against
// (reference_on_device_tests.cu).
inline Forces cpu_reference_forces(const State& s, double softening2, const std::vector<std::size_t>& targets = {}) {
  const std::size_t n = s.size();
  const std::size_t count = targets.empty() ? n : targets.size();
  Forces f{std::vector<double>(3 * count, 0.0), std::vector<double>(count, 0.0)};
  kit::parallel_for(count, static_cast<double>(count) * n, kInteractionsPerThread, [&](std::size_t t) {
    const std::size_t i = targets.empty() ? t : targets[t];
    const double xi = s.x[3 * i], yi = s.x[3 * i + 1], zi = s.x[3 * i + 2];
    double ax = 0.0, ay = 0.0, az = 0.0, magnitude = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = s.x[3 * j] - xi, dy = s.x[3 * j + 1] - yi, dz = s.x[3 * j + 2] - zi;
      const double r2 = dx * dx + dy * dy + dz * dz;
      const double d2 = r2 + softening2;
      const double strength = s.m[j] / (d2 * std::sqrt(d2));
      ax += strength * dx, ay += strength * dy, az += strength * dz;
      magnitude += strength * std::sqrt(r2);
    }
    f.a[3 * t] = ax, f.a[3 * t + 1] = ay, f.a[3 * t + 2] = az;
    f.magnitude[t] = magnitude;
  });
  return f;
}

// The same accelerations, summed in double on the GPU by the judge (forces_on_device.cu): milliseconds,
// where the CPU took 1.3 s of each student's correctness tests for 32768 bodies, and 0.16 s of each timed
// call's sampled check while the student held the GPU alone. The bodies lie in the judge's device memory
// meanwhile, so the caller holds a kit::remote::JudgeAlone: the runner stopped and none of its work on the
// GPU (kit/remote.hpp says why).
Forces gpu_reference_forces(const State& s, double softening2, const std::vector<std::size_t>& targets = {});

// Pair interactions from which a reference is summed on the GPU. Below it the CPU's sums take a few
// milliseconds of the cores, and spare the quiet moment a JudgeAlone must find among other students'
// programs (one it cannot find sends the whole case to be run again with the GPU to itself).
inline constexpr double kGpuReferenceFrom = 1 << 25;
inline bool summed_on_gpu(double interactions) { return interactions >= kGpuReferenceFrom; }

// The reference forces of the checks: on the GPU where they are many, on the CPU where they are few.
inline Forces reference_forces(const State& s, double softening2, const std::vector<std::size_t>& targets = {}) {
  const double count = static_cast<double>(targets.empty() ? s.size() : targets.size());
  if (!summed_on_gpu(count * static_cast<double>(s.size()))) return cpu_reference_forces(s, softening2, targets);
  const kit::remote::JudgeAlone alone("the reference forces");
  return gpu_reference_forces(s, softening2, targets);
}

// The float error allowed in an acceleration, relative to the sum of the
// magnitudes of its terms (lab.toml explains the two constants).
inline double acceleration_error_scale(std::size_t n) {
  return (kit::param_double("acc_ulps_per_term") + kit::param_double("acc_ulps_per_sqrt_n") * std::sqrt(double(n))) *
         kUnitRoundoff;
}

inline double max_abs3(const std::vector<double>& v, std::size_t i) {
  return std::max({std::fabs(v[3 * i]), std::fabs(v[3 * i + 1]), std::fabs(v[3 * i + 2])});
}

// `steps` kick-drift-kick steps in double precision, plus a running bound, per
// body, on how far a correct float computation can be from it (lab.toml: sim_safety).
struct Leapfrog {
  State state;
  std::vector<double> position_error, velocity_error;  // per body, before the safety factor
};

inline Leapfrog reference_leapfrog(State s, int steps, double dt, double softening2) {
  const std::size_t n = s.size();
  const double rel = acceleration_error_scale(n), u = kUnitRoundoff;
  // One JudgeAlone for the whole run where its forces are many, not one a step: each would have to find
  // its own quiet moment among other students' programs.
  const bool on_gpu = summed_on_gpu(static_cast<double>(n) * static_cast<double>(n) * (steps + 1));
  std::optional<kit::remote::JudgeAlone> alone;
  if (on_gpu) alone.emplace("the reference simulation");
  const auto forces_at = [&](const State& at) {
    return on_gpu ? gpu_reference_forces(at, softening2) : cpu_reference_forces(at, softening2);
  };
  Forces f = forces_at(s);
  std::vector<double> ex(n, 0.0), ev(n, 0.0);
  for (int step = 0; step < steps; ++step) {
    std::vector<double> velocity_half(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (int k = 0; k < 3; ++k) {
        s.v[3 * i + k] += 0.5 * dt * f.a[3 * i + k];
        s.x[3 * i + k] += dt * s.v[3 * i + k];
      }
      // The half kick adds half a step of acceleration error and rounds v once;
      // the drift adds dt times that velocity error and rounds x once.
      velocity_half[i] = ev[i] + 0.5 * dt * rel * f.magnitude[i] + u * max_abs3(s.v, i);
      ex[i] += dt * velocity_half[i] + u * max_abs3(s.x, i);
    }
    f = forces_at(s);
    for (std::size_t i = 0; i < n; ++i) {
      for (int k = 0; k < 3; ++k) s.v[3 * i + k] += 0.5 * dt * f.a[3 * i + k];
      ev[i] = velocity_half[i] + 0.5 * dt * rel * f.magnitude[i] + u * max_abs3(s.v, i);
    }
  }
  return {s, ex, ev};
}

inline double total_energy(const State& s, double softening2) {
  const std::size_t n = s.size();
  std::vector<double> potential(n, 0.0);
  kit::parallel_for(n, 0.5 * static_cast<double>(n) * n, kInteractionsPerThread, [&](std::size_t i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double dx = s.x[3 * j] - s.x[3 * i], dy = s.x[3 * j + 1] - s.x[3 * i + 1],
                   dz = s.x[3 * j + 2] - s.x[3 * i + 2];
      potential[i] -= s.m[i] * s.m[j] / std::sqrt(dx * dx + dy * dy + dz * dz + softening2);
    }
  });
  double energy = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v2 = s.v[3 * i] * s.v[3 * i] + s.v[3 * i + 1] * s.v[3 * i + 1] + s.v[3 * i + 2] * s.v[3 * i + 2];
    energy += 0.5 * s.m[i] * v2 + potential[i];
  }
  return energy;
}

struct Vec3 {
  double x = 0, y = 0, z = 0;
};
inline Vec3 momentum(const State& s) {
  Vec3 p;
  for (std::size_t i = 0; i < s.size(); ++i)
    p.x += s.m[i] * s.v[3 * i], p.y += s.m[i] * s.v[3 * i + 1], p.z += s.m[i] * s.v[3 * i + 2];
  return p;
}
inline Vec3 centre_of_mass(const State& s) {
  Vec3 c;
  double mass = 0.0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    c.x += s.m[i] * s.x[3 * i], c.y += s.m[i] * s.x[3 * i + 1], c.z += s.m[i] * s.x[3 * i + 2];
    mass += s.m[i];
  }
  return {c.x / mass, c.y / mass, c.z / mass};
}
inline std::string show(const Vec3& v) {
  std::ostringstream text;
  text.precision(6);
  text << "(" << v.x << ", " << v.y << ", " << v.z << ")";
  return text.str();
}

// ---------------------------------------------------------------------------
// Device buffers and comparisons.

// 0xFF bytes: NaN in every float of a float3 or float4 (kit's poison for float;
// DeviceBuffer::poison() would pick the integer pattern for these struct types).
template <class T>
void poison_floats(kit::DeviceBuffer<T>& buffer) {
  if (buffer.size() > 0) CUDA_CHECK(cudaMemset(buffer.data(), 0xFF, buffer.bytes()));
}

template <class T>
std::vector<float> flatten(const std::vector<T>& values, std::size_t first = 0, std::size_t count = SIZE_MAX) {
  constexpr std::size_t kFloats = sizeof(T) / sizeof(float);
  count = std::min(count, values.size() - std::min(first, values.size()));
  std::vector<float> flat(count * kFloats);
  if (count > 0) std::memcpy(flat.data(), values.data() + first, flat.size() * sizeof(float));
  return flat;
}

inline float4 nan_body() {
  const float nan = kit::poison_value<float>();
  return make_float4(nan, nan, nan, nan);
}

// Accelerations against the reference: each component within the float error
// bound of its sum (relative to the sum of the magnitudes of its terms).
inline bool expect_accelerations(const std::vector<float>& got_flat, const Forces& ref, std::size_t n,
                                 const std::string& input, const std::string& look_at) {
  const double rel = acceleration_error_scale(n);
  return kit::expect_within(
      got_flat, ref.a, [&](std::size_t k) { return rel * ref.magnitude[k / 3]; },
      {input + " (rows are bodies, columns x y z)", look_at, 3});
}

// Runs a force kernel on `bodies` and compares every acceleration. The positions
// are followed by `guard` NaN bodies that must add nothing (a kernel that reads
// past n picks them up) and the accelerations by `guard` poisoned slots that
// must stay untouched. guard = 0 gives arrays of exactly n bodies, for
// compute-sanitizer, whose memcheck sees an access past an end only where
// nothing is allocated.
inline bool check_forces(const Kernel& kernel, const std::vector<float4>& pos, const std::string& input,
                         std::size_t guard = guard_bodies(), int repeats = 1) {
  const std::size_t n = pos.size();
  std::vector<float4> padded = pos;
  padded.resize(n + guard, nan_body());
  kit::DeviceBuffer<float4> d_pos(padded);
  kit::DeviceBuffer<float3> d_acc(n + guard);
  const Forces ref = reference_forces(to_state(pos, {}), softening2());
  bool ok = true;
  for (int run = 0; run < repeats && ok; ++run) {
    poison_floats(d_acc);
    kernel.launch(d_pos.data(), d_acc.data(), static_cast<int>(n), softening2());
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float3> all = d_acc.download();
    const std::string which = repeats > 1 ? " (run " + std::to_string(run + 1) + " of " + std::to_string(repeats) + ")" : "";
    ok = expect_accelerations(flatten(all, 0, n), ref, n, input + which, kernel.look_at) && ok;
    if (guard > 0)
      ok = kit::expect_guard_untouched(flatten(all, n), 3 * n,
                                       {input + which + " (rows are bodies, columns x y z)",
                                        kernel.name + ": a thread whose body is n or beyond must not write acc", 3}) &&
           ok;
  }
  return ok;
}

// The n = 1 and n = 2 cases, and a random cloud of n bodies.
inline void check_single_body(const Kernel& kernel) {
  check_forces(kernel, nbody_setups::random_cloud(1, case_seed("bodies")).pos,
               "one body (n = 1): it must not pull on itself, so its acceleration is exactly 0");
}
inline void check_two_bodies(const Kernel& kernel) {
  check_forces(kernel, nbody_setups::random_cloud(2, case_seed("bodies")).pos,
               "two bodies (n = 2) of different masses");
}
inline void check_cloud(const Kernel& kernel, int n, const std::string& what) {
  check_forces(kernel, nbody_setups::random_cloud(n, case_seed("bodies")).pos,
               "a random cloud of n = " + std::to_string(n) + " bodies" + what);
}

// A leapfrog run's outputs against the double-precision reference.
inline bool expect_state(const std::vector<float4>& pos, const std::vector<float3>& vel, const Leapfrog& ref,
                         const std::string& input) {
  const double safety = kit::param_double("sim_safety");
  std::vector<double> expected_pos(4 * pos.size());
  for (std::size_t i = 0; i < pos.size(); ++i) {
    for (int k = 0; k < 3; ++k) expected_pos[4 * i + k] = ref.state.x[3 * i + k];
    expected_pos[4 * i + 3] = ref.state.m[i];
  }
  const bool pos_ok = kit::expect_within(
      flatten(pos), expected_pos,
      [&](std::size_t k) { return k % 4 == 3 ? 0.0 : safety * ref.position_error[k / 4]; },
      {input + ": positions (rows are bodies, columns x y z and the mass, which must not change)", kLookAtLeapfrog, 4});
  const bool vel_ok = kit::expect_within(
      flatten(vel), ref.state.v, [&](std::size_t k) { return safety * ref.velocity_error[k / 3]; },
      {input + ": velocities (rows are bodies, columns x y z)", kLookAtLeapfrog, 3});
  return pos_ok && vel_ok;
}

// d_acc after a step must hold the accelerations at the positions it returned.
inline bool expect_final_accelerations(const std::vector<float4>& pos, const std::vector<float3>& acc,
                                       const std::string& input) {
  const Forces ref = reference_forces(to_state(pos, {}), softening2());
  return expect_accelerations(flatten(acc), ref, pos.size(),
                              input + ": the accelerations left in d_acc, which must be those at the final positions",
                              kLookAtLeapfrog);
}

// The first `count` elements of a device array, and the rest.
template <class T>
std::vector<T> first_part(const kit::DeviceBuffer<T>& buffer, std::size_t count) {
  std::vector<T> all = buffer.download();
  all.resize(count);
  return all;
}
template <class T>
std::vector<float> rest_as_floats(const kit::DeviceBuffer<T>& buffer, std::size_t count) {
  return flatten(buffer.download(), count);
}

// Everything on the device for a leapfrog run, from the bodies' starting state.
// Each array is followed by `guard` bodies' worth of NaN (0xFF bytes): a kernel
// without its bounds check reads them, and what it writes there from them is a
// NaN of another bit pattern, or it writes there plain values; either way
// expect_guards_untouched reports it. guard = 0: arrays of exactly n bodies.
struct DeviceBodies {
  std::size_t n, guard;
  kit::DeviceBuffer<float4> pos;
  kit::DeviceBuffer<float3> vel, acc;
  explicit DeviceBodies(const Bodies& bodies, std::size_t guard_count = guard_bodies())
      : n(bodies.pos.size()), guard(guard_count), pos(n + guard), vel(n + guard), acc(n + guard) {
    poison_floats(pos);
    poison_floats(vel);
    poison_floats(acc);
    CUDA_CHECK(cudaMemcpy(pos.data(), bodies.pos.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(vel.data(), bodies.vel.data(), n * sizeof(float3), cudaMemcpyHostToDevice));
  }
  void set_accelerations(const std::vector<float3>& values) {
    CUDA_CHECK(cudaMemcpy(acc.data(), values.data(), n * sizeof(float3), cudaMemcpyHostToDevice));
  }
  std::vector<float4> positions() const { return first_part(pos, n); }
  std::vector<float3> velocities() const { return first_part(vel, n); }
  std::vector<float3> accelerations() const { return first_part(acc, n); }

  // Nothing was written past the n bodies of any array (rows are bodies past the last).
  bool expect_guards_untouched(const std::string& input) const {
    const std::string look_at =
        "the bounds checks of the leapfrog kernels: a thread whose body is n or beyond "
        "must not read or write pos, vel or acc";
    bool ok = kit::expect_guard_untouched(rest_as_floats(pos, n), 4 * n,
                                          {input + ": past the end of pos (columns x y z m)", look_at, 4});
    ok = kit::expect_guard_untouched(rest_as_floats(vel, n), 3 * n,
                                     {input + ": past the end of vel (columns x y z)", look_at, 3}) &&
         ok;
    return kit::expect_guard_untouched(rest_as_floats(acc, n), 3 * n,
                                       {input + ": past the end of acc (columns x y z)", look_at, 3}) &&
           ok;
  }
};

// nbody_simulate from `bodies`, compared with the reference step by step, with
// the guards of DeviceBodies (guard = 0: none, for compute-sanitizer).
inline void check_simulation(const Bodies& bodies, int steps, const std::string& input,
                             std::size_t guard = guard_bodies()) {
  const float dt = time_step();
  const int n = static_cast<int>(bodies.pos.size());
  DeviceBodies d(bodies, guard);
  nbody_simulate(d.pos.data(), d.vel.data(), d.acc.data(), n, steps, dt, softening2());
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float4> pos = d.positions();
  const Leapfrog ref = reference_leapfrog(to_state(bodies.pos, bodies.vel), steps, dt, softening2());
  expect_state(pos, d.velocities(), ref, input);
  expect_final_accelerations(pos, d.accelerations(), input);
  d.expect_guards_untouched(input);
}

// The centre of mass of a run must have moved by (total momentum / total mass)
// times the time simulated: in exact arithmetic leapfrog moves it exactly so,
// whatever the forces, as long as they are equal and opposite. This is also the
// check that the run took all its steps.
inline bool expect_centre_of_mass_motion(const State& start, const State& end, double elapsed, double allowed,
                                         const std::string& input) {
  const Vec3 c0 = centre_of_mass(start), c1 = centre_of_mass(end), p = momentum(start);
  double mass = 0.0;
  for (double m : start.m) mass += m;
  const Vec3 expected{c0.x + p.x / mass * elapsed, c0.y + p.y / mass * elapsed, c0.z + p.z / mass * elapsed};
  const bool ok = std::fabs(c1.x - expected.x) <= allowed && std::fabs(c1.y - expected.y) <= allowed &&
                  std::fabs(c1.z - expected.z) <= allowed;
  if (!ok)
    FAIL_CHECK("Wrong centre-of-mass motion for input: " << input << " (" << kit::seed_text() << ").\n"
               << "It started at " << show(c0) << " and, at the total momentum's velocity for " << elapsed
               << " time units, should be at " << show(expected) << " (within " << allowed << "), but is at "
               << show(c1) << ".\nDid nbody_simulate take every step, with every body?\nLook at: " << kLookAtLeapfrog);
  return ok;
}

// The FP32 fused multiply-add rate of this GPU, measured now: the ceiling for
// the GFLOP/s of the force kernels, and a bound (fp32_peak.cu).
kit::Ceiling fp32_fma_ceiling(const kit::TimingOptions& options);

}  // namespace nbody_checks
