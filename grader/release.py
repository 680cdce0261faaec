"""The student release: this repository's committed files without what students must not see.

`make release OUT=DIR` (`python3 -m grader release --out DIR`) writes the files of the commit
checked out (`git archive HEAD`, so what ships is one commit, whatever the working tree holds)
less the instructor's material (INSTRUCTOR_ONLY), with the student README and Makefile from
release/ in place of the instructor's, then checks the copy for leaks (find_leaks). It refuses a
checkout with uncommitted or untracked changes unless allow_dirty is given, and a folder that is
not a git checkout. With git_init, the release becomes a git repository of one commit, ready to
push to GitHub Classroom. Before anything is written, it checks that every lab's wrong and right
variants still apply to the references.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

from grader import variants
from grader.config import REPO_ROOT, ConfigError, list_labs, load_lab
from grader.skeleton import solution_code

# Never in a release: references and hidden tests, GPU run records (they name hidden sizes and wrong
# variants), CI scripts, the grader's own tests (they read solutions/), instructor how-tos, and tools
# that read these (the class benchmark, the slide builds and checks, the chart maker and its sources).
INSTRUCTOR_ONLY = (
    "solutions/",
    "docs/gpu-runs/",
    "docs/adding-a-lab.md",
    ".ci/",
    "grader/tests/",
    "grader/bench/",
    "release/",
    "slides/tests/",
    "slides/charts/make_charts.py",
    "slides/charts/sources.json",
    "slides/build.sh",
    "slides/package.json",
    "slides/package-lock.json",
    "slides/README.md",
)
# The student's README and Makefile, kept in release/ of the instructor's repository: release path -> source.
STUDENT_FILES = {"README.md": "release/README.md", "Makefile": "release/Makefile"}
# Lines this short appear in any CUDA code; they prove nothing.
MIN_LEAK_LENGTH = 25
# A leak is this many consecutive code lines of a solution region: one generic
# line (a loop header, a byte count) shared with public code gives nothing away.
MIN_LEAK_RUN = 2
# A hidden size is a secret from this many digits: shorter numbers are in every program.
MIN_SECRET_DIGITS = 4
# Numeric secrets are not looked for in drawings, whose coordinates are numbers of every kind.
NO_NUMBER_CHECK = (".svg",)
# An instructor-only path named as a path, wherever it stands ("docs/gpu-runs/", "../../solutions/"), but not as
# part of a longer name (mysolutions/); a folder only with its slash, so that prose saying "solutions" is no hit.
INSTRUCTOR_PATH = re.compile("|".join(rf"(?<![\w.-]){re.escape(path)}" + ("" if path.endswith("/") else r"(?![\w-])")
                                      for path in INSTRUCTOR_ONLY))
# The target of a Markdown link or image: [text](target) or [text](target "title").
MARKDOWN_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# A link that leaves the repository (https:, mailto:) or stays on its page (#a-heading).
NOT_A_FILE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#)", re.IGNORECASE)
GIT_TIMEOUT_S = 120


class ReleaseError(Exception):
    """The release cannot be made as asked; the message says why and what to do."""


class LeakError(ReleaseError):
    """The release would show students something private."""


def _git(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    # A GIT_DIR or GIT_INDEX_FILE inherited from a hook would point git at another repository.
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env, timeout=GIT_TIMEOUT_S)
    except FileNotFoundError:
        raise ReleaseError("git is not installed; the release is made from the instructor's git checkout") from None
    if check and done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.decode(errors='replace').strip()}")
    return done


def check_checkout(root: Path = REPO_ROOT) -> None:
    """Raise ReleaseError unless root is the top of a git checkout with a commit."""
    top = _git(["rev-parse", "--show-toplevel"], root, check=False)
    if top.returncode != 0 or Path(top.stdout.decode().strip()).resolve() != root.resolve():
        raise ReleaseError(f"{root} is not a git checkout (a copy made with `git archive` or a download has no "
                           f"history to release from): make the release from the instructor's git clone")
    if _git(["rev-parse", "--verify", "--quiet", "HEAD"], root, check=False).returncode != 0:
        raise ReleaseError(f"{root} has no commit yet: commit the kit, then make the release")


def uncommitted_changes(root: Path = REPO_ROOT) -> list[str]:
    """`git status` lines of every changed, staged or untracked file (ignored ones aside)."""
    status = _git(["status", "--porcelain=v1", "--untracked-files=all"], root).stdout.decode()
    return [line for line in status.splitlines() if line.strip()]


def head_commit(root: Path = REPO_ROOT) -> str:
    return _git(["rev-parse", "HEAD"], root).stdout.decode().strip()


def tracked_files(root: Path = REPO_ROOT) -> list[str]:
    check_checkout(root)
    listing = _git(["ls-files", "-z"], root)
    return [name for name in listing.stdout.decode().split("\0") if name]


def is_instructor_only(name: str) -> bool:
    return name.startswith(INSTRUCTOR_ONLY)


def _export_head(root: Path, into: Path) -> None:
    """Write the files of HEAD (all of them, solutions/ too) into `into`: the one source of a release."""
    archive = _git(["archive", "--format=tar", "HEAD"], root).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if member.name.startswith("/") or ".." in parts or not (member.isfile() or member.isdir()):
                continue  # git archive writes neither; a symbolic link or an escape would be a surprise
            target = into / member.name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
            target.chmod(0o755 if member.mode & 0o100 else 0o644)


def _solution_lines(root: Path) -> dict[str, str]:
    """Distinctive code lines of every solution region: line -> where it comes from."""
    return {line.text.strip(): line.source for lab in list_labs(root) for line in solution_code(load_lab(lab, root))
            if len(line.text.strip()) >= MIN_LEAK_LENGTH}


# A rubric line this long is the rubric's own sentence, not a phrase any text may share (headings such as
# "## Q1: ..." are QUESTIONS.md's too, and shorter).
MIN_RUBRIC_LINE = 60


def _rubric_lines(root: Path) -> dict[str, str]:
    """Lines of every lab's rubric (solutions/<lab>/RUBRIC.md) that would give an answer away if a release held
    them: line -> the rubric. The rubrics themselves are instructor material (solutions/); this finds one pasted
    into a handout or a QUESTIONS.md."""
    return {line.strip(): rubric.relative_to(root).as_posix()
            for rubric in sorted(root.glob("solutions/*/RUBRIC.md"))
            for line in rubric.read_text().splitlines()
            if len(line.strip()) >= MIN_RUBRIC_LINE and not line.lstrip().startswith("#")}


def _numbers(value: object) -> set[str]:
    values = value if isinstance(value, list) else [value]
    return {number for v in values for number in re.findall(r"\d+", str(v))}


def _near_a_power_of_two(number: int) -> bool:
    """2^k and 2^k +- 1 are every CUDA text's sizes (1023, 1024, 1025): a hidden one of them tells nothing."""
    return any(abs(number - (1 << bits)) <= 1 for bits in range(1, 64))


