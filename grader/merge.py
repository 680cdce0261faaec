"""Merging the shards of a Slurm class grading: OUT/shards/<k>/ into OUT/, one folder per student.

A student found in two shards is taken once when both results agree (same
fingerprint and score, as after a task that was run twice) and refused
otherwise: nothing is written until the conflict is resolved. Shards that are
missing, and students of the roster without a result, are reported; what is
there is merged all the same, so the gradebook can be looked at while a task
is re-run. The gradebook and summary are rewritten from the merged results.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from grader import summary
from grader.classroom import roster
from grader.slurm import PLAN


class MergeError(Exception):
    """The shards disagree about a student; the message names each one."""


@dataclass
class Merged:
    lab: str
    students: list[str]
    summary: str = ""
    missing_shards: list[int] = field(default_factory=list)
    missing_students: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing_shards and not self.missing_students


def _shards(out: Path) -> dict[int, Path]:
    folder = out / "shards"
    if not folder.is_dir():
        return {}
    return {int(p.name): p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()}


def _same(a: dict, b: dict) -> bool:
    return (a.get("extra_data", {}).get("fingerprint") == b.get("extra_data", {}).get("fingerprint")
            and a.get("score") == b.get("score"))


def merge(out: Path) -> Merged:
    plan_path = out / "slurm" / PLAN
    plan = json.loads(plan_path.read_text()) if plan_path.is_file() else None
    shards = _shards(out)
    expected = range(plan["shards"]) if plan else sorted(shards)
    found: dict[str, list[tuple[int, dict]]] = {}
    for k, folder in sorted(shards.items()):
        for name, results in summary.read_results(folder).items():
            found.setdefault(name, []).append((k, results))
    conflicts = [f"{name}: shards {', '.join(str(k) for k, _ in copies)} disagree (score "
                 f"{' vs '.join(str(r['score']) for _, r in copies)})"
                 for name, copies in sorted(found.items())
                 if any(not _same(copies[0][1], r) for _, r in copies[1:])]
    if conflicts:
        raise MergeError("a student was graded differently in two shards; remove the wrong shard's folder "
                         "and merge again:\n  " + "\n  ".join(conflicts))
    if not found:
        raise MergeError(f"no results under {out / 'shards'}: have the array tasks run?")

    first = next(iter(found.values()))[0][1]["extra_data"]
    lab = plan["lab"] if plan else first["lab"]
    for name, copies in found.items():
        k = copies[0][0]
        target = out / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(shards[k] / name, target)

    roster_names = None
    if plan and Path(plan["submissions"]).is_dir():
        roster_names = [s.name for s in roster(Path(plan["submissions"]))]
    students = roster_names or sorted(found)
    merged = Merged(lab=lab, students=students, missing_shards=[k for k in expected if k not in shards],
                    missing_students=[name for name in students if name not in found])
    merged.summary = summary.write_all(out, lab, float(first["max_points"]), students,
                                       float(first.get("question_points", 0.0)))
    return merged
