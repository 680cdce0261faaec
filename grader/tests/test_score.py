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