def _secrets(root: Path) -> dict[str, str]:
    """Text that must not appear in a release -> what it is: hidden test names, the names of the wrong (right and
    slow) variants, the secret seed, and the hidden sizes that no lab's public params give away anyway."""
    secrets: dict[str, str] = {}
    public_numbers = _public_numbers(root)
    for lab in list_labs(root):
        config = load_lab(lab, root)
        for test in config.tests:
            if test.hidden:
                secrets[test.name] = f"hidden test of {lab}"
        for variant in config.wrong:
            secrets[variant.name] = f"wrong variant of {lab}"
        for variant in config.right:
            secrets[variant.name] = f"correct alternative of {lab}"
        for variant in config.slow:
            secrets[variant.name] = f"slow variant of {lab}"
        if config.grading_seed is not None and config.grading_seed >= 1000:
            secrets[str(config.grading_seed)] = f"grading seed of {lab}"
        for name, value in _hidden_params(root, lab).items():
            for number in sorted(_numbers(value) - public_numbers):
                if len(number) >= MIN_SECRET_DIGITS and not _near_a_power_of_two(int(number)):
                    secrets.setdefault(number, f"hidden param {name} of {lab}")
    return secrets


def _public_numbers(root: Path) -> set[str]:
    """Every number in the public [params] of every lab: a hidden value equal to one of them is no secret."""
    numbers: set[str] = set()
    for lab in list_labs(root):
        with (root / "labs" / lab / "lab.toml").open("rb") as f:
            numbers |= {n for v in tomllib.load(f).get("params", {}).values() for n in _numbers(v)}
    return numbers


