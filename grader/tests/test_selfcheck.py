"""The self-check's verdicts, on stand-in test programs (fake_gpu): what it accepts and what it reports."""
from pathlib import Path

from grader.tests.fake_gpu import write_program
from grader.build import binary_path
from grader.config import load_lab
from grader.selfcheck import check_lab

RIGHT = '\n[[right]]\nname = "other-block"\nwhy = "another block size"\nfile = "toy.cu"\nreplace = "i < n"\nby = "n > i"\n'


def _programs(config, build_dir: Path, log: Path, failing: dict[str, list[str]]) -> None:
    """A stand-in test program for each variant the self-check runs; `failing` names the cases each fails."""
    suites = {**{t.name: "cpu" for t in config.tests if not t.gpu}, **{c: "timing" for c in config.timing_cases}}
    for variant in ["reference", "student", "wrong-off-by-one", "right-other-block"]:
        binary = binary_path(build_dir, config.name, variant)
        write_program(binary.parent / variant, binary.name,
                      {"cases": list(config.all_case_names), "timing": list(config.timing_cases),
                       "measurement": config.perf[0].measurement, "log": str(log), "who": variant,
                       "fail": failing.get(variant, []), "suites": suites})
        binary.parent.joinpath(binary.name).symlink_to(binary.parent / variant / binary.name)


def _check(toy_repo: Path, tmp_path: Path, failing: dict[str, list[str]]) -> list[str]:
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + RIGHT)
    config = load_lab("50-toy", toy_repo)
    skeleton_fails = ["toy: adds", "toy (hidden): awkward sizes"]
    _programs(config, tmp_path / "build", tmp_path / "log", {"student": skeleton_fails, **failing})
    problems, _ = check_lab(config, tmp_path / "build", tmp_path / "work")
    return problems


def test_a_sound_lab_passes(toy_repo: Path, tmp_path: Path):
    assert _check(toy_repo, tmp_path, {"wrong-off-by-one": ["toy: adds"]}) == []


def test_a_correct_alternative_that_fails_a_test_is_reported(toy_repo: Path, tmp_path: Path):
    problems = _check(toy_repo, tmp_path, {"wrong-off-by-one": ["toy: adds"],
                                           "right-other-block": ["toy (hidden): awkward sizes"]})
    assert problems == ["correct alternative 'other-block' (another block size) fails 'toy (hidden): awkward sizes': "
                        "wrong result for n = 3"]


def test_a_wrong_variant_that_passes_is_reported(toy_repo: Path, tmp_path: Path):
    problems = _check(toy_repo, tmp_path, {})
    assert problems == ["wrong variant 'off-by-one' (writes one element too few) passes 'toy: adds', which must "
                        "catch it"]


# The toy measurement scored as a pipeline is (labs 08 and 12): over the slowest of its stages alone.
OVERLAP = ('over_slowest_of = ["stage_in", "stage_out"]\nfull_at = 1.2\nzero_at = 1.5\nfalloff = "linear"\n')
NO_OVERLAP = ('\n[[wrong]]\nname = "no-overlap"\nwhy = "waits after every chunk"\nfile = "toy.cu"\n'
              'replace = "i < n"\nby = "n > i"\nkeeps_at_most = { toy_kernel = 0.25 }\n')
STAGES = {"stage_in": [0.001], "stage_out": [0.00098]}  # the reference's pipeline: 1.25 of its slowest stage


def _overlap_check(toy_repo: Path, tmp_path: Path, behaviours: dict[str, dict]) -> tuple[list[str], str]:
    """The self-check of the toy lab scored on its overlap, with a wrong variant that must lose those points and a
    correct alternative timed to keep them; `behaviours` adds to each program's (variant -> its behaviour)."""
    lab_toml = toy_repo / "labs/50-toy/lab.toml"
    lab_toml.write_text(lab_toml.read_text() + OVERLAP)
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + NO_OVERLAP + RIGHT + "timed = true\n")
    config = load_lab("50-toy", toy_repo)
    suites = {**{t.name: "cpu" for t in config.tests if not t.gpu}, **{c: "timing" for c in config.timing_cases}}
    defaults = {"reference": {}, "student": {"fail": ["toy: adds", "toy (hidden): awkward sizes"]},
                "wrong-off-by-one": {"fail": ["toy: adds"]}, "wrong-no-overlap": {"medians": [0.00205]},
                "right-other-block": {}}
    for variant, behaviour in defaults.items():
        binary = binary_path(tmp_path / "build", config.name, variant)
        write_program(binary.parent / variant, binary.name,
                      {"cases": list(config.all_case_names), "timing": list(config.timing_cases),
                       "measurement": "toy_kernel", "log": str(tmp_path / "log"), "who": variant, "suites": suites,
                       "medians": [0.00125], "stages": STAGES, **behaviour, **behaviours.get(variant, {})})
        binary.parent.joinpath(binary.name).symlink_to(binary.parent / variant / binary.name)
    return check_lab(config, tmp_path / "build", tmp_path / "work")


