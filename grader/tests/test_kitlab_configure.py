"""One lab's broken config never blocks the other labs' builds, and never passes silently (harness/KitLab.cmake).

CMake configure only, no build: a copy of this repository with one lab's lab.toml broken."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.tests.conftest import REPO

NVCC = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)), None)
pytestmark = pytest.mark.skipif(NVCC is None or shutil.which("cmake") is None, reason="needs cmake and nvcc")

GOOD, BROKEN = "01-vector-add", "03-matmul"


def _configure(source: Path, build: Path, labs: str) -> subprocess.CompletedProcess:
    command = ["cmake", "-S", str(source), "-B", str(build), f"-DKIT_LABS={labs}",
               f"-DPython3_EXECUTABLE={sys.executable}", f"-DCMAKE_CUDA_COMPILER={NVCC}"]
    if shutil.which("ninja"):
        command += ["-G", "Ninja"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_a_broken_lab_is_left_out_and_its_ctest_fails_while_the_others_configure(tmp_path: Path):
    source = tmp_path / "repo"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", "build", "node_modules", "__pycache__",
                                                                 ".pytest_cache"))
    toml = source / f"labs/{BROKEN}/lab.toml"
    text = toml.read_text()
    assert "\ntimeout_s = " in text
    toml.write_text(text.replace("\ntimeout_s = ", '\ntimeout_s = "sixty" # ', 1))
    build = tmp_path / "build"

    done = _configure(source, build, f"{GOOD};{BROKEN}")
    output = " ".join((done.stdout + done.stderr).split())  # CMake wraps its messages
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{BROKEN} is left out of this build: its config is wrong" in output
    assert "'timeout_s' must be a number" in output
    # The good lab is configured in full; the broken one has no targets, only its failing check.
    assert (build / GOOD / "lab.cmake").is_file() and (build / GOOD / "params.txt").is_file()
    tests = (build / "CTestTestfile.cmake").read_text()
    assert f"{GOOD}/reference: vector_add: one element (n = 1)" in tests
    assert f"{GOOD}: config is valid" in tests and f"{BROKEN}: config is valid" in tests
    assert f"{BROKEN}/reference:" not in tests
    ninja = build / "build.ninja"
    if ninja.is_file():
        assert f"{GOOD}-tests" in ninja.read_text() and f"{BROKEN}-tests" not in ninja.read_text()

    # `make test` is not silent about it: the broken lab's check fails with the configure error.
    ctest = subprocess.run(["ctest", "-R", "config is valid", "--output-on-failure"], cwd=build,
                           capture_output=True, text=True, timeout=120)
    assert ctest.returncode != 0
    assert f"{BROKEN}: config is valid (Failed)" in ctest.stdout
    assert "'timeout_s' must be a number" in ctest.stdout
    assert f"{GOOD}: config is valid (Failed)" not in ctest.stdout

    # Asked for alone (as the grader's builds do), the broken lab stops CMake with its error.
    alone = _configure(source, build, BROKEN)
    assert alone.returncode != 0
    assert "'timeout_s' must be a number" in " ".join((alone.stdout + alone.stderr).split())


def test_a_one_process_build_puts_the_tests_and_student_code_in_one_program(tmp_path: Path):
    """-DKIT_ONE_PROCESS=ON (make split-cost's second build): every lab unsplit, saying why; its config check
    configures it the same way, so that `make test` there does not write the split's files back."""
    build = tmp_path / "build-one"
    done = _configure(REPO, build, GOOD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "set(KIT_LAB_SPLIT ON)" in (build / GOOD / "lab.cmake").read_text()

    done = subprocess.run(["cmake", "-B", str(build), "-DKIT_ONE_PROCESS=ON"], capture_output=True, text=True,
                          timeout=300)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, output
    assert f"{GOOD}: graded in one process (tests and student code together): this build folder was configured " \
           "with -DKIT_ONE_PROCESS=ON" in output
    assert "set(KIT_LAB_SPLIT OFF)" in (build / GOOD / "lab.cmake").read_text()
    assert "--one-process" in (build / "CTestTestfile.cmake").read_text()
    ninja = build / "build.ninja"
    if ninja.is_file():
        assert f"{GOOD}-reference-tests-runner" not in ninja.read_text()