def _hidden_params(root: Path, lab: str) -> dict[str, object]:
    hidden = root / "solutions" / lab / "hidden.toml"
    if not hidden.is_file():
        return {}
    with hidden.open("rb") as f:
        return tomllib.load(f).get("params", {})


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


def _student_files(root: Path) -> set[str]:
    """The files students fill in (labs/<lab>/<file>), as the release names them."""
    return {f"labs/{lab}/{name}" for lab in list_labs(root) for name in load_lab(lab, root).student_files}


def _dangling(release: Path, path: Path, text: str) -> list[str]:
    """Where a file a student reads sends them somewhere the release does not have: it names instructor material
    (a student would look for docs/gpu-runs/ in vain), or a Markdown link's file is missing."""
    relative = path.relative_to(release).as_posix()
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        found += [f"{relative}:{number}: names {named.group(0)}, which the release does not ship"
                  for named in INSTRUCTOR_PATH.finditer(line)]
        for target in MARKDOWN_LINK.findall(line) if relative.endswith(".md") else ():
            if NOT_A_FILE.match(target) or INSTRUCTOR_PATH.search(target):
                continue  # a web page or a heading; or instructor material, named just above
            where = (path.parent / target.split("#")[0]).resolve()
            if not (where.is_relative_to(release.resolve()) and where.exists()):
                found.append(f"{relative}:{number}: links to {target}, which is not in the release")
    return found


def _secret_pattern(secret: str) -> re.Pattern:
    # Variant names hold '-' (a-name-like-this): a longer name that merely starts with a secret one is another name.
    return re.compile(rf"(?<![\w-]){re.escape(secret)}(?![\w-])")


def find_leaks(release: Path, root: Path = REPO_ROOT, *more_roots: Path) -> list[str]:
    """Every way the release shows instructor material, or sends a student to a file it does not have (a name or
    a link in the Markdown they read or the files they fill in), one line each; secrets are read from root (and
    more_roots: the commit released and the working tree may differ)."""
    solution_lines: dict[str, str] = {}
    secrets: dict[str, str] = {}
    rubric_lines: dict[str, str] = {}
    student_files: set[str] = set()
    for source in (root, *more_roots):
        solution_lines.update(_solution_lines(source))
        secrets.update(_secrets(source))
        rubric_lines.update(_rubric_lines(source))
        student_files |= _student_files(source)
    patterns = {secret: _secret_pattern(secret) for secret in secrets}
    leaks = []
    for path in sorted(p for p in release.rglob("*") if p.is_file() and ".git" not in p.relative_to(release).parts):
        relative = path.relative_to(release).as_posix()
        if is_instructor_only(relative):
            leaks.append(f"{relative}: instructor material")
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        leaks += [f"{relative}:{number}: reference code from {source}: {code}"
                  for number, code, source in _copied_runs(text, solution_lines)]
        leaks += [f"{relative}:{number}: a line of the rubric {rubric_lines[line.strip()]}"
                  for number, line in enumerate(text.splitlines(), start=1) if line.strip() in rubric_lines]
        if relative.endswith(".md") or relative in student_files:
            leaks += _dangling(release, path, text)
        for secret, what in secrets.items():
            if secret.isdigit() and relative.endswith(NO_NUMBER_CHECK):
                continue
            if secret in text and patterns[secret].search(text):
                leaks.append(f"{relative}: contains the {what} ({secret!r})")
    for name, source in STUDENT_FILES.items():
        student, shipped = root / source, release / name
        if student.is_file() and shipped.is_file() and shipped.read_bytes() != student.read_bytes():
            leaks.append(f"{name}: not the student one ({source})")
    return leaks


