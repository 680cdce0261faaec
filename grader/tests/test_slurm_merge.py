"""Slurm job arrays (the script, and sbatch faked by a small program on PATH) and merging their shards."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import merge, slurm, summary
from grader.tests.conftest import REPO


def job(tmp_path: Path, **changes) -> slurm.SlurmJob:
    fields = dict(lab="01-vector-add", submissions=tmp_path / "class in", out=tmp_path / "graded", shards=4,
                  partition="gpu", account="cs101")
    fields.update(changes)
    return slurm.SlurmJob(**fields)


def test_the_script_is_an_array_of_shards_on_one_gpu_each(tmp_path: Path):
    text = slurm.script(job(tmp_path), repo=Path("/srv/kit"))
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    for directive in ("--array=0-3", "--gres=gpu:1", "--cpus-per-task=16", "--time=04:00:00", "--partition=gpu",
                      "--account=cs101", f"--output={tmp_path / 'graded' / 'slurm' / 'shard-%a.log'}",
                      "--open-mode=append", "--requeue"):
        assert f"#SBATCH {directive}" in lines
    command = lines[-1]
    assert command.startswith("python3 -m grader grade-class --lab 01-vector-add --submissions ")
    assert f"'{tmp_path / 'class in'}'" in command  # quoted: the folder name has a space
    assert command.endswith(f"--out {tmp_path / 'graded' / 'shards'}/\"$shard\" --shard \"$shard/4\"")
    assert "cd /srv/kit" in lines and "merge --out" in text
    no_account = slurm.script(job(tmp_path, account=None, partition=None))
    assert "--account" not in no_account and "--partition" not in no_account
    assert "--profile" not in text  # off unless asked for, as in grade-class
    profiled = slurm.script(job(tmp_path, profile=True)).splitlines()[-1]
    assert profiled.startswith("python3 -m grader grade-class --lab 01-vector-add --profile --submissions ")


def test_the_script_runs_under_bash_as_a_task_would(tmp_path: Path):
    fake_python = tmp_path / "bin" / "python3"
    fake_python.parent.mkdir()
    fake_python.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'args'}\n")
    fake_python.chmod(0o755)
    path = slurm.write(job(tmp_path))
    env = dict(os.environ, PATH=f"{fake_python.parent}:{os.environ['PATH']}", SLURM_ARRAY_TASK_ID="2")
    subprocess.run(["bash", str(path)], env=env, check=True, cwd=tmp_path)
    args = (tmp_path / "args").read_text().split()
    assert args[-4:] == ["--out", str(tmp_path / "graded" / "shards" / "2"), "--shard", "2/4"]
    plan = json.loads((tmp_path / "graded" / "slurm" / "plan.json").read_text())
    assert plan == {"lab": "01-vector-add", "submissions": str(tmp_path / "class in"), "shards": 4}


def test_submit_runs_sbatch(tmp_path: Path):
    sbatch = tmp_path / "bin" / "sbatch"
    sbatch.parent.mkdir()
    sbatch.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'sbatch-args'}\necho 'Submitted batch job 4242'\n")
    sbatch.chmod(0o755)
    (tmp_path / "class in").mkdir()
    env = dict(os.environ, PATH=f"{sbatch.parent}:{os.environ['PATH']}")
    done = subprocess.run([sys.executable, "-m", "grader", "slurm", "--lab", "01-vector-add", "--submissions",
                           str(tmp_path / "class in"), "--out", str(tmp_path / "graded"), "--shards", "3", "--submit"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Submitted batch job 4242" in done.stdout and "merge --out" in done.stdout
    assert (tmp_path / "sbatch-args").read_text().strip() == str(tmp_path / "graded" / "slurm" / "grade.sbatch")


def shard_result(out: Path, shard: int, student: str, score: float, fingerprint: str = "f") -> None:
    folder = out / "shards" / str(shard) / student
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"score": score, "tests": [], "extra_data": {
        "lab": "01-vector-add", "max_points": 100.0, "fingerprint": fingerprint + student, "attention": []}}))
    (folder / "report.txt").write_text(f"{student}: {score}\n")


def planned_class(out: Path, submissions: Path, names: tuple[str, ...], shards: int) -> None:
    """A class of `names` (a folder each in `submissions`) planned as `shards` array tasks."""
    for name in names:
        (submissions / name).mkdir(parents=True)
    (out / "slurm").mkdir(parents=True)
    (out / "slurm" / "plan.json").write_text(json.dumps({"lab": "01-vector-add", "submissions": str(submissions),
                                                          "shards": shards}))


def test_merge_combines_shards_into_one_gradebook(tmp_path: Path):
    out = tmp_path / "graded"
    planned_class(out, tmp_path / "in", ("amy", "bo", "cat", "dan"), 2)
    shard_result(out, 0, "amy", 100)
    shard_result(out, 0, "cat", 40)
    shard_result(out, 1, "bo", 75)
    shard_result(out, 1, "dan", 0)
    shard_result(out, 0, "dan", 0)  # a task run twice: the same result, taken once
    merged = merge.merge(out)
    assert merged.complete and merged.students == ["amy", "bo", "cat", "dan"]
    assert (out / "gradebook.csv").read_text().splitlines()[1:] == [
        "amy,100.0,100.0", "bo,75.0,100.0", "cat,40.0,100.0", "dan,0.0,100.0"]
    assert (out / "bo" / "report.txt").read_text() == "bo: 75\n"
    assert "4 students graded" in (out / "summary.txt").read_text()


def test_merge_brings_each_shards_reference_timings_into_the_summary(tmp_path: Path):
    out = tmp_path / "graded"
    shard_result(out, 0, "amy", 100)
    shard_result(out, 1, "bo", 75)
    for k, last in ((0, 1.0e-3), (1, 1.5e-3)):  # both on a GPU of the same id, on two nodes
        summary.write_reference_timings(out / "shards" / str(k), "GPU-0", f"node {k}",
                                        [{"at": 0, "medians": {"m": 1e-3}, "failed": []},
                                         {"at": 1, "medians": {"m": last}, "failed": []}])
    merge.merge(out)
    text = (out / "summary.txt").read_text()
    assert "node 0: at the start and at the end: m 1.000 -> 1.000 ms" in text
    assert "WARNING: on node 1 the reference's own time moved by +50%" in text


def test_merge_refuses_a_student_graded_differently_in_two_shards(tmp_path: Path):
    out = tmp_path / "graded"
    shard_result(out, 0, "amy", 100)
    shard_result(out, 1, "amy", 60)
    with pytest.raises(merge.MergeError, match="amy: shards 0, 1 disagree"):
        merge.merge(out)
    assert not (out / "amy").exists() and not (out / "gradebook.csv").exists()


def test_merge_reports_missing_shards_and_students(tmp_path: Path):
    out = tmp_path / "graded"
    planned_class(out, tmp_path / "in", ("amy", "bo", "cat"), 3)
    shard_result(out, 0, "amy", 100)
    merged = merge.merge(out)
    assert not merged.complete
    assert merged.missing_shards == [1, 2] and merged.missing_students == ["bo", "cat"]
    assert "Not graded yet (2" in (out / "summary.txt").read_text()
    done = subprocess.run([sys.executable, "-m", "grader", "merge", "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "missing shards" in done.stderr and "bo, cat" in done.stderr
    assert f"shard 2 is missing cat: re-run it with  sbatch --array=2 {out / 'slurm' / 'grade.sbatch'}" in done.stderr


def test_a_shard_whose_task_stopped_part_way_is_missing_though_its_folder_is_there(tmp_path: Path):
    """A cancelled task, or one whose node died, leaves the students it finished: the shard is still missing."""
    out = tmp_path / "graded"
    planned_class(out, tmp_path / "in", ("amy", "bo", "cat", "dan"), 2)
    shard_result(out, 0, "amy", 100)
    shard_result(out, 0, "cat", 40)
    shard_result(out, 1, "bo", 75)  # dan, also shard 1's, was being graded when the task stopped
    merged = merge.merge(out)
    assert merged.missing_shards == [1] and merged.missing_by_shard == {1: ["dan"]}
    assert merge.rerun_hint(merged, out).splitlines() == [
        f"shard 1 is missing dan: re-run it with  sbatch --array=1 {out / 'slurm' / 'grade.sbatch'}",
        "then run merge again."]
