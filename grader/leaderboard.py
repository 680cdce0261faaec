"""The class leaderboard: one static HTML page per lab, the fastest correct kernels of a graded class.

    graded/<student>/results.json (grade-class) -> who may be ranked, per timed measurement (unranked_because)
    -> the names the TA chose (the names file) -> the ranking (rank) -> one self-contained HTML page (page)

The page is meant to be shown to the class, so:
- A student appears under the name the TA's names file gives (a CSV of student,shown_as). A student it does not
  name yet is added to it with a random id ("anon-" and six hex digits) drawn from the system's random source,
  not from the name: the page says nothing of who is who, the file does, and it stays with the TA. The TA may put
  a nickname the student chose in place of an id, or the student's own name where the student asked for it; a
  shown name that is another student's, or that two students share, is refused.
- Only correct kernels are ranked: the timing case passed, every correctness test the measurement requires passed
  (the same rule as performance points, score.unmet_requirements) and the record is plausible (score.implausible).
  Students not ranked are only counted, never listed: a list of who failed would publish grades.
- It shows a measurement's name (as the gradebook's performance item does), each kernel's median time, rate,
  ratio to the reference and GPU: no scores, seeds or test names.
- It is self-contained (inline CSS; no script, link or image) and tells the browser so: its
  Content-Security-Policy forbids every fetch, so not even a name with markup in it could load anything (names are
  escaped as well).
"""
from __future__ import annotations

import csv
import html
import io
import secrets
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from grader.config import LabConfig, PerfSpec
from grader.report import write_text
from grader.run.outcomes import CaseOutcome
from grader.score import implausible, unmet_requirements
from grader.summary import read_results

NAMES_FILE = "leaderboard-names.csv"  # the default names file, in the graded folder (private, as the results are)
NAMES_HEADER = ["student", "shown_as"]
ANONYMOUS_PREFIX = "anon-"
ANONYMOUS_BYTES = 3  # six hex digits: 16 million ids, so a class's ids rarely need a second draw
# Ratios are ranked as the page shows them, to two decimals: one kernel timed twice differs by about a percent, so
# a finer difference says which run was luckier, not which kernel is faster.
RATIO_DECIMALS = 2
GRADED_STATUS = "graded"  # classroom's status of a student whose tests ran (not refused, not a build error)


class LeaderboardError(Exception):
    """The leaderboard cannot be made as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Entry:
    """One student's timed kernel, as the page shows it (no real name: boards key entries by shown name)."""

    median_s: float
    rate: float
    unit: str
    ratio: float  # median_s over the reference's median, timed in the same grading (on the GPU that timed the student)
    gpu: str
    driver: str

    @property
    def shown_ratio(self) -> float:
        return round(self.ratio, RATIO_DECIMALS)


@dataclass(frozen=True)
class Placed:
    rank: int
    shown_as: str
    entry: Entry


@dataclass(frozen=True)
class Board:
    """One timed measurement's ranking."""

    measurement: str
    extra_credit: bool
    placed: list[Placed]
    graded: int  # students with results, ranked or not
    unranked: Counter  # why -> how many students (for the TA's console, never the page)


@dataclass(frozen=True)
class Written:
    page: Path
    boards: list[Board]
    names_file: Path
    new_ids: int  # anonymous ids added to the names file by this run


# -- who may be ranked ----------------------------------------------------------------------------------------

def ranked_measurements(config: LabConfig) -> list[PerfSpec]:
    """The measurements class grading times: those that earn points (classroom.timed_cases)."""
    return [spec for spec in config.perf if spec.points > 0]


def _outcomes(statuses: dict[str, str], timings: dict[str, list[dict]]) -> dict[str, CaseOutcome]:
    return {case: CaseOutcome(case, status, timings=timings.get(case, [])) for case, status in statuses.items()}


def unranked_because(config: LabConfig, spec: PerfSpec, extra: dict) -> str:
    """Why a student's results (their extra_data) cannot be ranked for `spec`; "" when they can."""
    if extra.get("status") != GRADED_STATUS:
        return "not graded (refused at intake, a build error or a grader problem)"
    if "case_status" not in extra:
        return "graded by a grader that did not record each case's status: grade the class again with --regrade"
    outcomes = _outcomes(extra["case_status"], extra.get("timings", {}))
    timed = outcomes.get(spec.case)
    if timed is None or not timed.passed:
        return "not timed, or its timing case failed"
    if unmet_requirements(config, spec, outcomes):
        return "a correctness test the measurement requires failed"
    mine = timed.timing(spec.measurement)
    if mine is None:
        return "no record of the measurement"
    if implausible(mine):
        return "an implausible record (faster than the hardware allows)"
    reference = _outcomes(extra.get("reference_case_status", {}), extra.get("reference_timings", {})).get(spec.case)
    if reference is None or not reference.passed or reference.timing(spec.measurement) is None:
        return "no reference timing in its grading"
    if not (_median(mine) > 0 and _median(reference.timing(spec.measurement)) > 0):
        return "a median time that is not a positive number, so no ratio"  # as score.perf_fraction gives no points
    return ""


