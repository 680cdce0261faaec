"""Class grading of submissions as Gradescope and Canvas export them (lms.py), with no renaming by hand.

The exports are small ones made here in the layouts the LMSs document; the class
is graded through the whole pipeline with test_classroom's stand-ins for the GPU.
"""
import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import classroom, lms
from grader.tests.conftest import REPO, write
from grader.tests.test_classroom import MAX, grade_it, lab, results, toy  # noqa: F401 - lab is a fixture

GRADESCOPE_METADATA = """\
submission_1001:
  :submitters:
  - :name: Jane Doe
    :sid: '3031001'
    :email: jane@example.edu
  :created_at: 2026-09-14 21:02:11.000000000 -07:00
  :score: 0.0
  :history: []
submission_1002:
  :submitters:
  - :name: Bo Lee
    :sid: '3031002'
    :email: bo@example.edu
  - :name: Cy Ode
    :sid: 3031003
    :email: cy@example.edu
  :created_at: !ruby/object:ActiveSupport::TimeWithZone
    utc: 2026-09-15 01:00:00.000000000 Z
  :score: 0.0
submission_1003:
  :submitters:
  - :name: Dee Park
    :sid: '3031004'
    :email: dee@example.edu
"""


def gradescope_export(folder: Path) -> Path:
    """Gradescope's export of an assignment: a folder per submission, as uploaded, and the metadata."""
    write(folder / "submission_1001" / "toy.cu", toy("{}"))
    write(folder / "submission_1002" / "src" / "toy.cu", toy('{"fail": ["toy: adds"]}'))  # a group of two
    write(folder / "submission_1003" / "toy.cu", toy("compile error"))
    write(folder / lms.GRADESCOPE_METADATA, GRADESCOPE_METADATA)
    return folder


def canvas_export(folder: Path) -> Path:
    """Canvas's Download Submissions: every file flat, named <lastfirst>_[LATE_]<user id>_<submission id>_<name>."""
    write(folder / "doejane_12345_67890_toy.cu", toy("{}"))
    write(folder / "leebo_LATE_23456_78901_toy-1.cu", toy('{"fail": ["toy: adds"]}'))  # late, and sent again
    write(folder / "leebo_LATE_23456_78901_notes.txt", "my notes")
    folder.joinpath("odecy_34567_89012_lab.zip").parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "odecy_34567_89012_lab.zip", "w") as z:
        z.writestr("lab/toy.cu", toy("{}"))
    return folder


def csv_rows(path: Path) -> list[list[str]]:
    return list(csv.reader(path.read_text().splitlines()))


def test_a_gradescope_export_is_graded_and_named_as_gradescope_names_students(lab, tmp_path: Path):
    config, fakes, log = lab
    export = gradescope_export(tmp_path / "assignment_77_export")
    out = tmp_path / "out"
    graded = grade_it(config, export, out, tmp_path)
    assert graded.students == ["Bo Lee", "Cy Ode", "Dee Park", "Jane Doe"]  # each of a group is a student
    assert results(out, "Jane Doe")["score"] == MAX
    assert results(out, "Bo Lee")["score"] == results(out, "Cy Ode")["score"] == 15  # the group's one folder
    assert results(out, "Dee Park")["extra_data"]["attention"] == ["build error"]
    assert results(out, "Cy Ode")["extra_data"]["lms"] == {"system": "gradescope", "name": "Cy Ode",
                                                          "sid": "3031003", "email": "cy@example.edu"}
    assert csv_rows(out / "gradebook.csv")[1:] == [["Bo Lee", "15.0", "45.0"], ["Cy Ode", "15.0", "45.0"],
                                                  ["Dee Park", "0.0", "45.0"], ["Jane Doe", "45.0", "45.0"]]
    assert csv_rows(out / lms.GRADESCOPE_UPLOAD) == [
        ["Name", "SID", "Email", "Total Score"], ["Bo Lee", "3031002", "bo@example.edu", "15"],
        ["Cy Ode", "3031003", "cy@example.edu", "15"], ["Dee Park", "3031004", "dee@example.edu", "0"],
        ["Jane Doe", "3031001", "jane@example.edu", "45"]]
    assert not (out / lms.CANVAS_UPLOAD).exists()


def test_a_canvas_download_is_graded_under_the_names_students_gave_their_files(lab, tmp_path: Path):
    config, fakes, log = lab
    export = canvas_export(tmp_path / "canvas")
    write(export / "grades.csv", "not a submission")
    folder = classroom.read_class(export)
    assert folder.skipped == ["grades.csv"]
    leebo = next(s for s in folder.students if s.name == "leebo")
    assert [name for name, _ in leebo.files] == ["notes.txt", "toy.cu"]  # toy-1.cu: toy.cu sent again
    out = tmp_path / "out"
    graded = grade_it(config, export, out, tmp_path)
    assert graded.students == ["doejane", "leebo", "odecy"]
    assert [results(out, s)["score"] for s in graded.students] == [MAX, 15, MAX]  # odecy's zip is read too
    assert csv_rows(out / lms.CANVAS_UPLOAD) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "60-toy"], ["doejane", "12345", "", "", "", "45"],
        ["leebo", "23456", "", "", "", "15"], ["odecy", "34567", "", "", "", "45"]]
    assert sorted(p.name for p in export.iterdir()) == [  # the export is left as it came
        "doejane_12345_67890_toy.cu", "grades.csv", "leebo_LATE_23456_78901_notes.txt",
        "leebo_LATE_23456_78901_toy-1.cu", "odecy_34567_89012_lab.zip"]


