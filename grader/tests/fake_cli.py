"""The grader's command line with the GPU faked, for tests that run it as a separate process (a Slurm task).

    KIT_FAKE_REPO=<toy repo> KIT_FAKE_LOG=<runs log> python3 -m grader.tests.fake_cli grade-class ...

Everything is the real command line (cli.main) except what needs a GPU: test
programs are fake_gpu's stand-ins, told what to do by each toy.cu, and the one
GPU is "Fake GPU"; the labs are read from the toy repository $KIT_FAKE_REPO.
The stand-ins run outside the OS sandbox, which would hide the behaviour file
and log they keep beside them (they hold no student code; test_sandbox.py tests
the sandbox).
`sbatch` runs it through `slurm.SlurmJob.python` = a wrapper (python_wrapper)
that turns the script's `python3 -m grader` into this module.
"""
from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from grader import classroom, cli, sandbox
from grader.config import load_lab
from grader.gpulock import Gpu
from grader.tests.fake_gpu import FakeBuilds

REFERENCE = {"medians": [0.001]}  # the reference's timing, as test_classroom's


def install_fakes(repo: Path, log: Path) -> None:
    """Point this process's grader at the toy repository and at stand-in test programs."""
    cli.load_lab = functools.partial(load_lab, root=repo)
    real_grade_class = classroom.grade_class

    def grade_class(config, *args, **kwargs):
        fakes = FakeBuilds(config, log, reference=dict(REFERENCE))
        classroom.grade.build_submission = fakes.build_submission
        classroom.build_reference_tree = fakes.build_reference_tree
        return real_grade_class(config, *args, **kwargs)

    classroom.grade_class = grade_class
    sandbox.apply_policy = lambda untrusted, opted_out: sandbox.use(sandbox.Policy(enabled=False))
    classroom.list_gpus = lambda: [Gpu(key="fake-gpu", visible="0", name="Fake GPU")]


def python_wrapper(path: Path) -> Path:
    """An executable at `path` to give as `--python`: runs `<it> -m grader ARGS` as this module with ARGS."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\n[ "$1 $2" = "-m grader" ] && shift 2\n'
                    f'exec {sys.executable} -m grader.tests.fake_cli "$@"\n')
    path.chmod(0o755)
    return path


if __name__ == "__main__":
    install_fakes(Path(os.environ["KIT_FAKE_REPO"]), Path(os.environ["KIT_FAKE_LOG"]))
    sys.exit(cli.main())