def _median(timing: dict) -> float:
    median = timing.get("median_s")
    return float(median) if isinstance(median, (int, float)) else 0.0


def entry(spec: PerfSpec, extra: dict) -> Entry:
    """The page's row of results that unranked_because accepts."""
    mine = next(t for t in extra["timings"][spec.case] if t.get("name") == spec.measurement)
    reference = next(t for t in extra["reference_timings"][spec.case] if t.get("name") == spec.measurement)
    return Entry(median_s=mine["median_s"], rate=float(mine.get("rate", 0.0)), unit=str(mine.get("unit", "")),
                 ratio=mine["median_s"] / reference["median_s"], gpu=str(extra.get("gpu", "")),
                 driver=str(extra.get("driver", "")))


def rank(entries: list[tuple[str, Entry]]) -> list[Placed]:
    """(shown name, entry) pairs, fastest first by the ratio as shown; equal shown ratios share a rank (1, 1, 3)
    and are listed by shown name, whatever its case."""
    ordered = sorted(entries, key=lambda named: (named[1].shown_ratio, named[0].casefold(), named[0]))
    placed: list[Placed] = []
    for position, (shown_as, kernel) in enumerate(ordered, start=1):
        tied = bool(placed) and placed[-1].entry.shown_ratio == kernel.shown_ratio
        placed.append(Placed(placed[-1].rank if tied else position, shown_as, kernel))
    return placed


def boards(config: LabConfig, results: dict[str, dict], shown: dict[str, str]) -> list[Board]:
    """A board per ranked measurement, from every student's results.json (student -> results) and their names."""
    made = []
    for spec in ranked_measurements(config):
        entries, unranked = [], Counter()
        for student, result in sorted(results.items()):
            extra = result.get("extra_data", {})
            if why := unranked_because(config, spec, extra):
                unranked[why] += 1
            else:
                entries.append((shown[student], entry(spec, extra)))
        made.append(Board(spec.measurement, spec.extra_credit, rank(entries), len(results), unranked))
    return made


# -- the names file -------------------------------------------------------------------------------------------

def read_names(path: Path) -> dict[str, str]:
    """student -> shown name, from the names file ({} when there is none yet)."""
    if not path.exists():
        return {}
    rows = list(csv.reader(io.StringIO(path.read_text())))
    if not rows or [cell.strip() for cell in rows[0]] != NAMES_HEADER:
        raise LeaderboardError(f"{path}: the first line must be '{','.join(NAMES_HEADER)}' (a CSV of each student's "
                               f"folder name and the name the page shows); found {rows[0] if rows else 'nothing'}")
    names: dict[str, str] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            raise LeaderboardError(f"{path}:{line}: expected two fields, student,shown_as; found {len(row)}")
        student, shown_as = (cell.strip() for cell in row)
        if student in names:
            raise LeaderboardError(f"{path}:{line}: {student} is named a second time; keep one line per student")
        names[student] = shown_as
    return names


def new_id(taken: set[str]) -> str:
    """A random anonymous id that no one has: random, so that nothing about a student can be worked out from it."""
    candidate = ANONYMOUS_PREFIX + secrets.token_hex(ANONYMOUS_BYTES)
    while candidate in taken:
        candidate = ANONYMOUS_PREFIX + secrets.token_hex(ANONYMOUS_BYTES)
    return candidate


def with_ids(names: dict[str, str], students: list[str]) -> dict[str, str]:
    """`names`, and a new anonymous id for each of `students` it does not name (or names with a blank)."""
    filled = dict(names)
    taken = set(names.values())
    for student in students:
        if not filled.get(student):
            filled[student] = new_id(taken)
            taken.add(filled[student])
    return filled


def name_problems(names: dict[str, str]) -> list[str]:
    """Shown names the page cannot use: one two students share, or one that is another student's own name."""
    sharing: dict[str, list[str]] = {}
    for student, shown_as in names.items():
        if shown_as:  # a blank is a student of another class, whose id is drawn when that class's page is made
            sharing.setdefault(shown_as, []).append(student)
    problems = [f"{' and '.join(sorted(who))} are all shown as '{shown_as}': give each student a name of their own"
                for shown_as, who in sharing.items() if len(who) > 1]
    problems += [f"{student} would be shown as '{shown_as}', which is another student's name: the page would "
                 f"name that student" for student, shown_as in names.items()
                 if shown_as != student and shown_as in names]
    return problems


def write_names(path: Path, names: dict[str, str]) -> None:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(NAMES_HEADER)
    writer.writerows(names.items())
    write_text(path, text.getvalue())


# -- the page -------------------------------------------------------------------------------------------------

