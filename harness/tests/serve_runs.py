"""A judge that serves many runs (--kit-serve) runs each as one start of the test program would.

    python3 serve_runs.py <kit_remote_tests> <work folder>

ctest runs it with the remote tests' environment (harness/tests/CMakeLists.txt). One judge is sent
four runs, as class grading sends a student's programs: a run whose runner is killed by SIGSEGV, then
runs that need a working runner, which each must get afresh; each run's results and output go to its
own files, and a run's environment is its own (only the run given the public seed shows it in its run
record). Where a GPU is, two runs that time through the runner follow: the judge keeps its twin (the runner of
its own that measures the path) from the first to the second, stopped in between, instead of making a CUDA
context for each. The judge exits when its input closes, and its twin with it. Exit code 0 when every check
holds; otherwise what failed, on stderr.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PUBLIC_SEED = 11  # harness/tests/params.txt
# (name, test case, KIT_SEED)
RUNS = [
    ("segfault", "remote (ends the runner): killed by SIGSEGV*", 5),
    ("after-segfault", "remote: host inputs and values arrive*", PUBLIC_SEED),
    ("environment", "remote: the runner's environment holds nothing of the judge's*", 7),
    ("shared-host", "remote: host memory the runner's code allocates is one memory for both*", 8),
]


# Timed through the runner, so through the twin too (remote_tests.cpp); run twice.
TIMED_CASE = "remote (GPU): a short work is timed in batched samples*"
NO_GPU = "No CUDA GPU available"


def run_fields(work: Path, name: str, case: str, seed: int, suite: str = "--test-suite=cpu") -> bytes:
    env = {**os.environ, "KIT_RESULTS": str(work / f"{name}.jsonl"), "KIT_SEED": str(seed)}
    fields = [f"arg=--test-case={case}", f"arg={suite}", "arg=--no-colors", f"cwd={work}",
              f"out={work / f'{name}.txt'}"] + [f"env={key}={value}" for key, value in env.items()]
    return b"".join(field.encode() + b"\0" for field in fields) + b"\0"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def twins_of(judge: int) -> dict[int, str]:
    """The judge's child processes started as its twin (--kit-twin), each with its state ("T": stopped)."""
    twins = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue  # not a process, or one that has just ended
        state, parent = stat[stat.rindex(")") + 2:].split()[:2]
        if int(parent) == judge and b"--kit-twin" in command:
            twins[int(entry.name)] = state
    return twins


def send(judge: subprocess.Popen, work: Path, name: str, case: str, seed: int, suite: str) -> tuple[str, str]:
    """One run sent and answered: the judge's reply line and the run's output."""
    judge.stdin.write(run_fields(work, name, case, seed, suite))
    judge.stdin.flush()
    reply = judge.stdout.readline().decode()
    output = (work / f"{name}.txt").read_text() if (work / f"{name}.txt").is_file() else ""
    return reply, output


def timed_runs_keep_one_twin(judge: subprocess.Popen, work: Path) -> tuple[list[str], int | None]:
    """Two runs that time through the runner: what went wrong, and the twin's process id (None: no GPU here)."""
    problems, twins = [], []
    for name in ("timed-first", "timed-second"):
        reply, output = send(judge, work, name, TIMED_CASE, PUBLIC_SEED, "--test-suite-exclude=cpu")
        if NO_GPU in output:
            print(f"no GPU: the runs that time through the twin were skipped ({output.splitlines()[0]})")
            return problems, None
        if reply != "done 0 ok\n":
            problems.append(f"run '{name}': the reply was {reply!r}, not 'done 0 ok'; its output:\n{output}")
        twins.append(twins_of(judge.pid))
    if any(len(t) != 1 or set(t.values()) != {"T"} for t in twins) or twins[0].keys() != twins[1].keys():
        problems.append(f"after each timed run, the judge should hold one twin, stopped, the same both times "
                        f"(process id: state): {twins}")
    return problems, next(iter(twins[-1]), None)


def main(program: str, work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.iterdir():
        stale.unlink()
    judge = subprocess.Popen([program, "--kit-serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    problems = []
    ready = judge.stdout.readline()
    if ready != b"ready\n":
        problems.append(f"the judge's first line was {ready!r}, not 'ready'")
    for name, case, seed in RUNS:
        reply, output = send(judge, work, name, case, seed, "--test-suite=cpu")
        if reply != "done 0 ok\n":
            problems.append(f"run '{name}': the reply was {reply!r}, not 'done 0 ok'; its output:\n{output}")
            continue
        mine = records(work / f"{name}.jsonl")
        cases = [r for r in mine if r.get("kind") == "case"]
        if [r.get("status") for r in cases] != ["passed"]:
            problems.append(f"run '{name}': its results file holds {cases}, not one passed case")
        seeds = [r.get("seed") for r in mine if r.get("kind") == "run"]
        if seeds != [seed if seed == PUBLIC_SEED else None]:
            problems.append(f"run '{name}' (KIT_SEED={seed}): its run records show the seeds {seeds}")
        if "Status: SUCCESS" not in output:
            problems.append(f"run '{name}': its output file does not hold doctest's summary:\n{output}")
    timed_problems, twin = timed_runs_keep_one_twin(judge, work)
    problems += timed_problems
    judge.stdin.close()
    try:
        code = judge.wait(timeout=30)
        if code != 0:
            problems.append(f"the judge exited with code {code} when its input closed")
    except subprocess.TimeoutExpired:
        judge.kill()
        problems.append("the judge did not exit when its input closed")
    if twin is not None and Path(f"/proc/{twin}").exists():
        problems.append(f"the judge's twin (process {twin}) outlived the judge")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
