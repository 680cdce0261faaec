// Lab 04 checks shared by the public and the hidden tests: shapes from the
// config, products through either launcher, and their comparison with the
// reference (kit/matmul_reference.hpp: the CPU product in double, or cuBLAS).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "kit/matmul_reference.hpp"
#include "tiled_matmul.cuh"

namespace tiled_matmul_checks {

using kit::expected_for;
using kit::shape_param;
using kit::shapes_param;
using Shape = kit::MatmulShape;

using Launcher = kit::MatmulLauncher;

// What the student should look at, by part and by kind of input.
inline const std::string kLookAtTiled = "tiled_matmul_kernel and launch_tiled_matmul in tiled_matmul.cu";
inline const std::string kLookAtEdges =
    "tiled_matmul_kernel: the zero-fill of tile entries that lie outside A or B, and the number of steps "
    "along K (rounded up)";
inline const std::string kLookAtBarriers =
    "the two __syncthreads() in tiled_matmul_kernel: one after loading a tile, before anyone reads it; one "
    "after using it, before the next step overwrites it";
inline const std::string kLookAtLarge =
    "tiled_matmul_kernel in tiled_matmul.cu. If the small tests pass, look at the two __syncthreads(): one after "
    "loading a tile, before anyone reads it; one after using it, before the next step overwrites it";
inline const std::string kLookAtGuard =
    "the bounds check on the final store in tiled_matmul_kernel: only rows below m and columns below n exist";
inline const std::string kLookAtRegister =
    "register_tiled_matmul_kernel and launch_register_tiled_matmul in tiled_matmul.cu (extra credit)";
inline const std::string kLookAtRegisterEdges =
    "register_tiled_matmul_kernel: zero-fill outside A and B, the store bounds check, and float4 accesses "
    "only where rows are 16-byte aligned (extra credit)";
// What a NaN in C means, added to every product check's hint.
inline const std::string kNanHint =
    " (a NaN in C means a value from past the end of A or B went into the sum: the tests put NaN there. Look at"
    " the bounds checks of the tile loads: an entry outside A or B must be stored as 0, not read)";
inline const std::string kLookAtRegisterGuard =
    "the bounds check on the stores of C in register_tiled_matmul_kernel: only rows below m and columns below n "
    "exist (extra credit)";

// A kernel under test: its launcher, and where to look when it writes past C.
struct Kernel {
  Launcher launch;
  std::string look_at_guard;
};
inline const Kernel kTiled{launch_tiled_matmul, kLookAtGuard};
inline const Kernel kRegisterTiled{launch_register_tiled_matmul, kLookAtRegisterGuard};

// A, B and C are each followed by a guard zone deeper than a block tile, for
// a matrix whose rows are `row_length` floats: a kernel without its row check
// reaches up to a tile's height of rows past the end, and one without its
// column check up to a tile's width past the last row.
inline std::size_t guard_elements(int row_length) {
  return static_cast<std::size_t>(kit::param_int("guard_rows")) * row_length + 128;
}

// `kernel` on fresh random inputs of the given shape, `runs` times, each time
// with C poisoned and followed by a poisoned guard zone; checks every element
// of C and the guard after every run, and stops at the first run that fails.
// A and B are followed by NaN: a tile load that reads past the end of either
// and multiplies what it read into a sum (even by a zero-filled entry: 0 x NaN
// is NaN) makes that element of C NaN. `kind` says what the shape is for, e.g.
// "K one past a multiple of the tile".
inline void check_product(const Kernel& kernel, const Shape& shape, const std::string& kind, const std::string& look_at,
                          int runs = 1) {
  const kit::MatmulInputs in = kit::make_matmul_inputs(shape.m, shape.k, shape.n);
  const kit::MatmulExpected expected = expected_for(in);
  kit::GuardedBuffer<float> d_a(in.a, guard_elements(shape.k)), d_b(in.b, guard_elements(shape.n));
  kit::GuardedBuffer<float> d_c(static_cast<std::size_t>(shape.m) * shape.n, guard_elements(shape.n));
  for (int run = 1; run <= runs; ++run) {
    std::string input = kind + ", " + in.shape() + " (A and B followed by NaN)";
    if (runs > 1) input += ", run " + std::to_string(run) + " of " + std::to_string(runs);
    d_c.poison();
    kernel.launch(d_a.data(), d_b.data(), d_c.data(), shape.m, shape.k, shape.n);
    CUDA_CHECK(cudaDeviceSynchronize());
    const bool c_ok = kit::expect_matmul(d_c.download(), expected, {input, look_at + kNanHint});
    const bool guard_ok = d_c.expect_guard_untouched({input, kernel.look_at_guard});
    if (!(c_ok && guard_ok)) return;  // one report per shape is enough
  }
}

// `kernel` once on matrices of exactly their size, each an allocation of its
// own, for compute-sanitizer (no guard zones: memcheck sees an access past an
// end only where nothing is allocated). Returns whether C was right.
inline bool check_product_exact(const Kernel& kernel, const Shape& shape, const std::string& look_at) {
  const kit::MatmulInputs in = kit::make_matmul_inputs(shape.m, shape.k, shape.n);
  kit::DeviceBuffer<float> d_a(in.a), d_b(in.b), d_c(static_cast<std::size_t>(shape.m) * shape.n);
  d_c.poison();
  kernel.launch(d_a.data(), d_b.data(), d_c.data(), shape.m, shape.k, shape.n);
  CUDA_CHECK(cudaDeviceSynchronize());
  return kit::expect_matmul(d_c.download(), expected_for(in),
                            {"matrices of exactly their size, " + in.shape(), look_at});
}

inline void check_all(const Kernel& kernel, const std::string& key, const std::string& kind,
                      const std::string& look_at) {
  for (const Shape& shape : shapes_param(key)) check_product(kernel, shape, kind, look_at);
}

#ifdef KIT_HIDDEN_TESTS
// Lab 03's naive kernel timed on these matrices, in GFLOP/s. It is defined with
// the hidden tests (it is lab 03's solution), so only graded runs compare with it.
kit::Ceiling naive_matmul_ceiling(const float* d_a, const float* d_b, float* d_c, int m, int k, int n,
                                  const kit::TimingOptions& options);
#endif

// Times `launch` as `name` against the yardsticks timed in the same process
// (the naive kernel only if asked: it is the slowest part of the run) and
// reports it. Every timed call gets new A and B; the harness checks that C is
// written in full each time and compares it with the reference after calls
// chosen at random (kit::time_square_matmul). Returns the measurement, for the
// caller's own judgement of it.
inline kit::Measurement time_product(Launcher launch, const std::string& name, bool against_naive,
                                     const std::string& look_at) {
  std::vector<kit::MatmulPeer> peers;
#ifdef KIT_HIDDEN_TESTS
  if (against_naive) peers.push_back(naive_matmul_ceiling);
#else
  (void)against_naive;
#endif
  return kit::time_square_matmul(name, launch, static_cast<int>(kit::param_int("timing_n")), look_at, peers);
}

}  // namespace tiled_matmul_checks
