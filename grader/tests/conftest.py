"""Shared pieces for the grader's tests: a small lab written into a temporary repository."""
from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# The config every toy lab starts with; each test adds its own params and tests.
TOY_CONFIG_HEAD = """
[lab]
title = "Toy"
student_files = ["toy.cu"]

[grading]
timeout_s = 5
full_at = 1.2
zero_at = 10.0

[params]
seed = 1
timing_warmup = 1
timing_repeats = 3
ceiling_margin = 1.2
"""

LAB_TOML = TOY_CONFIG_HEAD + """sizes = [1, 2, 3]

[[tests]]
name = "toy: adds"
points = 10

[[tests]]
name = "toy: runs on the CPU"
points = 5
gpu = false

[[perf]]
case = "toy timing: fast"
measurement = "toy_kernel"
points = 20
"""

HIDDEN_TOML = """
[grading]
seed = 99

[[tests]]
name = "toy (hidden): awkward sizes"
points = 5

[[wrong]]
name = "off-by-one"
why = "writes one element too few"
file = "toy.cu"
replace = "i < n"
by = "i < n - 1"
must_fail = ["toy: adds"]
"""

TOY_REFERENCE = """\
__global__ void toy_kernel(int* out, int n) {
  // BEGIN SOLUTION
  // TODO: write out[i] = i for every i below n.
  //       Guard the index.
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i;
  // END SOLUTION
}

int count(int n) {
  // BEGIN SOLUTION
  // TODO: return n.
  // SKELETON: return 0;
  return n;
  // END SOLUTION
}
"""

# The toy's public header: what the tests call, and what the judge/runner split is made from.
TOY_HEADER = """\
#pragma once
void launch_toy(int* d_out, int n);
int count(int n);
"""


def copy_lab(root: Path, lab: str) -> Path:
    """A repository at `root` holding a copy of `lab` (handout folder, reference, hidden tests) and the harness
    headers, for tests that edit a real lab's config or reference."""
    for folder in (f"labs/{lab}", f"solutions/{lab}", "harness/include"):
        shutil.copytree(REPO / folder, root / folder)
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def toy_repo(tmp_path: Path) -> Path:
    """A repository with one lab, 50-toy, with a reference and hidden tests."""
    write(tmp_path / "labs/50-toy/lab.toml", LAB_TOML)
    write(tmp_path / "labs/50-toy/toy.cuh", TOY_HEADER)
    write(tmp_path / "solutions/50-toy/hidden.toml", HIDDEN_TOML)
    write(tmp_path / "solutions/50-toy/toy.cu", TOY_REFERENCE)
    return tmp_path


@pytest.fixture
def lab01():
    from grader.config import load_lab
    return load_lab("01-vector-add")


def needs_cuda_toolchain():
    return pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("cmake") is None,
                              reason="needs nvcc and cmake to build a submission")


def grading_lock():
    """The grader's lock on the GPU the test programs use, as `grader grade` takes it: a test that grades on a GPU
    machine then never times beside a self-check or another grading there, which would skew both."""
    from grader.gpulock import GpuLock, list_gpus
    return GpuLock(list_gpus()[0].key)
