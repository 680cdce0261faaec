"""The grader refuses untrusted code where no sandbox can run, unless the TA opts out, loudly."""
from __future__ import annotations

from pathlib import Path

from grader import cli, sandbox


def test_grading_a_submission_without_a_sandbox_is_refused(monkeypatch, tmp_path: Path, capsys):
    monkeypatch.setattr(sandbox, "_working_mode", lambda: ("", "bubblewrap is not installed"))
    code = cli.main(["grade", "--lab", "01-vector-add", "--submission", str(tmp_path), "--results",
                     str(tmp_path / "results.json")])
    assert code == sandbox.UNAVAILABLE_EXIT
    assert "Refusing to grade untrusted code" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_no_sandbox_flag_warns_and_goes_on(monkeypatch, tmp_path: Path, capsys):
    monkeypatch.setattr(sandbox, "_working_mode", lambda: ("", "bubblewrap is not installed"))
    sandbox.apply_policy(untrusted=True, opted_out=True)
    assert not sandbox.current().enabled
    assert "WARNING: running without the OS sandbox" in capsys.readouterr().err
