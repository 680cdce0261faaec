"""The class leaderboard: who is ranked and in what order, the names file, and the page as a real browser shows it.

The ranking tests build results by hand; the page test grades a small class through the whole pipeline with the
stand-in test programs of test_classroom.py, writes the page and opens it in headless Chromium.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grader import cli, leaderboard
from grader.config import load_lab
from grader.leaderboard import Entry
from grader.tests.conftest import write
from grader.tests.test_classroom import grade_it, lab, submit, toy  # noqa: F401 (lab is the graded class's fixture)

TIMED = "toy timing: fast"
ANONYMOUS_ID = re.compile(r"anon-[0-9a-f]{6}")


# -- ranking --------------------------------------------------------------------------------------------------

def timing(median_s: float, **fields) -> dict:
    return {"kind": "timing", "name": "toy_kernel", "median_s": median_s, "rate": 1e-3 / median_s, "unit": "GB/s",
            **fields}


def results(median_s: float = 1e-3, failing: tuple[str, ...] = (), timed_status: str = "passed",
            record: dict | None = None) -> dict:
    """A results.json of 50-toy (conftest's toy lab) graded beside a reference timed at 1 ms."""
    statuses = {"toy: adds": "passed", "toy: runs on the CPU": "passed", "toy (hidden): awkward sizes": "passed",
                TIMED: timed_status}
    statuses.update({name: "failed" for name in failing})
    return {"score": 0, "extra_data": {
        "lab": "50-toy", "status": "graded", "seed": 99, "gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04",
        "case_status": statuses, "timings": {TIMED: [record or timing(median_s)]},
        "reference_case_status": {TIMED: "passed"}, "reference_timings": {TIMED: [timing(1e-3)]}}}


@pytest.fixture
def toy_lab(toy_repo: Path):
    return load_lab("50-toy", toy_repo)


def placed(board: leaderboard.Board) -> list[tuple[int, str, float]]:
    return [(p.rank, p.shown_as, p.entry.shown_ratio) for p in board.placed]


def kernel(ratio: float) -> Entry:
    return Entry(median_s=ratio * 1e-3, rate=1.0 / ratio, unit="GB/s", ratio=ratio, gpu="GPU", driver="1")


def test_equal_ratios_share_a_rank_listed_by_shown_name_and_the_next_rank_skips():
    # 0.804 and 0.8 both show as 0.80: a difference finer than the page shows is noise, not a ranking.
    ranked = leaderboard.rank([("kim", kernel(1.1)), ("lee", kernel(0.804)), ("ada", kernel(0.8)),
                               ("bo", kernel(0.5)), ("Cy", kernel(0.8))])
    assert [(p.rank, p.shown_as) for p in ranked] == [(1, "bo"), (2, "ada"), (2, "Cy"), (2, "lee"), (5, "kim")], (
        "expected the fastest first, the three kernels at 0.80x sharing rank 2 in order of name (whatever its case), "
        "and rank 5 next")


def test_a_student_whose_correctness_failed_is_not_ranked(toy_lab):
    class_results = {"ana": results(0.8e-3), "ben": results(0.5e-3, failing=("toy (hidden): awkward sizes",)),
                     "cy": results(2e-3)}
    [board] = leaderboard.boards(toy_lab, class_results, {"ana": "ana", "ben": "ben", "cy": "cy"})
    assert placed(board) == [(1, "ana", 0.8), (2, "cy", 2.0)], (
        "ben's kernel is the fastest but failed a hidden correctness test the measurement requires: not ranked")
    assert board.graded == 3
    assert board.unranked == {"a correctness test the measurement requires failed": 1}


@pytest.mark.parametrize("record", [
    timing(0.1e-3, implausible=True),  # the judge said so
    # A rate more than ceiling_margin times a bound ceiling, though nothing flagged it (score.implausible's rule).
    timing(0.1e-3, ceiling_names=["copy"], ceiling_rates=[2.0], ceiling_bounds=["copy"], ceiling_margin=1.2)],
    ids=["flagged by the judge", "faster than its bound ceiling"])
def test_an_implausible_record_is_not_ranked_even_where_its_case_passed(toy_lab, record):
    class_results = {"ana": results(0.8e-3), "fox": results(record=record)}
    [board] = leaderboard.boards(toy_lab, class_results, {"ana": "ana", "fox": "fox"})
    assert placed(board) == [(1, "ana", 0.8)], "fox's record claims 0.10x, faster than the hardware: not ranked"
    assert board.unranked == {"an implausible record (faster than the hardware allows)": 1}


def test_a_failed_timing_case_or_a_student_not_graded_or_graded_without_statuses_is_not_ranked(toy_lab):
    old = results(0.5e-3)
    del old["extra_data"]["case_status"]
    refused = {"score": 0, "extra_data": {"lab": "50-toy", "status": "refused"}}
    class_results = {"ana": results(0.8e-3), "gus": results(0.5e-3, timed_status="failed"), "old": old,
                     "ray": refused}
    [board] = leaderboard.boards(toy_lab, class_results, {name: name for name in class_results})
    assert placed(board) == [(1, "ana", 0.8)]
    assert board.unranked == {"not timed, or its timing case failed": 1,
                              "not graded (refused at intake, a build error or a grader problem)": 1,
                              "graded by a grader that did not record each case's status: grade the class again with "
                              "--regrade": 1}


def test_a_median_that_is_no_positive_time_is_not_ranked(toy_lab):
    broken_reference = results(1e-3)
    broken_reference["extra_data"]["reference_timings"] = {TIMED: [dict(timing(1e-3), median_s=0.0)]}
    class_results = {"ana": results(0.8e-3), "kai": results(record=dict(timing(1e-3), median_s=-1.0)),
                     "lou": broken_reference}
    [board] = leaderboard.boards(toy_lab, class_results, {name: name for name in class_results})
    assert placed(board) == [(1, "ana", 0.8)]
    assert board.unranked == {"a median time that is not a positive number, so no ratio": 2}


def test_a_ratio_is_taken_against_the_reference_of_the_students_own_grading(toy_lab):
    # With several GPUs each GPU times its own reference: the ratio is the student's time over that one.
    on_a_slower_gpu = results(1.5e-3)
    on_a_slower_gpu["extra_data"]["reference_timings"] = {TIMED: [timing(2e-3)]}
    [board] = leaderboard.boards(toy_lab, {"ana": results(0.8e-3), "ben": on_a_slower_gpu},
                                 {"ana": "ana", "ben": "ben"})
    assert placed(board) == [(1, "ben", 0.75), (2, "ana", 0.8)]


# -- names ----------------------------------------------------------------------------------------------------

def test_students_the_names_file_does_not_name_get_random_ids_kept_in_it(tmp_path: Path):
    names = {"ana_lima": "Zippy", "dot_reyes": "dot_reyes", "ben_okoro": ""}
    filled = leaderboard.with_ids(names, ["ana_lima", "ben_okoro", "cyd_marsh", "dot_reyes"])
    assert filled["ana_lima"] == "Zippy" and filled["dot_reyes"] == "dot_reyes"
    for student in ("ben_okoro", "cyd_marsh"):
        assert ANONYMOUS_ID.fullmatch(filled[student]), f"{student}: expected an id like anon-1a2b3c, got {filled}"
    assert filled["ben_okoro"] != filled["cyd_marsh"]
    # Drawn at random, not made from the name: the same student drawn again gets another id.
    assert leaderboard.with_ids({}, ["ben_okoro"]) != leaderboard.with_ids({}, ["ben_okoro"])
    path = tmp_path / "names.csv"
    leaderboard.write_names(path, filled)
    assert leaderboard.read_names(path) == filled


def test_a_shown_name_that_is_shared_or_another_students_is_refused():
    problems = leaderboard.name_problems({"ana": "Zippy", "ben": "Zippy", "cy": "ana", "dot": "dot", "eve": ""})
    assert problems == ["ana and ben are all shown as 'Zippy': give each student a name of their own",
                        "cy would be shown as 'ana', which is another student's name: the page would name that "
                        "student"]


def test_a_names_file_without_its_header_says_what_it_must_hold(tmp_path: Path):
    path = write(tmp_path / "names.csv", "ana,Zippy\n")
    with pytest.raises(leaderboard.LeaderboardError, match="the first line must be 'student,shown_as'"):
        leaderboard.read_names(path)


# -- the page -------------------------------------------------------------------------------------------------

def test_the_page_escapes_names_and_forbids_every_fetch(toy_lab):
    [board] = leaderboard.boards(toy_lab, {"ana": results(0.8e-3)}, {"ana": '<img src="http://x/t.png">'})
    text = leaderboard.page(toy_lab, [board])
    assert "<img" not in text and "&lt;img src=&quot;http://x/t.png&quot;&gt;" in text
    assert f'content="{leaderboard.CONTENT_POLICY}"' in text and "default-src 'none'" in leaderboard.CONTENT_POLICY
    empty = leaderboard.boards(toy_lab, {"ana": results(timed_status="failed")}, {"ana": "ana"})
    assert "No correct kernel was timed for this measurement." in leaderboard.page(toy_lab, empty)


def graded_lab01(folder: Path, lab01) -> Path:
    """A graded class of 01-vector-add made by hand: two students, every case passed."""
    statuses = {test.name: "passed" for test in lab01.tests} | {spec.case: "passed" for spec in lab01.perf}
    spec = leaderboard.ranked_measurements(lab01)[0]
    for student, median_s in (("ana_lima", 2e-4), ("ben_okoro", 1e-4)):
        record = {"name": spec.measurement, "median_s": median_s, "rate": 0.6 / median_s, "unit": "GB/s"}
        extra = {"lab": lab01.name, "status": "graded", "gpu": "NVIDIA H100", "driver": "580", "case_status": statuses,
                 "timings": {spec.case: [record]}, "reference_case_status": {spec.case: "passed"},
                 "reference_timings": {spec.case: [dict(record, median_s=1e-4)]}}
        write(folder / student / "results.json", json.dumps({"score": 100, "extra_data": extra}))
    write(folder / "gradebook.csv", f"student,{lab01.name},max\nana_lima,100,100\nben_okoro,100,100\n")
    return folder


def test_the_command_writes_a_page_per_lab_and_the_ids_it_drew(lab01, tmp_path: Path, capsys):
    graded = graded_lab01(tmp_path / "graded", lab01)
    assert cli.main(["leaderboard", "--graded", str(graded), "--out", str(tmp_path / "site")]) == 0
    said = capsys.readouterr().out
    page = (tmp_path / "site" / "01-vector-add.html").read_text()
    ids = leaderboard.read_names(graded / leaderboard.NAMES_FILE)
    assert sorted(ids) == ["ana_lima", "ben_okoro"] and all(ANONYMOUS_ID.fullmatch(i) for i in ids.values())
    assert page.index(ids["ben_okoro"]) < page.index(ids["ana_lima"]), "ben's kernel is the faster: first"
    assert "ana_lima" not in page and "ben_okoro" not in page
    assert "vector_add_kernel: 2 of 2 ranked" in said and "added 2 anonymous ids" in said and "private" in said


def test_the_command_refuses_a_folder_that_is_not_a_graded_class(tmp_path: Path, capsys):
    assert cli.main(["leaderboard", "--graded", str(tmp_path), "--out", str(tmp_path / "site")]) == 2
    assert "has no gradebook.csv, so it is not a graded class" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()


# -- the page in a real browser -------------------------------------------------------------------------------

def browser() -> str | None:
    return next((path for name in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(name))),
                None)


