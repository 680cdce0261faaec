"""What grading refuses before it builds, a student learns locally: `make <lab>` runs intake's check on the
student's own files (`python3 -m grader check`), and every handout says what student code may not use."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import build, cli, grade, handouts, intake, sandbox
from grader.config import list_labs, load_lab
from grader.tests.conftest import needs_cuda_toolchain

REPO = Path(__file__).resolve().parents[2]


def _check(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "check", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("lab", list_labs())
def test_every_untouched_skeleton_passes_the_check(lab: str):
    checked = _check("--lab", lab)
    assert checked.returncode == 0, checked.stderr
    assert "intake check passed" in checked.stdout


def test_exit_is_refused_by_the_check_with_the_students_path_and_line(tmp_path: Path):
    # exit is allowed at link time (nvcc's stubs call it: grader/linkcheck.py), but intake refuses it by name
    # in the source; the local check is where a student learns that before submitting.
    submission = tmp_path / "mine"
    submission.mkdir()
    text = (REPO / "labs/05-reduction/reduction.cu").read_text()
    (submission / "reduction.cu").write_text(
        "#include <cub/cub.cuh>\n" + text + "\nvoid give_up() { exit(1); }\nint shell() { return system(\"ls\"); }\n")
    checked = _check("--lab", "05-reduction", "--submission", str(submission))
    assert checked.returncode == 1
    lines = [line for line in checked.stderr.splitlines() if line.startswith("error: ")]
    last = text.count("\n") + 3  # the include, the file, a blank line
    path = submission / "reduction.cu"
    assert lines == [
        f"error: {path}:1: this lab does not allow #include <cub/cub.cuh> (lab 05-reduction does not allow cub "
        f"in student code)",
        f"error: {path}:{last}: uses 'exit': student code may not use it (it could read or change the grader's "
        f"files or process)",
        f"error: {path}:{last + 1}: uses 'system': student code may not use it (it could read or change the "
        f"grader's files or process)"]
    assert "grading would refuse this submission before building it (3 problems above)" in checked.stderr


def test_the_check_and_grading_refuse_the_same_files(tmp_path: Path):
    config = load_lab("01-vector-add")
    for text in ("void f() { exit(1); }\n", "// exit(1) in a comment\nconst char* s = \"abort\";\n"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        (tmp_path / "sub/vector_add.cu").write_text(text)
        problems = intake.check(tmp_path / "sub", config)
        try:
            intake.stage(tmp_path / "sub", config, tmp_path / "staged")
            refused = None
        except intake.IntakeError as error:
            refused = str(error)
        assert bool(problems) == bool(refused)
        if refused:
            assert problems[0].endswith(refused.split(":", 1)[1])


def test_a_missing_file_is_one_line(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/vectoradd.cu").write_text("")
    checked = _check("--lab", "01-vector-add", "--submission", str(tmp_path / "sub"))
    assert checked.returncode == 1
    assert "error: found vectoradd.cu; expected vector_add.cu" in checked.stderr


def _copy_for_make(tmp_path: Path, makefile: str) -> Path:
    """A tree with the grader, one lab, the given Makefile and the rules both Makefiles share (labs.mk), and a
    build folder already configured (an empty CMakeCache.txt), so that make goes straight to the lab's recipe."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    shutil.copytree(REPO / "labs/01-vector-add", root / "labs/01-vector-add")
    shutil.copy(REPO / makefile, root / "Makefile")
    shutil.copy(REPO / "labs.mk", root / "labs.mk")
    (root / "build").mkdir()
    (root / "build/CMakeCache.txt").write_text("")
    return root


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("makefile", ["Makefile", "release/Makefile"])
def test_make_lab_stops_before_building_on_what_grading_refuses(tmp_path: Path, makefile: str):
    root = _copy_for_make(tmp_path, makefile)
    student = root / "labs/01-vector-add/vector_add.cu"
    student.write_text(student.read_text() + "\nvoid give_up() { exit(1); }\n")
    made = subprocess.run(["make", "01-vector-add", f"PYTHON={sys.executable}"], cwd=root, capture_output=True,
                          text=True)
    assert made.returncode != 0
    assert f"error: labs/01-vector-add/vector_add.cu:{student.read_text().count(chr(10))}: uses 'exit'" in made.stderr
    assert "cmake --build" not in made.stdout  # refused before the build


