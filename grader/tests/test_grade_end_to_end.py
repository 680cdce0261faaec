"""Grading real submissions (of lab 01, and one of lab 05) through every stage: intake, a CMake + nvcc build, run.

Without a GPU, a submission that compiles stops at the run stage with NoGpu;
on a GPU machine it is graded for real.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.config import load_lab
from grader.errors import NoGpu
from grader.grade import grade_submission
from grader.tests.conftest import REPO, grading_lock, needs_cuda_toolchain

BROKEN = """\
#include "kit/cuda_check.cuh"
#include "vector_add.cuh"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  int missing_semicolon = n
}
"""


@needs_cuda_toolchain()
def test_compile_error_gives_valid_results_with_the_compiler_message(lab01, tmp_path: Path):
    submission = tmp_path / "submission-in"
    submission.mkdir()
    (submission / "vector_add.cu").write_text(BROKEN)
    graded = grade_submission(lab01, submission, tmp_path / "work", lock=grading_lock())
    results = graded.results
    assert results["score"] == 0
    # The questions graded by hand are listed with no score; every other entry scores 0.
    autograded = [t for t in results["tests"] if "score" in t]
    assert len(autograded) == len(lab01.tests) + len(lab01.perf)
    assert len(results["tests"]) == len(autograded) + len(lab01.questions)
    assert all(t["score"] == 0 for t in autograded)
    assert "did not compile" in results["output"]
    assert "vector_add.cu(6): error: expected a \";\"" in results["output"]
    json.dumps(results)  # serialisable as it stands


@needs_cuda_toolchain()
def test_cli_writes_results_for_a_compile_error(tmp_path: Path):
    submission = tmp_path / "sub.zip"
    import zipfile
    with zipfile.ZipFile(submission, "w") as z:
        z.writestr("mine/vector_add.cu", BROKEN)
    results_file = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--lab", "01-vector-add", "--submission",
                           str(submission), "--results", str(results_file)], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    results = json.loads(results_file.read_text())
    assert results["score"] == 0 and "did not compile" in results["tests"][0]["output"]
    assert "Total" in done.stdout


@needs_cuda_toolchain()
@pytest.mark.skipif(not (REPO / "solutions").is_dir(), reason="the student release has no reference to grade")
def test_submission_that_compiles_is_graded_or_reports_no_gpu(lab01, tmp_path: Path):
    try:
        graded = grade_submission(lab01, REPO / "solutions/01-vector-add", tmp_path / "work", with_reference=False,
                                  lock=grading_lock())
    except NoGpu as error:
        assert str(error)  # the reason CUDA gave, e.g. no driver
        return
    correctness = [t for t in graded.results["tests"] if not t["name"].startswith("performance")]
    assert all(t["score"] == t["max_score"] for t in correctness)


FORGED_CLOCK = """\
#include <time.h>
#include "kit/cuda_check.cuh"
#include "vector_add.cuh"

// A correct kernel with a clock that says every run took no time.
extern "C" int clock_gettime(clockid_t, struct timespec* t) { t->tv_sec = 0; t->tv_nsec = 0; return 0; }
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  int index = threadIdx.x + blockIdx.x * blockDim.x;
  if (index < n) c[index] = b[index] + a[index];
}
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
  CUDA_CHECK_LAUNCH();
}
void vector_add(const float*, const float*, float*, int) {}
"""


@needs_cuda_toolchain()
def test_a_forged_clock_is_refused_at_the_link_with_its_reason(lab01, tmp_path: Path):
    submission = tmp_path / "submission-in"
    submission.mkdir()
    (submission / "vector_add.cu").write_text(FORGED_CLOCK)
    results = grade_submission(lab01, submission, tmp_path / "work", lock=grading_lock()).results
    assert results["score"] == 0
    assert "clock_gettime" in results["output"] and "libc.so.6" in results["output"]


# CUB in lab 05, which forbids it, hidden from intake: the include's name is made by the preprocessor
# and the namespace by token pasting, so no line of the source names the library.
CUB_HIDDEN_FROM_INTAKE = r"""
#define CCCL_DISABLE_NVTX
#define CAT(a, b) a##b
#define TEXT(x) #x
#define HEADER(x) TEXT(x)
#include HEADER(CAT(c, ub)/device/device_reduce.cuh)
#include "reduction.cuh"

namespace {
template <typename T, typename Out>
void library_sum(const T* d_in, std::int64_t n, Out* d_out) {
  void* temp = nullptr;
  size_t bytes = 0;
  CAT(c, ub)::DeviceReduce::Sum(temp, bytes, d_in, d_out, n);
  cudaMalloc(&temp, bytes);
  CAT(c, ub)::DeviceReduce::Sum(temp, bytes, d_in, d_out, n);
  cudaFree(temp);
}
}  // namespace

void launch_reduce_interleaved(const float* d_in, std::int64_t n, float* d_sum, float*) { library_sum(d_in, n, d_sum); }
void launch_reduce_sequential(const float* d_in, std::int64_t n, float* d_sum, float*) { library_sum(d_in, n, d_sum); }
void launch_reduce_grid_stride(const float* d_in, std::int64_t n, float* d_sum, float*) { library_sum(d_in, n, d_sum); }
void launch_reduce_warp_shuffle(const float* in, std::int64_t n, float* d_sum, float*) { library_sum(in, n, d_sum); }
long long sum_ints(const int* d_in, std::int64_t n) {
  long long* d_out = nullptr;
  long long total = 0;
  cudaMalloc(&d_out, sizeof(long long));
  library_sum(d_in, n, d_out);
  cudaMemcpy(&total, d_out, sizeof(long long), cudaMemcpyDeviceToHost);
  cudaFree(d_out);
  return total;
}
"""


@needs_cuda_toolchain()
def test_a_forbidden_library_hidden_from_intake_is_refused_at_the_link(tmp_path: Path):
    submission = tmp_path / "submission-in"
    submission.mkdir()
    (submission / "reduction.cu").write_text(CUB_HIDDEN_FROM_INTAKE)
    results = grade_submission(load_lab("05-reduction"), submission, tmp_path / "work", lock=grading_lock()).results
    assert results["score"] == 0
    assert "did not compile" in results["output"], results["output"]  # intake let it through; the link did not
    assert ("reduction.cu: 'cub::DeviceReduce::Sum<...>(...)': lab 05-reduction does not allow CUB"
            in results["output"]), results["output"]
