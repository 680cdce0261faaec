"""A lab's timing cases, run through the grader's judge and sandbox with the GPU to themselves, RUNS times
each: on a quiet machine, beside a busy loop on every core at nice 19, and beside the same loops under
SCHED_IDLE (LOADS="quiet" runs only the first). Does the CPU's load reach a timing? (2026-11-27: nice 19 did,
up to 2.5x; SCHED_IDLE did not.) And where does each case spend its seconds: the case's own, each
measurement's whole cost (took_s: warm-up, samples, inputs, checks, the path) and its parts (kit::Timing::Cost),
and what the measurements leave of the case (its set-up: inputs, the ceilings and library peers it times).

    python3 docs/gpu-runs/scripts/timing_under_load.py LAB BUILT_TEST_PROGRAM [RUNS]

Prints each median and writes every sample to $OUT/timing_under_load.json."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.bench.class_bench import took_parts
from grader.config import load_lab
from grader.run import judge

LOADS = {"quiet": None, "nice19": ["nice", "-n", "19"], "idle": ["chrt", "--idle", "0"]}


def median_line(runs: list[dict]) -> str:
    """The medians over `runs` of each part of a measurement's cost, the costliest first."""
    parts = {part for run in runs for part in run["parts_s"]}
    medians = {part: statistics.median(run["parts_s"].get(part, 0.0) for run in runs) for part in parts}
    return ", ".join(f"{part} {s:.3f}" for part, s in sorted(medians.items(), key=lambda item: -item[1]) if s >= 0.001)


def main() -> None:
    config = load_lab(sys.argv[1])
    binary = Path(sys.argv[2]).resolve()  # the judge runs in a folder of its own
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    loads = os.environ.get("LOADS", " ".join(LOADS)).split()
    work = Path(tempfile.mkdtemp(prefix="timing-under-load-"))
    os.chmod(work, 0o777)  # the sandboxed runner may be another user
    found: dict = {}
    cases: dict = {}
    for load in loads:
        prefix = LOADS[load]
        loops = [] if prefix is None else [subprocess.Popen([*prefix, "sh", "-c", "while :; do :; done"])
                                           for _ in range(os.cpu_count() or 1)]
        try:
            for case in config.timing_cases:
                for _ in range(runs):
                    outcome = judge.run_case(binary, case, config.timeout_s, work, None, config.run_limits)
                    if not outcome.passed:
                        print(load, case, outcome.status, outcome.messages[:1])
                    measuring = sum(t.get("took_s", 0.0) for t in outcome.timings)
                    cases.setdefault(load, {}).setdefault(case, []).append(
                        {"case_s": outcome.seconds, "set_up_s": outcome.seconds - measuring})
                    for t in outcome.timings:
                        found.setdefault(load, {}).setdefault(t["name"], []).append(
                            {"median_ms": t["median_s"] * 1e3, "samples_ms": [s * 1e3 for s in t["samples_s"]],
                             "path_overhead_ms": t.get("path_overhead_s", 0.0) * 1e3,
                             "batch_calls": t.get("batch_calls"), "took_s": t.get("took_s", 0.0),
                             "parts_s": took_parts(t)})
        finally:
            for loop in loops:
                loop.kill()
        for case, taken in cases.get(load, {}).items():
            print(f"{load:7s} {case}: {statistics.median(t['case_s'] for t in taken):.3f} s, of which set-up "
                  f"outside its measurements {statistics.median(t['set_up_s'] for t in taken):.3f} s")
        for name, taken in found.get(load, {}).items():
            print(f"{load:7s} {name:32s} medians ms " + " ".join(f"{t['median_ms']:.3f}" for t in taken))
            print(f"{'':7s} {'':32s} took {statistics.median(t['took_s'] for t in taken):.3f} s: {median_line(taken)}")
    out = Path(os.environ.get("OUT", "."))
    (out / "timing_under_load.json").write_text(json.dumps({"measurements": found, "cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
