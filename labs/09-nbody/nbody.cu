// Your file for lab 09-nbody: fill in every TODO below (the handout: labs/09-nbody/README.md).
// Only nbody.cu is taken when you are graded: the tests and headers are not yours to change.

#include "kit/cuda_check.cuh"
#include "nbody.cuh"

// Threads per block for every kernel in this file: a multiple of the 32-thread
// warp. 256 gives the scheduler 8 warps per block to switch between.
constexpr int kBlockSize = 256;

// Bodies per shared-memory tile in nbody_tiled_kernel. Equal to the block size,
// so that every thread loads exactly one body of each tile.
constexpr int kTileSize = kBlockSize;
static_assert(kTileSize == kBlockSize, "nbody_tiled_kernel loads one body per thread into each tile");

// 1/sqrt(x) from the special-function unit, in one instruction, good to about 2
// units in the last place. rsqrtf() computes the same thing, but unless the code is
// built to flush denormals to zero the compiler wraps it in a check and rescaling
// for a denormal x: a few more instructions in an inner loop of about fourteen.
// Here x = |r|^2 + eps^2 >= eps^2 is never denormal, so the check is not needed.
__device__ __forceinline__ float fast_rsqrt(float x) {
  float result;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(x));
  return result;
}

// One interaction: returns a + m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2),
// where me = (r_i, m_i) and other = (r_j, m_j).
// May assume: softening2 > 0, so the denominator is never zero.
// Must not: branch on i == j; the self term comes out as exactly zero by itself.
// [used by both force kernels: every test depends on it]
__device__ __forceinline__ float3 add_body_acceleration(float4 me, float4 other, float3 a, float softening2) {
  // TODO: the vector from me to other, its squared length plus softening2, the
  //       inverse distance cubed (fast_rsqrt, then cube it), scaled by other's mass;
  //       add that times the vector to a and return it. About 20 floating-point
  //       operations: this function is the whole inner loop of both kernels.
  return a;
}

// Part 1. One thread per body i: a_i = sum over all n bodies, each read from
// global memory.
// May assume: pos holds n bodies, acc has room for n accelerations, n >= 1.
// Must not: read pos or write acc at index n or beyond.
// [part 1, with its launcher: 10 points of public tests, hidden tests, 5 for speed]
__global__ void nbody_naive_kernel(const float4* __restrict__ pos, float3* __restrict__ acc, int n,
                                   float softening2) {
  // TODO: find this thread's body; threads past the last body have nothing to do.
  //       Accumulate add_body_acceleration over every body j from global memory,
  //       then write the sum once. All threads of a warp read the same pos[j] at the
  //       same time, so the hardware serves it as one broadcast from the L1 cache.
}

// Launches nbody_naive_kernel over n bodies.
void launch_nbody_naive(const float4* d_pos, float3* d_acc, int n, float softening2) {
  // TODO: kBlockSize threads per block, enough blocks for one thread per body;
  //       check the launch.
}

// Part 2. The same sums, with the bodies staged through shared memory: the block
// loads a tile of kTileSize bodies (one per thread), every thread adds the whole
// tile to its sum, and only then is the next tile loaded over it.
// May assume: blockDim.x == kBlockSize == kTileSize, n >= 1.
// Must not: read pos or write acc at index n or beyond; let a body past n (in
// the last, partial tile) add anything to a sum; let one thread overwrite a tile
// that another is still reading.
// [part 2, with its launcher: 15 points of public tests, hidden tests, 15 for speed]
__global__ void __launch_bounds__(kBlockSize) nbody_tiled_kernel(const float4* __restrict__ pos,
                                                                  float3* __restrict__ acc, int n,
                                                                  float softening2) {
  // TODO: 1. a shared array for one tile of bodies;
  //       2. this thread's body (threads past n still take part in loading tiles and
  //          in every barrier, because the tile is shared by the whole block);
  //       3. for each tile, every thread loads one body into it (a slot past the last
  //          body gets mass 0, so it adds nothing), a barrier so the tile is complete
  //          before anyone reads it, the tile is added to the sum, and a barrier so
  //          nobody overwrites the tile while a slower warp still reads it;
  //       4. threads with a real body write their sum.
}

// Launches nbody_tiled_kernel over n bodies.
void launch_nbody_tiled(const float4* d_pos, float3* d_acc, int n, float softening2) {
  // TODO: kBlockSize threads per block, enough blocks for one thread per body;
  //       check the launch.
}

// Part 3. The first half of a leapfrog step, for each body i < n:
//   v_half = v + half_dt * a;   x_new = x + dt * v_half   (the mass stays as it is)
// May assume: acc holds the accelerations at the current positions.
// Must not: drift with the old velocity; the drift needs the half-kicked one.
__global__ void leapfrog_kick_drift_kernel(float4* __restrict__ pos, float3* __restrict__ vel,
                                           const float3* __restrict__ acc, int n, float half_dt, float dt) {
  // TODO: one thread per body, guarded; update the velocity first, then move the
  //       position with that updated velocity; write both back, keeping the mass.
}

// Part 3. The closing half kick, for each body i < n: v += half_dt * a.
// May assume: acc holds the accelerations at the NEW positions.
__global__ void leapfrog_kick_kernel(float3* __restrict__ vel, const float3* __restrict__ acc, int n,
                                     float half_dt) {
  // TODO: one thread per body, guarded: add half_dt times its acceleration to its velocity.
}

// One kick-drift-kick step (see nbody.cuh). Kick-drift-kick leapfrog is second
// order, symplectic and time-reversible: its energy error stays bounded instead of
// drifting, for one force evaluation per step, the same cost as Euler's method.
// [part 3, with the kernels above and nbody_simulate: 20 points of public tests, hidden tests]
void launch_leapfrog_step(float4* d_pos, float3* d_vel, float3* d_acc, int n, float dt, float softening2) {
  // TODO: the three stages in order: half kick and drift; the accelerations at the
  //       new positions (launch_nbody_tiled, or launch_nbody_naive until your tiled
  //       kernel works); the closing half kick with those new accelerations.
  //       Kernels on one stream run in launch order, so no synchronization is needed.
}

// `steps` leapfrog steps (see nbody.cuh).
void nbody_simulate(float4* d_pos, float3* d_vel, float3* d_acc, int n, int steps, float dt, float softening2) {
  // TODO: the first half kick needs the accelerations at the starting positions,
  //       and d_acc holds nothing useful on entry; then take the steps.
}
