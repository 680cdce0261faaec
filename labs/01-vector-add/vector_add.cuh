// Lab 01: vector add. The functions the tests call; you write them in vector_add.cu.
#pragma once

// c[i] = a[i] + b[i] for 0 <= i < n, on host arrays. Allocates device memory,
// copies a and b to the GPU, launches the kernel, copies c back and frees the
// device memory. n >= 1.
void vector_add(const float* h_a, const float* h_b, float* h_c, int n);

// The same on vectors already in device memory: configures and launches the
// kernel, and nothing else (no copies, no synchronization). n >= 1.
void launch_vector_add(const float* d_a, const float* d_b, float* d_c, int n);
