"""Test cases run under compute-sanitizer: the command, the student's message, the refusal without it.

No GPU and no compute-sanitizer are needed: the reports below are recorded samples of
compute-sanitizer's output format (made-up kernels, addresses and paths), and a small
stand-in plays compute-sanitizer around the stand-in test program of test_run.py.
"""
from pathlib import Path

import pytest

from grader import sanitizer
from grader.config import load_lab
from grader.errors import GraderError
from grader.run.judge import run_case, run_group
from grader.run.schedule import evaluate, sanitizer_wrappers
from grader.tests.conftest import TOY_CONFIG_HEAD, write
from grader.tests.test_run import stand_in

MEMCHECK_OUTPUT = """\
========= COMPUTE-SANITIZER
[doctest] doctest version is "2.4.11"
========= Invalid __global__ write of size 4 bytes
=========     at tile_scan_kernel<int>(const int *, int *, const int *, int, bool)+0x5d0 in /tmp/kit-grade-q1w2/submission/scan.cu:241
=========     by thread (37,0,0) in block (0,0,0)
=========     Address 0x7f51e2a00c8c is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f51e2a00000 of size 3211 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x2f1e7a]
=========                in /usr/lib/x86_64-linux-gnu/libcuda.so.1
=========
========= Invalid __global__ write of size 4 bytes
=========     at tile_scan_kernel<int>(const int *, int *, const int *, int, bool)+0x5d0 in /tmp/kit-grade-q1w2/submission/scan.cu:241
=========     by thread (38,0,0) in block (0,0,0)
=========     Address 0x7f51e2a00c90 is out of bounds
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaDeviceSynchronize.
=========
tests/scan_checks.cuh:120: ERROR: kernel launch failed
========= Target application returned an error
========= ERROR SUMMARY: 3 errors
"""

