"""Report: a table for people and results.json in Gradescope's autograder format."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from grader.score import Scored


def total(items: list[Scored]) -> tuple[float, float]:
    """(score, maximum): extra credit adds to the score, not to the maximum."""
    return sum(i.score for i in items), sum(i.max_score for i in items if not i.extra_credit)


def table(title: str, items: list[Scored]) -> str:
    width = max([len(i.name) for i in items] + [20])
    lines = [title, "-" * (width + 22)]
    for item in items:
        mark = "OK  " if item.score == item.max_score else ("PART" if item.score > 0 else "FAIL")
        extra = "  (extra credit)" if item.extra_credit else ""
        lines.append(f"{mark} {item.name:<{width}} {item.score:6.1f} / {item.max_score:<5.1f}{extra}")
        if item.score < item.max_score or item.kind == "perf":
            lines += ["       " + line for line in item.output.splitlines()[:12]]
    score, maximum = total(items)
    lines += ["-" * (width + 22), f"Total {'':<{width - 1}} {score:6.1f} / {maximum:<5.1f}"]
    return "\n".join(lines)


def gradescope_results(items: list[Scored], output: str, seconds: float, extra: dict) -> dict:
    score, _ = total(items)
    return {
        "score": round(score, 2),
        "execution_time": int(seconds),
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [{"name": i.name, "score": i.score, "max_score": i.max_score, "output": i.output,
                   "visibility": i.visibility} for i in items],
        "extra_data": extra,
    }


def write_json(path: Path, results: dict) -> None:
    """Write atomically (a temporary file, then a rename), so that an interrupted grader never leaves half a file."""
    write_text(path, json.dumps(results, indent=2) + "\n")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_text(text)
    os.replace(partial, path)
