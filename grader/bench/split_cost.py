"""What the judge/runner split costs the timings: each lab's reference timing cases, in a build as grading builds
it and in a build of the same tree in one process (tests and student code together), run alternately on one GPU.

    cmake -S . -B build && cmake --build build
    cmake -S . -B build-one -DKIT_ONE_PROCESS=ON && cmake --build build-one
    python3 -m grader.bench.split_cost --split build --one-process build-one [--lab 05-reduction] [--runs 2] [--out f]
    make split-cost ONE_PROCESS_BUILD=build-one [LAB=..] [OUT=..]

Each timing case runs as ctest runs it (`ctest -L timing`, the reference's cases). The split build gets the work
queues grading gives (one a CUDA context, eight where the lab says concurrent_streams: grader/run/judge.py); the
one-process build gets the driver's default, as the labs were timed before the split. It prints, per measurement,
each run's median in both builds and the ratio of their means (split over one process), counts the measurements
within WITHIN of one process (the judge/runner issue's bar), and writes everything to OUT as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader import build
from grader.run import judge
from grader.config import ConfigError, LabConfig, list_labs, load_lab

WITHIN = 0.03
CASE_TIMEOUT_S = 600
# ctest -V prefixes a test's output with its number: "462: [timing] pipelined   22.715 ms ..."
TIMING_LINE = re.compile(r"^(?:\d+: )?\[timing\]\s+(\S+)\s+([0-9.]+) ms", re.MULTILINE)
NO_GPU = re.compile(r"No CUDA GPU available|Grading needs a CUDA GPU")  # ctest's KIT_GPU_SKIP_REGEX (KitLab.cmake)
SPLIT, ONE_PROCESS = "split", "one_process"


@dataclass
class LabRun:
    """One lab's timing cases in one build: the medians by measurement, or why there are none."""
    medians_s: dict[str, float] = field(default_factory=dict)
    failure: str = ""


def parse_timings(output: str) -> dict[str, float]:
    """The measurements' medians, in seconds, from the timing cases' output."""
    return {name: float(ms) / 1e3 for name, ms in TIMING_LINE.findall(output)}


