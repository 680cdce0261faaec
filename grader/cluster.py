"""`make cluster LAB=<lab>`: a lab's public tests (GRADE=1: and `make grade`) on the course's Slurm cluster.

For students without an NVIDIA GPU. The instructor sets the partition, account, GPU request and time
limit once, in cluster.toml at the top of the release. The job runs `make <lab>` in this checkout,
which must be on a file system the cluster's nodes see (a home folder is); its output is printed here
as it comes, as if the tests ran locally, and the command exits as the job did. While the job waits in
the queue, a line says so and why; Ctrl-C cancels it.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from grader.config import REPO_ROOT
from grader.proc import ProcessResult, run_process

CONFIG = REPO_ROOT / "cluster.toml"
POLL_S = 1.0
COMMAND_TIMEOUT_S = 60
# What squeue's reason for a pending job means to a student.
WAITING_BECAUSE = {
    "Priority": "other jobs are ahead of it",
    "Resources": "every GPU it may use is busy",
    "BeginTime": "it may not start yet",
    "None": "the scheduler has not looked at it yet",
}


class ClusterError(Exception):
    """The job could not be submitted or followed; the message says what to do."""


@dataclass(frozen=True)
class ClusterConfig:
    partition: str = ""
    account: str = ""
    gres: str = "gpu:1"
    cpus_per_task: int = 4
    time: str = "00:30:00"
    sbatch_options: tuple[str, ...] = ()  # any other sbatch option the course needs, e.g. "--qos=class"


def load_config(path: Path = CONFIG) -> ClusterConfig:
    if not path.is_file():
        raise ClusterError(f"no {path.name} in {path.parent}: the course's cluster settings come with the labs; "
                           f"ask your instructor for it")
    try:
        table = tomllib.loads(path.read_text()).get("slurm", {})
    except tomllib.TOMLDecodeError as error:
        raise ClusterError(f"{path} is not valid TOML ({error}); ask your instructor for a correct one") from None
    known = set(ClusterConfig.__dataclass_fields__)
    if unknown := sorted(set(table) - known):
        raise ClusterError(f"{path}: [slurm] has {', '.join(unknown)}, which is not one of {', '.join(sorted(known))}")
    if "sbatch_options" in table:
        table["sbatch_options"] = tuple(table["sbatch_options"])
    return ClusterConfig(**table)


def directives(config: ClusterConfig, lab: str, log: Path) -> list[str]:
    found = [f"--job-name={lab}", f"--gres={config.gres}", f"--cpus-per-task={config.cpus_per_task}",
             f"--time={config.time}", f"--output={log}"]
    found += [f"--partition={config.partition}"] if config.partition else []
    found += [f"--account={config.account}"] if config.account else []
    return found + list(config.sbatch_options)


def job_script(config: ClusterConfig, lab: str, checkout: Path, build: Path, python: str, grade: bool,
               log: Path, status: Path) -> str:
    """The batch script: make <lab> (and make grade) in the checkout, its exit status left in `status`."""
    q = shlex.quote
    make = f"make --no-print-directory BUILD={q(str(build))} PYTHON={q(python)}"
    steps = f"{make} {q(lab)}" + (f" && {make} grade LAB={q(lab)}" if grade else "")
    return "\n".join(["#!/bin/bash", f"# {lab} on the course's cluster (written by `make cluster`).",
                      *[f"#SBATCH {d}" for d in directives(config, lab, log)],
                      f"cd {q(str(checkout))}", steps, f"echo $? > {q(str(status))}", ""])


def _run(*command: str) -> ProcessResult:
    """A Slurm client tool's run (sbatch reads the cluster's settings from this environment)."""
    if shutil.which(command[0]) is None:
        raise ClusterError(f"{command[0]} not found: run `make cluster` on the cluster's login node")
    return run_process(list(command), cwd=Path.cwd(), env=dict(os.environ), timeout_s=COMMAND_TIMEOUT_S)


def submit(script: Path) -> str:
    done = _run("sbatch", "--parsable", str(script))
    if not done.ok:
        raise ClusterError(f"sbatch refused the job: {done.output.strip()}\n(the settings are in {CONFIG.name}; "
                           f"if they look wrong, tell your instructor)")
    return done.output.strip().splitlines()[-1].split(";")[0]


def queue_state(job: str) -> tuple[str, str]:
    """(state, reason) of the job in squeue; ("", "") once it has left the queue."""
    done = _run("squeue", "-h", "-j", job, "-o", "%T|%r")
    line = done.output.strip()
    return tuple(line.split("|", 1)) if done.ok and "|" in line else ("", "")


def final_state(job: str) -> str:
    done = _run("scontrol", "show", "job", job)
    found = re.search(r"JobState=(\w+)", done.output)
    return found.group(1) if found else "unknown"


class Follower:
    """Prints the job's log as it grows, and a line each time its place in the queue changes."""

    def __init__(self, job: str, log: Path, stream: TextIO):
        self.job, self.log, self.stream = job, log, stream
        self.printed = 0
        self.said = ""

    def say(self, line: str) -> None:
        if line != self.said:
            print(line, file=self.stream, flush=True)
            self.said = line

    def show_log(self) -> None:
        if self.log.is_file():
            with self.log.open("rb") as log:
                log.seek(self.printed)
                new = log.read()
            self.printed += len(new)
            self.stream.write(new.decode(errors="replace"))
            self.stream.flush()

    def follow(self) -> None:
        while True:
            state, reason = queue_state(self.job)
            if state == "PENDING":
                why = WAITING_BECAUSE.get(reason, reason)
                self.say(f"job {self.job} is waiting in the queue ({reason}: {why}); your tests start when it "
                         f"leaves it. Ctrl-C cancels it.")
            else:  # running, or already done: a short job can start and end between two looks at the queue
                self.say(f"job {self.job} has started.")
            self.show_log()
            if not state:
                return
            time.sleep(POLL_S)


def run(lab: str, build: Path, python: str, grade: bool, config_path: Path = CONFIG, checkout: Path = REPO_ROOT,
        stream: TextIO = sys.stdout) -> int:
    """Submit the job, follow it to its end, and return its exit status (1 where it ended without one)."""
    config = load_config(config_path)
    build = (checkout / build).resolve() if not build.is_absolute() else build
    folder = build / "cluster"
    folder.mkdir(parents=True, exist_ok=True)
    log, status, script = folder / f"{lab}.log", folder / f"{lab}.status", folder / f"{lab}.sbatch"
    for old in (log, status):
        old.unlink(missing_ok=True)
    script.write_text(job_script(config, lab, checkout.resolve(), build, python, grade, log, status))
    job = submit(script)
    print(f"submitted {lab} as job {job} ({', '.join(directives(config, lab, log)[1:4])}); its output follows.",
          file=stream, flush=True)
    follower = Follower(job, log, stream)
    try:
        follower.follow()
    except KeyboardInterrupt:
        _run("scancel", job)
        print(f"\ncancelled job {job}.", file=stream)
        return 130
    time.sleep(POLL_S)  # a shared file system may show the log's last lines a moment after the job ends
    follower.show_log()
    if status.is_file():
        return int(status.read_text().strip() or 1)
    print(f"job {job} ended without finishing ({final_state(job)}): its time limit ({config.time}) or a cancel "
          f"stopped it; see {log}", file=stream)
    return 1
