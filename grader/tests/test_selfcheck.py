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
