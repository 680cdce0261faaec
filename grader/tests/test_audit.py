"""What the audit trail rests on: the fingerprint of what was graded, and which ratios are timed again."""
import subprocess
from pathlib import Path

import pytest

from grader import audit
from grader.config import load_lab
from grader.tests.conftest import REPO, write


def test_fingerprint_follows_the_files_the_config_and_nothing_else(toy_repo: Path):
    config = load_lab("50-toy", toy_repo)
    first = audit.fingerprint(config, {"toy.cu": b"int x;"})
    assert audit.fingerprint(config, {"toy.cu": b"int x;"}) == first
    assert audit.fingerprint(config, {"toy.cu": b"int y;"}) != first
    assert audit.fingerprint(config, {"other.cu": b"int x;"}) != first
    lab_toml = toy_repo / "labs/50-toy/lab.toml"
    write(lab_toml, lab_toml.read_text().replace("points = 10", "points = 12"))
    assert audit.fingerprint(load_lab("50-toy", toy_repo), {"toy.cu": b"int x;"}) != first


def test_ratios_within_two_percent_of_a_threshold_are_timed_again(toy_repo: Path):
    config = load_lab("50-toy", toy_repo)  # full_at 1.2, zero_at 10
    assert audit.near_threshold(1.2, config) and audit.near_threshold(1.223, config)
    assert audit.near_threshold(1.177, config) and audit.near_threshold(9.81, config)
    assert not audit.near_threshold(1.25, config) and not audit.near_threshold(1.0, config)
    assert not audit.near_threshold(9.7, config)


def test_the_grader_commit_names_this_checkout():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    assert audit.grader_commit() in (head.stdout.strip(), head.stdout.strip() + "+changes")


def test_submission_files_of_a_zip_and_a_folder(tmp_path: Path):
    write(tmp_path / "alice/src/a.cu", "x")
    (tmp_path / "bob.zip").write_bytes(b"PK")
    assert audit.submission_files(tmp_path / "alice") == {"src/a.cu": b"x"}
    assert audit.submission_files(tmp_path / "bob.zip") == {"bob.zip": b"PK"}
