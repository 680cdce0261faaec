"""What the audit trail rests on: the fingerprint of what was graded, and which ratios are timed again."""
import subprocess
from pathlib import Path

import pytest

from grader import audit
from grader.config import load_lab
from grader.tests.conftest import REPO, write


def test_fingerprint_follows_the_files_the_config_and_nothing_else(toy_repo: Path):
    config = load_lab("50-toy", toy_repo)
    first = audit.fingerprint(config, {"toy.cu": b"int x;"})
    assert audit.fingerprint(config, {"toy.cu": b"int x;"}) == first
    assert audit.fingerprint(config, {"toy.cu": b"int y;"}) != first
    assert audit.fingerprint(config, {"other.cu": b"int x;"}) != first
    lab_toml = toy_repo / "labs/50-toy/lab.toml"
    write(lab_toml, lab_toml.read_text().replace("points = 10", "points = 12"))
    assert audit.fingerprint(load_lab("50-toy", toy_repo), {"toy.cu": b"int x;"}) != first


def test_ratios_just_past_a_threshold_are_timed_again(toy_repo: Path):
    [spec] = load_lab("50-toy", toy_repo).perf  # full_at 1.2, zero_at 10
    assert audit.near_threshold(1.223, spec) and audit.near_threshold(1.5, spec)
    assert audit.near_threshold(10.1, spec) and audit.near_threshold(12.5, spec)
    # at or under a threshold a second timing cannot raise the score; far past it, noise is not the reason
    assert not audit.near_threshold(1.2, spec) and not audit.near_threshold(1.0, spec)
    assert not audit.near_threshold(1.51, spec) and not audit.near_threshold(9.9, spec)
    assert not audit.near_threshold(12.6, spec)


def test_an_item_with_thresholds_of_its_own_is_timed_again_near_those(toy_repo: Path):
    lab_toml = toy_repo / "labs/50-toy/lab.toml"
    write(lab_toml, lab_toml.read_text() + "full_at = 1.1\nzero_at = 1.5\nfalloff = \"linear\"\n")
    [spec] = load_lab("50-toy", toy_repo).perf
    assert audit.near_threshold(1.11, spec) and audit.near_threshold(1.375, spec)
    assert audit.near_threshold(1.6, spec) and audit.near_threshold(1.875, spec)
    assert not audit.near_threshold(1.1, spec) and not audit.near_threshold(1.9, spec)
    assert not audit.near_threshold(12.0, spec)


def test_the_grader_commit_names_this_checkout():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    assert audit.grader_commit() in (head.stdout.strip(), head.stdout.strip() + "+changes")


def test_submission_files_of_a_zip_and_a_folder(tmp_path: Path):
    write(tmp_path / "alice/src/a.cu", "x")
    (tmp_path / "bob.zip").write_bytes(b"PK")
    assert audit.submission_files(tmp_path / "alice") == {"src/a.cu": b"x"}
    assert audit.submission_files(tmp_path / "bob.zip") == {"bob.zip": b"PK"}


def test_a_second_timing_near_a_threshold_replaces_the_records_its_ratio_is_made_of(toy_repo: Path, tmp_path: Path):
    """An item scored over its stages is timed again as one: the ratio that counts must be the one its records
    give, so the measurement and the stages it is divided by come from the same run."""
    from grader.run.outcomes import CaseOutcome
    from grader.run.schedule import ProgramRun
    from grader.score import perf_ratio
    from grader.tests.fake_gpu import write_program

    lab_toml = toy_repo / "labs/50-toy/lab.toml"
    write(lab_toml, lab_toml.read_text() + 'over_slowest_of = ["stage_in"]\nfull_at = 1.2\nzero_at = 1.5\n'
                                           'falloff = "linear"\n')
    config = load_lab("50-toy", toy_repo)
    [spec] = config.perf

    def records(pipelined: float, stage: float) -> list[dict]:
        return [{"name": "stage_in", "median_s": stage}, {"name": "toy_kernel", "median_s": pipelined}]

    case = "toy timing: fast"
    reference = {case: CaseOutcome(case, "passed", timings=records(0.00125, 0.001))}  # 1.25 of its stage
    # The first timing: 1.51 of the stage, 1.208x the reference's, just past full_at. The second finds the
    # link slower and the pipeline the same: 1.25 of the stage, 1.0x.
    program = write_program(tmp_path / "program", "toy-tests",
                            {"cases": list(config.all_case_names), "timing": [case], "measurement": "toy_kernel",
                             "log": str(tmp_path / "log"), "who": "student", "medians": [0.0015],
                             "stages": {"stage_in": [0.0012]}})
    run = ProgramRun(config, program, tmp_path / "work")
    (tmp_path / "work").mkdir()
    run.outcomes[case] = CaseOutcome(case, "passed", timings=records(0.00151, 0.001))
    run.time_again_near_thresholds([case], reference)
    [rerun] = run.reruns
    assert rerun["counted"] == "second" and rerun["ratios"] == [pytest.approx(1.208), pytest.approx(1.0)]
    assert perf_ratio(spec, run.outcomes[case], reference[case]) == pytest.approx(1.0)
    assert run.outcomes[case].timing("stage_in")["median_s"] == pytest.approx(0.0012)


def test_the_reference_is_timed_three_times_and_each_case_keeps_its_middle_run(toy_repo: Path, tmp_path: Path):
    """A whole class is divided by the reference's time: one run of it that came out fast or slow would move every
    student's ratio. The middle of three runs stands, with its stage from the same run."""
    from grader.run.schedule import REFERENCE_TIMES, time_reference
    from grader.tests.fake_gpu import write_program

    lab_toml = toy_repo / "labs/50-toy/lab.toml"
    write(lab_toml, lab_toml.read_text() + 'over_slowest_of = ["stage_in"]\n')
    config = load_lab("50-toy", toy_repo)
    case = "toy timing: fast"
    behaviour = {"cases": list(config.all_case_names), "timing": [case], "measurement": "toy_kernel",
                 "log": str(tmp_path / "log"), "who": "reference", "medians": [0.0012, 0.0009, 0.001],
                 "stages": {"stage_in": [0.001, 0.001, 0.0008]}}  # ratios to the stage: 1.2, 0.9, 1.25
    program = write_program(tmp_path / "program", "toy-tests", behaviour)
    evaluation = time_reference(config, program, tmp_path / "work")
    assert REFERENCE_TIMES == 3 and len([p for p in evaluation.programs if p["cases"] == [case]]) == 3
    timing = {t["name"]: t["median_s"] for t in evaluation.outcomes[case].timings}
    assert timing == {"toy_kernel": pytest.approx(0.0012), "stage_in": pytest.approx(0.001)}


def test_a_reference_timing_that_fails_is_returned_without_more_runs(toy_repo: Path, tmp_path: Path):
    from grader.run.schedule import time_reference
    from grader.tests.fake_gpu import write_program

    config = load_lab("50-toy", toy_repo)
    case = "toy timing: fast"
    program = write_program(tmp_path / "program", "toy-tests",
                            {"cases": list(config.all_case_names), "timing": [case], "measurement": "toy_kernel",
                             "log": str(tmp_path / "log"), "who": "reference", "fail": [case]})
    evaluation = time_reference(config, program, tmp_path / "work")
    assert not evaluation.outcomes[case].passed
    assert (tmp_path / "program" / "timing-runs").read_text() == "1"