def test_a_variant_that_overlaps_nothing_loses_the_points_for_overlap_and_a_right_one_keeps_them(toy_repo: Path,
                                                                                                 tmp_path: Path):
    problems, text = _overlap_check(toy_repo, tmp_path, {"right-other-block": {"medians": [0.0013]}})
    assert problems == []
    # 2.05 of its slowest stage against the reference's 1.25: 1.64x, past zero_at.
    assert "performance: toy_kernel: 1.64x the reference's, keeps 0.00 of its 20 points (at most 0.25)" in text
    assert "toy: correct alternative other-block, against the reference's first timing" in text


def test_a_variant_that_keeps_too_much_of_the_points_it_must_lose_is_reported(toy_repo: Path, tmp_path: Path):
    problems, _ = _overlap_check(toy_repo, tmp_path, {"wrong-no-overlap": {"medians": [0.0016]}})
    assert problems == ["wrong variant 'no-overlap' (waits after every chunk) keeps 0.73 of the 'toy_kernel' points "
                        "at 1.28x the reference's; it must keep at most 0.25 (full points at <= 1.2x, falling in a "
                        "straight line to none at 1.5x)"]


def test_a_variant_must_lose_the_points_on_its_time_not_by_failing_its_timing_case(toy_repo: Path, tmp_path: Path):
    problems, _ = _overlap_check(toy_repo, tmp_path, {"wrong-no-overlap": {"fail": ["toy timing: fast"]}})
    assert problems == ["wrong variant 'no-overlap' (waits after every chunk) must lose the 'toy_kernel' points on "
                        "its time, but its timing case did not pass: wrong result for n = 3"]


def test_a_timed_correct_alternative_that_loses_performance_points_is_reported(toy_repo: Path, tmp_path: Path):
    problems, _ = _overlap_check(toy_repo, tmp_path, {"right-other-block": {"medians": [0.0018]}})
    assert len(problems) == 1
    assert problems[0].startswith("correct alternative 'other-block' (another block size) loses points on "
                                  "'performance: toy_kernel': ")
    assert "1.44x the reference's" in problems[0]


def test_a_variant_with_no_stage_records_has_no_ratio_and_is_reported(toy_repo: Path, tmp_path: Path):
    problems, _ = _overlap_check(toy_repo, tmp_path, {"wrong-no-overlap": {"stages": {}}})
    assert problems == ["wrong variant 'no-overlap': no ratio to the reference for 'toy_kernel' (a record is missing "
                        "from its timing case or from the reference's)"]


def test_a_first_reference_timing_slower_than_its_second_is_named_as_the_cause_of_the_verdicts_it_spoils(
        toy_repo: Path, tmp_path: Path):
    # The reference's first timing, every variant's yardstick, 4x its second (its pipeline 5.0 of its slowest stage,
    # then 1.25): the reference loses points against itself, and the slow variant (2.05) looks fast enough to keep
    # its points.
    problems, _ = _overlap_check(toy_repo, tmp_path, {"reference": {"medians": [0.005, 0.00125]}})
    assert problems[0].startswith("the reference's two timings of 'toy_kernel' disagree: the second took 0.25x the "
                                  "first, farther apart than the 1.2x its full points allow.")
    assert "Run the self-check again with the host to itself." in problems[0]
    assert problems[1].startswith("reference loses points on 'performance: toy_kernel'")
    assert problems[2].startswith("wrong variant 'no-overlap' (waits after every chunk) keeps 1.00 of the "
                                  "'toy_kernel' points at 0.41x the reference's")
    assert len(problems) == 3


def test_reference_timings_that_disagree_the_other_way_are_reported_too(toy_repo: Path, tmp_path: Path):
    # The second timing the slow one: no verdict goes wrong this time, but the timings cannot be trusted.
    problems, _ = _overlap_check(toy_repo, tmp_path, {"reference": {"medians": [0.00125, 0.005]}})
    assert len(problems) == 1
    assert problems[0].startswith("the reference's two timings of 'toy_kernel' disagree: the second took 4.00x the "
                                  "first")
