"""The written analysis: every lab's questions, their points kept apart from the autograder's score everywhere a
score is written (results.json, the table, the gradebook, the self-check, the run record), and the three files
that state them (lab.toml, QUESTIONS.md, the rubric) in step."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader import handouts, questions, summary
from grader.config import ConfigError, list_labs, load_lab
from grader.grade import all_zero
from grader.record import gather
from grader.report import by_hand_points, gradescope_results, student_visible, table, total
from grader.score import score_lab
from grader.selfcheck import reference_losses
from grader.tests.conftest import REPO, write
from grader.tests.test_score import outcomes

TOY_QUESTIONS = """
[[questions]]
name = "Q1: Measure the toy"
points = 6

[[questions]]
name = "Q2: Explain the toy"
points = 4
"""

QUESTIONS_MD = """# Toy: written analysis

## Q1: Measure the toy (6 points)

Time it.

## Q2: Explain the toy (4 points)

Say why.
"""


@pytest.fixture
def toy_with_questions(toy_repo: Path):
    """The toy lab with two questions, QUESTIONS.md and a rubric that agree with lab.toml."""
    path = toy_repo / "labs/50-toy/lab.toml"
    path.write_text(path.read_text() + TOY_QUESTIONS)
    write(toy_repo / "labs/50-toy/QUESTIONS.md", QUESTIONS_MD)
    write(toy_repo / "solutions/50-toy/RUBRIC.md", QUESTIONS_MD.replace("Time it.", "Full marks: a time."))
    return toy_repo


def _toy(root: Path):
    return load_lab("50-toy", root)


# --- every committed lab ---

@pytest.mark.parametrize("lab", list_labs())
def test_every_lab_has_questions_worth_10_to_15_points_taken_from_its_100(lab: str):
    config = load_lab(lab)
    assert 2 <= len(config.questions) <= 3
    assert 10 <= config.question_points <= 15
    assert config.max_points == 100 and config.autograded_points == 100 - config.question_points


@pytest.mark.parametrize("lab", list_labs())
def test_every_lab_has_questions_and_a_rubric_that_agree_with_its_config(lab: str):
    config = load_lab(lab)
    assert questions.questions_path(config).is_file()
    assert questions.rubric_path(config).is_file()
    assert questions.problems(config) == []


@pytest.mark.parametrize("lab", list_labs())
def test_every_handout_states_its_hours_and_links_its_questions(lab: str):
    config = load_lab(lab)
    assert config.hours is not None
    handout = handouts.handout_path(config).read_text()
    assert f"Estimated time: about {config.hours:g} hours" in handout
    assert "[QUESTIONS.md](QUESTIONS.md)" in handout
    for question in config.questions:
        assert f"| written analysis, graded by hand: {question.name} | {question.points:g} |" in handout


@pytest.mark.parametrize("readme", ["README.md", "release/README.md"])
def test_the_suggested_order_lists_every_lab_once_with_the_hours_of_its_config(readme: str):
    rows = re.findall(r"^\| (\d+) \| \[([\w-]+)\]\(labs/[\w-]+/README\.md\) \| (\d+(?:\.\d+)?) \|",
                      (REPO / readme).read_text(), re.MULTILINE)
    assert [int(order) for order, _, _ in rows] == list(range(1, len(list_labs()) + 1))
    assert sorted(lab for _, lab, _ in rows) == list_labs()
    for _, lab, hours in rows:
        assert float(hours) == load_lab(lab).hours, f"{readme}: {lab}'s hours differ from its lab.toml"


# --- the three files in step ---

def test_a_toy_whose_files_agree_has_no_problems(toy_with_questions: Path):
    assert questions.problems(_toy(toy_with_questions)) == []


@pytest.mark.parametrize("where, old, new, expected", [
    ("labs/50-toy/QUESTIONS.md", "(6 points)", "(5 points)", "'Q1: Measure the toy' says 5 points, lab.toml 6"),
    ("labs/50-toy/QUESTIONS.md", "## Q2: Explain the toy (4 points)", "## Q2: Explain it (4 points)",
     "lab.toml's question 'Q2: Explain the toy' has no heading"),
    ("solutions/50-toy/RUBRIC.md", "(4 points)", "(3 points)",
     "solutions/50-toy/RUBRIC.md: 'Q2: Explain the toy' says 3 points"),
    ("labs/50-toy/lab.toml", 'name = "Q2: Explain the toy"\npoints = 4', 'name = "Q2: Explain the toy"\npoints = 5',
     "'Q2: Explain the toy' says 4 points, lab.toml 5"),
])
def test_a_question_stated_otherwise_in_one_file_is_named(toy_with_questions: Path, where, old, new, expected):
    path = toy_with_questions / where
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    found = questions.problems(_toy(toy_with_questions))
    assert any(expected in problem for problem in found), found
    assert any(expected in str(d) for d in handouts.problems(_toy(toy_with_questions)))


@pytest.mark.parametrize("missing", ["labs/50-toy/QUESTIONS.md", "solutions/50-toy/RUBRIC.md"])
def test_a_missing_questions_file_or_rubric_is_named(toy_with_questions: Path, missing: str):
    (toy_with_questions / missing).unlink()
    assert any(f"{missing} is missing" in problem for problem in questions.problems(_toy(toy_with_questions)))


def test_a_question_named_like_a_test_is_refused(toy_repo: Path):
    path = toy_repo / "labs/50-toy/lab.toml"
    path.write_text(path.read_text() + '\n[[questions]]\nname = "toy: adds"\npoints = 5\n')
    with pytest.raises(ConfigError, match="also a test case"):
        _toy(toy_repo)


def test_the_generated_handout_section_lists_the_questions_in_the_total(toy_with_questions: Path):
    section = handouts.generate(_toy(toy_with_questions))
    assert "| written analysis, graded by hand: Q1: Measure the toy | 6 |" in section
    assert "| **total** | **50** |" in section  # 35 autograded, 5 hidden, 10 by hand
    assert "[QUESTIONS.md](QUESTIONS.md)" in section and "ANSWERS.md" in section


# --- scores: the questions are listed, never scored by the autograder ---

def test_the_autograder_total_leaves_the_questions_out(toy_with_questions: Path):
    config = _toy(toy_with_questions)
    items = score_lab(config, outcomes(), outcomes())
    assert total(items) == (config.autograded_points, config.autograded_points) == (40, 40)
    assert by_hand_points(items) == 10
    text = table("toy", items)
    assert "TA   Q1: Measure the toy" in text and "(graded by hand)" in text
    assert "Not in this total: 10 points for the written analysis" in text


def test_results_json_lists_the_questions_with_a_maximum_and_no_score(toy_with_questions: Path):
    config = _toy(toy_with_questions)
    results = gradescope_results(score_lab(config, outcomes(), outcomes()), "Graded.", 1.0, {"seed": 99})
    assert results["score"] == 40
    manual = [t for t in results["tests"] if t["name"].startswith("Q")]
    assert [(t["name"], t["max_score"]) for t in manual] == [("Q1: Measure the toy", 6), ("Q2: Explain the toy", 4)]
    assert all("score" not in t and "graded by hand" in t["output"].lower() for t in manual)
    assert results["extra_data"]["graded_by_hand"] == [
        {"name": "Q1: Measure the toy", "score": None, "max_score": 6},
        {"name": "Q2: Explain the toy", "score": None, "max_score": 4}]
    assert any("QUESTIONS.md" in text for text in student_visible(results))
    json.dumps(results)  # the slot's None is JSON's null


def test_a_submission_that_did_not_run_still_has_its_questions_graded_by_hand(toy_with_questions: Path):
    items = all_zero(_toy(toy_with_questions), "Not run: refused.")
    by_hand = [i for i in items if i.by_hand]
    assert len(by_hand) == 2 and all("QUESTIONS.md" in i.output for i in by_hand)
    assert all(i.output == "Not run: refused." for i in items if not i.by_hand)


def test_the_reference_is_not_said_to_lose_the_questions_points(toy_with_questions: Path):
    items = score_lab(_toy(toy_with_questions), outcomes(), outcomes())
    assert reference_losses(items) == []
    slow = score_lab(_toy(toy_with_questions), outcomes(sub_time=5.0), outcomes())
    assert [line.split(":")[0] for line in reference_losses(slow)] == ["reference loses points on 'performance"]


def test_the_run_record_counts_only_what_the_reference_can_earn(toy_with_questions: Path, tmp_path: Path):
    results = gradescope_results(score_lab(_toy(toy_with_questions), outcomes(), outcomes()), "", 1.0, {})
    write(tmp_path / "50-toy/selfcheck-reference.json", json.dumps(results))
    assert gather(tmp_path, "abc")["labs"]["50-toy"]["max"] == 40


def test_the_gradebook_keeps_a_column_for_the_ta_apart_from_the_autograded_score(tmp_path: Path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice/results.json").write_text(json.dumps({"score": 80.0, "tests": [], "extra_data": {}}))
    text = summary.write_all(tmp_path, "08-streams", 85.0, ["alice"], by_hand=15.0)
    assert (tmp_path / "gradebook.csv").read_text().splitlines() == [
        "student,08-streams,max,graded by hand,graded by hand max", "alice,80.0,85.0,,15.0"]
    assert "/ 85" in text and "15 more points" in text and "graded by hand" in text
