"""compute-sanitizer: where it is, the command that runs a test case under it, and what it found.

A [[tests]] entry with `sanitizer = "memcheck"` (or racecheck, synccheck, initcheck)
runs its test case under `compute-sanitizer --tool <tool>`. The sanitizer decides
(through its exit code) whether it found something; the student then reads its
first report, trimmed to what they need: the kind of error, the kernel and line,
the thread and block, the address and the buffer it missed. Nothing here starts a
process: grader/run/ runs the command (runner.py builds it, judge.py starts the program),
and its scheduler refuses to grade without the tool.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

# What compute-sanitizer exits with when it reports an error (no test program exits with it).
FINDING_EXIT_CODE = 86
# Errors it prints in full (it still counts them all in its summary). The student sees the first.
PRINT_LIMIT = 4
REPORT_LINES = 8  # lines of the first report shown, its headline included
PREFIX = "========="

# Where to look when compute-sanitizer is not on the PATH.
TOOLKIT_BINS = (Path("/usr/local/cuda/bin"),)

# What each tool's finding means, in the terms of the labs.
HINTS = {
    "memcheck": "A thread read or wrote memory outside every buffer it was given: usually a missing or off-by-one "
                "bounds check (i < n, not i <= n), a check on one index of two (the row but not the column), or a "
                "tile load that reads past the last row or column instead of storing 0. A read counts even when "
                "its value is never used. The report names the kernel, the line (when known), the thread and block, "
                "and how far the address lies from the nearest buffer.",
    "racecheck": "Two threads of one block used the same shared-memory word, at least one of them writing, with no "
                 "__syncthreads() between the two accesses: a barrier is missing or misplaced (after writing shared "
                 "memory that other threads read, and before overwriting what other threads may still read). "
                 "A race can give the right answer on most runs; this check does not depend on luck.",
    "synccheck": "A __syncthreads() was reached by only some threads of a block (inside a branch or a loop that not "
                 "every thread takes), or with invalid arguments. Every thread of the block must reach every barrier.",
    "initcheck": "A kernel read device memory that nothing had written: an input read past what was copied in, or a "
                 "buffer read before the kernel that fills it.",
}

_NOT_A_FINDING = re.compile(r"^(COMPUTE-SANITIZER|Target application returned an error|[A-Z]+ SUMMARY:)")
_SUMMARY = re.compile(r"^[A-Z]+ SUMMARY:")
_BACKTRACE = ("Saved host backtrace", "Host Frame", "Device Frame")
# An absolute path in front of a file name and line: the grader's folders mean nothing to a student.
_PATH_BEFORE_FILE = re.compile(r"(?:/[^\s/:()]+)+/([^\s/:()]+:\d+)")


def find(search_path: str | None = None) -> Path | None:
    """compute-sanitizer on the PATH (or `search_path`), else beside nvcc, else in the toolkit's bin folder."""
    found = shutil.which("compute-sanitizer", path=search_path)
    if found:
        return Path(found)
    folders = []
    nvcc = shutil.which("nvcc", path=search_path)
    if nvcc:
        folders.append(Path(nvcc).resolve().parent)
    if os.environ.get("CUDA_HOME"):
        folders.append(Path(os.environ["CUDA_HOME"]) / "bin")
    folders += TOOLKIT_BINS
    return next((f / "compute-sanitizer" for f in folders
                 if (f / "compute-sanitizer").is_file() and os.access(f / "compute-sanitizer", os.X_OK)), None)


def arguments(tool: str) -> list[str]:
    """The options every sanitized run gets (the grader's and ctest's alike), before the test program."""
    return ["--tool", tool, "--error-exitcode", str(FINDING_EXIT_CODE), "--print-limit", str(PRINT_LIMIT),
            "--show-backtrace", "no"]


def command_prefix(executable: Path, tool: str) -> list[str]:
    """What goes in front of the test program's command line to run it under `tool`."""
    return [str(executable), *arguments(tool)]


@dataclass(frozen=True)
class Wrapper:
    """How one test case runs: under this compute-sanitizer, with this tool."""

    executable: Path
    tool: str

    def prefix(self) -> list[str]:
        return command_prefix(self.executable, self.tool)


def _lines(output: str) -> list[str]:
    """compute-sanitizer's own lines, without their prefix; the test program's lines are left out."""
    return [line[len(PREFIX):] for line in output.splitlines() if line.startswith(PREFIX)]


def first_report(output: str) -> str | None:
    """compute-sanitizer's first report in `output`, trimmed for a student; None when there is none.

    A report is a headline (one space after the prefix) followed by its detail lines
    (indented further); it ends at a bare prefix line, the next headline or the backtrace.
    """
    report: list[str] = []
    for text in _lines(output):
        body = text.strip()
        detail = text.startswith("  ")
        if not report:
            if body and not detail and not _NOT_A_FINDING.match(body):
                report.append(_PATH_BEFORE_FILE.sub(r"\1", body))
            continue
        if not body or not detail or body.startswith(_BACKTRACE):
            break
        report.append("  " + _PATH_BEFORE_FILE.sub(r"\1", body))
    return "\n".join(report[:REPORT_LINES]) if report else None


def summary(output: str) -> str | None:
    """The sanitizer's count of what it found, e.g. "ERROR SUMMARY: 31 errors"."""
    return next((text.strip() for text in _lines(output) if _SUMMARY.match(text.strip())), None)


def finding(tool: str, returncode: int | None, output: str) -> list[str] | None:
    """The messages for a student when `tool` found an error in this run, else None.

    The sanitizer's exit code decides; its report only explains.
    """
    if returncode != FINDING_EXIT_CODE:
        return None
    report = first_report(output)
    if report is None:
        return [f"compute-sanitizer ({tool}) found an error in this test, but its report could not be read. "
                f"The end of the output:\n{output[-1500:]}"]
    count = summary(output)
    text = (f"compute-sanitizer ({tool}) found an error while this test ran your code once on a small input. "
            f"Its first report:\n{report}\n")
    if count:
        text += f"({count} in all.)\n"
    return [text + HINTS.get(tool, "")]


def missing_message(lab: str, tools: tuple[str, ...]) -> str:
    """Why grading stops when the sanitizer is needed and absent: for the TA, with what to install."""
    where = ", ".join(str(b / "compute-sanitizer") for b in TOOLKIT_BINS)
    return (f"lab {lab} runs test cases under compute-sanitizer ({', '.join(tools)}), and compute-sanitizer was not "
            f"found on the PATH, beside nvcc, in $CUDA_HOME/bin or at {where}. Grading without it would fail every "
            f"submission on those tests, so nothing was graded. Install the CUDA toolkit's compute-sanitizer (NVIDIA's "
            f"cuda-sanitizer-<major>-<minor> package, or the whole toolkit) and put it on the PATH.")
