// Lab 04: tiled matrix multiply. The functions the tests call; you write them
// in tiled_matmul.cu.
//
// Both compute C = A·B for row-major float matrices in device memory: A is
// m x k, B is k x n, C is m x n. Each configures and launches its kernel, and
// nothing else (no copies, no synchronization). m, k, n >= 1, with m·k, k·n and
// m·n below 2^31 (so int indices do not overflow).
#pragma once

// Core part: shared-memory tiles, one 32 x 32 tile of C per block.
void launch_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n);

// Extra credit: register tiling, one 128 x 128 tile of C per block and an
// 8 x 8 block of it per thread.
void launch_register_tiled_matmul(const float* d_a, const float* d_b, float* d_c, int m, int k, int n);