RACECHECK_OUTPUT = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reduce_sequential_kernel(const float *, long, float *)+0x1f0 in /home/ta/run/reduction.cu:97
=========     and Read access at reduce_sequential_kernel(const float *, long, float *)+0x1c0 in /home/ta/run/reduction.cu:97 [508 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

CLEAN_OUTPUT = """\
========= COMPUTE-SANITIZER
[doctest] test cases: 1 | 1 passed | 0 failed | 0 skipped
========= ERROR SUMMARY: 0 errors
"""


def test_the_command_puts_the_sanitizer_and_its_options_before_the_test_program():
    wrapper = sanitizer.Wrapper(Path("/opt/cuda/bin/compute-sanitizer"), "racecheck")
    assert wrapper.prefix() == ["/opt/cuda/bin/compute-sanitizer", "--tool", "racecheck", "--error-exitcode",
                                str(sanitizer.FINDING_EXIT_CODE), "--print-limit", str(sanitizer.PRINT_LIMIT),
                                "--show-backtrace", "no"]
    assert sanitizer.arguments("memcheck")[:2] == ["--tool", "memcheck"]


def test_the_first_memcheck_report_is_kept_without_backtrace_or_folders():
    assert sanitizer.first_report(MEMCHECK_OUTPUT) == (
        "Invalid __global__ write of size 4 bytes\n"
        "  at tile_scan_kernel<int>(const int *, int *, const int *, int, bool)+0x5d0 in scan.cu:241\n"
        "  by thread (37,0,0) in block (0,0,0)\n"
        "  Address 0x7f51e2a00c8c is out of bounds\n"
        "  and is 1 bytes after the nearest allocation at 0x7f51e2a00000 of size 3211 bytes")
    assert sanitizer.summary(MEMCHECK_OUTPUT) == "ERROR SUMMARY: 3 errors"


def test_a_racecheck_report_names_both_accesses():
    report = sanitizer.first_report(RACECHECK_OUTPUT)
    assert report.startswith("Error: Race reported between Write access at reduce_sequential_kernel")
    assert report.endswith("and Read access at reduce_sequential_kernel(const float *, long, float *)+0x1c0 in "
                           "reduction.cu:97 [508 hazards]")


def test_the_exit_code_decides_and_the_message_explains():
    assert sanitizer.finding("memcheck", 0, CLEAN_OUTPUT) is None
    assert sanitizer.first_report(CLEAN_OUTPUT) is None
    assert sanitizer.finding("memcheck", 1, MEMCHECK_OUTPUT) is None  # the test failed on its own; not a finding
    [message] = sanitizer.finding("memcheck", sanitizer.FINDING_EXIT_CODE, MEMCHECK_OUTPUT)
    assert message.startswith("compute-sanitizer (memcheck) found an error")
    assert "by thread (37,0,0) in block (0,0,0)" in message and "(ERROR SUMMARY: 3 errors in all.)" in message
    assert "thread (38,0,0)" not in message and "Host Frame" not in message and "/tmp/kit-grade" not in message
    assert "bounds check" in message  # what memcheck's finding usually means
    [race] = sanitizer.finding("racecheck", sanitizer.FINDING_EXIT_CODE, RACECHECK_OUTPUT)
    assert "__syncthreads()" in race and "[508 hazards]" in race
    [unreadable] = sanitizer.finding("memcheck", sanitizer.FINDING_EXIT_CODE, "garbled\n")
    assert "could not be read" in unreadable and "garbled" in unreadable


FAKE_SANITIZER = r'''#!/usr/bin/env python3
# Plays compute-sanitizer: runs the program after its options, and reports an error for "fails".
import subprocess, sys
options = %d
program = sys.argv[1 + options:]
print("========= COMPUTE-SANITIZER", flush=True)
code = subprocess.run(program).returncode
cases = next(a.split("=", 1)[1] for a in program if a.startswith("--test-case=")).split(",")
if "fails" in cases:
    print(%r, end="")
    sys.exit(%d)
print("========= ERROR SUMMARY: 0 errors")
sys.exit(code)
'''


def fake_sanitizer(tmp_path: Path) -> Path:
    body = MEMCHECK_OUTPUT.split("\n", 1)[1]  # without the banner, which the fake has printed
    program = tmp_path / "compute-sanitizer"
    program.write_text(FAKE_SANITIZER % (len(sanitizer.arguments("memcheck")), body, sanitizer.FINDING_EXIT_CODE))
    program.chmod(0o755)
    return program


def test_a_case_run_under_the_sanitizer_fails_with_its_report_first(tmp_path: Path):
    wrapper = sanitizer.Wrapper(fake_sanitizer(tmp_path), "memcheck")
    program = stand_in(tmp_path)
    clean = run_case(program, "passes", 10, tmp_path, seed=42, wrapper=wrapper)
    assert clean.status == "passed" and clean.timing("k")["median_s"] == 0.5
    found = run_case(program, "fails", 10, tmp_path, seed=42, wrapper=wrapper)
    assert found.status == "failed"
    assert found.messages[0].startswith("compute-sanitizer (memcheck) found an error")
    assert found.messages[1] == "Wrong result for input: n = 3 (seed 42)"  # the test's own report comes after
    late = run_case(program, "crashes after", 10, tmp_path, seed=42, wrapper=wrapper)
    assert late.status == "crashed"  # no finding: an ordinary crash stays one


def test_cases_under_one_sanitizer_settle_only_when_it_found_nothing(tmp_path: Path):
    wrapper = sanitizer.Wrapper(fake_sanitizer(tmp_path), "memcheck")
    program = stand_in(tmp_path)
    clean = run_group(program, [("passes", 10), ("cpu", 10)], tmp_path, seed=42, wrapper=wrapper)
    assert sorted(clean) == ["cpu", "passes"] and clean["passes"].passed
    # the report names no case: "passes" may have been the one at fault, so both run again alone
    assert run_group(program, [("passes", 10), ("fails", 10)], tmp_path, seed=42, wrapper=wrapper) == {}


def test_a_sanitizer_finding_in_a_shared_program_is_told_by_each_case_run_alone(tmp_path: Path, monkeypatch):
    tests = "".join(f'\n[[tests]]\nname = "{name}"\npoints = 1\nsanitizer = "memcheck"\n'
                    for name in ("passes", "fails", "cpu"))
    write(tmp_path / "repo/labs/72-sanitized/lab.toml", TOY_CONFIG_HEAD + tests)
    config = load_lab("72-sanitized", tmp_path / "repo")
    monkeypatch.setattr(sanitizer, "find", lambda search_path=None: fake_sanitizer(tmp_path))
    clean = evaluate(config, stand_in(tmp_path), tmp_path / "clean", ["passes", "cpu"])
    assert [p["cases"] for p in clean.programs if p["cases"]] == [["passes", "cpu"]]  # one sanitizer start
    found = evaluate(config, stand_in(tmp_path), tmp_path / "found")
    assert [p["cases"] for p in found.programs if p["cases"]] == [["passes", "fails", "cpu"], ["passes"], ["fails"],
                                                                    ["cpu"]]
    assert found.outcomes["passes"].passed and found.outcomes["cpu"].passed
    assert found.outcomes["fails"].messages[0].startswith("compute-sanitizer (memcheck) found an error")


def test_grading_refuses_to_start_without_the_sanitizer(toy_repo: Path, tmp_path: Path, monkeypatch):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text().replace('points = 5\n', 'points = 5\nsanitizer = "racecheck"\n', 1))
    config = load_lab("50-toy", toy_repo)
    monkeypatch.setattr(sanitizer, "find", lambda search_path=None: None)
    assert sanitizer_wrappers(config, ["toy: adds"]) == {}  # no sanitizer test among them: nothing needed
    with pytest.raises(GraderError, match="compute-sanitizer was not found") as refused:
        evaluate(config, stand_in(tmp_path), tmp_path / "run")
    assert "50-toy" in str(refused.value) and "racecheck" in str(refused.value)
    assert "cuda-sanitizer" in str(refused.value) and "nothing was graded" in str(refused.value)

    monkeypatch.setattr(sanitizer, "find", lambda search_path=None: Path("/opt/cuda/bin/compute-sanitizer"))
    wrappers = sanitizer_wrappers(config, [t.name for t in config.tests])
    assert wrappers == {"toy (hidden): awkward sizes":
                        sanitizer.Wrapper(Path("/opt/cuda/bin/compute-sanitizer"), "racecheck")}


