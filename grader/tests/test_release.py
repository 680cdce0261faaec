"""The student release, made from a fresh clone of this repository's last commit (what `make release` ships)."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.release import (INSTRUCTOR_ONLY, STUDENT_FILES, LeakError, ReleaseError, find_leaks, make_release)
from grader.tests.conftest import REPO

FORBIDDEN = ("solutions", "docs/gpu-runs", "docs/adding-a-lab.md", ".ci", "grader/tests")


def _in_git_checkout() -> bool:
    """True where git knows this repository's files (not in a plain copy of the tree)."""
    if shutil.which("git") is None:
        return False
    listing = subprocess.run(["git", "ls-files", "grader/release.py"], cwd=REPO, capture_output=True, text=True)
    return listing.returncode == 0 and listing.stdout.strip() == "grader/release.py"


pytestmark = pytest.mark.skipif(not (REPO / "solutions").is_dir() or not _in_git_checkout(),
                                reason="the release is made from the instructor's git checkout")


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of HEAD: what an instructor who just cloned the kit releases."""
    where = tmp_path_factory.mktemp("clone") / "kit"
    _git("clone", "--quiet", "--no-hardlinks", str(REPO), str(where), cwd=REPO)
    return where


@pytest.fixture(scope="module")
def release(clone: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "student"
    assert make_release(out, clone, git_init=True) > 10
    return out


def _make(release: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=release, capture_output=True, text=True,
                          timeout=60)


def test_release_has_no_instructor_material(release: Path, clone: Path):
    for path in FORBIDDEN:
        assert not (release / path).exists(), path
    shipped = [p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()]
    assert not [name for name in shipped if name.startswith(INSTRUCTOR_ONLY)]
    assert not (release / "release").exists()  # the student files' source folder is not shipped as such
    assert (release / "labs/01-vector-add/vector_add.cu").is_file()
    assert (release / "grader/__main__.py").is_file()
    head = _git("rev-parse", "HEAD", cwd=clone).strip()
    assert (release / "grader/COMMIT").read_text().strip() == head  # the grader's commit, for results.json


def test_the_leak_check_passes_on_the_release(release: Path, clone: Path):
    assert find_leaks(release, clone) == []


def test_readme_and_makefile_are_the_students(release: Path, clone: Path):
    for name, source in STUDENT_FILES.items():
        assert (release / name).read_bytes() == (clone / source).read_bytes(), name
    readme = (release / "README.md").read_text()
    for must in ("make grade", "make 01-vector-add", "How you are graded", "may not", "12-libraries"):
        assert must in readme
    for instructor_only in ("grade-class", "selfcheck", "solutions/", "Slurm", "bench-class"):
        assert instructor_only not in readme
    makefile = (release / "Makefile").read_text()
    for instructor_only in ("selfcheck", "bench-class", "release", "skeleton", "slides", "charts", "solutions",
                            "grader/tests"):
        assert instructor_only not in makefile


def test_make_help_and_make_n_test_work_in_the_release(release: Path):
    shown = _make(release, "help")
    assert shown.returncode == 0, shown.stderr
    targets = set(re.findall(r"make (\S+)", shown.stdout))
    assert {"help", "build", "test", "grade", "clean", "<lab>", "cluster"} <= targets
    assert (release / "cluster.toml").is_file()  # the course's cluster settings, for `make cluster`
    assert not targets & {"selfcheck", "bench-class", "release", "skeleton", "slides", "slides-check", "charts"}
    planned = _make(release, "-n", "test")
    assert planned.returncode == 0, planned.stderr
    assert "ctest" in planned.stdout and "pytest" not in planned.stdout and "skeleton" not in planned.stdout
    assert "slides" not in planned.stdout


def test_every_make_command_a_handout_names_exists_in_the_release(release: Path):
    """A handout or deck telling students to run `make <lab>-demo` needs that target in their Makefile."""
    named = set()
    for text in [p.read_text() for p in [*release.glob("labs/*/README.md"), release / "README.md"]]:
        # Not in HTML comments, which a rendered handout does not show (the generated section's marker
        # names the instructor's `make handouts`).
        named |= set(re.findall(r"`make ([a-z0-9-]+)( LAB=)?", re.sub(r"<!--.*?-->", "", text, flags=re.S)))
    assert named, "the handouts name no make command"
    for target, with_lab in sorted(named - {("<lab>", "")}):
        planned = _make(release, "-n", target, *(["LAB=01-vector-add"] if with_lab else []))
        assert planned.returncode == 0, f"make {target}{with_lab}: {planned.stderr}"
    assert any(name.endswith("-demo") for name, _ in named)  # the demos the handouts name are planned above


def test_release_with_git_init_is_one_clean_commit(release: Path):
    assert _git("rev-list", "--count", "HEAD", cwd=release).strip() == "1"
    assert _git("status", "--porcelain", cwd=release).strip() == ""
    committed = set(_git("ls-files", cwd=release).split())
    assert {"README.md", "Makefile", "grader/COMMIT", "labs/01-vector-add/vector_add.cu"} <= committed


def test_a_dirty_checkout_is_refused_naming_the_files(clone: Path, tmp_path: Path):
    (clone / "README.md").write_text((clone / "README.md").read_text() + "\nan edit\n")
    (clone / "labs/01-vector-add/notes.txt").write_text("untracked\n")
    try:
        with pytest.raises(ReleaseError, match="uncommitted or untracked") as refused:
            make_release(tmp_path / "dirty", clone)
        assert "README.md" in str(refused.value) and "labs/01-vector-add/notes.txt" in str(refused.value)
        assert not (tmp_path / "dirty").exists()
        # With allow_dirty it warns loudly and ships the last commit, not the edits.
        warnings = []
        make_release(tmp_path / "anyway", clone, allow_dirty=True, warn=warnings.append)
        assert "WARNING" in warnings[0] and "notes.txt" in warnings[0]
        assert not (tmp_path / "anyway/labs/01-vector-add/notes.txt").exists()
    finally:
        _git("checkout", "--", "README.md", cwd=clone)
        (clone / "labs/01-vector-add/notes.txt").unlink()


def test_make_release_refuses_a_dirty_checkout_unless_allow_dirty(clone: Path, tmp_path: Path):
    (clone / "scratch.txt").write_text("untracked\n")
    try:
        refused = subprocess.run(["make", "--no-print-directory", "release", f"OUT={tmp_path / 'a'}"], cwd=clone,
                                 capture_output=True, text=True, timeout=120)
        assert refused.returncode != 0 and "scratch.txt" in refused.stderr and "Traceback" not in refused.stderr
        allowed = subprocess.run(["make", "--no-print-directory", "release", f"OUT={tmp_path / 'b'}", "ALLOW_DIRTY=1"],
                                 cwd=clone, capture_output=True, text=True, timeout=120)
        assert allowed.returncode == 0, allowed.stderr
        assert "WARNING" in allowed.stderr and "scratch.txt" in allowed.stderr
    finally:
        (clone / "scratch.txt").unlink()


def test_outside_a_git_checkout_it_stops_with_a_message(clone: Path, tmp_path: Path):
    """A copy made with `git archive` has solutions/ but no history: a clear refusal, no traceback."""
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=clone, capture_output=True, check=True)
    copy = tmp_path / "copy"
    copy.mkdir()
    subprocess.run(["tar", "-x", "-C", str(copy)], input=archive.stdout, check=True)
    done = subprocess.run(["make", "--no-print-directory", "release", f"OUT={tmp_path / 'out'}"], cwd=copy,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "not a git checkout" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_leaks_are_found(release: Path, clone: Path, tmp_path: Path, lab01):
    leaky = tmp_path / "leaky"
    shutil.copytree(release, leaky, ignore=shutil.ignore_patterns(".git"))
    hidden_name = next(t.name for t in lab01.tests if t.hidden)
    wrong_name = lab01.wrong[0].name
    handout = leaky / "labs/01-vector-add/README.md"
    handout.write_text(handout.read_text() + "\n    CUDA_CHECK(cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice));"
                                             "\n    CUDA_CHECK(cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice));\n")
    tests = leaky / "labs/01-vector-add/tests/public_tests.cu"
    tests.write_text(tests.read_text() + "\n// one generic line alone is no leak\nCUDA_CHECK(cudaMalloc(&d_a, bytes));\n")
    for path in ("solutions/x.txt", "docs/gpu-runs/run.md", ".ci/run", "grader/tests/test_x.py",
                 "docs/adding-a-lab.md"):
        (leaky / path).parent.mkdir(parents=True, exist_ok=True)
        (leaky / path).write_text("private")
    (leaky / "notes.txt").write_text(f"the hidden test '{hidden_name}' and seed {lab01.grading_seed}\n"
                                     f"the variant {wrong_name} fails at n = 999983\n")
    (leaky / "sizes.md").write_text("sizes 1024, 1025 and 100003 are public\n")
    (leaky / "Makefile").write_text((clone / "Makefile").read_text())
    leaks = "\n".join(find_leaks(leaky, clone))
    assert "labs/01-vector-add/README.md" in leaks and "reference code from solutions/01-vector-add" in leaks
    assert "public_tests.cu" not in leaks
    for path in ("solutions/x.txt", "docs/gpu-runs/run.md", ".ci/run", "grader/tests/test_x.py",
                 "docs/adding-a-lab.md"):
        assert f"{path}: instructor material" in leaks
    assert "hidden test of 01-vector-add" in leaks and "grading seed of 01-vector-add" in leaks
    assert f"wrong variant of 01-vector-add ('{wrong_name}')" in leaks
    assert "hidden param prime_ns of 01-vector-add ('999983')" in leaks
    assert "sizes.md" not in leaks  # powers of two, one either side, and public params are no secrets
    assert "Makefile: not the student one" in leaks


def test_a_file_a_student_reads_may_not_send_them_where_the_release_does_not_go(release: Path, clone: Path,
                                                                               tmp_path: Path):
    """The release leaves docs/gpu-runs/, solutions/ and the instructor's how-tos out: a handout, deck or student
    file that names one, or a Markdown link to a file that is not there, is a dead end the check finds."""
    leaky = tmp_path / "leaky"
    shutil.copytree(release, leaky, ignore=shutil.ignore_patterns(".git"))
    handout = leaky / "labs/05-reduction/README.md"
    lines = handout.read_text().count("\n")
    handout.write_text(handout.read_text() + "The reference's numbers are in the run records (`docs/gpu-runs/`).\n"
                       "See [how labs are made](../../docs/adding-a-lab.md) and [profiling](../../docs/profiling.md).\n"
                       "Fine: [lab 01](../01-vector-add/README.md#grading), [CUDA](https://docs.nvidia.com/cuda/), "
                       "[above](#grading), and the reference solutions.\n")
    deck = leaky / "slides/05-reduction.md"
    deck.write_text(deck.read_text() + "\n![the bars](charts/no-such-chart.svg)\n")
    student = leaky / "labs/01-vector-add/vector_add.cu"
    student.write_text("// Generated from solutions/01-vector-add/vector_add.cu.\n" + student.read_text())
    leaks = find_leaks(leaky, clone)
    assert [leak for leak in leaks if leak.startswith("labs/05-reduction/README.md")] == [
        f"labs/05-reduction/README.md:{lines + 1}: names docs/gpu-runs/, which the release does not ship",
        f"labs/05-reduction/README.md:{lines + 2}: names docs/adding-a-lab.md, which the release does not ship",
        f"labs/05-reduction/README.md:{lines + 2}: links to ../../docs/profiling.md, which is not in the release"]
    assert any(leak.startswith("slides/05-reduction.md:") and leak.endswith(
        "links to charts/no-such-chart.svg, which is not in the release") for leak in leaks)
    assert "labs/01-vector-add/vector_add.cu:1: names solutions/, which the release does not ship" in leaks
    # The grader's own code names solutions/ where it looks for it (grader/config.py): code, not a student's read.
    assert not [leak for leak in leaks if leak.startswith("grader/")]


def test_a_leak_stops_the_release(clone: Path, tmp_path: Path, lab01):
    hidden_name = next(t.name for t in lab01.tests if t.hidden)
    handout = clone / "labs/01-vector-add/README.md"
    handout.write_text(handout.read_text() + f"\nThe hidden tests include '{hidden_name}'.\n")
    _git("-c", "user.name=t", "-c", "user.email=t@invalid", "commit", "--quiet", "-am", "a leak", cwd=clone)
    try:
        with pytest.raises(LeakError, match="hidden test of 01-vector-add"):
            make_release(tmp_path / "leaky", clone, git_init=True)
        assert not (tmp_path / "leaky/.git").exists()  # nothing committed to push
    finally:
        _git("reset", "--quiet", "--hard", "HEAD~1", cwd=clone)


def test_release_refuses_a_folder_in_use(clone: Path, tmp_path: Path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy/file").write_text("x")
    with pytest.raises(ReleaseError, match="not empty"):
        make_release(tmp_path / "busy", clone)


def test_release_configures_without_solutions(release: Path, tmp_path: Path, lab01):
    if shutil.which("nvcc") is None or shutil.which("cmake") is None:
        pytest.skip("needs nvcc and cmake")
    done = subprocess.run(["cmake", "-S", str(release), "-B", str(tmp_path / "build"), "-DKIT_LABS=01-vector-add"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    cmake = (tmp_path / "build/01-vector-add/lab.cmake").read_text()
    assert "KIT_LAB_CASE_COUNT" in cmake
    assert not [t.name for t in lab01.tests if t.hidden and t.name in cmake]


def test_make_test_passes_in_the_release_for_one_lab(release: Path, tmp_path: Path):
    """What a student's `make test` runs, on one lab to keep it to a minute or two: the build, the CPU tests, and
    the GPU tests, which skip without a GPU; no solutions/, Marp or grader tests needed."""
    if shutil.which("nvcc") is None or shutil.which("cmake") is None:
        pytest.skip("needs nvcc and cmake")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(["make", "--no-print-directory", "test", f"BUILD={tmp_path / 'build'}",
                           "CMAKE_FLAGS=-DKIT_LABS=01-vector-add"], cwd=release, capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "tests passed, 0 tests failed" in done.stdout
    assert "01-vector-add: test cases of 01-vector-add-tests match the config" in done.stdout


def test_the_release_ships_every_lab_s_questions_and_no_rubric(release: Path):
    labs = sorted(p.parent.name for p in (release / "labs").glob("*/lab.toml"))
    assert labs and all((release / "labs" / lab / "QUESTIONS.md").is_file() for lab in labs)
    assert not list(release.rglob("RUBRIC.md"))


def test_a_rubric_line_pasted_into_a_shipped_file_is_a_leak(release: Path, clone: Path, tmp_path: Path):
    leaky = tmp_path / "leaky"
    shutil.copytree(release, leaky, ignore=shutil.ignore_patterns(".git"))
    rubric = clone / "solutions/07-transpose/RUBRIC.md"
    line = next(line for line in rubric.read_text().splitlines() if len(line.strip()) >= 60 and "bank" in line)
    questions = leaky / "labs/07-transpose/QUESTIONS.md"
    questions.write_text(questions.read_text() + "\n" + line + "\n")
    assert "labs/07-transpose/QUESTIONS.md" not in "\n".join(find_leaks(release, clone))
    leaks = "\n".join(find_leaks(leaky, clone))
    assert "labs/07-transpose/QUESTIONS.md" in leaks and "a line of the rubric solutions/07-transpose/RUBRIC.md" in leaks
