"""A lab's timing cases, run through the grader's judge and sandbox with the GPU to themselves, RUNS times
each: on a quiet machine, beside a busy loop on every core at nice 19, and beside the same loops under
SCHED_IDLE. Does the CPU's load reach a timing? (2026-11-27: nice 19 did, up to 2.5x; SCHED_IDLE did not.)

    python3 docs/gpu-runs/scripts/timing_under_load.py LAB BUILT_TEST_PROGRAM [RUNS]

Prints each median and writes every sample to $OUT/timing_under_load.json."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.config import load_lab
from grader.run import judge

LOADS = {"quiet": None, "nice19": ["nice", "-n", "19"], "idle": ["chrt", "--idle", "0"]}


def main() -> None:
    config = load_lab(sys.argv[1])
    binary = Path(sys.argv[2]).resolve()  # the judge runs in a folder of its own
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    work = Path(tempfile.mkdtemp(prefix="timing-under-load-"))
    os.chmod(work, 0o777)  # the sandboxed runner may be another user
    found: dict = {}
    for load, prefix in LOADS.items():
        loops = [] if prefix is None else [subprocess.Popen([*prefix, "sh", "-c", "while :; do :; done"])
                                           for _ in range(os.cpu_count() or 1)]
        try:
            for case in config.timing_cases:
                for _ in range(runs):
                    outcome = judge.run_case(binary, case, config.timeout_s, work, None, config.run_limits)
                    if not outcome.passed:
                        print(load, case, outcome.status, outcome.messages[:1])
                    for t in outcome.timings:
                        found.setdefault(load, {}).setdefault(t["name"], []).append(
                            {"median_ms": t["median_s"] * 1e3, "samples_ms": [s * 1e3 for s in t["samples_s"]],
                             "path_overhead_ms": t.get("path_overhead_s", 0.0) * 1e3,
                             "batch_calls": t.get("batch_calls")})
        finally:
            for loop in loops:
                loop.kill()
        for name, taken in found.get(load, {}).items():
            print(f"{load:7s} {name:32s} medians ms " + " ".join(f"{t['median_ms']:.3f}" for t in taken))
    out = Path(os.environ.get("OUT", "."))
    (out / "timing_under_load.json").write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
