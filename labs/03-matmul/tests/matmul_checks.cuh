// Lab 03 checks shared by the public and the hidden tests: shapes from the
// config, one product through launch_matmul, and its comparison with the
// reference (kit/matmul_reference.hpp: the CPU product in double, or cuBLAS).
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "kit/matmul_reference.hpp"
#include "matmul.cuh"

namespace matmul_checks {

using kit::expected_for;
using kit::shape_param;
using kit::shapes_param;
using Shape = kit::MatmulShape;

inline const std::string kLookAt =
    "matmul_kernel (row and column of the thread, strides of A, B and C, the loop over k) and the grid in "
    "launch_matmul, in matmul.cu";
inline const std::string kLookAtGuard =
    "the bounds check in matmul_kernel: a thread whose row is m or more, or whose column is n or more, must not "
    "write";

// C followed by a guard zone as deep as 32 block rows: a kernel without its row
// check writes up to a block's height of rows past the end, and one without its
// column check up to a block's width past the last row.
inline std::size_t guard_elements(int n) { return static_cast<std::size_t>(kit::param_int("guard_rows")) * n + 32; }

// launch_matmul on fresh random inputs of the given shape, C poisoned and
// followed by a poisoned guard zone; checks every element of C and the guard.
// `kind` says what the shape is for, e.g. "non-square".
inline void check_product(const Shape& shape, const std::string& kind) {
  const kit::MatmulInputs in = kit::make_matmul_inputs(shape.m, shape.k, shape.n);
  const std::string input = kind + ", " + in.shape();
  const kit::MatmulExpected expected = expected_for(in);
  const std::size_t size = static_cast<std::size_t>(shape.m) * shape.n;
  kit::DeviceBuffer<float> d_a(in.a), d_b(in.b), d_c(size + guard_elements(shape.n));
  d_c.poison();
  launch_matmul(d_a.data(), d_b.data(), d_c.data(), shape.m, shape.k, shape.n);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> all = d_c.download();
  const std::vector<float> c(all.begin(), all.begin() + size), past_end(all.begin() + size, all.end());
  kit::expect_matmul(c, expected, {input, kLookAt});
  kit::expect_guard_untouched(past_end, size, {input, kLookAtGuard});
}

inline void check_product(const std::string& key, const std::string& kind) { check_product(shape_param(key), kind); }

}  // namespace matmul_checks