@pytest.fixture
def chromium() -> str:
    found = browser()
    if found is None:
        if os.environ.get("CI"):  # .ci/run installs Chromium: a CI without it has lost this test, not skipped it
            pytest.fail("no Chromium on the CI machine: .ci/run's package list must install chromium")
        pytest.skip("no headless browser installed (apt-get install chromium) to open the leaderboard page in")
    return found


def rendered_dom(chromium: str, page: Path, profile: Path) -> str:
    """The page's DOM as headless Chromium built it (as root it needs --no-sandbox)."""
    done = subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "</html>" in done.stdout, (
        f"Chromium could not open {page} (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


class Tables(HTMLParser):
    """The rendered tables' rows (each a dict of cell class -> text), every attribute, and the visible text."""

    def __init__(self):
        super().__init__()
        self.rows: dict[str, list[dict[str, str]]] = {}
        self.attributes: list[tuple[str, str, str]] = []
        self.text: list[str] = []
        self._table = self._cell = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        if tag == "table":
            self._table = attributes.get("data-measurement", "")
            self.rows[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.rows[self._table].append({})
        elif tag == "td" and self._table is not None:
            self._cell = attributes.get("class", "")
            self.rows[self._table][-1][self._cell] = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self.rows[self._table][-1][self._cell] += data.strip()


def a_class_to_rank(folder: Path) -> None:
    """Reference at 1 ms. Ranked: ana and ben tie at 0.80x, dot 1.10x, cyd 2.00x, gil 12.00x (correct, though too
    slow for any performance point). Not ranked: eli fails a correctness test (so is not timed), fox's timing is
    faster than the hardware allows, hub does not compile."""
    for student, medians in (("ana_lima", [0.0008]), ("ben_okoro", [0.0008]), ("cyd_marsh", [0.002]),
                             ("dot_reyes", [0.0011]), ("gil_moreau", [0.012])):
        submit(folder, student, toy(json.dumps({"medians": medians})))
    submit(folder, "eli_novak", toy('{"fail": ["toy: adds"]}'))
    submit(folder, "fox_tanaka", toy(json.dumps({"medians": [0.0001], "implausible": ["toy timing: fast"]})))
    submit(folder, "hub_kent", toy("compile error"))


CORRECTNESS_POINTS = 25.0  # the 60-toy lab's tests (test_classroom.LAB_TOML); its timing earns the other 20


def test_the_page_in_a_browser_ranks_what_the_gradebook_and_the_records_say(lab, chromium, tmp_path: Path):  # noqa: F811
    config, fakes, log = lab
    a_class_to_rank(tmp_path / "in")
    graded = tmp_path / "graded"
    grade_it(config, tmp_path / "in", graded, tmp_path)
    names_file = write(tmp_path / "private" / "names.csv", "student,shown_as\nana_lima,Zippy\ndot_reyes,dot_reyes\n")
    written = leaderboard.write(config, graded, names_file, tmp_path / "site")
    shown = leaderboard.read_names(names_file)
    dom = Tables()
    dom.feed(rendered_dom(chromium, written.page, tmp_path / "profile"))

    rows = dom.rows["toy_kernel"][1:]  # after the header row
    expected = [("1", shown["ben_okoro"]), ("1", "Zippy"), ("3", "dot_reyes"), ("4", shown["cyd_marsh"]),
                ("5", shown["gil_moreau"])]
    assert [(row["rank"], row["who"]) for row in rows] == expected, (
        f"expected the rows {expected} (ties by shown name); the browser showed {rows}")

    # Each ratio and time is the student's own record over the reference timed in the same grading.
    student_of = {name: student for student, name in shown.items()}
    for row in rows:
        extra = json.loads((graded / student_of[row["who"]] / "results.json").read_text())["extra_data"]
        mine, reference = extra["timings"][TIMED][0]["median_s"], extra["reference_timings"][TIMED][0]["median_s"]
        assert row["ratio"] == f"{mine / reference:.2f}\u00d7" and row["time"] == f"{mine * 1e3:.3f} ms", row
        assert (row["gpu"], row["driver"]) == ("Fake GPU", "1.0")

    # Against the gradebook: every ranked student has all the correctness points, and a student ranked higher
    # never has fewer performance points; the only student with every correctness point who is not ranked is fox,
    # whose timing was implausible.
    with (graded / "gradebook.csv").open() as book:
        scores = {row["student"]: float(row[config.name]) for row in csv.DictReader(book)}
    ranked = [student_of[row["who"]] for row in rows]
    assert all(scores[student] >= CORRECTNESS_POINTS for student in ranked), scores
    assert [scores[s] for s in ranked] == sorted((scores[s] for s in ranked), reverse=True), (ranked, scores)
    correct = {student for student, score in scores.items() if score >= CORRECTNESS_POINTS}
    assert correct - set(ranked) == {"fox_tanaka"}, scores

    # Students are shown only as the TA chose: an id, a nickname, or (dot) their own name.
    text = " ".join(dom.text)
    for student in ("ana_lima", "ben_okoro", "cyd_marsh", "gil_moreau", "eli_novak", "fox_tanaka", "hub_kent"):
        assert student not in text, f"{student} is not mapped to their own name, yet the page shows it"
    assert sorted(shown) == sorted(scores) and all(ANONYMOUS_ID.fullmatch(shown[s]) for s in
                                                   ("ben_okoro", "cyd_marsh", "eli_novak", "gil_moreau"))
    assert "5 of 8 graded submissions ranked." in text
    for secret in ("toy: adds", "seed", "hidden"):
        assert secret not in text.lower(), f"the page shows '{secret}', which is the graders' business"

    # Self-contained: nothing to fetch, and a policy that forbids it.
    fetching = [a for a in dom.attributes if a[1] in ("src", "href", "srcset", "action")]
    assert not fetching, f"the page would fetch {fetching}; it must stand alone"
    assert ("meta", "http-equiv", "Content-Security-Policy") in dom.attributes

    # The ids are kept: made again, the page is the same.
    first = written.page.read_text()
    assert leaderboard.write(config, graded, names_file, tmp_path / "site").new_ids == 0
    assert written.page.read_text() == first
