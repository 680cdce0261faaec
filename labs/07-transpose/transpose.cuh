// Lab 07: matrix transpose. The functions the tests call; you write them in transpose.cu.
#pragma once

// All three compute the same thing, out = transpose(in), in three ways (see the
// handout): straight from global memory to global memory, staged through a
// shared-memory tile, and staged through a padded tile.
//
// `in` is a rows x cols matrix of floats stored row by row: element (r, c) is
// in[r * cols + c]. `out` is the cols x rows result, also row by row: element
// (c, r) is out[c * rows + r], and it must equal in[r * cols + c].
// Both point to device memory and do not overlap.
// 1 <= rows <= 65535, 1 <= cols <= 65535 and rows * cols < 2^31, so int indices
// do not overflow. Each function configures and launches its kernel, and nothing
// else: no copies, no synchronization, no memory outside the two matrices touched.

void launch_transpose_naive(const float* d_in, float* d_out, int rows, int cols);
void launch_transpose_tiled(const float* d_in, float* d_out, int rows, int cols);
void launch_transpose_padded(const float* d_in, float* d_out, int rows, int cols);
