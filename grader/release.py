"""The student release: this repository without what students must not see.

`python3 -m grader release --out DIR` copies every tracked file except
solutions/ (references, hidden tests, grading secrets), then checks the copy
for leaks: no line of a reference's solution regions, no hidden test name and
no secret seed may appear in any released file. Before copying, it checks that
every lab's wrong and right variants still apply to the references.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from grader.audit import grader_commit
from grader import variants
from grader.config import REPO_ROOT, ConfigError, list_labs, load_lab
from grader.skeleton import solution_code

PRIVATE = ("solutions/",)
# Lines this short appear in any CUDA code; they prove nothing.
MIN_LEAK_LENGTH = 25
# A leak is this many consecutive code lines of a solution region: one generic
# line (a loop header, a byte count) shared with public code gives nothing away.
MIN_LEAK_RUN = 2


class LeakError(Exception):
    """The release would show students something private."""


def tracked_files(root: Path = REPO_ROOT) -> list[str]:
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
    return [name for name in listing.stdout.decode().split("\0") if name]


def _solution_lines(root: Path) -> dict[str, str]:
    """Distinctive code lines of every solution region: line -> where it comes from."""
    return {line.text.strip(): line.source for lab in list_labs(root) for line in solution_code(load_lab(lab, root))
            if len(line.text.strip()) >= MIN_LEAK_LENGTH}


def _secrets(root: Path) -> dict[str, str]:
    secrets = {}
    for lab in list_labs(root):
        config = load_lab(lab, root)
        for test in config.tests:
            if test.hidden:
                secrets[test.name] = f"hidden test of {lab}"
        if config.grading_seed is not None and config.grading_seed >= 1000:
            secrets[str(config.grading_seed)] = f"grading seed of {lab}"
    return secrets


def _copied_runs(text: str, solution_lines: dict[str, str]) -> list[tuple[int, str, str]]:
    """(line number, code, source) for the first line of each run of copied solution lines."""
    code_lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1)
                  if line.strip() and not line.strip().startswith("//")]
    runs, current = [], []
    for number, code in code_lines + [(0, "")]:
        if code in solution_lines:
            current.append((number, code))
            continue
        if len(current) >= MIN_LEAK_RUN:
            runs.append((current[0][0], current[0][1], solution_lines[current[0][1]]))
        current = []
    return runs


def find_leaks(release: Path, root: Path = REPO_ROOT) -> list[str]:
    solution_lines = _solution_lines(root)
    secrets = _secrets(root)
    leaks = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        relative = path.relative_to(release)
        if any(str(relative).startswith(private) for private in PRIVATE):
            leaks.append(f"{relative}: a private file")
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        leaks += [f"{relative}:{number}: reference code from {source}: {code}"
                  for number, code, source in _copied_runs(text, solution_lines)]
        for secret, what in secrets.items():
            if re.search(rf"(?<![\w]){re.escape(secret)}(?![\w])", text):
                leaks.append(f"{relative}: contains the {what} ({secret!r})")
    return leaks


def check_variants(root: Path = REPO_ROOT) -> None:
    """ConfigError unless every wrong and right variant of every lab still applies to its reference exactly once:
    a release whose self-check cannot build its variants would be one nobody can vouch for."""
    broken = [problem for lab in list_labs(root) for problem in variants.problems(load_lab(lab, root))]
    if broken:
        raise ConfigError(f"{len(broken)} wrong or right variant(s) no longer apply to their reference; change "
                          f"their `replace` text in hidden.toml:\n  " + "\n  ".join(broken))


def make_release(out: Path, root: Path = REPO_ROOT) -> int:
    """Copy the public files to `out`; raises LeakError if the copy shows anything private."""
    if out.exists() and any(out.iterdir()):
        raise LeakError(f"{out} is not empty; give a new folder")
    check_variants(root)
    count = 0
    for name in tracked_files(root):
        if name.startswith(PRIVATE) or not (root / name).is_file():
            continue
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
        count += 1
    # The copy has no git: results.json names the grader's commit from this file (audit.py).
    (out / "grader" / "COMMIT").write_text(grader_commit() + "\n")
    leaks = find_leaks(out, root)
    if leaks:
        raise LeakError("the release shows private material:\n  " + "\n  ".join(leaks))
    return count
