from pathlib import Path

import pytest

from grader.config import load_lab
from grader.report import gradescope_results, table
from grader.run.outcomes import CaseOutcome
from grader.score import perf_fraction, score_lab


@pytest.mark.parametrize("time, expected", [
    (1.0, 1.0), (1.2, 1.0), (2.4, 0.5), (6.0, 0.2), (10.0, 0.12), (10.01, 0.0), (0.5, 1.0), (0.0, 0.0)])
def test_perf_fraction(time, expected):
    assert perf_fraction(time, 1.0, 1.2, 10.0) == pytest.approx(expected)


def timing(median: float) -> dict:
    return {"kind": "timing", "name": "toy_kernel", "median_s": median, "rate": 100.0 / median, "unit": "GB/s",
            "ceiling_names": ["device-to-device copy"], "ceiling_rates": [200.0]}


def passed(name: str, timings=()) -> CaseOutcome:
    return CaseOutcome(name, "passed", timings=list(timings))


@pytest.fixture
def toy(toy_repo: Path):
    return load_lab("50-toy", toy_repo)


def outcomes(failing=(), sub_time=1.0):
    names = ["toy: adds", "toy: runs on the CPU", "toy (hidden): awkward sizes"]
    result = {n: (CaseOutcome(n, "failed", ["Wrong result for input: n = 7"]) if n in failing else passed(n))
              for n in names}
    result["toy timing: fast"] = passed("toy timing: fast", [timing(sub_time)])
    return result


def by_name(items):
    return {i.name: i for i in items}


def test_full_marks_when_correct_and_as_fast(toy):
    items = by_name(score_lab(toy, outcomes(), outcomes()))
    assert sum(i.score for i in items.values()) == toy.max_points
    assert "1.00x the reference" in items["performance: toy_kernel"].output
    assert items["toy (hidden): awkward sizes"].visibility == "after_due_date"
    assert items["toy: adds"].visibility == "visible"


def test_slower_gets_proportional_perf_points(toy):
    items = by_name(score_lab(toy, outcomes(sub_time=4.8), outcomes(sub_time=2.0)))
    assert items["performance: toy_kernel"].score == pytest.approx(20 * 1.2 / 2.4)


def test_perf_points_need_correctness(toy):
    items = by_name(score_lab(toy, outcomes(failing=["toy (hidden): awkward sizes"]), outcomes()))
    perf = items["performance: toy_kernel"]
    assert perf.score == 0 and "toy (hidden): awkward sizes" in perf.output
    assert items["toy (hidden): awkward sizes"].output == "Wrong result for input: n = 7"


def test_wrong_timed_output_gets_no_perf_points(toy):
    mine = outcomes()
    mine["toy timing: fast"] = CaseOutcome("toy timing: fast", "failed", ["Wrong result for input: timing"],
                                           timings=[timing(0.1)])
    perf = by_name(score_lab(toy, mine, outcomes()))["performance: toy_kernel"]
    assert perf.score == 0 and "did not pass" in perf.output


def test_without_a_reference_perf_is_reported_but_not_scored(toy):
    perf = by_name(score_lab(toy, outcomes(), None))["performance: toy_kernel"]
    assert perf.score == 0 and "0.50 of device-to-device copy" in perf.output
    assert "beside the reference" in perf.output


def test_crash_and_missing_cases_score_zero(toy):
    mine = outcomes()
    mine["toy: adds"] = CaseOutcome("toy: adds", "crashed", ["The test program was killed by SIGSEGV during this test."])
    del mine["toy: runs on the CPU"]
    items = by_name(score_lab(toy, mine, outcomes()))
    assert items["toy: adds"].score == 0 and "SIGSEGV" in items["toy: adds"].output
    assert items["toy: runs on the CPU"].score == 0 and items["toy: runs on the CPU"].output == "Not run."


def test_gradescope_results_shape(toy):
    items = score_lab(toy, outcomes(failing=["toy: adds"]), outcomes())
    results = gradescope_results(items, "Graded on a GPU.", 12.7, {"seed": 99, "gpu": "Toy GPU"})
    assert set(results) >= {"score", "execution_time", "output", "tests", "visibility", "extra_data"}
    assert results["score"] == pytest.approx(toy.max_points - 10 - 20)
    assert results["execution_time"] == 12
    for test in results["tests"]:
        assert set(test) == {"name", "score", "max_score", "output", "visibility"}
        assert 0 <= test["score"] <= test["max_score"]
        assert test["visibility"] in {"visible", "hidden", "after_due_date", "after_published"}
    assert results["extra_data"]["seed"] == 99
    text = table("50-toy", items)
    assert "FAIL toy: adds" in text and "Total" in text


def test_extra_credit_adds_to_the_score_not_the_maximum(toy_repo: Path):
    path = toy_repo / "labs/50-toy/lab.toml"
    path.write_text(path.read_text() + """
[[tests]]
name = "toy (extra credit): faster"
points = 4
extra_credit = true
""")
    config = load_lab("50-toy", toy_repo)
    assert config.max_points == 40 and config.extra_credit_points == 4
    mine = outcomes()
    mine["toy (extra credit): faster"] = CaseOutcome("toy (extra credit): faster", "failed", ["slow"])
    items = score_lab(config, mine, outcomes())
    perf = by_name(items)["performance: toy_kernel"]
    assert perf.score == 20, "a failed extra-credit test must not cost core performance points"
    from grader.report import total
    assert total(items) == (40, 40)
    mine["toy (extra credit): faster"] = passed("toy (extra credit): faster")
    assert total(score_lab(config, mine, outcomes())) == (44, 40)
    assert "(extra credit)" in table("toy", items)


