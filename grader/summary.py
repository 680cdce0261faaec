"""A class's outputs, made from the per-student results alone: gradebook.csv, summary.txt, histogram.png.

grade-class writes them at the end (and when interrupted, from what is done)
and merge writes them for the combined shards; both read every
<out>/<student>/results.json, so the outputs always match the results folder.
The summary gives the score distribution and the students who need a TA's
look: refused at intake (a forbidden identifier, a bad zip), build errors,
time-outs, crashes, and grader problems, each with its reason. It also says
whether the yardstick held still: each GPU times the reference at the
start and again at the end (reference-timings-<gpu>.json beside the results),
and a reference that moved by more than REFERENCE_DRIFT_WARN is a warning.

Scores are the autograder's. A lab's written analysis (its questions, graded
by hand) is kept apart: the gradebook gives it a column of its own, left empty
for the TA, and the summary says how many points it holds.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from grader import lms
from grader.gpulock import safe_key
from grader.report import write_text

RESULTS = "results.json"
BINS = 10
BAR_WIDTH = 40
REFERENCE_TIMINGS = "reference-timings-{gpu}.json"
# Past this, the reference's two timings disagree by more than half the room a copy of it has before it loses
# points (full_at is 1.2 in most labs): a score then depends on when the student was timed.
REFERENCE_DRIFT_WARN = 0.10


@dataclass(frozen=True)
class Row:
    student: str
    score: float
    attention: tuple[str, ...]


def read_results(out_dir: Path, students: list[str] | None = None) -> dict[str, dict]:
    """student -> results.json, for the students given (default: every folder with one)."""
    names = students if students is not None else sorted(p.parent.name for p in out_dir.glob(f"*/{RESULTS}"))
    results = {}
    for name in names:
        path = out_dir / name / RESULTS
        if path.is_file():
            results[name] = json.loads(path.read_text())
    return results


def rows(results: dict[str, dict]) -> list[Row]:
    return [Row(name, float(r["score"]), tuple(r.get("extra_data", {}).get("attention", [])))
            for name, r in sorted(results.items())]


def histogram(scores: list[float], maximum: float, bins: int = BINS) -> list[tuple[float, float, int]]:
    """(low, high, count) for `bins` equal ranges of [0, maximum]; the top one holds the maximum (and any
    extra credit above it)."""
    width = maximum / bins if maximum > 0 else 1.0
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score // width)))] += 1
    return [(i * width, (i + 1) * width, counts[i]) for i in range(bins)]


def histogram_text(scores: list[float], maximum: float) -> str:
    table = histogram(scores, maximum)
    most = max([count for _, _, count in table] + [1])
    lines = []
    for low, high, count in table:
        bar = "#" * round(BAR_WIDTH * count / most)
        lines.append(f"  {low:6.1f} - {high:<6.1f} | {bar:<{BAR_WIDTH}} {count}")
    return "\n".join(lines)


def _mean_median(scores: list[float]) -> tuple[float, float]:
    ordered = sorted(scores)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return sum(ordered) / len(ordered), median


def summary_text(lab: str, maximum: float, table: list[Row], missing: list[str] = (), picture: str = "",
                 by_hand: float = 0.0, yardstick: list[str] = ()) -> str:
    """`yardstick`: reference_timings_text's lines."""
    scores = [row.score for row in table]
    lines = [f"{lab}: {len(table)} students graded"]
    if scores:
        mean, median = _mean_median(scores)
        full = sum(score >= maximum for score in scores)
        lines[0] += f", mean {mean:.1f}, median {median:.1f} / {maximum:g}; {full} with full marks"
    if by_hand:
        lines.append(f"These are the autograder's scores. The written analysis (QUESTIONS.md, {by_hand:g} more "
                     f"points) is graded by hand: the gradebook's 'graded by hand' column is left for the TA.")
    if scores:
        lines += ["", f"Score distribution (out of {maximum:g}):", histogram_text(scores, maximum)]
        if picture:
            lines.append(picture)
    looks = [row for row in table if row.attention]
    lines += ["", f"Needs a TA's look: {len(looks)}"]
    width = max([len(row.student) for row in looks] + [10])
    for row in looks:
        lines.append(f"  {row.student:<{width}}  {row.score:6.1f}  " + "; ".join(row.attention))
    if missing:
        lines += ["", f"Not graded yet ({len(missing)}; run grade-class again to finish): " + ", ".join(missing)]
    lines += yardstick
    return "\n".join(lines) + "\n"


def write_reference_timings(out_dir: Path, gpu: str, name: str, runs: list[dict]) -> Path:
    """A GPU's reference timings: each run {"at": seconds since the epoch, "medians": {measurement: seconds},
    "failed": [cases]}, the first the one the students it timed were scored against."""
    path = out_dir / REFERENCE_TIMINGS.format(gpu=safe_key(gpu))
    write_text(path, json.dumps({"gpu": gpu, "name": name, "runs": runs}, indent=2) + "\n")
    return path


