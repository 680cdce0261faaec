"""A TA's first-hour mistakes through the command line: each gets one clear sentence and the right exit code,
before anything is built, and needs nothing that grading needs (a sandbox, compute-sanitizer, a GPU).

Lab 01 runs hidden tests under compute-sanitizer, so a check that wrongly asked for it would refuse here."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from grader import build, classroom, cli, grade, sandbox, sanitizer
from grader.config import load_lab
from grader.tests.conftest import write

GOOD = "__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {}\n"


def _never(*args, **kwargs):
    raise AssertionError("a TA's mistake must be caught before anything is built or run")


@pytest.fixture
def nothing_to_grade_with(monkeypatch, tmp_path: Path):
    """No sandbox, no compute-sanitizer, no GPU, and any build or GPU listing fails the test."""
    monkeypatch.setattr(sandbox, "_working_mode", lambda: ("", "bubblewrap is not installed"))
    monkeypatch.setattr(sanitizer, "find", lambda *args, **kwargs: None)
    for module, name in ((classroom, "build_reference_tree"), (grade, "build_submission"), (build, "build"),
                         (build, "configure"), (classroom, "list_gpus"), (cli, "list_gpus")):
        monkeypatch.setattr(module, name, _never)
    monkeypatch.setenv("KIT_LOCK_DIR", str(tmp_path / "locks"))


def a_class(folder: Path) -> Path:
    write(folder / "alice" / "vector_add.cu", GOOD)
    (folder / "bob.zip").write_bytes(b"not a zip at all")
    write(folder / "carol" / "lab01" / "vectoradd.cu", GOOD)
    write(folder / "dave" / "vector_add.cu", "void f() { exit(0); }\n")
    write(folder / "erin" / "old" / "vector_add.cu", GOOD)
    write(folder / "erin" / "new" / "vector_add.cu", GOOD)
    with zipfile.ZipFile(folder / "fay.zip", "w") as z:
        z.writestr("fay/vector_add.cu", GOOD)
    (folder / "grades.csv").write_text("student,score\n")
    (folder / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    return folder


def test_grading_a_path_that_does_not_exist_says_so_and_writes_no_results(nothing_to_grade_with, tmp_path, capsys):
    missing = tmp_path / "submissions" / "alcie.zip"
    results = tmp_path / "results.json"
    code = cli.main(["grade", "--lab", "01-vector-add", "--submission", str(missing), "--results", str(results)])
    err = capsys.readouterr().err
    assert code == 2 and not results.exists()
    assert err.count("\n") == 1 and str(missing) in err and "does not exist" in err


def test_grade_class_of_an_empty_folder_stops_before_building(nothing_to_grade_with, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    code = cli.main(["grade-class", "--lab", "01-vector-add", "--submissions", str(tmp_path / "in"),
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "out").exists()
    assert err == f"grade-class: {tmp_path / 'in'} holds no submissions (a folder or .zip per student), so there " \
                  f"is nothing to grade\n"


def test_grade_class_of_a_folder_of_stray_files_names_them_and_stops(nothing_to_grade_with, tmp_path, capsys):
    for stray in ("grades.csv", "notes.txt", ".DS_Store"):
        write(tmp_path / "in" / stray, "x")
    code = cli.main(["grade-class", "--lab", "01-vector-add", "--submissions", str(tmp_path / "in"),
                     "--out", str(tmp_path / "out")])
    warning, stop = capsys.readouterr().err.splitlines()
    assert code == 2 and not (tmp_path / "out").exists()
    assert warning.startswith("WARNING: skipped 3 entries") and warning.endswith(".DS_Store, grades.csv, notes.txt")
    assert "holds no submissions" in stop


def test_grade_class_of_a_folder_that_does_not_exist(nothing_to_grade_with, tmp_path, capsys):
    code = cli.main(["grade-class", "--lab", "01-vector-add", "--submissions", str(tmp_path / "nope"),
                     "--out", str(tmp_path / "out")])
    assert code == 2 and f"{tmp_path / 'nope'} does not exist" in capsys.readouterr().err


def test_check_intake_prints_a_line_per_student_without_gpu_sanitizer_or_build(nothing_to_grade_with, tmp_path,
                                                                               capsys):
    a_class(tmp_path / "in")
    code = cli.main(["grade-class", "--lab", "01-vector-add", "--submissions", str(tmp_path / "in"),
                     "--check-intake"])
    captured = capsys.readouterr()
    assert code == 1
    lines = dict(line.split(None, 1) for line in captured.out.splitlines()[:6])
    assert lines == {
        "alice": "ok",
        "bob": "refused: bob.zip is not a valid zip archive (File is not a zip file); zip the files again",
        "carol": "refused: found vectoradd.cu; expected vector_add.cu (lab 01-vector-add takes its files by their "
                 "exact names: rename the file and submit again)",
        "dave": lines["dave"],
        "erin": "refused: vector_add.cu appears more than once in the submission (new/vector_add.cu, "
                "old/vector_add.cu); keep one copy",
        "fay": "ok",
    }
    assert lines["dave"].startswith("refused: vector_add.cu:1: uses 'exit'")
    assert "2 ok, 4 refused" in captured.out
    assert captured.err.splitlines() == ["WARNING: skipped 2 entries of the submissions folder, no student's (a "
                                         "student is a folder or a .zip): .DS_Store, grades.csv"]


def test_check_intake_of_a_clean_class_exits_0(nothing_to_grade_with, tmp_path, capsys):
    write(tmp_path / "in" / "alice" / "vector_add.cu", GOOD)
    code = cli.main(["grade-class", "--lab", "01-vector-add", "--submissions", str(tmp_path / "in"),
                     "--check-intake"])
    assert code == 0 and capsys.readouterr().out.startswith("alice  ok\n")


def test_grade_of_a_near_miss_gives_one_message_not_one_per_test(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sandbox, "_policy", sandbox.current())  # --no-sandbox below changes it for this test only
    monkeypatch.setattr(sanitizer, "find", lambda *args, **kwargs: None)
    monkeypatch.setattr(grade, "build_submission", _never)
    monkeypatch.setenv("KIT_LOCK_DIR", str(tmp_path / "locks"))
    write(tmp_path / "carol" / "Vector_Add.cu", GOOD)
    results_file = tmp_path / "results.json"
    code = cli.main(["grade", "--lab", "01-vector-add", "--submission", str(tmp_path / "carol"), "--results",
                     str(results_file), "--no-reference", "--no-sandbox"])
    assert code == 0  # a graded refusal: the student's results say why
    results = json.loads(results_file.read_text())
    why = "found Vector_Add.cu; expected vector_add.cu"
    assert results["score"] == 0 and results["output"].startswith(f"Not graded: {why}")
    assert len(results["tests"]) > 10
    # Every autograded entry says it did not run; the questions, graded by hand from the answers, say so instead.
    autograded = [t for t in results["tests"] if "score" in t]
    assert len(autograded) > 10
    assert all(t["output"] == "Not run: the submission was refused at intake (see above)." for t in autograded)
    by_hand = [t for t in results["tests"] if "score" not in t]
    assert len(by_hand) == len(load_lab("01-vector-add").questions)
    assert all("Graded by hand" in t["output"] for t in by_hand)
    assert capsys.readouterr().out.count(why) == 1
