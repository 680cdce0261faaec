"""A run record's table of class benches, in Markdown, from their reports (class_bench's bench.json):

    python3 docs/gpu-runs/scripts/bench_table.py CALL=path/to/bench.json ...
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository's root: the grader's package
from grader.bench.class_bench import class_pace  # noqa: E402

COLUMNS = ["call", "lab", "graded", "total s", "s a student", "class of 200, s", "paid once, s",
           "alone on the GPU a student, s", "reference copies at full marks", "their timing ratios"]


def row(call: str, report: dict) -> list[str]:
    run = report["runs"][0]
    reference_s = sum(run.get("reference_s", {}).values())
    graded = run["graded"]
    # The reference's build and timing counted once, as the bench counts it now (reports before it lack the field)
    paid_once = class_pace(run["total_s"], report["n"], graded, reference_s)["class_of_200_paid_once_s"]
    ratios = "; ".join(f"{name} {t['ratio_min']:.2f}-{t['ratio_max']:.2f}"
                       for name, t in run.get("reference_copies_timed", {}).items())
    alone = run.get("phases_s", {}).get("serial_and_timing_s", {}).get("mean")
    lab = report["lab"] + (" (no sandbox)" if report.get("sandboxed") is False else "")
    return [call, lab, f"{graded} of {report['n']}", f"{run['total_s']:.1f}",
            str(run.get("per_student_s") or "-"), f"{run['class_of_200_s']:,.0f}" if run.get("class_of_200_s") else "-",
            f"{paid_once:,.0f}" if paid_once else "-", str(alone or "-"), run.get("references_full_marks", "-"),
            ratios or "-"]


def main(arguments: list[str]) -> None:
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for argument in arguments:
        call, path = argument.split("=", 1)
        with open(path) as report:
            print("| " + " | ".join(row(call, json.load(report))) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