@pytest.mark.parametrize("makefile", ["Makefile", "release/Makefile"])
def test_make_lab_checks_then_builds(makefile: str):
    assert "include labs.mk" in (REPO / makefile).read_text()
    text = (REPO / "labs.mk").read_text()
    recipe = text[text.index("$(LABS): $(BUILD)/CMakeCache.txt"):].splitlines()[1:4]
    assert recipe == ["\t$(PYTHON) -m grader check --lab $@",
                      "\tcmake --build $(BUILD) --parallel $(JOBS) --target $@-tests",
                      "\t$(BUILD)/$@/$@-tests"]


@needs_cuda_toolchain()
@pytest.mark.skipif(shutil.which("ninja") is None, reason="reads the build's commands from Ninja")
def test_make_lab_links_the_students_code_only_after_grading_s_link_check(tmp_path: Path):
    """`make <lab>` configures as a student's checkout does (their own folder, no sandbox): the program that holds
    their code still links only after `grader link-check` on their object file, as in grading (harness/KitLab.cmake),
    so what the link check refuses stops the local build too."""
    configured = subprocess.run(["cmake", "-S", str(REPO), "-B", str(tmp_path), "-DKIT_LABS=01-vector-add", "-G",
                                 "Ninja", f"-DPython3_EXECUTABLE={sys.executable}"],
                                capture_output=True, text=True, timeout=300)
    assert configured.returncode == 0, configured.stdout + configured.stderr
    commands = subprocess.run(["ninja", "-C", str(tmp_path), "-t", "commands", "01-vector-add-tests"],
                              capture_output=True, text=True, timeout=60, check=True).stdout
    runner = "-o 01-vector-add/01-vector-add-tests-runner"
    link = next(line for line in commands.splitlines() if runner in line)
    before_the_link = link[:link.index(runner)]
    assert "-m grader link-check" in before_the_link
    assert "--student " + str(tmp_path) in before_the_link and "labs/01-vector-add/vector_add.cu.o" in before_the_link


@pytest.mark.parametrize("lab", list_labs())
def test_every_handout_says_what_student_code_may_not_use(lab: str):
    config = load_lab(lab)
    text = " ".join(handouts.handout_path(config).read_text().split())
    assert "What your code may not use:" in text
    for word in ("exit", "getenv", "fopen", "system"):
        assert f"`{word}`" in text
    assert "files, processes, signals, threads, dynamic loading or raw system calls" in text
    for prefix in config.forbidden:
        assert f"starting with `{prefix}`" in text
    assert f"python3 -m grader check --lab {lab}" in text


# A student's own file with one compile error, on its line 5.
BROKEN = """\
#include "kit/cuda_check.cuh"
#include "vector_add.cuh"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  int missing_semicolon = n
}
"""