@pytest.mark.parametrize("ratio, expected", [
    (1.0, 1.0), (1.2, 1.0), (1.35, 0.5), (1.44, 0.2), (1.5, 0.0), (1.51, 0.0), (3.0, 0.0)])
def test_linear_perf_fraction_falls_in_a_straight_line_to_none_at_zero_at(ratio, expected):
    assert perf_fraction(ratio, 1.0, 1.2, 1.5, "linear") == pytest.approx(expected)


# A pipeline's records, as lab 08's timing case writes them (docs/gpu-runs/2026-11-24-h100-selfcheck.json):
# each stage alone, then the pipeline. Medians in ms.
def pipeline_records(pipelined: float, copy_in: float = 19.8, compute: float = 1.47, copy_out: float = 19.5) -> list:
    def record(name, ms):
        return {"kind": "timing", "name": name, "median_s": ms / 1e3, "rate": 1.07 / ms * 1e3, "unit": "GB/s"}
    return [record("stage_copy_in", copy_in), record("stage_compute", compute), record("stage_copy_out", copy_out),
            record("toy_kernel", pipelined)]


@pytest.fixture
def overlap(toy_repo: Path):
    """The toy lab with its measurement scored as lab 08's pipeline is: over the slowest copy alone."""
    path = toy_repo / "labs/50-toy/lab.toml"
    path.write_text(path.read_text() + 'over_slowest_of = ["stage_copy_in", "stage_copy_out"]\n'
                                       'full_at = 1.2\nzero_at = 1.5\nfalloff = "linear"\n')
    return load_lab("50-toy", toy_repo)


def pipeline_outcomes(**records) -> dict:
    result = outcomes()
    result["toy timing: fast"] = passed("toy timing: fast", pipeline_records(**records))
    return result


def overlap_item(config, mine: dict, reference: dict):
    return by_name(score_lab(config, mine, reference))["performance: toy_kernel"]


def test_a_pipeline_that_overlaps_as_well_as_the_reference_gets_full_points(overlap):
    item = overlap_item(overlap, pipeline_outcomes(pipelined=25.4), pipeline_outcomes(pipelined=25.0))
    assert item.score == 20
    assert "over the slowest of stage_copy_in, stage_copy_out" in item.output
    assert "yours is 1.28 (over stage_copy_in, 19.800 ms), the reference's 1.26" in item.output
    assert "1.02x the reference's (full points at <= 1.2x, falling in a straight line to none at 1.5x)" in item.output


def test_a_pipeline_that_overlaps_nothing_loses_every_point(overlap):
    # Copy in, compute and copy out one after the other: 40.8 ms, 2.06 of the slowest copy, 1.63x the reference's
    # 1.26. Timed by its own time alone (full_at 1.2, zero_at 3, inverse), it kept 0.74 of the points.
    item = overlap_item(overlap, pipeline_outcomes(pipelined=40.8), pipeline_outcomes(pipelined=25.0))
    assert item.score == 0 and "1.63x the reference's" in item.output
    assert perf_fraction(40.8, 25.0, 1.2, 3.0) == pytest.approx(0.735, abs=0.01)


def test_halfway_between_the_thresholds_keeps_half_the_points(overlap):
    item = overlap_item(overlap, pipeline_outcomes(pipelined=1.35 * 25.0), pipeline_outcomes(pipelined=25.0))
    assert item.score == pytest.approx(10)


def test_the_ratio_to_the_slowest_copy_takes_a_slower_link_out_of_the_score(overlap):
    # The student's run found the link 20% slower (both copies), and the pipeline with it: the same overlap.
    mine = pipeline_outcomes(pipelined=30.0, copy_in=24.0, copy_out=23.4)
    item = overlap_item(overlap, mine, pipeline_outcomes(pipelined=25.0))
    assert item.score == 20 and "yours is 1.25 (over stage_copy_in" in item.output


def test_the_slowest_of_the_named_stages_is_the_one_divided_by(overlap):
    # Copy out the slower one in this run; the compute stage, not named, is slower still and is left out: it runs
    # student code, which could slow it down alone to make any pipeline look overlapped.
    mine = pipeline_outcomes(pipelined=41.0, copy_in=19.0, copy_out=20.0, compute=41.0)
    item = overlap_item(overlap, mine, pipeline_outcomes(pipelined=25.0))
    assert item.score == 0 and "(over stage_copy_out, 20.000 ms)" in item.output


def test_a_missing_stage_record_earns_no_points_and_says_which(overlap):
    mine = pipeline_outcomes(pipelined=25.0)
    mine["toy timing: fast"].timings = [t for t in mine["toy timing: fast"].timings if t["name"] != "stage_copy_out"]
    item = overlap_item(overlap, mine, pipeline_outcomes(pipelined=25.0))
    assert item.score == 0 and "no positive median time for 'stage_copy_out'" in item.output


def test_a_reference_without_its_stage_records_gives_no_points_and_no_ratio(overlap):
    reference = pipeline_outcomes(pipelined=25.0)
    reference["toy timing: fast"].timings = reference["toy timing: fast"].timings[-1:]
    item = overlap_item(overlap, pipeline_outcomes(pipelined=25.0), reference)
    assert item.score == 0 and "No reference timing in this run" in item.output
    from grader.score import perf_ratio
    assert perf_ratio(overlap.perf[0], pipeline_outcomes(pipelined=25.0)["toy timing: fast"],
                      reference["toy timing: fast"]) is None
