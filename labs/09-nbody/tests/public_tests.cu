// Lab 09 public tests: the ones you can run yourself (make 09-nbody).
#include "nbody_checks.cuh"

using namespace nbody_checks;

// ---------------------------------------------------------------------------
// Part 1: the naive kernel.

TEST_CASE("naive kernel: a single body feels no force (n = 1)") { check_single_body(naive()); }

TEST_CASE("naive kernel: two bodies pull each other along the line between them") { check_two_bodies(naive()); }

TEST_CASE("naive kernel: a random cloud of bodies") {
  check_cloud(naive(), static_cast<int>(kit::param_int("cloud_n")), "");
}

// ---------------------------------------------------------------------------
// Part 2: the tiled kernel.

TEST_CASE("tiled kernel: a single body feels no force (n = 1)") { check_single_body(tiled()); }

TEST_CASE("tiled kernel: two bodies pull each other along the line between them") { check_two_bodies(tiled()); }

TEST_CASE("tiled kernel: a cloud whose size is a multiple of the tile") {
  check_cloud(tiled(), static_cast<int>(kit::param_int("tile_multiple_n")), ", a multiple of 256 and of 1024");
}

TEST_CASE("tiled kernel: a cloud whose size is not a multiple of the tile") {
  check_cloud(tiled(), static_cast<int>(kit::param_int("odd_n")),
              ", not a multiple of any tile size: the last tile is partly empty");
}

// ---------------------------------------------------------------------------
// Part 3: the leapfrog integrator.

TEST_CASE("leapfrog: one step matches the kick-drift-kick reference") {
  const int n = static_cast<int>(kit::param_int("one_step_n"));
  const Bodies bodies = nbody_setups::plummer_sphere(n, case_seed("bodies"));
  const std::string input = "one launch_leapfrog_step on a Plummer sphere of n = " + std::to_string(n) + " bodies";
  // d_acc on entry: the accelerations at the starting positions, as the contract says.
  const Forces start = reference_forces(to_state(bodies.pos, bodies.vel), softening2());
  std::vector<float3> acc(bodies.pos.size());
  for (std::size_t i = 0; i < acc.size(); ++i)
    acc[i] = make_float3(static_cast<float>(start.a[3 * i]), static_cast<float>(start.a[3 * i + 1]),
                         static_cast<float>(start.a[3 * i + 2]));
  DeviceBodies d(bodies);
  d.set_accelerations(acc);
  launch_leapfrog_step(d.pos.data(), d.vel.data(), d.acc.data(), n, time_step(), softening2());
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float4> pos = d.positions();
  const Leapfrog ref = reference_leapfrog(to_state(bodies.pos, bodies.vel), 1, time_step(), softening2());
  expect_state(pos, d.velocities(), ref, input);
  expect_final_accelerations(pos, d.accelerations(), input);
  d.expect_guards_untouched(input);
}

TEST_CASE("leapfrog: many steps of a Plummer sphere match the reference") {
  const int n = static_cast<int>(kit::param_int("trajectory_n"));
  const int steps = static_cast<int>(kit::param_int("trajectory_steps"));
  check_simulation(nbody_setups::plummer_sphere(n, case_seed("bodies")), steps,
                   "nbody_simulate: " + std::to_string(steps) + " steps of a Plummer sphere of n = " +
                       std::to_string(n) + " bodies");
}