def _copy_of_the_checkout(destination: Path) -> Path:
    """The checkout's tracked files (what a student's clone holds), without its build folder."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0:
        shutil.copytree(REPO, destination, ignore=shutil.ignore_patterns("build", ".git", "node_modules",
                                                                          "__pycache__"))
        return destination
    for name in filter(None, listed.stdout.split("\0")):
        if (REPO / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, destination / name)
    return destination


@needs_cuda_toolchain()
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_grade_of_a_checkout_that_does_not_compile_says_so_once_with_the_students_path(tmp_path: Path):
    checkout = _copy_of_the_checkout(tmp_path / "checkout")
    (checkout / "labs/01-vector-add/vector_add.cu").write_text(BROKEN)
    graded = subprocess.run(["make", "--no-print-directory", "grade", "LAB=01-vector-add", f"PYTHON={sys.executable}"],
                            cwd=checkout, capture_output=True, text=True, timeout=600)
    said = graded.stdout + graded.stderr
    assert graded.returncode != 0, said
    error = 'labs/01-vector-add/vector_add.cu(6): error: expected a ";"'
    assert said.count(error) == 1, said  # once, above the table, not under every test
    assert said.count("Not run: your code did not compile (the compiler's message is above).") > 10
    assert "kit-grade-" not in said  # no temporary copy's path
    assert "01-vector-add: no test ran: the submission did not compile (see above)" in graded.stderr
    results = json.loads((checkout / "results.json").read_text())
    assert results["score"] == 0 and results["output"].count(error) == 1


def test_a_compile_error_names_the_students_file_not_the_staged_copy(tmp_path: Path, monkeypatch):
    config = load_lab("01-vector-add")
    (tmp_path / "alice/src").mkdir(parents=True)
    (tmp_path / "alice/src/vector_add.cu").write_text(BROKEN)
    monkeypatch.chdir(tmp_path / "alice")  # one's own checkout: the path from where make runs
    staged = intake.stage(tmp_path / "alice", config, tmp_path / "work/submission")
    assert staged.origins == {"vector_add.cu": "src/vector_add.cu"}
    log = (f"FAILED: CMakeFiles/x.o\n{staged.folder / 'vector_add.cu'}(6): error: expected a \";\"\n"
           f"  int missing_semicolon = n\n                           ^\n\n1 error detected in the compilation of "
           f"\"{staged.folder / 'vector_add.cu'}\".\n")
    message = grade.compile_error_message(build.BuildResult(ok=False, binary=None, log=log), staged)
    assert 'src/vector_add.cu(6): error: expected a ";"' in message and str(tmp_path / "work") not in message
    # A TA's folder elsewhere: the path inside the submission, not the TA's; a zip: its name and the entry.
    monkeypatch.chdir(tmp_path / "work")
    assert intake.stage(tmp_path / "alice", config, tmp_path / "w2").origins == {"vector_add.cu": "src/vector_add.cu"}
    with zipfile.ZipFile(tmp_path / "bob.zip", "w") as z:
        z.writestr("mine/vector_add.cu", BROKEN)
    assert intake.stage(tmp_path / "bob.zip", config, tmp_path / "w3").origins == {
        "vector_add.cu": "bob.zip:mine/vector_add.cu"}


def test_two_errors_on_one_line_keep_each_its_source_line_and_a_block_said_twice_is_said_once():
    block = ['v.cu(18): error: "this" may only be used here', "    this is not C++;", "    ^"]
    second = ['v.cu(18): error: expected a ";"', "    this is not C++;", "         ^"]
    log = "\n".join(block + [""] + second + [""] + block + ["ninja: build stopped"])
    assert build.BuildResult(ok=False, binary=None, log=log).errors().splitlines() == block + second


def test_make_grade_of_ones_own_checkout_fails_when_intake_refuses_it(tmp_path: Path, monkeypatch, capsys):
    # One's own lab folder (no --submission) that uses exit: refused before any build, and the command fails;
    # the same folder given as a --submission is graded 0 with the reason, and the command succeeds.
    for folder in ("labs/01-vector-add", "solutions/01-vector-add"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    student = tmp_path / "labs/01-vector-add/vector_add.cu"
    student.write_text(student.read_text() + "\nvoid give_up() { exit(1); }\n")
    monkeypatch.setattr(cli, "load_lab", lambda lab: load_lab(lab, tmp_path))
    monkeypatch.setattr(grade, "build_submission", lambda *args, **kwargs: pytest.fail("built a refused submission"))
    monkeypatch.setattr(sandbox, "_policy", sandbox.current())  # --no-sandbox below changes it for this test only
    monkeypatch.setenv("KIT_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.chdir(tmp_path)
    common = ["grade", "--lab", "01-vector-add", "--no-reference", "--no-sandbox", "--results"]
    assert cli.main(common + [str(tmp_path / "own.json")]) == 1
    said = capsys.readouterr()
    assert said.out.count("uses 'exit'") == 1
    assert "01-vector-add: no test ran: the submission was refused at intake (see above)" in said.err
    assert cli.main(common + [str(tmp_path / "ta.json"), "--submission", "labs/01-vector-add"]) == 0
