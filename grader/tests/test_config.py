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
    (("zero_at = 10.0", 'zero_at = 10.0\nconcurrent_streams = "yes"'), "'concurrent_streams' must be true or false"),
    (("ceiling_margin = 1.2\n", ""), "'ceiling_margin' is required"),
    (("ceiling_margin = 1.2", "ceiling_margin = 0.9"), "'ceiling_margin' must be a number >= 1"),
    (('student_files = ["toy.cu"]', "student_files = []"), "student_files"),
    (("[params]", "[params]\nbad = true"), "must be a lower_case name"),
    (("[lab]", "[lab]\nlibraries = [\"cudnn\"]"), "unknown libraries"),
    (("[[perf]]", "[surprise]\n[[perf]]"), "unknown table"),
    (("points = 10", 'points = 10\nsanitizer = "valgrind"'), "'sanitizer' must be one of the compute-sanitizer tools"),
    (("gpu = false", 'gpu = false\nsanitizer = "memcheck"'), "cannot say gpu = false"),
    (("points = 10", "points = 10\nserail = true"), r"unknown key\(s\) \['serail'\]"),
    (("points = 10", "points = 10\nshare_program = true"), "'share_program' is for a test that says serial = true"),
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


# A [[perf]] entry scored on its time over the slowest of other measurements of its case (a pipeline over its
# slowest stage alone), with thresholds and a falloff of its own.
OVERLAP = """over_slowest_of = ["stage_in", "stage_out"]
full_at = 1.1
zero_at = 1.5
falloff = "linear"
"""


def test_a_performance_item_may_be_scored_over_other_measurements_with_thresholds_of_its_own(toy_repo: Path):
    path = toy_repo / "labs/50-toy/lab.toml"
    [plain] = load_lab("50-toy", toy_repo).perf
    assert (plain.full_at, plain.zero_at, plain.falloff, plain.over_slowest_of) == (1.2, 10.0, "inverse", ())
    path.write_text(path.read_text() + OVERLAP)
    [spec] = load_lab("50-toy", toy_repo).perf
    assert (spec.full_at, spec.zero_at, spec.falloff) == (1.1, 1.5, "linear")
    assert spec.over_slowest_of == ("stage_in", "stage_out")
    assert spec.records == ("toy_kernel", "stage_in", "stage_out")


def test_a_performance_item_takes_the_labs_thresholds_unless_it_gives_its_own(toy_repo: Path):
    path = toy_repo / "labs/50-toy/lab.toml"
    path.write_text(path.read_text().replace("zero_at = 10.0", "zero_at = 4.0") + "full_at = 2.0\n")
    [spec] = load_lab("50-toy", toy_repo).perf
    assert (spec.full_at, spec.zero_at) == (2.0, 4.0)


@pytest.mark.parametrize("extra, message", [
    ("full_at = 1.5\nzero_at = 1.5\n", r"\[\[perf\]\] #1: zero_at \(1.5\) must be larger than full_at \(1.5\)"),
    ("full_at = 0.9\n", r"'full_at' must be a number >= 1"),
    ('falloff = "steep"\n', r"'falloff' must be one of \['inverse', 'linear'\], not 'steep'"),
    ("over_slowest_of = []\n", "'over_slowest_of' must name the measurements"),
    ('over_slowest_of = ["toy_kernel"]\n', "names the measurement itself"),
    ('over_slowest_of = "stage_in"\n', "'over_slowest_of' must be a list of strings"),
])
def test_performance_item_mistakes_are_named(toy_repo: Path, extra: str, message: str):
    path = toy_repo / "labs/50-toy/lab.toml"
    path.write_text(path.read_text() + extra)
    with pytest.raises(ConfigError, match=message):
        load_lab("50-toy", toy_repo)


SLOW_VARIANT = """
[[wrong]]
name = "no-overlap"
why = "waits after every chunk"
file = "toy.cu"
replace = "i < n"
by = "n > i"
keeps_at_most = { toy_kernel = 0.25 }
"""


def test_a_wrong_variant_may_name_the_performance_points_it_must_lose_instead_of_tests(toy_repo: Path):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + SLOW_VARIANT
                      + RIGHT_VARIANT + "timed = true\n")
    config = load_lab("50-toy", toy_repo)
    slow = config.wrong[1]
    assert slow.must_fail == () and slow.keeps_at_most == {"toy_kernel": 0.25}
    assert config.wrong[0].keeps_at_most == {}
    assert config.right[0].timed is True


@pytest.mark.parametrize("change, message", [
    (("keeps_at_most = { toy_kernel = 0.25 }\n", ""), "'must_fail' must name the tests .* or 'keeps_at_most'"),
    (("toy_kernel = 0.25", "toy_kernel = 1.0"), "keeps_at_most's 'toy_kernel' must be a share of its points"),
    (("toy_kernel = 0.25", "toy_kernel = true"), "keeps_at_most's 'toy_kernel' must be a share of its points"),
    (("toy_kernel = 0.25", "other_kernel = 0.25"), r"keeps_at_most names no measurement that earns points "
                                                   r"\(\[\[perf\]\] with points > 0\): \['other_kernel'\]"),
    (("keeps_at_most = { toy_kernel = 0.25 }", "keeps_at_most = 0.25"), "'keeps_at_most' must be a table"),
    (("keeps_at_most = { toy_kernel = 0.25 }", "keeps_at_most = { toy_kernel = 0.25 }\ntimed = true"),
     "'timed' is for a correct alternative"),
])
def test_bad_performance_expectations_of_variants_are_refused(toy_repo: Path, change, message):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + SLOW_VARIANT.replace(*change))
    with pytest.raises(ConfigError, match=message):
        load_lab("50-toy", toy_repo)


@pytest.mark.parametrize("extra, message", [
    ("keeps_at_most = { toy_kernel = 0.25 }\n", "a correct alternative has no 'keeps_at_most'"),
    ('timed = "yes"\n', "'timed' must be true or false"),
])
def test_bad_timed_correct_alternatives_are_refused(toy_repo: Path, extra: str, message: str):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + RIGHT_VARIANT + extra)
    with pytest.raises(ConfigError, match=message):
        load_lab("50-toy", toy_repo)


def test_the_pipelines_are_scored_on_their_overlap_and_their_no_overlap_variants_must_lose_it():
    """Issue 24: labs 08 and 12 score the overlap, each with a variant that overlaps nothing and must lose most of
    those points, and correct alternatives timed to keep them all."""
    for lab in ("08-streams", "12-libraries"):
        config = load_lab(lab)
        [spec] = config.perf
        assert spec.over_slowest_of == ("stage_copy_in", "stage_copy_out"), lab
        assert spec.falloff == "linear" and spec.zero_at <= 1.5, lab
        losing = [w for w in config.wrong if "pipelined" in w.keeps_at_most]
        assert losing and all(w.keeps_at_most["pipelined"] < 0.5 for w in losing), lab
        assert config.right and all(r.timed for r in config.right), lab
