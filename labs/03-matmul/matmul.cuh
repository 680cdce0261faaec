// Lab 03: matrix multiply, one thread per element of C. The function the tests
// call; you write it in matmul.cu.
#pragma once

// C = A·B for row-major float matrices in device memory: A is m x k, B is k x n,
// C is m x n. Configures and launches matmul_kernel, and nothing else (no
// copies, no synchronization). m, k, n >= 1, with m·k, k·n and m·n below 2^31
// (so int indices do not overflow) and m below 65535 · kBlockRows (the limit of
// gridDim.y).
void launch_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n);
