"""A judge that serves many runs (--kit-serve) runs each as one start of the test program would.

    python3 serve_runs.py <kit_remote_tests> <work folder>

ctest runs it with the remote tests' environment (harness/tests/CMakeLists.txt). One judge is sent
four runs, as class grading sends a student's programs: a run whose runner is killed by SIGSEGV, then
runs that need a working runner, which each must get afresh; each run's results and output go to its
own files, and a run's environment is its own (only the run given the public seed shows it in its run
record). The judge exits when its input closes. Exit code 0 when every check holds; otherwise what failed, on stderr.
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


def run_fields(work: Path, name: str, case: str, seed: int) -> bytes:
    env = {**os.environ, "KIT_RESULTS": str(work / f"{name}.jsonl"), "KIT_SEED": str(seed)}
    fields = [f"arg=--test-case={case}", "arg=--test-suite=cpu", "arg=--no-colors", f"cwd={work}",
              f"out={work / f'{name}.txt'}"] + [f"env={key}={value}" for key, value in env.items()]
    return b"".join(field.encode() + b"\0" for field in fields) + b"\0"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


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
        judge.stdin.write(run_fields(work, name, case, seed))
        judge.stdin.flush()
        reply = judge.stdout.readline().decode()
        output = (work / f"{name}.txt").read_text() if (work / f"{name}.txt").is_file() else ""
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
    judge.stdin.close()
    try:
        code = judge.wait(timeout=30)
        if code != 0:
            problems.append(f"the judge exited with code {code} when its input closed")
    except subprocess.TimeoutExpired:
        judge.kill()
        problems.append("the judge did not exit when its input closed")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
