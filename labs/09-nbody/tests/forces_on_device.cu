// gpu_reference_forces (nbody_checks.cuh): the double-precision accelerations, summed on the GPU by the
// judge. A block sums the pulls on one target body: each thread over every blockDim-th body, then the
// block adds up its threads' sums. The terms are cpu_reference_forces's, added in another order, so the
// two agree to a few units in the last place of a double (reference_on_device_tests.cu checks it), some
// 2^29 times finer than the float tolerance the checks allow.
#include "nbody_checks.cuh"

namespace nbody_checks {
namespace {

constexpr int kReferenceBlock = 256;
constexpr int kWarps = kReferenceBlock / 32;

// The four sums a target body needs: its acceleration and the magnitude of its terms.
struct Pull {
  double ax = 0.0, ay = 0.0, az = 0.0, magnitude = 0.0;
};

__device__ Pull warp_sum(Pull p) {
  for (int offset = 16; offset > 0; offset /= 2) {
    p.ax += __shfl_down_sync(0xffffffffu, p.ax, offset);
    p.ay += __shfl_down_sync(0xffffffffu, p.ay, offset);
    p.az += __shfl_down_sync(0xffffffffu, p.az, offset);
    p.magnitude += __shfl_down_sync(0xffffffffu, p.magnitude, offset);
  }
  return p;
}

// Block t: the target body targets[t] (body t when targets is null). x holds 3 doubles a body, m one.
__global__ void reference_forces_kernel(const double* x, const double* m, long long n, const long long* targets,
                                        double softening2, double* a, double* magnitude) {
  const long long t = blockIdx.x;
  const long long i = targets ? targets[t] : t;
  const double xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
  Pull p;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) {
    const double dx = x[3 * j] - xi, dy = x[3 * j + 1] - yi, dz = x[3 * j + 2] - zi;
    const double r2 = dx * dx + dy * dy + dz * dz;
    const double d2 = r2 + softening2;
    const double strength = m[j] / (d2 * sqrt(d2));
    p.ax += strength * dx, p.ay += strength * dy, p.az += strength * dz;
    p.magnitude += strength * sqrt(r2);
  }
  __shared__ Pull warps[kWarps];
  p = warp_sum(p);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = p;
  __syncthreads();
  if (threadIdx.x != 0) return;
  Pull sum;
  for (int w = 0; w < kWarps; ++w) {
    sum.ax += warps[w].ax, sum.ay += warps[w].ay, sum.az += warps[w].az;
    sum.magnitude += warps[w].magnitude;
  }
  a[3 * t] = sum.ax, a[3 * t + 1] = sum.ay, a[3 * t + 2] = sum.az;
  magnitude[t] = sum.magnitude;
}

}  // namespace

Forces gpu_reference_forces(const State& s, double softening2, const std::vector<std::size_t>& targets) {
  const std::size_t count = targets.empty() ? s.size() : targets.size();
  Forces f{std::vector<double>(3 * count), std::vector<double>(count)};
  if (count == 0) return f;
  const kit::DeviceBuffer<double> d_x(s.x), d_m(s.m);
  const kit::DeviceBuffer<long long> d_targets(std::vector<long long>(targets.begin(), targets.end()));
  kit::DeviceBuffer<double> d_a(3 * count), d_magnitude(count);
  reference_forces_kernel<<<static_cast<unsigned>(count), kReferenceBlock>>>(
      d_x.data(), d_m.data(), static_cast<long long>(s.size()), targets.empty() ? nullptr : d_targets.data(),
      softening2, d_a.data(), d_magnitude.data());
  CUDA_CHECK_LAUNCH();
  f.a = d_a.download();
  f.magnitude = d_magnitude.download();
  return f;
}

}  // namespace nbody_checks
