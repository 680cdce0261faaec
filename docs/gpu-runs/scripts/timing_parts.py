"""Where a lab's timing cases spend their seconds, on a quiet GPU: each timing case of a built test program (the
reference's: build/<lab>/<lab>-reference-tests) run RUNS times through the grader's judge and sandbox, each in a
program of its own. For each case, the median of: the program's seconds, the case's own, each measurement's whole
cost (took_s: warm-up, samples, inputs, checks, the path) and its parts (kit::Timing::Cost), and what the
measurements leave of the case (its set-up: inputs, the ceilings and library peers it times, its own checks).

    python3 docs/gpu-runs/scripts/timing_parts.py LAB BUILT_TEST_PROGRAM [RUNS]

Prints a table a case and writes every run's figures to $OUT/timing_parts-<lab>.json."""
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from grader.bench.class_bench import took_parts
from grader.config import load_lab
from grader.run import judge


def one_run(config, binary: Path, case: str, work: Path) -> dict:
    started = time.monotonic()
    outcome = judge.run_case(binary, case, config.timeout_s, work, None, config.run_limits)
    run = {"status": outcome.status, "program_s": time.monotonic() - started, "case_s": outcome.seconds,
           "measurements_s": sum(t.get("took_s", 0.0) for t in outcome.timings), "measurements": {}}
    for record in outcome.timings:
        run["measurements"][record["name"]] = {"took_s": record.get("took_s", 0.0), **took_parts(record)}
    if not outcome.passed:
        run["messages"] = outcome.messages[:2]
    return run


def median_of(runs: list[dict], pick) -> float:
    values = [v for v in (pick(r) for r in runs) if v is not None]
    return statistics.median(values) if values else float("nan")


def print_case(case: str, runs: list[dict]) -> None:
    statuses = sorted({r["status"] for r in runs})
    program_s = median_of(runs, lambda r: r["program_s"])
    case_s = median_of(runs, lambda r: r["case_s"])
    measuring = median_of(runs, lambda r: r["measurements_s"])
    print(f"\n{case} ({', '.join(statuses)}): program {program_s:.3f} s, the case {case_s:.3f} s, its measurements "
          f"{measuring:.3f} s, the rest of the case {case_s - measuring:.3f} s")
    for name in runs[0]["measurements"]:
        parts = sorted({p for r in runs for p in r["measurements"].get(name, {})} - {"took_s"})
        split = {p: median_of(runs, lambda r, p=p: r["measurements"].get(name, {}).get(p)) for p in parts}
        shown = ", ".join(f"{p} {s:.3f}" for p, s in sorted(split.items(), key=lambda item: -item[1]) if s >= 0.001)
        took = median_of(runs, lambda r: r["measurements"].get(name, {}).get("took_s"))
        print(f"  {name}: {took:.3f} s ({shown})")


def main() -> None:
    config = load_lab(sys.argv[1])
    binary = Path(sys.argv[2]).resolve()  # the judge runs in a folder of its own
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    work = Path(tempfile.mkdtemp(prefix="timing-parts-"))
    os.chmod(work, 0o777)  # the sandboxed runner may be another user
    found = {case: [one_run(config, binary, case, work) for _ in range(runs)] for case in config.timing_cases}
    for case, case_runs in found.items():
        print_case(case, case_runs)
    out = Path(os.environ.get("OUT", "."))
    (out / f"timing_parts-{config.name}.json").write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