def check_variants(root: Path = REPO_ROOT) -> None:
    """ConfigError unless every wrong and right variant of every lab still applies to its reference exactly once:
    a release whose self-check cannot build its variants would be one nobody can vouch for."""
    broken = [problem for lab in list_labs(root) for problem in variants.problems(load_lab(lab, root))]
    if broken:
        raise ConfigError(variants.broken_message(broken))


def _commit_all(folder: Path, message: str) -> None:
    _git(["init", "--quiet"], folder)
    _git(["add", "--all"], folder)
    identity = []
    for key, fallback in (("user.name", "CUDA lab kit"), ("user.email", "cuda-lab-kit@invalid")):
        if _git(["config", key], folder, check=False).returncode != 0:
            identity += ["-c", f"{key}={fallback}"]
    _git([*identity, "commit", "--quiet", "--no-verify", "-m", message], folder)


def make_release(out: Path, root: Path = REPO_ROOT, allow_dirty: bool = False, git_init: bool = False,
                 warn=lambda message: print(message, file=sys.stderr)) -> int:
    """Write the student release of HEAD into `out`; returns the number of files. Raises ReleaseError for a
    dirty checkout (unless allow_dirty, then `warn`s), a folder that is no checkout or is in use, and
    LeakError if the copy shows anything private."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} is not empty; give a new folder")
    check_variants(root)
    check_checkout(root)
    changes = uncommitted_changes(root)
    if changes:
        listing = "\n  ".join(changes[:40] + ([f"... and {len(changes) - 40} more"] if len(changes) > 40 else []))
        if not allow_dirty:
            raise ReleaseError(f"{root} has uncommitted or untracked changes; the release is made from the last "
                               f"commit, so commit them (or stash or remove them) first, or give --allow-dirty "
                               f"(ALLOW_DIRTY=1) to release the last commit without them:\n  {listing}")
        warn("\n" + "!" * 78 + f"\nWARNING: releasing {head_commit(root)[:12]} WITHOUT these uncommitted or untracked "
             f"changes (--allow-dirty):\n  {listing}\n" + "!" * 78)
    commit = head_commit(root)
    with tempfile.TemporaryDirectory(prefix="kit-release-") as staging:
        head = Path(staging)
        _export_head(root, head)
        for name, source in STUDENT_FILES.items():
            if not (head / source).is_file():
                raise ReleaseError(f"{source} (the student {name}) is not in commit {commit[:12]}: commit it first")
        out.mkdir(parents=True, exist_ok=True)
        count = 0
        for path in sorted(p for p in head.rglob("*") if p.is_file()):
            name = path.relative_to(head).as_posix()
            if is_instructor_only(name) or name in STUDENT_FILES:
                continue
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            count += 1
        for name, source in STUDENT_FILES.items():
            shutil.copy2(head / source, out / name)
            count += 1
        # The copy has no history: results.json names the grader's commit from this file (audit.py).
        (out / "grader" / "COMMIT").write_text(commit + "\n")
        leaks = find_leaks(out, head, *([root] if root.resolve() != head.resolve() else []))
    if leaks:
        raise LeakError(f"the release in {out} shows private material or names files it does not ship (nothing "
                        f"was committed; delete the folder, fix the files, commit, and make it again):\n  "
                        + "\n  ".join(leaks))
    if git_init:
        _commit_all(out, f"CUDA labs (kit commit {commit[:12]})")
    return count
