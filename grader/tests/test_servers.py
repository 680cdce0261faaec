"""Judges that serve many runs (grader/run/servers.py), against a stand-in for a serving judge.

The stand-in speaks --kit-serve's protocol (harness/src/main.cpp): for each run it reads, it runs
test_run.py's stand-in test program with the run's arguments, environment, folder and output file, and
replies with its exit code. Where that program dies of a signal, the judge dies of it too, as a judge
whose own process crashed; a case named "poisons the context" gets the reply "retire". The real
judge's side is tested by the harness's ctest "a judge serving many runs starts each afresh and keeps only its twin".
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from grader.run import judge
from grader.run.judge import run_case, run_group
from grader.run.servers import JudgeServers
from grader.tests.test_run import STAND_IN

SERVING_STAND_IN = r'''#!/usr/bin/env python3
import os, signal, subprocess, sys
assert sys.argv[1:] == ["--kit-serve"], sys.argv
program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "one-run")
sys.stdout.write("ready\n"); sys.stdout.flush()
fields, run = [], {"arg": [], "env": {}}
data = sys.stdin.buffer.read1(1 << 20)
buffer = b""
while data:
    buffer += data
    while b"\0" in buffer:
        field, _, buffer = buffer.partition(b"\0")
        field = field.decode()
        if field:
            key, _, value = field.partition("=")
            if key == "env":
                name, _, value = value.partition("=")
                run["env"][name] = value
            elif key == "arg":
                run["arg"].append(value)
            else:
                run[key] = value
            continue
        with open(run["out"], "w") as out:
            code = subprocess.call([program, *run["arg"]], cwd=run["cwd"], env=run["env"], stdout=out,
                                   stderr=subprocess.STDOUT)
        if code < 0:
            os.kill(os.getpid(), -code)
        poisoned = any("poisons the context" in a for a in run["arg"])
        sys.stdout.write(f"done {code} {'retire' if poisoned else 'ok'}\n"); sys.stdout.flush()
        run = {"arg": [], "env": {}}
    data = sys.stdin.buffer.read1(1 << 20)
'''


def serving_judge(tmp_path: Path) -> Path:
    """The serving stand-in and, beside it, the test program it runs; the student's build is elsewhere."""
    reference = tmp_path / "reference"
    reference.mkdir()
    program = reference / "judge"
    program.write_text(SERVING_STAND_IN)
    one_run = reference / "one-run"
    one_run.write_text(STAND_IN.replace('"busy with its own work": ""', '"busy with its own work": "", '
                                        '"poisons the context": ""'))
    for made in (program, one_run):
        made.chmod(0o755)
    return program


def student_build(tmp_path: Path) -> Path:
    """A student's split build: a test program that must not run, and its runner."""
    build = tmp_path / "student"
    build.mkdir()
    binary = build / "tests"
    binary.write_text("#!/bin/sh\necho the student build of the judge must not run here; exit 99\n")
    (build / "tests-runner").write_text("#!/bin/sh\nexit 0\n")
    for made in (binary, build / "tests-runner"):
        made.chmod(0o755)
    return binary


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_one_judge_serves_run_after_run_each_with_its_own_results(tmp_path: Path):
    binary = student_build(tmp_path)
    with JudgeServers(serving_judge(tmp_path), tmp_path / "judges") as servers:
        passed = run_case(binary, "passes", 10, tmp_path, seed=42, servers=servers)
        failed = run_case(binary, "fails", 10, tmp_path, seed=42, servers=servers)
        again = run_case(binary, "passes", 10, tmp_path, seed=42, servers=servers)
        assert servers.started == 1
    assert passed.status == "passed" and passed.timing("k")["median_s"] == 0.5
    assert failed.status == "failed" and failed.messages == ["Wrong result for input: n = 3 (seed 42)"]
    assert "console noise" in failed.output_tail  # the run's own output, read from its file
    assert again.status == "passed"
    assert not list(tmp_path.glob("judge-output-*")), "each run's output file is removed once read"


def test_a_run_that_kills_its_judge_is_a_crash_and_the_next_run_gets_a_fresh_judge(tmp_path: Path):
    binary = student_build(tmp_path)
    with JudgeServers(serving_judge(tmp_path), tmp_path / "judges") as servers:
        crashed = run_case(binary, "crashes", 10, tmp_path, seed=1, servers=servers)
        after = run_case(binary, "passes", 10, tmp_path, seed=1, servers=servers)
        assert servers.started == 2
    assert crashed.status == "crashed" and "SIGSEGV" in crashed.messages[0]
    assert after.status == "passed"


