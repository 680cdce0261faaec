// Lab 09 demo: two Plummer spheres fall into each other and merge, simulated with
// your nbody_simulate. Writes CSV files into the folder given as the first argument:
//   snapshots.csv  frame,time,body,x,y,z           every body, at a few moments
//   tracks.csv     time,body,x,y,z                 a few bodies, at every frame
//   energy.csv     time,kinetic,potential,total    now and then, in double precision
// `make 09-nbody-demo` runs it and then demo.py, which draws them as PNG pictures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "kit/cuda_check.cuh"
#include "kit/device.hpp"
#include "kit/device_buffer.cuh"
#include "kit/parallel.hpp"
#include "nbody.cuh"
#include "nbody_setups.hpp"

namespace {

constexpr int kBodiesPerSphere = 4096;
constexpr float kSoftening2 = 0.0025f;  // eps = 0.05, as in the tests
constexpr float kTimeStep = 0.005f;
constexpr int kStepsPerFrame = 20;
constexpr int kFrames = 100;          // 2000 steps, 10 time units: they meet at about t = 3
constexpr int kSnapshotEvery = 20;    // frames between snapshots of every body
constexpr int kEnergyEvery = 5;       // frames between energy sums (O(n^2) on the CPU)
constexpr int kTracked = 16;          // bodies whose paths are drawn

struct Energy {
  double kinetic = 0, potential = 0;
};

// Kinetic and potential energy in double precision, on every CPU core.
Energy energy(const std::vector<float4>& pos, const std::vector<float3>& vel) {
  const std::size_t n = pos.size();
  std::vector<double> potential(n, 0.0);  // body i's share: its pairs with the bodies after it
  kit::parallel_for(n, 0.5 * static_cast<double>(n) * n, 1 << 18, [&](std::size_t i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double dx = double(pos[j].x) - pos[i].x, dy = double(pos[j].y) - pos[i].y, dz = double(pos[j].z) - pos[i].z;
      potential[i] -= double(pos[i].w) * pos[j].w / std::sqrt(dx * dx + dy * dy + dz * dz + kSoftening2);
    }
  });
  Energy e;
  for (double p : potential) e.potential += p;
  for (std::size_t i = 0; i < n; ++i)
    e.kinetic += 0.5 * pos[i].w * (double(vel[i].x) * vel[i].x + double(vel[i].y) * vel[i].y + double(vel[i].z) * vel[i].z);
  return e;
}

int run(const std::string& folder) {
  if (!kit::device_info().available) {
    std::printf("No CUDA GPU available (%s): the demo needs one.\n", kit::device_info().why_not.c_str());
    return 1;
  }
  // Two spheres of mass 1 each, 3 apart, approaching at 0.6 and offset sideways so
  // that they swing around each other before they merge.
  const nbody_setups::Bodies a = nbody_setups::plummer_sphere(kBodiesPerSphere, 1, {-1.5, -0.4, 0.0}, {0.3, 0.0, 0.0});
  const nbody_setups::Bodies b = nbody_setups::plummer_sphere(kBodiesPerSphere, 2, {1.5, 0.4, 0.0}, {-0.3, 0.0, 0.0});
  std::vector<float4> pos = a.pos;
  std::vector<float3> vel = a.vel;
  pos.insert(pos.end(), b.pos.begin(), b.pos.end());
  vel.insert(vel.end(), b.vel.begin(), b.vel.end());
  const int n = static_cast<int>(pos.size());

  kit::DeviceBuffer<float4> d_pos(pos);
  kit::DeviceBuffer<float3> d_vel(vel), d_acc(pos.size());
  std::ofstream snapshots(folder + "/snapshots.csv"), tracks(folder + "/tracks.csv"), energies(folder + "/energy.csv");
  if (!snapshots || !tracks || !energies) {
    std::printf("Cannot write into %s: does the folder exist?\n", folder.c_str());
    return 1;
  }
  snapshots << "frame,time,body,x,y,z\n";
  tracks << "time,body,x,y,z\n";
  energies << "time,kinetic,potential,total\n";

  double gpu_seconds = 0.0;
  for (int frame = 0; frame <= kFrames; ++frame) {
    if (frame > 0) {
      const auto start = std::chrono::steady_clock::now();
      nbody_simulate(d_pos.data(), d_vel.data(), d_acc.data(), n, kStepsPerFrame, kTimeStep, kSoftening2);
      CUDA_CHECK(cudaDeviceSynchronize());
      gpu_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      pos = d_pos.download();
      vel = d_vel.download();
    }
    const double time = double(frame) * kStepsPerFrame * kTimeStep;
    for (int t = 0; t < kTracked; ++t) {
      const int i = t * (n / kTracked);
      tracks << time << ',' << i << ',' << pos[i].x << ',' << pos[i].y << ',' << pos[i].z << '\n';
    }
    if (frame % kSnapshotEvery == 0)
      for (int i = 0; i < n; ++i)
        snapshots << frame << ',' << time << ',' << i << ',' << pos[i].x << ',' << pos[i].y << ',' << pos[i].z << '\n';
    if (frame % kEnergyEvery == 0) {
      const Energy e = energy(pos, vel);
      energies << time << ',' << e.kinetic << ',' << e.potential << ',' << e.kinetic + e.potential << '\n';
      std::printf("t = %5.1f  energy %.6f\n", time, e.kinetic + e.potential);
      std::fflush(stdout);
    }
  }
  // Each step is one force evaluation (nbody_simulate adds one more per call).
  const double interactions = double(n) * n * kFrames * (kStepsPerFrame + 1);
  std::printf("%d bodies, %d steps: %.2f s on the GPU, %.1f billion interactions/s\n", n, kFrames * kStepsPerFrame,
              gpu_seconds, interactions / gpu_seconds / 1e9);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s <output folder>\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& error) {
    std::printf("The demo stopped: %s\n", error.what());
    return 1;
  }
}