def run_lab(config: LabConfig, build_dir: Path, environment: dict[str, str]) -> LabRun:
    pattern = f"^{config.name}/reference:"  # a lab's name is letters, digits and '-': literal in ctest's regex
    try:
        done = subprocess.run(["ctest", "-L", "timing", "-R", pattern, "-V"], cwd=build_dir, env=environment,
                              capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return LabRun(failure=f"its timing cases took more than {CASE_TIMEOUT_S} s")
    output = done.stdout + done.stderr
    if NO_GPU.search(output):
        return LabRun(failure="no CUDA GPU: the timing cases skipped")
    run = LabRun(medians_s=parse_timings(output))
    if done.returncode != 0:
        failed = [line.strip() for line in output.splitlines() if "(Failed)" in line or "***Failed" in line]
        run.failure = "a timing case failed: " + ("; ".join(failed[:3]) or f"ctest exited with {done.returncode}")
    elif not run.medians_s:
        run.failure = "no timing lines: does the lab have timing cases in this build?"
    return run


def environments(config: LabConfig) -> dict[str, dict[str, str]]:
    """Each build's environment: grading's work queues for the split, the driver's default in one process."""
    base = {k: v for k, v in os.environ.items() if k not in judge.ONE_WORK_QUEUE}
    split = dict(base) if config.concurrent_streams else {**base, **judge.ONE_WORK_QUEUE}
    return {SPLIT: split, ONE_PROCESS: base}


def check_builds(split_dir: Path, one_process_dir: Path) -> None:
    if not (split_dir / "CMakeCache.txt").is_file() or not (one_process_dir / "CMakeCache.txt").is_file():
        raise ConfigError(f"build both folders first: {split_dir} (cmake -S . -B {split_dir}) and {one_process_dir} "
                          f"(cmake -S . -B {one_process_dir} -DKIT_ONE_PROCESS=ON), then cmake --build each")
    if build.built_in_one_process(split_dir):
        raise ConfigError(f"{split_dir} was configured with -DKIT_ONE_PROCESS=ON: give a build as grading builds it")
    if not build.built_in_one_process(one_process_dir):
        raise ConfigError(f"{one_process_dir} was not configured with -DKIT_ONE_PROCESS=ON: "
                          f"cmake -S . -B {one_process_dir} -DKIT_ONE_PROCESS=ON && cmake --build {one_process_dir}")


def labs_in_both(labs: list[str], split_dir: Path, one_process_dir: Path) -> list[LabConfig]:
    configs = [load_lab(lab) for lab in labs]
    present = [c for c in configs if all(build.binary_path(d, c.name, "reference").is_file()
                                         for d in (split_dir, one_process_dir))]
    if not present:
        raise ConfigError(f"no lab of {', '.join(labs)} has its reference test program built in both "
                          f"{split_dir} and {one_process_dir}")
    return present


def compare(runs: list[dict[str, dict[str, LabRun]]]) -> list[dict]:
    """Per lab and measurement: each build's medians over the runs, and the ratio of their means."""
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    for run in runs:
        for lab, by_build in run.items():
            for which, lab_run in by_build.items():
                for name, median in lab_run.medians_s.items():
                    rows.setdefault((lab, name), {SPLIT: [], ONE_PROCESS: []})[which].append(median)
    table = []
    for (lab, name), medians in rows.items():
        ratio = (statistics.mean(medians[SPLIT]) / statistics.mean(medians[ONE_PROCESS])
                 if medians[SPLIT] and medians[ONE_PROCESS] else None)
        table.append({"lab": lab, "measurement": name, "split_s": medians[SPLIT],
                      "one_process_s": medians[ONE_PROCESS], "ratio": ratio})
    return table


def report(table: list[dict], failures: list[str]) -> str:
    lines = [f"{'lab':18} {'measurement':32} {'one process, ms':>22} {'split, ms':>22} {'ratio':>6}"]
    for row in table:
        ratio = f"{row['ratio']:.3f}" if row["ratio"] is not None else "-"
        lines.append(f"{row['lab']:18} {row['measurement']:32} "
                     f"{' / '.join(f'{s * 1e3:.3f}' for s in row['one_process_s']):>22} "
                     f"{' / '.join(f'{s * 1e3:.3f}' for s in row['split_s']):>22} {ratio:>6}")
    compared = [row for row in table if row["ratio"] is not None]
    inside = [row for row in compared if abs(row["ratio"] - 1.0) <= WITHIN]
    lines.append(f"{len(inside)} of {len(compared)} measurements within {WITHIN:.0%} of one process "
                 "(ratio = split / one process, by the means of the runs)")
    lines += [f"  - {failure}" for failure in failures]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="build", help="a build as grading builds it (default: build)")
    parser.add_argument("--one-process", required=True, help="a build configured with -DKIT_ONE_PROCESS=ON")
    parser.add_argument("--lab", action="append", help="a lab to time; again for more (default: every lab)")
    parser.add_argument("--runs", type=int, default=2, help="times each lab's cases run in each build (default 2)")
    parser.add_argument("--out", help="write the table and every median to this JSON file")
    args = parser.parse_args(argv)
    split_dir, one_process_dir = Path(args.split).resolve(), Path(args.one_process).resolve()
    try:
        check_builds(split_dir, one_process_dir)
        configs = labs_in_both(args.lab or list_labs(), split_dir, one_process_dir)
    except ConfigError as error:
        print(f"split-cost: {error}", file=sys.stderr)
        return 2
    runs: list[dict[str, dict[str, LabRun]]] = []
    failures: list[str] = []
    for number in range(1, args.runs + 1):
        run: dict[str, dict[str, LabRun]] = {}
        for config in configs:
            env = environments(config)
            # Alternate which build goes first, so that a drift of the GPU's clocks falls on both alike.
            order = [ONE_PROCESS, SPLIT] if number % 2 else [SPLIT, ONE_PROCESS]
            dirs = {SPLIT: split_dir, ONE_PROCESS: one_process_dir}
            run[config.name] = {which: run_lab(config, dirs[which], env[which]) for which in order}
            for which, lab_run in run[config.name].items():
                if lab_run.failure:
                    failures.append(f"run {number}, {config.name}, {which.replace('_', ' ')}: {lab_run.failure}")
            print(f"run {number}: {config.name} timed", flush=True)
        runs.append(run)
    table = compare(runs)
    print(report(table, failures))
    if args.out:
        Path(args.out).write_text(json.dumps({"within": WITHIN, "runs": args.runs, "split_build": str(split_dir),
                                              "one_process_build": str(one_process_dir), "table": table,
                                              "failures": failures}, indent=1) + "\n")
    return 1 if failures or not any(row["ratio"] is not None for row in table) else 0


if __name__ == "__main__":
    sys.exit(main())