def reference_timings_text(out_dir: Path) -> list[str]:
    """The summary's lines on the reference's timings, per GPU: how far the one at the end moved from the
    one every score was measured against, with a warning past REFERENCE_DRIFT_WARN; none where there were
    no timings."""
    lines = []
    for path in sorted(out_dir.glob(REFERENCE_TIMINGS.format(gpu="*"))):
        timings = json.loads(path.read_text())
        first, *later = timings["runs"]
        where = timings["name"] or timings["gpu"]
        if not later:
            lines.append(f"  {where}: timed once (the run stopped before it could be timed again)")
            continue
        last = later[-1]
        if last.get("failed"):
            lines.append(f"  WARNING: on {where} the reference's timing at the end failed "
                         f"({', '.join(last['failed'])}): whether the yardstick held still is unknown.")
            continue
        moves = {name: last["medians"][name] / seconds - 1 for name, seconds in first["medians"].items()
                 if name in last["medians"] and seconds > 0}
        shown = "; ".join(f"{name} {first['medians'][name] * 1e3:.3f} -> {last['medians'][name] * 1e3:.3f} ms "
                          f"({move:+.1%})" for name, move in moves.items())
        lines.append(f"  {where}: at the start and at the end: {shown}")
        worst = max(moves.values(), key=abs, default=0.0)
        if abs(worst) > REFERENCE_DRIFT_WARN:
            lines.append(f"  WARNING: on {where} the reference's own time moved by {worst:+.0%} during the run, so "
                         f"a performance score depends on when the student was timed. Regrade the class "
                         f"(--regrade) when the machine has nothing else to do, with fewer builds at once (--jobs).")
    return ["", "The reference's timings, which every performance score is measured against:", *lines] if lines else []


def draw_histogram(path: Path, lab: str, maximum: float, scores: list[float]) -> str:
    """Draw the histogram as a PNG with matplotlib; returns the line the summary shows about it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return ("(histogram.png not drawn: this Python has no matplotlib; "
                "sudo apt-get install python3-matplotlib and run the grader with /usr/bin/python3)")
    table = histogram(scores, maximum)
    figure, axes = pyplot.subplots(figsize=(7, 4))
    axes.bar([low for low, _, _ in table], [count for _, _, count in table], width=table[0][1] - table[0][0],
             align="edge", color="#4477aa", edgecolor="white")
    axes.set_xlabel(f"score (out of {maximum:g})")
    axes.set_ylabel("students")
    axes.set_title(f"{lab}: {len(scores)} students")
    axes.set_xlim(0, maximum)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return f"(drawn in {path.name})"


# The gradebook's columns for a lab's written analysis: the TA's score (left empty), and what it is out of.
BY_HAND_COLUMNS = ["graded by hand", "graded by hand max"]


def write_gradebook(out_dir: Path, lab: str, maximum: float, table: list[Row], by_hand: float = 0.0) -> Path:
    """One row per student: the autograder's score and maximum, then, where the lab has questions graded by hand,
    an empty cell for the TA's score and its maximum."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["student", lab, "max"] + (BY_HAND_COLUMNS if by_hand else []))
    writer.writerows([(row.student, row.score, maximum) + (("", by_hand) if by_hand else ()) for row in table])
    path = out_dir / "gradebook.csv"
    write_text(path, text.getvalue())
    return path


def write_uploads(out_dir: Path, lab: str, results: dict[str, dict]) -> None:
    """The scores to upload back to the LMS the submissions came from (lms.upload_rows), where they came from one."""
    for name, rows in lms.upload_rows(lab, results).items():
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        write_text(out_dir / name, text.getvalue())


def write_all(out_dir: Path, lab: str, maximum: float, students: list[str] | None = None,
              by_hand: float = 0.0) -> str:
    """Rewrite gradebook.csv, summary.txt and histogram.png from the results in `out_dir`; returns the summary.
    `maximum` is the autograder's, `by_hand` the points of the questions a TA grades. `students`, when given, is
    the roster: who has no results yet is listed as not graded."""
    results = read_results(out_dir, students)
    table = rows(results)
    write_gradebook(out_dir, lab, maximum, table, by_hand)
    write_uploads(out_dir, lab, results)
    picture = draw_histogram(out_dir / "histogram.png", lab, maximum, [r.score for r in table]) if table else ""
    missing = [name for name in (students or []) if name not in results]
    text = summary_text(lab, maximum, table, missing, picture, by_hand, reference_timings_text(out_dir))
    write_text(out_dir / "summary.txt", text)
    return text
