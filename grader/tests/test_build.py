"""The build stage's commands (no compiler needed: the process runner is replaced)."""
import shutil
from pathlib import Path

import pytest

from grader import build, cli
from grader.config import ConfigError
from grader.proc import ProcessResult


@pytest.fixture
def commands(monkeypatch):
    seen: list[list[str]] = []

    def run_process(command, cwd, env, timeout_s, watch=None):
        seen.append(command)
        return ProcessResult(returncode=0, timed_out=False, output="", seconds=0.0)
    monkeypatch.setattr(build, "run_process", run_process)
    return seen


@pytest.mark.skipif(build.lowest_priority() != build.IDLE_PRIORITY,
                    reason="needs util-linux's chrt and a scheduler that grants SCHED_IDLE")
def test_configure_and_build_run_at_the_lowest_cpu_priority(lab01, commands, tmp_path: Path):
    build.lowest_priority.cache_clear()
    build.configure(lab01, tmp_path / "b", None)
    build.build(lab01, tmp_path / "b", "student")
    build.build_variants(tmp_path / "b", lab01)
    assert len(commands) == 3
    for command in commands:  # a timing beside a class's builds must not wait behind a compiler
        assert command[:4] == ["chrt", "--idle", "0", "cmake"], command


def test_builds_fall_back_to_nice_where_the_scheduler_refuses_idle_priority(lab01, commands, tmp_path: Path,
                                                                           monkeypatch):
    monkeypatch.setattr(build, "IDLE_PRIORITY", ["false"])  # as chrt answers where seccomp forbids the call
    build.lowest_priority.cache_clear()
    try:
        build.configure(lab01, tmp_path / "b", None)
    finally:
        build.lowest_priority.cache_clear()
    expected = ["nice", "-n", "19"] if shutil.which("nice") else []
    assert commands[0][:len(expected) + 1] == [*expected, "cmake"], commands[0]


def test_the_self_check_and_the_journey_say_what_to_build_first(tmp_path: Path, capsys):
    folder = tmp_path / "build"
    (folder / "01-vector-add").mkdir(parents=True)
    (folder / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Release\n")
    (folder / "01-vector-add" / build.target_name("01-vector-add", "reference")).write_text("")
    with pytest.raises(ConfigError, match="no built test program for 07-transpose: .*make build"):
        build.require_built(folder, ["01-vector-add", "07-transpose"])
    build.require_built(folder, ["01-vector-add"])
    assert cli.main(["selfcheck", "--build-dir", str(folder), "--lab", "08-streams", "--no-sandbox"]) == 2
    assert "no built test program for 08-streams" in capsys.readouterr().err
    for command in ("selfcheck", "journey"):
        lab = "04-tiled-matmul"
        assert cli.main([command, "--build-dir", str(tmp_path / "nothing"), "--lab", lab, "--no-sandbox"]) == 2
        assert "is not a build folder (no CMakeCache.txt). Build the labs first" in capsys.readouterr().err
