"""Hostile lab 01 submissions graded for real, on a GPU machine: none may earn a point it did not.

Each attack is a correct vector add plus a trick a student tried on the landed grader. They run
where a GPU is (each is a whole build and grading; on a CPU machine `test_linkcheck.py` and
`test_sandbox.py` prove the same refusals on small programs). The honest yardstick is a correct
but slow kernel: no trick may lift it above its own score.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from grader import sandbox
from grader.grade import NoGpu, grade_submission
from grader.tests.conftest import needs_cuda_toolchain

PERF_TOLERANCE = 0.02  # of the lab's performance points: run-to-run noise between two gradings

HEADER = """\
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "kit/cuda_check.cuh"
#include "vector_add.cuh"
"""

# Slow on purpose: each thread adds 16 consecutive elements, so a warp's reads are 16 floats apart.
SLOW_KERNEL = """\
constexpr int kRun = 16;
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int first = (blockIdx.x * blockDim.x + threadIdx.x) * kRun;
  for (int i = first; i < first + kRun && i < n; ++i) c[i] = a[i] + b[i];
}
void slow_launch(const float* a, const float* b, float* c, int n) {
  const int threads = (n + kRun - 1) / kRun;
  vector_add_kernel<<<(threads + 255) / 256, 256>>>(a, b, c, n);
  CUDA_CHECK_LAUNCH();
}
void vector_add(const float* left, const float* right, float* sum, int n) {
  const size_t size = sizeof(float) * n;
  float* device[3];  // left, right, sum
  for (float*& vector : device) CUDA_CHECK(cudaMalloc(&vector, size));
  CUDA_CHECK(cudaMemcpy(device[0], left, size, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(device[1], right, size, cudaMemcpyHostToDevice));
  launch_vector_add(device[0], device[1], device[2], n);
  CUDA_CHECK(cudaMemcpy(sum, device[2], size, cudaMemcpyDeviceToHost));
  for (float* vector : device) CUDA_CHECK(cudaFree(vector));
}
"""

HONEST = HEADER + SLOW_KERNEL + """
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
"""

# Refused before anything runs: (source, words the student's message must contain).
REFUSED_AT_BUILD = {
    "forged clock_gettime": ("""
extern "C" int clock_gettime(clockid_t, struct timespec* t) { t->tv_sec = 0; t->tv_nsec = 0; return 0; }
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
""", ["clock_gettime", "libc"]),
    "forged cudaEventElapsedTime": ("""
extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) { *ms = 1e-3f; return cudaSuccess; }
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
""", ["cudaEventElapsedTime", "libcudart"]),
    "file written with a raw system call": ("""
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  syscall(SYS_open, "/tmp/pwned-by-a-submission", 0101, 0644);
  slow_launch(a, b, c, n);
}
""", ["syscall"]),
    "system call in inline assembly": ("""
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(39L) : "rcx", "r11", "memory");
  slow_launch(a, b, c, n);
}
""", ["system call"]),
    "forbidden call spelled by token pasting": ("""
#define JOIN(x, y) x##y
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  JOIN(ki, ll)(JOIN(getp, pid)(), 9);
  slow_launch(a, b, c, n);
}
""", ["kill"]),
}

# Pass the build; the timing guard must take away what they try to gain.
TIMING_TRICKS = {
    "returns early when called again with the same pointers": """
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  static const float* last = nullptr;
  static int calls = 0;
  if (a == last && ++calls > 1) return;
  last = a;
  calls = 1;
  slow_launch(a, b, c, n);
}
""",
    "restores a cached output on repeated calls": """
#include <vector>
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  static const float* last = nullptr;
  static float* saved = nullptr;
  static int saved_n = 0;
  if (a == last && saved != nullptr && saved_n == n) {
    CUDA_CHECK(cudaMemcpyAsync(c, saved, n * sizeof(float), cudaMemcpyDeviceToDevice));
    return;
  }
  slow_launch(a, b, c, n);
  if (saved != nullptr) CUDA_CHECK(cudaFree(saved));
  CUDA_CHECK(cudaMalloc(&saved, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(saved, c, n * sizeof(float), cudaMemcpyDeviceToDevice));
  last = a;
  saved_n = n;
}
""",
}


def _gpu_here() -> bool:
    return shutil.which("nvidia-smi") is not None and subprocess.run(["nvidia-smi", "-L"],
                                                                      capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _gpu_here(), reason="grades whole submissions on a GPU machine (no GPU here)")


@pytest.fixture(autouse=True)
def sandboxed():
    if why := sandbox.probe():
        pytest.skip(f"no OS sandbox here: {why}")
    sandbox.use(sandbox.Policy(enabled=True))
    yield
    sandbox.use(sandbox.Policy(enabled=False))


def _grade(config, tmp_path: Path, name: str, source: str, reference=None):
    folder = tmp_path / name.replace(" ", "-")
    folder.mkdir()
    (folder / "vector_add.cu").write_text(source)
    return grade_submission(config, folder, tmp_path / f"{folder.name}-work", reference=reference)


def _performance(results: dict) -> float:
    return sum(t["score"] for t in results["tests"] if t["name"].startswith("performance"))


@needs_cuda_toolchain()
@pytest.mark.parametrize("attack", sorted(REFUSED_AT_BUILD))
def test_attack_is_refused_at_the_build(lab01, tmp_path: Path, attack: str):
    source, words = REFUSED_AT_BUILD[attack]
    results = _grade(lab01, tmp_path, attack, HEADER + SLOW_KERNEL + source).results
    assert results["score"] == 0
    assert all(word in results["output"] for word in words), results["output"]
    assert not Path("/tmp/pwned-by-a-submission").exists()


@needs_cuda_toolchain()
def test_timing_tricks_gain_nothing_over_the_honest_slow_kernel(lab01, tmp_path: Path):
    try:
        honest = _grade(lab01, tmp_path, "honest", HONEST)
    except NoGpu as error:
        pytest.skip(f"the timing tricks need a GPU ({error})")
    honest_perf = _performance(honest.results)
    allowance = PERF_TOLERANCE * sum(p.points for p in lab01.perf)
    for trick, source in TIMING_TRICKS.items():
        cheat = _grade(lab01, tmp_path, trick, HEADER + SLOW_KERNEL + source).results
        assert _performance(cheat) <= honest_perf + allowance, (trick, _performance(cheat), honest_perf)
