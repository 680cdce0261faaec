"""Report: a table for people and results.json in Gradescope's autograder format."""
from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from grader.score import Scored, autograded

# What stands where a secret number was.
NOT_SHOWN = "[not shown]"


def total(items: list[Scored]) -> tuple[float, float]:
    """(score, maximum) of the autograder: extra credit adds to the score, not to the maximum; the questions a TA
    grades by hand count in neither."""
    graded = autograded(items)
    return sum(i.score for i in graded), sum(i.max_score for i in graded if not i.extra_credit)


def by_hand_points(items: list[Scored]) -> float:
    """The points a TA grades by hand: the lab's written analysis."""
    return sum(i.max_score for i in items if i.by_hand)


def _row(item: Scored, width: int) -> list[str]:
    """A row of the table, with the item's explanation below it where it lost points or was timed."""
    if item.by_hand:
        return [f"TA   {item.name:<{width}} {'--':>6} / {item.max_score:<5.1f}  (graded by hand)"]
    mark = "OK  " if item.score == item.max_score else ("PART" if item.score > 0 else "FAIL")
    extra = "  (extra credit)" if item.extra_credit else ""
    lines = [f"{mark} {item.name:<{width}} {item.score:6.1f} / {item.max_score:<5.1f}{extra}"]
    if item.score < item.max_score or item.kind == "perf":
        lines += ["       " + line for line in item.output.splitlines()[:12]]
    return lines


def table(title: str, items: list[Scored]) -> str:
    width = max([len(i.name) for i in items] + [20])
    lines = [title, "-" * (width + 22)]
    for item in items:
        lines += _row(item, width)
    score, maximum = total(items)
    lines += ["-" * (width + 22), f"Total {'':<{width - 1}} {score:6.1f} / {maximum:<5.1f}"]
    if questions := by_hand_points(items):
        lines.append(f"Not in this total: {questions:g} points for the written analysis (QUESTIONS.md), which your "
                     f"TA grades by hand.")
    return "\n".join(lines)


def hide_numbers(text: str, numbers: Iterable[int]) -> str:
    """`text` with each of `numbers`, where it stands as a whole number (not digits inside a longer number or
    a name), replaced by NOT_SHOWN."""
    for number in numbers:
        text = re.sub(rf"(?<![\w.]){number}(?!\w|\.\d)", NOT_SHOWN, text)
    return text


def without_secrets(items: list[Scored], output: str, secrets: Iterable[int]) -> tuple[list[Scored], str]:
    """The items and the submission's output with every secret number hidden (hide_numbers): all a student
    may read of a grading comes from these."""
    secrets = tuple(secrets)
    if not secrets:
        return items, output
    # Names stay as the config wrote them (the gradebook's columns): a test's output is where text a run made goes.
    return [replace(i, output=hide_numbers(i.output, secrets)) for i in items], hide_numbers(output, secrets)


def student_visible(results: dict) -> list[str]:
    """Every text of a results.json that Gradescope shows a student: the submission's output and each test's
    name and output, hidden tests' too (their visibility only delays them). Not shown to students: the
    grader's stdout ("stdout_visibility": "hidden") and extra_data, which Gradescope stores for the course
    staff (https://gradescope-autograders.readthedocs.io/en/latest/specs/: output meant for students
    "must be explicitly put in the JSON 'output' field")."""
    texts = [str(results.get("output", ""))]
    for test in results.get("tests", []):
        texts += [str(test.get("name", "")), str(test.get("output", ""))]
    return texts


def gradescope_results(items: list[Scored], output: str, seconds: float, extra: dict) -> dict:
    """results.json; `extra` (the audit trail) goes to extra_data, which students do not see (student_visible).

    The top-level score is the autograder's alone. A question a TA grades by hand is listed with its max_score
    and no score: Gradescope adds the tests' scores only where the top level gives none, and the TA enters
    the question's score in the manually graded question of the same name in the assignment's outline.
    extra_data's "graded_by_hand" keeps each one's slot (score null) for the TA's own records."""
    score, _ = total(items)
    by_hand = [i for i in items if i.by_hand]
    return {
        "score": round(score, 2),
        "execution_time": int(seconds),
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [_test_entry(i) for i in items],
        "extra_data": {**extra, "graded_by_hand": [{"name": i.name, "score": None, "max_score": i.max_score}
                                                   for i in by_hand]} if by_hand else extra,
    }


def _test_entry(item: Scored) -> dict:
    entry = {"name": item.name, "score": item.score, "max_score": item.max_score, "output": item.output,
             "visibility": item.visibility}
    if item.by_hand:
        del entry["score"]
    return entry


def write_json(path: Path, results: dict) -> None:
    """Write atomically (a temporary file, then a rename), so that an interrupted grader never leaves half a file."""
    write_text(path, json.dumps(results, indent=2) + "\n")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_text(text)
    os.replace(partial, path)
