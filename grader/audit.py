"""Audit trail: what a results.json must record so that a regrade request can be answered from it.

- the grader's commit (git, or grader/COMMIT in a copy without git), and
- a fingerprint of what was graded (the student's files, the lab's config, that
  commit): a class grading that resumes keeps a result only while it matches;
- for a performance score whose ratio crossed one of its thresholds by no
  more than RERUN_BAND, a second timing and which one counted (the better
  ratio: a student is not marked down by one noisy run).
"""
from __future__ import annotations

import functools
import hashlib
import tempfile
from pathlib import Path

from grader.config import REPO_ROOT, LabConfig, PerfSpec
from grader.intake import MAX_FILE_BYTES
from grader.proc import run_process, scrubbed_env

COMMIT_FILE = REPO_ROOT / "grader" / "COMMIT"
GIT_TIMEOUT_S = 30
# A ratio past its full_at or zero_at by at most this (relative) is timed again. A busy class run times the
# same code this much slower now and then: on an H100 grading lab 02's class of 200 (2026-11-28), 3 of 134
# reference copies came out 1.20 to 1.23x the reference, against a median of 1.03.
RERUN_BAND = 0.25


@functools.cache
def grader_commit() -> str:
    """The commit of the grader's tree, "+changes" when it has uncommitted edits; "unknown" without either."""
    if COMMIT_FILE.is_file():
        return COMMIT_FILE.read_text().strip()
    with tempfile.TemporaryDirectory(prefix="kit-git-") as home:
        env = scrubbed_env(Path(home))
        head = run_process(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, env=env, timeout_s=GIT_TIMEOUT_S)
        if not head.ok:
            return "unknown"
        status = run_process(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, env=env,
                             timeout_s=GIT_TIMEOUT_S)
    changed = status.ok and status.output.strip() != ""
    return head.output.strip() + ("+changes" if changed else "")


def _config_bytes(config: LabConfig) -> bytes:
    files = [config.lab_dir / "lab.toml"]
    if config.solution_dir is not None:
        files.append(config.solution_dir / "hidden.toml")
    return b"".join(path.read_bytes() for path in files if path.is_file())


def fingerprint(config: LabConfig, files: dict[str, bytes]) -> str:
    """A hash of what decides a grade: the submission's files (name -> content), the lab's config, the grader."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    digest.update(b"\0config\0" + _config_bytes(config))
    digest.update(b"\0grader\0" + grader_commit().encode())
    return digest.hexdigest()


def submission_files(path: Path) -> dict[str, bytes]:
    """Every file of a submission as it arrived (a .zip as one file), for a fingerprint of what intake refused."""
    if path.is_file():
        return {path.name: _content_or_stamp(path)}
    return {str(p.relative_to(path)): _content_or_stamp(p) for p in sorted(path.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def _content_or_stamp(path: Path) -> bytes:
    """A file's bytes, or for one over intake's size limit its size and modification time.

    Intake refuses such a file unread (it may be a 2 GiB sparse file); reading it whole here, for a
    fingerprint, would undo that. A refused result only needs to notice a new submission, and a file
    copied in anew gets a new modification time.
    """
    status = path.stat()
    if status.st_size > MAX_FILE_BYTES:
        return f"\0over the size limit: {status.st_size} bytes, modified {status.st_mtime_ns}".encode()
    with path.open("rb") as source:
        return source.read(MAX_FILE_BYTES + 1)  # should it grow meanwhile: the fingerprint differs, that is all


def near_threshold(ratio: float, spec: PerfSpec) -> bool:
    """Whether a performance item's ratio (score.perf_ratio) lies past its full_at or zero_at by at most
    RERUN_BAND (relative): a ratio that lost points by crossing a threshold within the noise of a busy run."""
    return any(threshold < ratio <= threshold * (1.0 + RERUN_BAND) for threshold in (spec.full_at, spec.zero_at))