namespace {

// A Plummer sphere moving as a whole, so that its momentum is not zero and its
// centre of mass must travel.
Bodies moving_plummer_sphere(int n) {
  return nbody_setups::plummer_sphere(n, case_seed("bodies"), {0.0, 0.0, 0.0}, {0.25, -0.15, 0.1});
}

struct Run {
  State start, end;
};
Run simulate(const Bodies& bodies, int steps) {
  DeviceBodies d(bodies);
  nbody_simulate(d.pos.data(), d.vel.data(), d.acc.data(), static_cast<int>(bodies.pos.size()), steps, time_step(),
                 softening2());
  CUDA_CHECK(cudaDeviceSynchronize());
  d.expect_guards_untouched("nbody_simulate: " + std::to_string(steps) +
                            " steps of n = " + std::to_string(bodies.pos.size()) + " bodies");
  return {to_state(bodies.pos, bodies.vel), to_state(d.positions(), d.velocities())};
}

// How far the total momentum may move through float rounding alone (lab.toml).
// Exact leapfrog conserves it exactly: each kick adds (dt/2) sum_i m_i a_i, and
// the forces between two bodies are equal and opposite. In float each a_i is off
// by up to its error bound, and each kick rounds each velocity once.
double momentum_error_bound(const State& s, int steps) {
  const Forces f = reference_forces(s, softening2());
  const double rel = acceleration_error_scale(s.size());
  double per_step = 0.0;
  for (std::size_t i = 0; i < s.size(); ++i)
    per_step += s.m[i] * (time_step() * rel * f.magnitude[i] + 2.0 * kUnitRoundoff * max_abs3(s.v, i));
  return kit::param_double("sim_safety") * steps * per_step;
}

// The centre of mass moves by the time integral of the total momentum over the
// total mass: each step's momentum is within momentum_bound of the starting one,
// and each drift rounds each position once.
double centre_of_mass_error_bound(const State& start, const State& end, int steps, double momentum_bound) {
  double mass = 0.0, rounding = 0.0;
  for (std::size_t i = 0; i < start.size(); ++i) {
    mass += start.m[i];
    rounding += start.m[i] * kUnitRoundoff * std::max(max_abs3(start.x, i), max_abs3(end.x, i));
  }
  return steps * (time_step() * momentum_bound + kit::param_double("sim_safety") * rounding) / mass;
}

}  // namespace

TEST_CASE("leapfrog: total momentum is conserved and the centre of mass coasts") {
  const int n = static_cast<int>(kit::param_int("momentum_n"));
  const int steps = static_cast<int>(kit::param_int("momentum_steps"));
  const std::string input = "nbody_simulate: " + std::to_string(steps) + " steps of a moving Plummer sphere of n = " +
                            std::to_string(n) + " bodies of unequal masses";
  const Run run = simulate(moving_plummer_sphere(n), steps);
  const double bound = momentum_error_bound(run.start, steps);
  const Vec3 p0 = momentum(run.start), p1 = momentum(run.end);
  const Vec3 change{p1.x - p0.x, p1.y - p0.y, p1.z - p0.z};
  if (!(std::fabs(change.x) <= bound && std::fabs(change.y) <= bound && std::fabs(change.z) <= bound))
    FAIL_CHECK("Total momentum not conserved for input: " << input << " (" << kit::seed_text() << ").\n"
               << "It went from " << show(p0) << " to " << show(p1) << ", a change of " << show(change)
               << "; float rounding explains at most " << bound << " per component.\n"
               << "The pull of j on i must be equal and opposite to that of i on j: does the acceleration of i use"
               << " the mass of j (other.w), and does every kick use the same dt/2 for every body?\nLook at: "
               << kLookAtInteraction << ", " << kLookAtLeapfrog);
  expect_centre_of_mass_motion(run.start, run.end, steps * static_cast<double>(time_step()),
                               centre_of_mass_error_bound(run.start, run.end, steps, bound), input);
}

TEST_CASE("leapfrog: the energy drift of a Plummer sphere stays within the bound") {
  const int n = static_cast<int>(kit::param_int("energy_n"));
  const int steps = static_cast<int>(kit::param_int("energy_steps"));
  const double max_drift = kit::param_double("energy_max_drift");
  const std::string input = "nbody_simulate: " + std::to_string(steps) + " steps of dt = " +
                            std::to_string(time_step()) + " on a moving Plummer sphere of n = " + std::to_string(n) +
                            " bodies";
  const Run run = simulate(moving_plummer_sphere(n), steps);
  const double e0 = total_energy(run.start, softening2()), e1 = total_energy(run.end, softening2());
  const double drift = std::fabs(e1 - e0) / std::fabs(e0);
  if (!(drift <= max_drift))
    FAIL_CHECK("Energy not conserved for input: " << input << " (" << kit::seed_text() << ").\n"
               << "The total energy went from " << e0 << " to " << e1 << ", a relative drift of " << drift
               << "; kick-drift-kick leapfrog keeps it below " << max_drift
               << " (about 1e-6 here).\nA drift near 1e-3 or more means a first-order step: is the drift using the"
               << " half-kicked velocity, and the closing half kick the accelerations at the NEW positions?\nLook at: "
               << kLookAtLeapfrog);
  const double momentum_bound = momentum_error_bound(run.start, steps);
  expect_centre_of_mass_motion(run.start, run.end, steps * static_cast<double>(time_step()),
                               centre_of_mass_error_bound(run.start, run.end, steps, momentum_bound), input);
}

