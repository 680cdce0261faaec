"""The secret grading seed never reaches a student.

With the grading seed (solutions/<lab>/hidden.toml) and the harness's public, counter-based generators,
anyone can make every hidden test's inputs, so no text a student reads may show it: not a failure
message, not a crash's output, not results.json's visible fields, not the report. The harness names only
the public seed (kit::seed_text(), tested in harness/tests); here a stand-in test program leaks the secret
seed every way a test program could, and the grader must still show none of it to the student, while its
audit trail (extra_data, for the TA) keeps it.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from grader import grade, report
from grader.build import BuildResult
from grader.config import load_lab
from grader.tests.conftest import REPO, TOY_CONFIG_HEAD, write

SECRET = 314159
PUBLIC = 1  # TOY_CONFIG_HEAD's seed

LAB_TOML = TOY_CONFIG_HEAD + """
[[tests]]
name = "toy: adds"
points = 10

[[tests]]
name = "toy: crashes"
points = 10
"""

HIDDEN_TOML = f"""
[grading]
seed = {SECRET}

[[tests]]
name = "toy (hidden): awkward sizes"
points = 5
"""

# A test program that leaks its seed everywhere it can: in its run record, in a failure message (as the
# harness did before kit::seed_text()), in what it prints and in the exception a crash reports.
LEAKY_PROGRAM = r'''#!PYTHON
import json, os, sys
seed = os.environ.get("KIT_SEED", "1")
out = open(os.environ["KIT_RESULTS"], "a")
def record(**fields):
    out.write(json.dumps(fields) + "\n"); out.flush()
record(kind="run", gpu_available=True, gpu="Leaky GPU", driver="1.0", seed=int(seed))
cases = ["toy: adds", "toy: crashes", "toy (hidden): awkward sizes"]
if "--list-test-cases" in sys.argv:
    for name in cases:
        record(kind="listed", case=name, suite="")
    sys.exit(0)
wanted = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--test-case=")).split(",")
print(f"running with seed {seed}")
for name in [c for c in cases if c in wanted]:
    record(kind="case_start", case=name)
    if name == "toy: crashes":
        print(f"about to crash (seed {seed})", flush=True)
        os.abort()
    record(kind="case", case=name, status="failed", seconds=0.01,
           messages=[f"Wrong result for input: n = 3 (seed {seed}).\nFirst wrong elements (where: expected, got):\n"
                     f"  [0]: {seed}.5, 0.{seed}, 1{seed}",
                     f"Exception thrown: the seed was {seed}"])
sys.exit(1)
'''


def leaky_build(config, staged_folder: Path, build_dir: Path, reference_build=None) -> BuildResult:
    build_dir.mkdir(parents=True, exist_ok=True)
    program = build_dir / "toy-tests"
    program.write_text(LEAKY_PROGRAM.replace("PYTHON", sys.executable))
    program.chmod(0o755)
    return BuildResult(ok=True, binary=program, log="")


def toy_lab(root: Path, hidden: bool):
    write(root / "labs/70-toy/lab.toml", LAB_TOML)
    if hidden:
        write(root / "solutions/70-toy/hidden.toml", HIDDEN_TOML)
    return load_lab("70-toy", root)


def graded(tmp_path: Path, monkeypatch, hidden: bool) -> grade.Graded:
    config = toy_lab(tmp_path / "repo", hidden)
    monkeypatch.setattr(grade, "build_submission", leaky_build)
    submission = write(tmp_path / "alice" / "toy.cu", "__global__ void toy_kernel() {}\n").parent
    return grade.grade_submission(config, submission, tmp_path / "work", with_reference=False)


def shows(text: str, number: int) -> bool:
    return re.search(rf"(?<![\w.]){number}(?!\w|\.\d)", text) is not None


def test_the_secret_seed_reaches_no_text_a_student_reads(tmp_path: Path, monkeypatch):
    result = graded(tmp_path, monkeypatch, hidden=True)
    visible = report.student_visible(result.results)
    assert not [text for text in visible if shows(text, SECRET)]
    assert not shows(result.table, SECRET)  # report.txt, which a TA may paste to a student
    # The failures still read as failures, with the seed's place marked and other numbers left alone.
    adds = next(t["output"] for t in result.results["tests"] if t["name"] == "toy: adds")
    assert f"Wrong result for input: n = 3 (seed {report.NOT_SHOWN})." in adds
    assert f"{SECRET}.5, 0.{SECRET}, 1{SECRET}" in adds  # its digits inside other numbers are not the seed
    hidden = next(t for t in result.results["tests"] if t["name"] == "toy (hidden): awkward sizes")
    assert hidden["visibility"] != "visible" and report.NOT_SHOWN in hidden["output"]
    # The TA's audit trail keeps it: Gradescope shows students none of extra_data.
    assert result.results["extra_data"]["seed"] == SECRET
    json.dumps(result.results)


def test_a_public_seed_is_shown(tmp_path: Path, monkeypatch):
    """A local grading (no solutions/) runs on the public seed, which helps the student find the bug."""
    result = graded(tmp_path, monkeypatch, hidden=False)
    adds = next(t["output"] for t in result.results["tests"] if t["name"] == "toy: adds")
    assert f"(seed {PUBLIC})." in adds and report.NOT_SHOWN not in adds
    assert result.results["extra_data"]["seed"] == PUBLIC


def test_only_whole_secret_numbers_are_hidden():
    text = f"(seed {SECRET}). {SECRET}, [{SECRET}] 0.{SECRET} {SECRET}.5 x{SECRET} {SECRET}0 {SECRET}1"
    assert report.hide_numbers(text, [SECRET]) == (
        f"(seed {report.NOT_SHOWN}). {report.NOT_SHOWN}, [{report.NOT_SHOWN}] 0.{SECRET} {SECRET}.5 x{SECRET} "
        f"{SECRET}0 {SECRET}1")


def test_what_counts_as_secret(tmp_path: Path):
    config = toy_lab(tmp_path / "repo", hidden=True)
    assert grade.secret_numbers(config) == (SECRET,)
    assert grade.secret_numbers(toy_lab(tmp_path / "public", hidden=False)) == ()


@pytest.mark.parametrize("folder", ["labs", "solutions", "harness"])
def test_no_test_program_names_the_seed_in_force_but_the_harness_itself(folder: str):
    """kit::run_seed() is the seed in force, the secret one when graded: a message must name the seed through
    kit::seed_text(), which shows only the public one. Only the harness's own code may read run_seed()."""
    allowed = {"harness/src/random.cpp", "harness/include/kit/random.hpp",
               "harness/src/main.cpp",  # records it only when public (seed_is_public)
               "harness/tests/harness_tests.cpp"}  # checks that seed_text() hides it
    found = []
    for path in sorted((REPO / folder).rglob("*")):
        if path.suffix not in {".cu", ".cuh", ".cpp", ".hpp", ".h"} or not path.is_file():
            continue
        relative = str(path.relative_to(REPO))
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if "run_seed(" in line and relative not in allowed:
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "use kit::seed_text() in messages:\n" + "\n".join(found)
