"""`grader slurm` and `grader merge` against a real single-node Slurm (slurm_cluster.py).

The array tasks run the real command line; only the GPU is faked (fake_cli.py:
stand-in test programs, as test_classroom's), so what is tested is what a TA
runs: the script as an array task under sbatch, shards landing where merge
looks, a task cancelled part-way, and its re-run with `sbatch --array=K`.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.tests import slurm_cluster
from grader.tests.conftest import REPO, write
from grader.tests.fake_cli import python_wrapper
from grader.tests.test_classroom import LAB_TOML, submit, toy

ARRAY_TIMEOUT_S = 90.0
POLL_S = 0.3
FULL_MARKS_ROW = "{},45.0,45.0"


@pytest.fixture(scope="module")
def cluster():
    try:
        started = slurm_cluster.start()
    except slurm_cluster.ClusterUnavailable as why:
        pytest.skip(f"no test Slurm cluster: {why}")
    yield started
    started.stop()


@pytest.fixture
def course(cluster, tmp_path: Path) -> dict[str, str]:
    """The toy lab of test_classroom in a repository of its own, and the environment that fakes its GPU."""
    repo = tmp_path / "repo"
    write(repo / "labs/60-toy/lab.toml", LAB_TOML)
    write(repo / "solutions/60-toy/hidden.toml", "[grading]\nseed = 7\n")
    write(repo / "solutions/60-toy/toy.cu", toy("{}"))
    return dict(cluster.env, KIT_FAKE_REPO=str(repo), KIT_FAKE_LOG=str(tmp_path / "runs.jsonl"),
                KIT_LOCK_DIR=str(tmp_path / "locks"))


def grader(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The grader's command line with the GPU faked (fake_cli), as a TA would run it."""
    return subprocess.run([sys.executable, "-m", "grader.tests.fake_cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def merge(out: Path) -> subprocess.CompletedProcess:
    """The real merge: it needs no GPU, so nothing of it is faked."""
    return subprocess.run([sys.executable, "-m", "grader", "merge", "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def submit_array(env: dict[str, str], submissions: Path, out: Path, shards: int, wrapper: Path) -> str:
    """`grader slurm --submit` as a TA runs it (one fake GPU and one core a task); returns the job id."""
    done = grader(env, "slurm", "--lab", "60-toy", "--submissions", str(submissions), "--out", str(out),
                  "--shards", str(shards), "--cpus-per-task", "1", "--time", "00:05:00", "--python", str(wrapper),
                  "--submit")
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Submitted batch job (\d+)", done.stdout)
    assert found, done.stdout
    return found.group(1)


def task_states(cluster: slurm_cluster.Cluster, job: str) -> dict[int, str]:
    """Array task -> its state, from `scontrol show job` (sacct would need a database)."""
    text = cluster.command("scontrol", "show", "job", job, check=False)
    return {int(task): state for task, state in re.findall(r"ArrayTaskId=(\d+)\s.*?JobState=(\w+)", text, re.S)}


def wait_until(what: str, ready, cluster: slurm_cluster.Cluster) -> None:
    deadline = time.monotonic() + ARRAY_TIMEOUT_S
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} after {ARRAY_TIMEOUT_S:.0f} s\n{cluster.command('squeue', check=False)}"
                                 f"\n{cluster.log_tails()}")
        time.sleep(POLL_S)


def wait_for_array(cluster: slurm_cluster.Cluster, job: str) -> dict[int, str]:
    """Wait until squeue lists no task of the job; returns each task's final state."""
    wait_until(f"job {job} still queued or running",
               lambda: not cluster.command("squeue", "-h", "-j", job, check=False).strip(), cluster)
    return task_states(cluster, job)


def shard_logs(out: Path, cluster: slurm_cluster.Cluster) -> str:
    """What a failed array shows: each task's log, then the ends of the daemons' logs (why Slurm ended a task so)."""
    shards = "\n".join(f"--- {p.name} ---\n{p.read_text()}" for p in sorted((out / "slurm").glob("shard-*.log")))
    return f"{shards}\n{cluster.log_tails()}"


def test_an_array_on_a_real_slurm_grades_the_class_as_grade_class_does(cluster, course, tmp_path: Path):
    submissions, out = tmp_path / "in", tmp_path / "graded"
    submit(submissions, "alice", toy("{}"))  # right
    submit(submissions, "bob", toy("compile error"), as_zip=True)
    submit(submissions, "carol", toy('{"fail": ["toy: adds"]}'))
    submit(submissions, "dave", toy("{}", "system(\"ls\");"))  # refused at intake
    submit(submissions, "gina", toy('{"medians": [0.001215, 0.00115]}'))  # timed again near full_at
    job = submit_array(course, submissions, out, 3, python_wrapper(tmp_path / "bin" / "python3"))
    states = wait_for_array(cluster, job)
    assert states == {0: "COMPLETED", 1: "COMPLETED", 2: "COMPLETED"}, shard_logs(out, cluster)
    assert sorted(p.parent.name for p in (out / "shards").glob("*/*/results.json")) == [
        "alice", "bob", "carol", "dave", "gina"]  # each student once, in the shard of their task

    merged = merge(out)
    assert merged.returncode == 0, merged.stderr
    local = grader(course, "grade-class", "--lab", "60-toy", "--submissions", str(submissions), "--out",
                   str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    gradebook = (out / "gradebook.csv").read_text()
    assert gradebook == (tmp_path / "local" / "gradebook.csv").read_text()
    assert gradebook.splitlines()[1:] == ["alice,45.0,45.0", "bob,0.0,45.0", "carol,15.0,45.0", "dave,0.0,45.0",
                                          "gina,45.0,45.0"]


def test_a_cancelled_task_is_named_by_merge_and_its_rerun_completes_the_gradebook(cluster, course, tmp_path: Path):
    submissions, out = tmp_path / "in", tmp_path / "graded"
    for name in ("amy", "bo", "cy"):
        submit(submissions, name, toy("{}"))
    submit(submissions, "zed", toy('{"seconds": 1.0}'))  # slow: shard 1 (bo, zed) is still at him when cancelled
    job = submit_array(course, submissions, out, 2, python_wrapper(tmp_path / "bin" / "python3"))
    started = Path(course["KIT_FAKE_LOG"] + ".programs")  # each start of a test program, with whose it is
    wait_until("zed's tests started", lambda: started.is_file() and '"zed"' in started.read_text(), cluster)
    cluster.command("scancel", f"{job}_1")
    states = wait_for_array(cluster, job)
    assert states == {0: "COMPLETED", 1: "CANCELLED"}, shard_logs(out, cluster)
    # bo may have been finished before the cancel, or waiting to be timed with zed: the shard names who is missing.
    missing = [n for n in ("bo", "zed") if not (out / "shards" / "1" / n / "results.json").exists()]
    assert "zed" in missing

    merged = merge(out)
    assert merged.returncode == 1
    assert f"{len(missing)} students have no result yet: {', '.join(missing)}" in merged.stderr
    rerun = f"shard 1 is missing {', '.join(missing)}: re-run it with  sbatch --array=1 {out / 'slurm' / 'grade.sbatch'}"
    assert rerun in merged.stderr, merged.stderr
    assert (out / "gradebook.csv").read_text().splitlines()[1:] == [
        FULL_MARKS_ROW.format(n) for n in ("amy", "bo", "cy") if n not in missing]

    # As the README says, in the environment the array was submitted from (the task inherits it).
    again = subprocess.run(["sbatch", "--array=1", str(out / "slurm" / "grade.sbatch")], env=course,
                           capture_output=True, text=True, timeout=30)
    assert again.returncode == 0, again.stderr
    states = wait_for_array(cluster, again.stdout.split()[-1])
    assert states == {1: "COMPLETED"}, shard_logs(out, cluster)
    merged = merge(out)
    assert merged.returncode == 0, merged.stderr
    assert (out / "gradebook.csv").read_text().splitlines()[1:] == [
        FULL_MARKS_ROW.format(n) for n in ("amy", "bo", "cy", "zed")]


def test_a_task_whose_node_fails_is_requeued_and_finishes_the_shard_alone(cluster, course, tmp_path: Path):
    """Slurm requeues a batch task whose node failed as `scontrol requeue` does (the script asks --requeue): it
    is stopped, waits, and runs again from the start; merge then finds the shard whole with no one re-running it."""
    submissions, out = tmp_path / "in", tmp_path / "graded"
    for name in ("amy", "bo", "cy"):
        submit(submissions, name, toy("{}"))
    submit(submissions, "zed", toy('{"seconds": 1.0}'))
    job = submit_array(course, submissions, out, 2, python_wrapper(tmp_path / "bin" / "python3"))
    started = Path(course["KIT_FAKE_LOG"] + ".programs")
    wait_until("zed's tests started", lambda: started.is_file() and '"zed"' in started.read_text(), cluster)
    cluster.command("scontrol", "requeue", f"{job}_1")
    # Slurm holds a requeued task for about two minutes (squeue: PENDING, BeginTime); the test waits only for
    # the first run to have stopped, and then two seconds more: slurmd refuses a launch whose credential dates
    # from the same whole second as the requeue that revoked the job's credentials ("Job credential revoked"),
    # which a release at once met in 4 of 6 runs on a loaded machine, failing the task.
    wait_until("the requeued task pending", lambda: "PENDING" in cluster.command(
        "squeue", "-h", "-j", f"{job}_1", "-o", "%T", check=False), cluster)
    first_log = out / "slurm" / "shard-1.log"
    wait_until("the first run stopped", lambda: first_log.is_file() and "Stopped before the end" in first_log.read_text(),
               cluster)
    cluster.command("scontrol", "update", f"jobid={job}_1", "StartTime=now+2")
    states = wait_for_array(cluster, job)
    assert states == {0: "COMPLETED", 1: "COMPLETED"}, shard_logs(out, cluster)
    log = (out / "slurm" / "shard-1.log").read_text()
    assert "DUE TO JOB REQUEUE" in log and log.index("DUE TO JOB REQUEUE") < log.index("zed ")  # both runs kept
    merged = merge(out)
    assert merged.returncode == 0, merged.stderr
    assert (out / "gradebook.csv").read_text().splitlines()[1:] == [
        FULL_MARKS_ROW.format(n) for n in ("amy", "bo", "cy", "zed")]


def test_make_cluster_runs_a_labs_public_tests_on_the_cluster_as_if_they_ran_here(cluster, tmp_path: Path):
    """A student without a GPU: `make cluster LAB=01-vector-add` with the course's settings (cluster.toml) runs
    the lab's public tests as a job, says that it waits while the GPUs are busy, prints the job's output and exits
    as the job did. The job builds in this checkout's build folder: seconds where `make test` built it (as in CI),
    a minute or two the first time."""
    if shutil.which("nvcc") is None or shutil.which("cmake") is None:
        pytest.skip("needs nvcc and cmake to build the lab")
    config = write(tmp_path / "cluster.toml", '[slurm]\npartition = "debug"\ncpus_per_task = 1\ntime = "00:20:00"\n')
    # Every GPU busy for a few seconds: the student's job waits in the queue for one.
    busy = cluster.command("sbatch", "--parsable", f"--gres=gpu:{slurm_cluster.FAKE_GPUS}", "--wrap", "sleep 4",
                           "-o", "/dev/null").strip()
    wait_until("the job holding every GPU running", lambda: "RUNNING" in cluster.command(
        "squeue", "-h", "-j", busy, "-o", "%T", check=False), cluster)
    env = {k: v for k, v in cluster.env.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(["make", "--no-print-directory", "cluster", "LAB=01-vector-add", f"CLUSTER_CONFIG={config}",
                           f"PYTHON={sys.executable}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    job = re.search(r"submitted 01-vector-add as job (\d+) \(--gres=gpu:1, --cpus-per-task=1, --time=00:20:00\)",
                    done.stdout)
    assert job, done.stdout[:2000]
    waiting = (f"job {job.group(1)} is waiting in the queue (Resources: every GPU it may use is busy); your tests "
               f"start when it leaves it. Ctrl-C cancels it.")
    assert waiting in lines, done.stdout[:3000]
    assert lines.index(waiting) < lines.index(f"job {job.group(1)} has started."), done.stdout[:3000]
    # The job's own output, as `make 01-vector-add` prints it on a machine without a GPU.
    assert "01-vector-add: intake check passed" in done.stdout
    assert "[doctest] Status: SUCCESS!" in done.stdout and "NOT TESTED: no usable CUDA GPU" in done.stdout


def test_make_cluster_says_why_the_courses_settings_are_refused(cluster, tmp_path: Path):
    env = {k: v for k, v in cluster.env.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    config = write(tmp_path / "cluster.toml", '[slurm]\npartition = "no-such-partition"\n')
    done = subprocess.run(["make", "--no-print-directory", "cluster", "LAB=01-vector-add", f"CLUSTER_CONFIG={config}",
                           f"PYTHON={sys.executable}", f"BUILD={tmp_path / 'build'}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "make cluster: sbatch refused the job: sbatch: error: invalid partition specified: no-such-partition" in (
        done.stderr)
    write(tmp_path / "cluster.toml", '[slurm]\npartitoin = "gpu"\n')
    done = subprocess.run([sys.executable, "-m", "grader", "cluster", "--lab", "01-vector-add", "--config",
                           str(config)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"make cluster: {config}: [slurm] has partitoin, which is not one of" in done.stderr