def test_the_sanitizer_is_found_on_the_path_or_beside_nvcc(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(sanitizer, "TOOLKIT_BINS", ())
    on_path, toolkit = tmp_path / "on-path", tmp_path / "toolkit/bin"
    for folder in (on_path, toolkit):
        folder.mkdir(parents=True)
    for program in (on_path / "compute-sanitizer", toolkit / "nvcc", toolkit / "compute-sanitizer"):
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    assert sanitizer.find(str(on_path)) == on_path / "compute-sanitizer"
    # Only nvcc on the PATH, a link into the toolkit (as /usr/bin/nvcc often is): the sanitizer beside it.
    (on_path / "compute-sanitizer").unlink()
    (on_path / "nvcc").symlink_to(toolkit / "nvcc")
    assert sanitizer.find(str(on_path)) == toolkit / "compute-sanitizer"
    (toolkit / "compute-sanitizer").unlink()
    assert sanitizer.find(str(on_path)) is None
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    (tmp_path / "cuda/bin").mkdir(parents=True)
    (tmp_path / "cuda/bin/compute-sanitizer").write_text("#!/bin/sh\n")
    (tmp_path / "cuda/bin/compute-sanitizer").chmod(0o755)
    assert sanitizer.find(str(tmp_path / "nowhere")) == tmp_path / "cuda/bin/compute-sanitizer"
