"""The build stage's commands (no compiler needed: the process runner is replaced)."""
import shutil
from pathlib import Path

import pytest

from grader import build
from grader.proc import ProcessResult


@pytest.fixture
def commands(monkeypatch):
    seen: list[list[str]] = []

    def run_process(command, cwd, env, timeout_s, watch=None):
        seen.append(command)
        return ProcessResult(returncode=0, timed_out=False, output="", seconds=0.0)
    monkeypatch.setattr(build, "run_process", run_process)
    return seen


@pytest.mark.skipif(shutil.which("nice") is None, reason="needs coreutils' nice")
def test_configure_and_build_run_at_the_lowest_cpu_priority(lab01, commands, tmp_path: Path):
    build.configure(lab01, tmp_path / "b", None)
    build.build(lab01, tmp_path / "b", "student")
    build.build_variants(tmp_path / "b", lab01)
    assert len(commands) == 3
    for command in commands:  # a timing beside a class's builds must not wait behind a compiler
        assert command[:4] == ["nice", "-n", "19", "cmake"], command