// ---------------------------------------------------------------------------
// Timing: both kernels on one large Plummer sphere.

namespace {

// Every timed call gets a new Plummer sphere, from its own random stream; the
// harness checks that every acceleration is written each time and compares a
// sample of them with the reference (on the GPU, milliseconds; all of them would
// take longer than the calls timed) after calls chosen at random.
void time_forces(const Kernel& kernel, const std::string& measurement) {
  const int n = static_cast<int>(kit::param_int("timing_n"));
  const auto count = static_cast<std::size_t>(n);
  kit::DeviceBuffer<float4> d_pos(count);
  kit::DeviceBuffer<float3> d_acc(count);
  const auto options = kit::TimingOptions::from_params();
  const double interactions = static_cast<double>(n) * n;  // every pair, the i = j terms included
  // A call's sphere, made once: its verify reads the positions refresh made (the judge's own copy,
  // out of the runner's reach) instead of making them again, about 70 ms of CPU time a check while the
  // GPU is held alone.
  int made_for = -1;
  std::vector<float4> made;
  const auto bodies_of = [&](const kit::Call& call) -> const std::vector<float4>& {
    if (made_for != call.index) {
      made = nbody_setups::plummer_sphere(n, call.rng("bodies").seed()).pos;
      made_for = call.index;
    }
    return made;
  };

  kit::TimedWork work;
  work.name = measurement;
  work.call = [&] { kernel.launch(d_pos.data(), d_acc.data(), n, softening2()); };
  work.work_per_call = interactions;
  work.unit = kit::RateUnit::Custom;
  work.custom_unit = "billion interactions/s";
  work.custom_scale = 1e9;
  // NaN in every float: accelerations of finite positions with softening never hold one.
  work.outputs = {kit::Output::device("the accelerations", reinterpret_cast<float*>(d_acc.data()), 3 * count)};
  work.refresh = [&](const kit::Call& call) { d_pos.upload(bodies_of(call)); };
  work.verify = [&](const kit::Call& call) {
    std::vector<std::size_t> sample;
    for (int i :
         call.rng("sample").uniform_ints(static_cast<std::size_t>(kit::param_int("timing_check_bodies")), 0, n - 1))
      sample.push_back(static_cast<std::size_t>(i));
    sample.push_back(count - 1);
    const std::vector<float3> acc = d_acc.download();
    std::vector<float3> got(sample.size());
    for (std::size_t s = 0; s < sample.size(); ++s) got[s] = acc[sample[s]];
    const Forces ref = reference_forces(to_state(bodies_of(call), {}), softening2(), sample);
    return expect_accelerations(flatten(got), ref, count,
                                "the timing Plummer sphere of " + call.name() + ", n = " + std::to_string(n) + ", at " +
                                    std::to_string(sample.size()) + " sampled bodies (rows are samples)",
                                kernel.look_at);
  };
  work.look_at = kernel.look_at;
  const kit::Measurement rate = kit::time_work(work, options);

  // The same time in GFLOP/s, counting 20 flops per interaction as is conventional
  // (Nyland, Harris and Prins, GPU Gems 3, chapter 31), against the FP32 FMA peak.
  kit::Measurement flops = rate;
  flops.name = measurement + "_flops";
  flops.work_per_run = 20.0 * interactions;
  flops.unit = kit::RateUnit::GFLOPs;
  flops.ceilings = {fp32_fma_ceiling(options)};
  kit::report(flops);
}

}  // namespace

TEST_CASE("nbody timing: naive kernel on a large Plummer sphere" * KIT_TIMING) { time_forces(naive(), "nbody_naive"); }

TEST_CASE("nbody timing: tiled kernel on a large Plummer sphere" * KIT_TIMING) { time_forces(tiled(), "nbody_tiled"); }
