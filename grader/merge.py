"""Merging the shards of a Slurm class grading: OUT/shards/<k>/ into OUT/, one folder per student.

A student found in two shards is taken once when both results agree (same
fingerprint and score, as after a task that was run twice) and refused
otherwise: nothing is written until the conflict is resolved. A shard is
missing when a student of its share of the roster has no result: its task
never ran, or was cancelled or lost its node part-way (its folder then holds
the students it finished). Missing shards, with their students, are reported;
what is there is merged all the same, so the gradebook can be looked at while
a task is re-run. The gradebook and summary are rewritten from the merged
results, and each shard's reference timings (its first and last) come along.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from grader import summary
from grader.classroom import roster
from grader.slurm import PLAN, SCRIPT


class MergeError(Exception):
    """The shards disagree about a student; the message names each one."""


@dataclass
class Merged:
    lab: str
    students: list[str]
    summary: str = ""
    missing_shards: list[int] = field(default_factory=list)
    missing_students: list[str] = field(default_factory=list)
    missing_by_shard: dict[int, list[str]] = field(default_factory=dict)  # empty where the roster is unknown

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


def _missing_by_shard(submissions: Path, shards: int, found: dict) -> dict[int, list[str]]:
    """Each shard with a student of its share of the roster who has no result, and those students. A task
    cancelled part-way leaves a folder with the students it finished, so its folder alone proves nothing."""
    missing = {}
    for k in range(shards):
        names = [s.name for s in roster(submissions, (k, shards)) if s.name not in found]
        if names:
            missing[k] = names
    return missing


def rerun_hint(merged: Merged, out: Path) -> str:
    """What to tell the TA about missing shards: each one's students, and the command that grades them."""
    if not merged.missing_shards:
        return ""
    script = out / "slurm" / SCRIPT
    lines = []
    for k in merged.missing_shards:
        who = ", ".join(merged.missing_by_shard.get(k, [])) or f"(no folder under {out / 'shards'})"
        lines.append(f"shard {k} is missing {who}: re-run it with  sbatch --array={k} {script}")
    return "\n".join(lines + ["then run merge again."])


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
    for k, folder in sorted(shards.items()):  # each shard's reference timings, which its scores rest on
        for timings in folder.glob(summary.REFERENCE_TIMINGS.format(gpu="*")):
            shutil.copyfile(timings, out / f"{timings.stem}-shard-{k}{timings.suffix}")

    roster_names = None
    missing_by_shard = {}
    if plan and Path(plan["submissions"]).is_dir():
        roster_names = [s.name for s in roster(Path(plan["submissions"]))]
        missing_by_shard = _missing_by_shard(Path(plan["submissions"]), plan["shards"], found)
    students = roster_names or sorted(found)
    missing_shards = sorted(missing_by_shard) if roster_names else [k for k in expected if k not in shards]
    merged = Merged(lab=lab, students=students, missing_shards=missing_shards,
                    missing_students=[name for name in students if name not in found],
                    missing_by_shard=missing_by_shard)
    merged.summary = summary.write_all(out, lab, float(first["max_points"]), students,
                                       float(first.get("question_points", 0.0)))
    return merged
