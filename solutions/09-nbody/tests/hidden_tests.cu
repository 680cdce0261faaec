// Lab 09 hidden tests: run by the grader only. Each targets a mistake students make.
#include "nbody_checks.cuh"

using namespace nbody_checks;

namespace {

std::vector<float4> cloud(int n, const std::string& stream) {
  return nbody_setups::random_cloud(n, case_seed(stream + std::to_string(n))).pos;
}

}  // namespace

// A grid rounded the wrong way, or a missing guard, shows right at block edges;
// the NaN bodies after the last one poison any sum that reads past n.
TEST_CASE("naive kernel (hidden): sizes around block edges with nothing past the end used or written") {
  for (const auto n : kit::param_ints("edge_ns"))
    check_forces(naive(), cloud(static_cast<int>(n), "edge"),
                 "n = " + std::to_string(n) +
                     ", next to a multiple of a block size, followed in memory by NaN bodies that must add nothing",
                 guard_bodies());
}

// The last tile is partly empty at every one of these sizes (or, one above a
// multiple, holds a single body): skipping it, or letting its empty slots add
// anything, shows here.
TEST_CASE("tiled kernel (hidden): sizes one either side of multiples of common tile sizes") {
  for (const auto n : kit::param_ints("edge_ns"))
    check_forces(tiled(), cloud(static_cast<int>(n), "edge"),
                 "n = " + std::to_string(n) + ", one either side of a multiple of a tile size");
}

// Slots of the last tile past n must be filled with something that adds exactly
// zero, never with whatever lies in memory after the last body (NaN here), and
// threads without a body must not write.
TEST_CASE("tiled kernel (hidden): memory past the last body contributes nothing and is never written") {
  for (const auto n : kit::param_ints("guard_ns"))
    check_forces(tiled(), cloud(static_cast<int>(n), "guard"),
                 "n = " + std::to_string(n) +
                     ", followed in memory by NaN bodies that must add nothing and by a guard zone after acc",
                 guard_bodies());
}

// The last block has only a few bodies, so most of its warps have no body of
// their own and nothing to add: they reach the end of a tile long before the one
// warp that does. Without a barrier after the sums they load the next tile over
// the one that warp is still reading, every time.
TEST_CASE("tiled kernel (hidden): a last block holding only a few bodies") {
  const int repeats = static_cast<int>(kit::param_int("few_in_last_block_repeats"));
  for (const auto n : kit::param_ints("few_in_last_block_ns"))
    check_forces(tiled(), cloud(static_cast<int>(n), "few"),
                 "n = " + std::to_string(n) + ", so the last block of 256 threads has only " + std::to_string(n % 256) +
                     " bodies and its other warps finish each tile early. If the last block's bodies are wrong, look"
                     " at the barriers: no thread may load the next tile while another still reads this one",
                 guard_bodies(), repeats);
}

// Many blocks per SM, many tiles, several runs: a race between warps of a block
// (a tile read before it is complete, or overwritten while still read) shows up
// as a few wrong bodies in some run.
TEST_CASE("tiled kernel (hidden): a large cloud computed several times in a row") {
  const int n = static_cast<int>(kit::param_int("large_n"));
  check_forces(tiled(), cloud(n, "large"),
               "a large random cloud, n = " + std::to_string(n) +
                   "; bodies wrong in only some runs point to a race on the shared tile (a missing barrier)",
               guard_bodies(), static_cast<int>(kit::param_int("large_repeats")));
}

// Bodies in groups at exactly the same position: r_ij = 0 for j != i too. With
// softening each such term is exactly zero; without it, 0/0 gives NaN.
TEST_CASE("forces (hidden): bodies sharing a position with others") {
  const int copies = 3;
  const int places = static_cast<int>(kit::param_int("shared_position_places"));
  const std::vector<float4> where = cloud(places, "where");
  const std::vector<float4> masses = cloud(places * copies, "mass");
  std::vector<float4> pos(masses.size());
  for (std::size_t i = 0; i < pos.size(); ++i) {
    const float4 p = where[i / copies];
    pos[i] = make_float4(p.x, p.y, p.z, masses[i].w);
  }
  const std::string input = std::to_string(places) + " places with " + std::to_string(copies) +
                            " bodies at each; the softening must keep r = 0 pairs from giving 0/0";
  check_forces(naive(), pos, input + " (naive kernel)");
  check_forces(tiled(), pos, input + " (tiled kernel)");
}

// More steps on a size that leaves the last block of every kernel partly empty:
// a body the kick or drift kernels never reach falls behind the reference.
TEST_CASE("leapfrog (hidden): many steps of a Plummer sphere whose size is not a multiple of the block") {
  const int n = static_cast<int>(kit::param_int("hidden_sim_n"));
  const int steps = static_cast<int>(kit::param_int("hidden_sim_steps"));
  check_simulation(nbody_setups::plummer_sphere(n, case_seed("bodies")), steps,
                   "nbody_simulate: " + std::to_string(steps) + " steps of a Plummer sphere of n = " +
                       std::to_string(n) + " bodies, not a multiple of any block size");
}

// Alone, a body feels no force and moves in a straight line at constant speed.
TEST_CASE("leapfrog (hidden): a single body coasts in a straight line") {
  const int steps = static_cast<int>(kit::param_int("coast_steps"));
  nbody_setups::Bodies body = nbody_setups::plummer_sphere(1, case_seed("bodies"), {0.5, -0.25, 0.125}, {0.3, 0.2, -0.1});
  check_simulation(body, steps, "nbody_simulate: " + std::to_string(steps) + " steps of a single body (n = 1)");
}

// ---- Under compute-sanitizer (hidden.toml says which tool) ----------------------------------
// Arrays of exactly n bodies, each an allocation of its own. memcheck: no read or write past n,
// also a load whose value is never used (a thread past the last body loading "its" body).
// racecheck: a tile is read only after the barrier that follows its loads, and overwritten only
// after the barrier that follows the last reads.

namespace {

void sanitized_forces(const Kernel& kernel) {
  for (const auto n : kit::param_ints("sanitizer_ns"))
    if (!check_forces(kernel, cloud(static_cast<int>(n), "sanitizer"),
                      "n = " + std::to_string(n) + " in arrays of exactly n bodies", 0))
      return;
}

}  // namespace

TEST_CASE("naive kernel (hidden): no read or write outside the bodies (compute-sanitizer memcheck)") {
  sanitized_forces(naive());
}

TEST_CASE("tiled kernel (hidden): no read or write outside the bodies (compute-sanitizer memcheck)") {
  sanitized_forces(tiled());
}

TEST_CASE("tiled kernel (hidden): no shared-memory race (compute-sanitizer racecheck)") { sanitized_forces(tiled()); }

TEST_CASE("leapfrog (hidden): no read or write outside the bodies (compute-sanitizer memcheck)") {
  const int steps = static_cast<int>(kit::param_int("sanitizer_steps"));
  for (const auto n : kit::param_ints("sanitizer_ns"))
    check_simulation(nbody_setups::plummer_sphere(static_cast<int>(n), case_seed("bodies")), steps,
                     "nbody_simulate: " + std::to_string(steps) + " steps of n = " + std::to_string(n) +
                         " bodies in arrays of exactly n",
                     0);
}