def test_a_canvas_student_with_two_versions_of_a_file_is_refused_saying_which(lab, tmp_path: Path):
    config, fakes, log = lab
    export = canvas_export(tmp_path / "canvas")
    write(export / "doejane_12345_67890_toy-2.cu", toy("{}"))  # toy.cu and toy-2.cu: which one is graded?
    out = tmp_path / "out"
    grade_it(config, export, out, tmp_path)
    doejane = results(out, "doejane")
    assert doejane["score"] == 0 and doejane["output"].startswith(
        "Not graded: Canvas's download holds doejane_12345_67890_toy-2.cu and doejane_12345_67890_toy.cu, which "
        "are both toy.cu; keep the one to grade")
    assert results(out, "leebo")["score"] == 15  # the others are graded all the same


def test_two_resubmitted_copies_of_one_file_are_refused_naming_both(tmp_path: Path):
    export = tmp_path / "canvas"
    write(export / "doejane_12345_67890_toy-1.cu", toy("{}"))
    write(export / "doejane_12345_67890_toy-2.cu", toy("{}"))
    [doejane] = classroom.read_class(export).students
    assert doejane.problem == ("Canvas's download holds doejane_12345_67890_toy-1.cu and "
                               "doejane_12345_67890_toy-2.cu, which are both toy.cu; keep the one to grade (named "
                               "as the student named it) and grade again")


def test_a_gradescope_folder_the_metadata_lists_but_the_export_lacks_is_refused_for_those_students(
        lab, tmp_path: Path):
    config, fakes, log = lab
    export = gradescope_export(tmp_path / "export")
    (export / "submission_1003" / "toy.cu").unlink()
    (export / "submission_1003").rmdir()
    out = tmp_path / "out"
    grade_it(config, export, out, tmp_path)
    dee = results(out, "Dee Park")
    assert dee["score"] == 0 and "lists submission_1003 for Dee Park, but the export has no such folder" in dee[
        "output"]
    assert results(out, "Jane Doe")["score"] == MAX


def grade_class_check(submissions: Path) -> subprocess.CompletedProcess:
    """grade-class --check-intake of lab 01 as a TA runs it: intake alone, no GPU needed."""
    return subprocess.run([sys.executable, "-m", "grader", "grade-class", "--lab", "01-vector-add", "--submissions",
                           str(submissions), "--check-intake"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_the_command_line_takes_both_exports_as_they_come(tmp_path: Path):
    source = (REPO / "solutions" / "01-vector-add" / "vector_add.cu").read_text()
    write(tmp_path / "canvas" / "doejane_12345_67890_vector_add.cu", source)
    write(tmp_path / "canvas" / "leebo_23456_78901_vectoradd.cu", source)  # a near miss, named as usual
    done = grade_class_check(tmp_path / "canvas")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["doejane", "ok"]
    assert lines[1].startswith("leebo    refused: found vectoradd.cu; expected vector_add.cu")

    export = tmp_path / "gs" / "assignment_77_export"  # as the export's zip unpacks
    write(export / "submission_1" / "vector_add.cu", source)
    write(export / lms.GRADESCOPE_METADATA, "submission_1:\n  :submitters:\n  - :name: Jane Doe\n")
    done = grade_class_check(tmp_path / "gs")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == ["Jane", "Doe", "ok"]


def test_gradescope_metadata_that_is_not_what_gradescope_writes_stops_with_what_was_expected(tmp_path: Path):
    write(tmp_path / "gs" / "submission_1" / "vector_add.cu", "")
    write(tmp_path / "gs" / lms.GRADESCOPE_METADATA, "submission_1:\n  :score: 3\n")
    done = grade_class_check(tmp_path / "gs")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "submission_1 has no ':submitters:' list" in done.stderr and "':name:'" in done.stderr
    write(tmp_path / "gs" / lms.GRADESCOPE_METADATA, "submission_1: [unclosed\n")
    done = grade_class_check(tmp_path / "gs")
    assert done.returncode == 2 and "is not valid YAML" in done.stderr and "Traceback" not in done.stderr


def test_a_plain_class_folder_is_no_export(tmp_path: Path):
    write(tmp_path / "class" / "alice" / "toy.cu", "")
    write(tmp_path / "class" / "bob_1_2_toy.cu", "")  # a Canvas-like name beside a student's folder
    assert lms.read_export(tmp_path / "class") is None


def test_merge_writes_the_upload_of_the_lms_the_shards_came_from(tmp_path: Path):
    from grader import merge
    out = tmp_path / "graded"
    for shard, (name, user_id, score) in enumerate([("doejane", "12345", 45.0), ("leebo", "23456", 15.0)]):
        folder = out / "shards" / str(shard) / name
        write(folder / "results.json", json.dumps({"score": score, "tests": [], "extra_data": {
            "lab": "60-toy", "max_points": 45.0, "fingerprint": name, "attention": [],
            "lms": {"system": "canvas", "name": name, "id": user_id}}}))
    merge.merge(out)
    assert csv_rows(out / lms.CANVAS_UPLOAD)[1:] == [["doejane", "12345", "", "", "", "45"],
                                                   ["leebo", "23456", "", "", "", "15"]]
