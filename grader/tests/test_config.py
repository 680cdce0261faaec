from pathlib import Path

import pytest

from grader.config import ConfigError, list_labs, load_lab


def test_toy_lab_reads_public_and_hidden_parts(toy_repo: Path):
    config = load_lab("50-toy", toy_repo)
    assert config.student_files == ("toy.cu",)
    assert [t.name for t in config.tests] == ["toy: adds", "toy: runs on the CPU", "toy (hidden): awkward sizes"]
    assert [t.hidden for t in config.tests] == [False, False, True]
    assert config.test("toy: runs on the CPU").gpu is False
    assert config.grading_seed == 99
    assert config.max_points == 10 + 5 + 5 + 20
    assert config.timing_cases == ("toy timing: fast",)
    assert config.perf[0].requires == ("*",)
    assert config.wrong[0].must_fail == ("toy: adds",)


def test_a_test_may_run_under_a_compute_sanitizer_tool(toy_repo: Path):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text().replace("points = 5\n", 'points = 5\nsanitizer = "racecheck"\n', 1))
    config = load_lab("50-toy", toy_repo)
    assert config.test("toy (hidden): awkward sizes").sanitizer == "racecheck"
    assert config.test("toy: adds").sanitizer is None
    assert config.sanitizer_tools == ("racecheck",)


def test_without_solutions_only_public_parts_remain(toy_repo: Path):
    import shutil
    shutil.rmtree(toy_repo / "solutions")
    config = load_lab("50-toy", toy_repo)
    assert config.solution_dir is None
    assert all(not t.hidden for t in config.tests)
    assert config.grading_seed is None and config.wrong == ()


@pytest.mark.parametrize("change, message", [
    (("points = 10", "points = -1"), "'points' must be a number >= 0"),
    (('name = "toy: adds"', 'name = "toy: adds, twice"'), "may not contain"),
    (('name = "toy: runs on the CPU"', 'name = "toy: adds"'), "appear twice"),
    (("zero_at = 10.0", "zero_at = 1.1"), "must be larger than full_at"),
    (("ceiling_margin = 1.2\n", ""), "'ceiling_margin' is required"),
    (("ceiling_margin = 1.2", "ceiling_margin = 0.9"), "'ceiling_margin' must be a number >= 1"),
    (('student_files = ["toy.cu"]', "student_files = []"), "student_files"),
    (("[params]", "[params]\nbad = true"), "must be a lower_case name"),
    (("[lab]", "[lab]\nlibraries = [\"cudnn\"]"), "unknown libraries"),
    (("[[perf]]", "[surprise]\n[[perf]]"), "unknown table"),
    (("points = 10", 'points = 10\nsanitizer = "valgrind"'), "'sanitizer' must be one of the compute-sanitizer tools"),
    (("gpu = false", 'gpu = false\nsanitizer = "memcheck"'), "cannot say gpu = false"),
])
def test_config_mistakes_are_named(toy_repo: Path, change, message):
    path = toy_repo / "labs/50-toy/lab.toml"
    path.write_text(path.read_text().replace(*change, 1))
    with pytest.raises(ConfigError, match=message):
        load_lab("50-toy", toy_repo)


def test_a_lab_without_timing_cases_needs_no_timing_parameters(toy_repo: Path):
    path = toy_repo / "labs/50-toy/lab.toml"
    text = path.read_text()
    text = text[:text.index("[[perf]]")]
    for line in ("timing_warmup = 1\n", "timing_repeats = 3\n", "ceiling_margin = 1.2\n"):
        text = text.replace(line, "")
    path.write_text(text)
    assert load_lab("50-toy", toy_repo).perf == ()
    path.write_text(text.replace("seed = 1\n", ""))
    with pytest.raises(ConfigError, match="'seed' is required"):
        load_lab("50-toy", toy_repo)


def test_invalid_toml_names_the_file(toy_repo: Path):
    (toy_repo / "labs/50-toy/lab.toml").write_text("[lab\n")
    with pytest.raises(ConfigError, match="lab.toml: not valid TOML"):
        load_lab("50-toy", toy_repo)


def test_unknown_lab_lists_the_known_ones(toy_repo: Path):
    with pytest.raises(ConfigError, match="labs: 50-toy"):
        load_lab("51-nothing", toy_repo)


def test_every_committed_lab_config_loads():
    labs = list_labs()
    assert "01-vector-add" in labs
    for lab in labs:
        config = load_lab(lab)
        assert config.max_points > 0, lab


RIGHT_VARIANT = """
[[right]]
name = "other-block"
why = "another block size"
file = "toy.cu"
replace = "blockDim.x"
by = "blockDim.x * 1"
"""


def test_a_correct_alternative_is_a_variant_without_must_fail(toy_repo: Path):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + RIGHT_VARIANT)
    config = load_lab("50-toy", toy_repo)
    assert [r.name for r in config.right] == ["other-block"]
    assert not hasattr(config.right[0], "must_fail")
    assert [w.name for w in config.wrong] == ["off-by-one"]


@pytest.mark.parametrize("extra, message", [
    (RIGHT_VARIANT + 'must_fail = ["toy: adds"]\n', "a correct alternative has no 'must_fail'"),
    (RIGHT_VARIANT + RIGHT_VARIANT, r"\[\[right\]\]: names appear twice: \['other-block'\]"),
])
def test_bad_correct_alternatives_are_refused(toy_repo: Path, extra: str, message: str):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + extra)
    with pytest.raises(ConfigError, match=message):
        load_lab("50-toy", toy_repo)


def test_a_wrong_variant_must_name_test_cases_that_exist(toy_repo: Path):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text().replace('must_fail = ["toy: adds"]', 'must_fail = ["toy: add"]'))
    with pytest.raises(ConfigError, match=r"'off-by-one': must_fail names no test case: \['toy: add'\]"):
        load_lab("50-toy", toy_repo)
