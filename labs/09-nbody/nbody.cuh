// Lab 09: all-pairs N-body. The functions the tests call; you write them in nbody.cu.
//
// Bodies live in device memory as
//   d_pos[i] = (x, y, z, m)   position and mass (m >= 0), one float4 per body
//   d_vel[i] = (vx, vy, vz)   velocity
//   d_acc[i] = (ax, ay, az)   acceleration
// Gravity with G = 1 and Plummer softening: softening2 = eps^2 > 0, and
//   a_i = sum over ALL j of  m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2)
// The term j = i is exactly zero (r_j - r_i = 0 and the denominator is eps^3 > 0),
// so no body has to be skipped.
#pragma once

#include <cuda_runtime.h>  // float3, float4

// Accelerations of all n bodies: one thread per body, reading every other body
// straight from global memory. Configures and launches only (no copies, no
// synchronization). n >= 1; d_acc holds n float3 and nothing past them is written.
void launch_nbody_naive(const float4* d_pos, float3* d_acc, int n, float softening2);

// The same accelerations, with the bodies staged through shared memory one tile
// at a time. Same assumptions and guarantees as launch_nbody_naive.
void launch_nbody_tiled(const float4* d_pos, float3* d_acc, int n, float softening2);

// One kick-drift-kick leapfrog step of length dt, for every body:
//   v += (dt/2) a;   x += dt v;   a = accelerations at the new x;   v += (dt/2) a
// On entry d_acc holds the accelerations at the current positions; on exit, those
// at the new positions. Masses (d_pos[i].w) do not change. Launches only. n >= 1.
void launch_leapfrog_step(float4* d_pos, float3* d_vel, float3* d_acc, int n, float dt, float softening2);

// `steps` leapfrog steps (steps >= 0) from the state in d_pos and d_vel, which
// are updated in place. d_acc is scratch space for n float3: whatever it holds on
// entry is not used, and on exit it holds the accelerations at the final positions.
void nbody_simulate(float4* d_pos, float3* d_vel, float3* d_acc, int n, int steps, float dt, float softening2);
