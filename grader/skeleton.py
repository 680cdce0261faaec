"""Single-source labs: the student skeleton is generated from the reference solution.

In a reference file under solutions/<lab>/, the code a student must write sits
between two marker lines:

    // BEGIN SOLUTION
    // TODO: what to do and why (kept in the skeleton, with its // continuation lines)
    ...reference code (dropped from the skeleton)...
    // SKELETON: return 0;   (kept as `return 0;`, so the skeleton still compiles)
    // END SOLUTION

Everything outside the markers is copied unchanged.

A debugging lab hands out code with a bug in it, and the skeleton must not say where. There the
reference marks each fix with the other pair of markers:

    // BEGIN FIX
    if (i < n) c[i] = a[i] + b[i];                 (the fixed code, dropped from the skeleton)
    // SKELETON: if (i <= n) c[i] = a[i] + b[i];   (the bug, kept as code)
    // END FIX

The skeleton keeps only the region's SKELETON lines (none where the bug is a missing line), and no
TODO or other comment: nothing in it marks the place. What to do is said above the function.
Both kinds of region are solution code to the release's and the slides' leak checks.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from grader.config import LabConfig

MARKER = re.compile(r"^\s*//\s*(BEGIN|END)\b\s*(.*?)\s*$")
SKELETON_LINE = re.compile(r"^(\s*)//\s*SKELETON:\s?(.*)$")
TODO_LINE = re.compile(r"^\s*//\s*TODO\b")
COMMENT_LINE = re.compile(r"^\s*//")


class MarkerError(Exception):
    """A reference file's markers are wrong; the message names the file and line."""


# The two kinds of region: what the student writes (a TODO says what), and the fix of a bug the skeleton keeps.
KINDS = ("SOLUTION", "FIX")


@dataclass(frozen=True)
class Region:
    """A solution region: the line numbers (1-based) of its BEGIN and END markers, and its kind."""

    begin: int
    end: int
    kind: str = "SOLUTION"


def _header(config: LabConfig, regions: list[Region]) -> list[str]:
    # Only what holds in the student's repository: it has no solutions/ to generate from, and no command to do it.
    task = "find and fix the bugs below" if all(r.kind == "FIX" for r in regions) else "fill in every TODO below"
    return [
        f"// Your file for lab {config.name}: {task} (the handout: labs/{config.name}/README.md).",
        f"// Only {', '.join(config.student_files)} {'is' if len(config.student_files) == 1 else 'are'} taken when "
        f"you are graded: the tests and headers are not yours to change.",
        "",
    ]


def strip_solution(text: str, source: str) -> tuple[str, list[Region]]:
    """The skeleton of one reference file, and where its solution regions were."""
    out: list[str] = []
    regions: list[Region] = []
    begin: int | None = None
    kind = "SOLUTION"
    kept_todo = False
    in_todo_block = False
    for number, line in enumerate(text.splitlines(), start=1):
        marker = MARKER.match(line)
        if marker:
            word, rest = marker.group(1), marker.group(2)
            if rest not in KINDS:
                raise MarkerError(f"{source}:{number}: unknown marker '{line.strip()}' (markers are "
                                  f"'// BEGIN SOLUTION' and '// END SOLUTION', or '// BEGIN FIX' and '// END FIX')")
            if word == "BEGIN":
                if begin is not None:
                    raise MarkerError(f"{source}:{number}: BEGIN {rest} inside the region opened at line {begin}")
                begin, kind, kept_todo, in_todo_block = number, rest, False, False
            else:
                if begin is None:
                    raise MarkerError(f"{source}:{number}: END {rest} without a BEGIN {rest} before it")
                if rest != kind:
                    raise MarkerError(f"{source}:{number}: END {rest} closes the BEGIN {kind} of line {begin}")
                if kind == "SOLUTION" and not kept_todo:
                    raise MarkerError(f"{source}:{begin}: the region has no '// TODO' line telling the student "
                                      f"what to write")
                regions.append(Region(begin, number, kind))
                begin = None
            continue
        skeleton_line = SKELETON_LINE.match(line)
        if begin is None:
            if skeleton_line:
                raise MarkerError(f"{source}:{number}: '// SKELETON:' outside a solution region")
            out.append(line)
            continue
        if skeleton_line:
            out.append(skeleton_line.group(1) + skeleton_line.group(2))
            in_todo_block = False
        elif kind == "FIX":
            if TODO_LINE.match(line):
                raise MarkerError(f"{source}:{number}: a TODO inside a FIX region would show the student where the "
                                  f"bug is: say what to do above the function instead")
        elif TODO_LINE.match(line):
            out.append(line)
            kept_todo = in_todo_block = True
        elif in_todo_block and COMMENT_LINE.match(line):
            out.append(line)
        else:
            in_todo_block = False
    if begin is not None:
        raise MarkerError(f"{source}:{begin}: BEGIN {kind} is never closed by END {kind}")
    if not regions:
        raise MarkerError(f"{source}: no '// BEGIN SOLUTION' region (nor '// BEGIN FIX'), so the skeleton would be "
                          f"the full solution")
    return "\n".join(out) + "\n", regions


@dataclass(frozen=True)
class SolutionLine:
    """A code line of a reference's solution region: what students must not be shown."""

    source: str  # solutions/<lab>/<file>
    number: int  # 1-based
    text: str


def solution_code(config: LabConfig) -> list[SolutionLine]:
    """Every non-comment, non-blank line between the markers of the lab's references (none without solutions/)."""
    if config.solution_dir is None:
        return []
    lines = []
    for name in config.student_files:
        text = (config.solution_dir / name).read_text()
        _, regions = strip_solution(text, name)
        source = text.splitlines()
        for region in regions:
            for number in range(region.begin + 1, region.end):
                line = source[number - 1]
                if line.strip() and not line.strip().startswith("//"):
                    lines.append(SolutionLine(f"solutions/{config.name}/{name}", number, line))
    return lines


def skeleton_files(config: LabConfig) -> dict[Path, str]:
    """Each student file's path under labs/<lab>/ and its generated text."""
    if config.solution_dir is None:
        raise MarkerError(f"{config.name}: no solutions/{config.name}/ folder to generate the skeleton from")
    generated = {}
    for name in config.student_files:
        source = config.solution_dir / name
        if not source.is_file():
            raise MarkerError(f"{source}: missing (lab.toml lists it in student_files)")
        body, regions = strip_solution(source.read_text(), str(source))
        generated[config.lab_dir / name] = "\n".join(_header(config, regions)) + "\n" + body
    return generated


def differences(config: LabConfig) -> list[str]:
    """A unified diff for every committed skeleton file that differs from what it generates to."""
    diffs = []
    for path, text in skeleton_files(config).items():
        current = path.read_text() if path.is_file() else ""
        if current != text:
            diffs.append("".join(difflib.unified_diff(
                current.splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile=f"{path} (committed)", tofile=f"{path} (generated)")))
    return diffs


def write(config: LabConfig) -> list[Path]:
    written = []
    for path, text in skeleton_files(config).items():
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written