def test_a_run_past_its_time_kills_its_judge_and_is_timed_out(tmp_path: Path):
    binary = student_build(tmp_path)
    with JudgeServers(serving_judge(tmp_path), tmp_path / "judges") as servers:
        started = time.monotonic()
        hung = run_case(binary, "hangs", 1, tmp_path, seed=1, servers=servers)
        assert time.monotonic() - started < 5
        killed = servers.retired[-1]
        assert not alive(killed), "the judge and the run it was serving are killed"
        assert run_case(binary, "passes", 10, tmp_path, seed=1, servers=servers).status == "passed"
    assert hung.status == "timed_out" and "killed after" in hung.messages[0]


def test_a_case_past_its_own_limit_in_a_group_is_timed_out_and_the_rest_settle(tmp_path: Path):
    binary = student_build(tmp_path)
    with JudgeServers(serving_judge(tmp_path), tmp_path / "judges") as servers:
        settled = run_group(binary, [("passes", 10), ("hangs", 1), ("fails", 10)], tmp_path, seed=1,
                            servers=servers)
    assert settled["passes"].status == "passed"
    assert settled["hangs"].status == "timed_out"
    assert "fails" not in settled  # it did not run: the caller runs it alone


def test_runs_of_another_kind_get_judges_of_their_own(tmp_path: Path):
    """Beside other programs a judge blocks in its waits, alone it spins: that is set as its CUDA context starts."""
    binary = student_build(tmp_path)
    with JudgeServers(serving_judge(tmp_path), tmp_path / "judges") as servers:
        beside = run_case(binary, "passes", 10, tmp_path, seed=1, beside_others=True, servers=servers)
        alone = run_case(binary, "passes", 10, tmp_path, seed=1, beside_others=False, servers=servers)
        beside_again = run_case(binary, "passes", 10, tmp_path, seed=1, beside_others=True, servers=servers)
        assert servers.started == 2
    assert [o.timing("k")["gpu_wait"] for o in (beside, alone, beside_again)] == ["block", None, "block"]


def test_a_judge_retires_when_it_says_so_and_after_its_share_of_runs(tmp_path: Path):
    binary = student_build(tmp_path)
    with JudgeServers(serving_judge(tmp_path), tmp_path / "judges", runs_per_judge=2) as servers:
        poisoned = run_case(binary, "poisons the context", 10, tmp_path, seed=1, servers=servers)
        assert servers.started == 1 and len(servers.retired) == 1
        for _ in range(3):
            assert run_case(binary, "passes", 10, tmp_path, seed=1, servers=servers).status == "passed"
        assert servers.started == 3  # two runs for the second judge, the third run on a third
    assert poisoned.status == "passed"  # the run itself stands; only the judge is not used again


def test_a_judge_that_cannot_start_says_why(tmp_path: Path):
    program = tmp_path / "broken-judge"
    program.write_text("#!/bin/sh\necho 'error while loading shared libraries: libcudart.so.13' >&2\nexit 127\n")
    program.chmod(0o755)
    with JudgeServers(program, tmp_path / "judges") as servers:
        outcome = run_case(student_build(tmp_path), "passes", 10, tmp_path, seed=1, servers=servers)
    assert outcome.status == "not_found" and "code 127" in outcome.messages[0]
    assert "libcudart.so.13" in outcome.output_tail
    assert not list((tmp_path / "judges").glob("judge-*.log")), "a judge's log goes with it"


def test_closing_ends_every_judge(tmp_path: Path):
    binary = student_build(tmp_path)
    servers = JudgeServers(serving_judge(tmp_path), tmp_path / "judges")
    run_case(binary, "passes", 10, tmp_path, seed=1, beside_others=True, servers=servers)
    run_case(binary, "passes", 10, tmp_path, seed=1, beside_others=False, servers=servers)
    pids = servers.pids()
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    servers.close()
    assert not any(alive(pid) for pid in pids) and servers.pids() == []


def test_without_servers_the_students_own_judge_runs(tmp_path: Path):
    """The student's test program is started when no serving judges are given, as before them."""
    binary = student_build(tmp_path)
    outcome = run_case(binary, "passes", 10, tmp_path, seed=1)
    assert outcome.status == "not_found" and "code 99" in outcome.messages[0]
    assert judge.runner_of(binary) is not None
