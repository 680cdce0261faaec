"""Class grading on a Slurm cluster: a job array with one task per shard of the students.

`python3 -m grader slurm ... --shards N` writes OUT/slurm/grade.sbatch (and
OUT/slurm/plan.json, what merge checks against); each array task grades shard
$SLURM_ARRAY_TASK_ID of N (every N-th student of the sorted roster) into
OUT/shards/<task>/ on the GPU that --gres gave it. With --submit it runs
sbatch. When every task has finished, `python3 -m grader merge --out OUT`
combines the shards (merge.py).
"""
from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from grader.config import REPO_ROOT
from grader.proc import ProcessResult, run_process
from grader.report import write_text

SCRIPT = "grade.sbatch"
PLAN = "plan.json"
SBATCH_TIMEOUT_S = 120


@dataclass(frozen=True)
class SlurmJob:
    lab: str
    submissions: Path
    out: Path
    shards: int
    gres: str = "gpu:1"
    cpus_per_task: int = 16
    time_limit: str = "04:00:00"
    partition: str | None = None
    account: str | None = None
    python: str = "python3"
    profile: bool = False  # each task adds Nsight Compute's table and hints to its students' feedback


def script(job: SlurmJob, repo: Path = REPO_ROOT) -> str:
    out = job.out.resolve()
    # --requeue: a task whose node dies runs again from the start elsewhere, keeping the students it finished
    # (grade-class resumes); --open-mode=append keeps the first run's log above the second's.
    directives = [f"--job-name=grade-{job.lab}", f"--array=0-{job.shards - 1}", f"--gres={job.gres}",
                  f"--cpus-per-task={job.cpus_per_task}", f"--time={job.time_limit}",
                  f"--output={out / 'slurm' / 'shard-%a.log'}", "--open-mode=append", "--requeue"]
    if job.partition:
        directives.append(f"--partition={job.partition}")
    if job.account:
        directives.append(f"--account={job.account}")
    grade = [job.python, "-m", "grader", "grade-class", "--lab", job.lab, *(["--profile"] if job.profile else []),
             "--submissions", str(job.submissions.resolve()), "--out"]
    q = shlex.quote
    return "\n".join([
        "#!/bin/bash",
        f"# Class grading of {job.lab}: {job.shards} shards, one array task each (written by `python3 -m grader "
        f"slurm`).",
        f"# When every task has finished: cd {q(str(repo))} && {q(job.python)} -m grader merge --out {q(str(out))}",
        *[f"#SBATCH {d}" for d in directives],
        "set -euo pipefail",
        f"cd {q(str(repo))}",
        "shard=${SLURM_ARRAY_TASK_ID}",
        " ".join(q(a) for a in grade) + f" {q(str(out / 'shards'))}/\"$shard\" --shard \"$shard/{job.shards}\"",
        "",
    ])


def write(job: SlurmJob, repo: Path = REPO_ROOT) -> Path:
    """Write OUT/slurm/grade.sbatch and OUT/slurm/plan.json; returns the script's path."""
    folder = job.out / "slurm"
    path = folder / SCRIPT
    write_text(path, script(job, repo))
    path.chmod(0o755)
    write_text(folder / PLAN, json.dumps({"lab": job.lab, "submissions": str(job.submissions.resolve()),
                                          "shards": job.shards}, indent=2) + "\n")
    return path


def submit(path: Path) -> ProcessResult:
    """Run sbatch on the script (with this environment: sbatch reads the cluster's settings from it)."""
    return run_process(["sbatch", str(path)], cwd=path.parent, env=dict(os.environ), timeout_s=SBATCH_TIMEOUT_S)