# No fetch of any kind (script, image, font, frame, link prefetch), only the inline style: even a hostile name
# that escaped escaping could not call out.
CONTENT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
p.about, p.count, p.empty { color: #555; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 0.35rem 0.6rem; border-bottom: 1px solid #ddd; text-align: left; }
th { background: #f2f2f2; }
.rank, .ratio, .time, .rate { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafafa; }
tbody tr.first td { font-weight: bold; }
"""

COLUMNS = (("rank", "Rank"), ("who", "Student"), ("ratio", "Time / reference"), ("time", "Median time"),
           ("rate", "Rate"), ("gpu", "GPU"), ("driver", "Driver"))


def _cells(placed: Placed) -> dict[str, str]:
    kernel = placed.entry
    return {"rank": str(placed.rank), "who": placed.shown_as, "ratio": f"{kernel.shown_ratio:.{RATIO_DECIMALS}f}\u00d7",
            "time": f"{kernel.median_s * 1e3:.3f} ms", "rate": f"{kernel.rate:.1f} {kernel.unit}".strip(),
            "gpu": kernel.gpu, "driver": kernel.driver}


def _row(placed: Placed) -> str:
    cells = _cells(placed)
    mark = ' class="first"' if placed.rank == 1 else ""
    return (f"<tr{mark}>" + "".join(f'<td class="{key}">{html.escape(cells[key])}</td>' for key, _ in COLUMNS)
            + "</tr>")


def _section(board: Board) -> str:
    title = html.escape(board.measurement) + (" (extra credit)" if board.extra_credit else "")
    count = f"{len(board.placed)} of {board.graded} graded submissions ranked."
    if not board.placed:
        return (f'<section><h2>{title}</h2><p class="count">{count}</p>'
                f'<p class="empty">No correct kernel was timed for this measurement.</p></section>')
    head = "".join(f'<th scope="col" class="{key}">{label}</th>' for key, label in COLUMNS)
    rows = "\n".join(_row(placed) for placed in board.placed)
    return (f'<section><h2>{title}</h2><p class="count">{count}</p>\n'
            f'<table data-measurement="{html.escape(board.measurement)}"><thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{rows}\n</tbody></table></section>")


def page(config: LabConfig, made: list[Board]) -> str:
    """The whole HTML page: inline style, no script, nothing fetched."""
    title = html.escape(f"{config.name}: {config.title}")
    sections = "\n".join(_section(board) for board in made)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CONTENT_POLICY}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Leaderboard: {title}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>Leaderboard: {title}</h1>
<p class="about">The fastest correct kernels of the class. A kernel is ranked when its timing passed, every
correctness test it needs passed, and its rate is one the hardware allows. It is ranked by its median time over the
reference solution's, both timed in the same grading on the same GPU: below 1.00&times; it beat the reference.
Students are shown by the name or anonymous id their TA gave them.</p>
{sections}
</body>
</html>
"""


# -- a graded class to a page ---------------------------------------------------------------------------------

def class_lab(graded: Path) -> str:
    """The lab of a graded class folder, as its gradebook names it."""
    gradebook = graded / "gradebook.csv"
    if not gradebook.is_file():
        raise LeaderboardError(f"{graded} has no gradebook.csv, so it is not a graded class: give the --out folder "
                               f"of a finished grade-class (or of merge)")
    header = next(csv.reader(io.StringIO(gradebook.read_text())), [])
    if len(header) != 3 or header[0] != "student":
        raise LeaderboardError(f"{gradebook}: expected the header 'student,<lab>,max' that grade-class writes; "
                               f"found {','.join(header)}")
    return header[1]


def write(config: LabConfig, graded: Path, names_file: Path, out: Path) -> Written:
    """Write out/<lab>.html from the graded class in `graded`, adding an anonymous id to `names_file` for each
    student it does not name yet."""
    results = read_results(graded)
    if not results:
        raise LeaderboardError(f"{graded} holds no <student>/results.json: grade the class first")
    other_lab = sorted(s for s, r in results.items() if r.get("extra_data", {}).get("lab") != config.name)
    if other_lab:
        raise LeaderboardError(f"{graded}: the results of {', '.join(other_lab)} are not of {config.name}, the lab "
                               f"its gradebook names; a graded folder holds one lab's class")
    names = read_names(names_file)
    shown = with_ids(names, sorted(results))
    if problems := name_problems(shown):
        raise LeaderboardError(f"{names_file}: " + "; ".join(problems))
    if shown != names:
        write_names(names_file, shown)
    made = boards(config, results, shown)
    path = out / f"{config.name}.html"
    write_text(path, page(config, made))
    return Written(path, made, names_file, new_ids=sum(not names.get(student) for student in results))


def describe(written: Written) -> str:
    """What a run wrote, for the TA's console: each board's count and why the others were not ranked."""
    lines = [f"wrote {written.page}"]
    for board in written.boards:
        line = f"  {board.measurement}: {len(board.placed)} of {board.graded} ranked"
        if board.unranked:
            line += "; not ranked: " + "; ".join(f"{count} {why}" for why, count in board.unranked.most_common())
        lines.append(line)
    if written.new_ids:
        lines.append(f"added {written.new_ids} anonymous id{'s' if written.new_ids != 1 else ''} to "
                     f"{written.names_file}: keep it private (it says who is who); send each student their own id, and "
                     f"put a nickname in place of an id where a student chose one")
    return "\n".join(lines)
