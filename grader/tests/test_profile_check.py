"""Slow variants and what their profiles must show ([[slow]] in hidden.toml), `grader profile --variant` and
`--check`, and a submission's profile in its feedback (grade --profile, grade-class --profile), without a GPU:
ncu is a stand-in (test_profile.py's), and so are the builds where a real one would take minutes."""
import json
import os
from pathlib import Path

import pytest

from grader import build, classroom, cli, grade, profile, profilecheck, sandbox, variants
from grader.config import PROFILE_METRICS, ConfigError, Shows, list_labs, load_lab
from grader.build import BuildResult
from grader.gpulock import Gpu, GpuLock
from grader.tests.conftest import HIDDEN_TOML, LAB_TOML, TOY_CONFIG_HEAD, TOY_REFERENCE, write
from grader.tests.fake_gpu import FakeBuilds
from grader.tests.test_profile import HEADER, VECTOR_ADD, fake_ncu, report_text

PROFILED = LAB_TOML + '\n[[profile]]\nkernel = "toy_kernel"\ncase = "toy timing: fast"\n'
SLOW = '''
[[slow]]
name = "scattered"
why = "neighbouring threads take elements 8 apart"
file = "toy.cu"
replace = "int i = blockIdx.x * blockDim.x + threadIdx.x;"
by = "int i = blockIdx.x * blockDim.x + (threadIdx.x % 32) * 8 + threadIdx.x / 32;"
'''


def toy_lab(root: Path, slow: str, lab_toml: str = PROFILED):
    write(root / "labs/50-toy/lab.toml", lab_toml)
    write(root / "solutions/50-toy/hidden.toml", HIDDEN_TOML + slow)
    write(root / "solutions/50-toy/toy.cu", TOY_REFERENCE)
    return load_lab("50-toy", root)


# -- the config --------------------------------------------------------------------------------------------


def test_a_slow_variant_is_read_with_what_its_profile_must_show(tmp_path: Path):
    config = toy_lab(tmp_path, SLOW + 'shows = [{ metric = "load_sectors", more_than_reference = 4.0, above = 8 }]\n')
    [slow] = config.slow
    assert (slow.name, slow.file) == ("scattered", "toy.cu")
    # The kernel may be left out where the lab profiles one: it is that one.
    assert slow.shows == (Shows("toy_kernel", "load_sectors", more_than_reference=4.0, above=8.0),)
    made = variants.sources(config, "slow")["scattered"]["toy.cu"]
    assert "(threadIdx.x % 32) * 8" in made and variants.problems(config) == []


@pytest.mark.parametrize("shows, problem", [
    ("", "'shows' must list what its profile shows"),
    ('shows = []\n', "'shows' must list"),
    ('shows = [{ metric = "speed", above = 1 }]\n', "'metric' must be one of"),
    ('shows = [{ kernel = "other_kernel", metric = "dram_pct", below = 1 }]\n', "'kernel' must be one of the lab's "
                                                                               "\\[\\[profile\\]\\] kernels"),
    ('shows = [{ metric = "dram_pct" }]\n', "give at least one of more_than_reference"),
    ('shows = [{ metric = "dram_pct", more_than_reference = 2.0, below = 5 }]\n', "point opposite ways"),
    ('shows = [{ metric = "dram_pct", more_than_reference = 0.5 }]\n', "a factor of at least 1"),
    ('shows = [{ metric = "dram_pct", less_than_reference = 2.0 }]\n', "above 0 and at most 1"),
    ('shows = [{ metric = "dram_pct", above = 1, by = 2 }]\n', "unknown key\\(s\\) \\['by'\\]"),
    ('must_fail = ["toy: adds"]\nshows = [{ metric = "dram_pct", above = 1 }]\n', "a slow variant has no 'must_fail'"),
])
def test_slow_variants_are_checked_when_the_config_is_read(tmp_path: Path, shows: str, problem: str):
    with pytest.raises(ConfigError, match=problem):
        toy_lab(tmp_path, SLOW + shows)


def test_a_lab_with_two_profiled_kernels_needs_each_condition_to_name_its_kernel(tmp_path: Path):
    two = PROFILED + '\n[[profile]]\nkernel = "toy_again_kernel"\ncase = "toy timing: fast"\n'
    with pytest.raises(ConfigError, match="'kernel' must be one of"):
        toy_lab(tmp_path, SLOW + 'shows = [{ metric = "dram_pct", below = 1 }]\n', two)
    config = toy_lab(tmp_path, SLOW + 'shows = [{ kernel = "toy_again_kernel", metric = "dram_pct", below = 1 }]\n',
                     two)
    assert config.slow[0].shows[0].kernel == "toy_again_kernel"


def test_a_slow_variant_needs_a_profiled_kernel(tmp_path: Path):
    with pytest.raises(ConfigError, match="names no kernel to profile"):
        toy_lab(tmp_path, SLOW + 'shows = [{ metric = "dram_pct", below = 1 }]\n', LAB_TOML)


def test_every_timed_lab_has_a_slow_variant_that_applies_and_shows_a_profiled_kernel():
    for lab in list_labs():
        config = load_lab(lab)
        if not config.profile:
            continue
        assert config.slow, f"{lab} has no [[slow]] variant"
        assert variants.problems(config) == []
        profiled = {entry.kernel for entry in config.profile}
        assert all(s.kernel in profiled and s.metric in PROFILE_METRICS for v in config.slow for s in v.shows)


# -- judging what a profile shows ---------------------------------------------------------------------------

RAW = {k: float(v.replace(",", "")) for k, v in VECTOR_ADD.items()}  # 4 load sectors per request
SCATTERED = dict(RAW, **{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 32 * 4194304.0})  # 32 per request


def profiled(raw: dict | None, missing: str = "") -> profile.Profiled:
    return profile.Profiled({"k": raw} if raw else {}, {"k": missing} if missing else {})


@pytest.mark.parametrize("bounds, held", [
    (dict(more_than_reference=4.0), True),
    (dict(more_than_reference=10.0), False),
    (dict(above=30.0), True),
    (dict(more_than_reference=4.0, above=40.0), False),  # every bound given must hold
])
def test_a_condition_holds_only_where_every_bound_does(bounds: dict, held: bool):
    verdict = profile.judge_shows(Shows("k", "load_sectors", **bounds), profiled(SCATTERED), profiled(RAW))
    assert (verdict.value, verdict.reference, verdict.held) == (32.0, 4.0, held)
    assert verdict.line().startswith("ok  " if held else "FAIL")
    assert "32, the reference's 4" in verdict.line()


def test_a_condition_on_a_kernel_that_was_not_measured_fails_and_says_why():
    verdict = profile.judge_shows(Shows("k", "load_sectors", less_than_reference=0.5),
                                  profiled(None, "the program crashed"), profiled(RAW))
    assert not verdict.held and "was not measured: the program crashed" in verdict.line()
    no_reference = profile.judge_shows(Shows("k", "load_sectors", more_than_reference=2.0), profiled(SCATTERED),
                                       profiled(None, "its timing case failed"))
    assert not no_reference.held and "no reference value to compare with: its timing case failed" in \
        no_reference.line()
    # A fixed bound needs no reference.
    assert profile.judge_shows(Shows("k", "load_sectors", above=8.0), profiled(SCATTERED), profiled(None)).held


# -- profile --check and --variant, with builds and ncu stood in for ----------------------------------------

FAKE_NCU_BY_BINARY = r'''#!PYTHON
import json, sys
args = sys.argv[1:]
kernel = args[args.index("--kernel-name") + 1]
log = args[args.index("--log-file") + 1]
binary = args[args.index("--log-file") + 2]  # the program ncu starts, right after its own options
behaviour = json.load(open(BEHAVIOUR))
open(log, "w").write(behaviour.get(binary.rsplit("/", 1)[-1], {}).get(kernel, "==PROF== nothing matched\n"))
'''


def by_binary_ncu(tmp_path: Path, behaviour: dict) -> Path:
    (tmp_path / "behaviour.json").write_text(json.dumps(behaviour))
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU_BY_BINARY.replace("PYTHON", os.sys.executable)
                   .replace("BEHAVIOUR", repr(str(tmp_path / "behaviour.json"))))
    ncu.chmod(0o755)
    return ncu


@pytest.fixture
def fake_builds(tmp_path: Path, monkeypatch):
    """Builds that make an empty program named after what was built: 'reference', or the variant's folder."""
    def program(folder: Path, name: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        return path

    monkeypatch.setattr(build, "configure", lambda config, folder, student: BuildResult(True, None, ""))
    monkeypatch.setattr(grade, "build_reference", lambda config, folder: program(folder, "reference"))

    def build_submission(config, staged, folder, reference_build=None):
        if "compile error" in "".join(p.read_text() for p in staged.iterdir()):
            return BuildResult(False, None, "toy.cu:1: error: expected ';'")
        return BuildResult(True, program(folder, staged.parent.name), "")

    monkeypatch.setattr(grade, "build_submission", build_submission)
    monkeypatch.setattr(cli, "list_gpus", lambda: [Gpu(key="fake-gpu", visible="0")])
    monkeypatch.setenv("KIT_LOCK_DIR", str(tmp_path / "locks"))


def measured(sectors: float) -> str:
    raw = dict(VECTOR_ADD, **{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": f"{sectors * 4194304:.0f}"})
    return report_text({"toy_kernel": raw})


CHECKED = SLOW + 'shows = [{ metric = "load_sectors", more_than_reference = 4.0 }]\n'


def test_the_check_passes_where_the_variant_shows_what_it_must_and_writes_its_report(tmp_path: Path, fake_builds):
    config = toy_lab(tmp_path / "repo", CHECKED)
    ncu = by_binary_ncu(tmp_path, {"reference": {"toy_kernel": measured(4)},
                                   "slow-scattered": {"toy_kernel": measured(32)}})
    checked = profilecheck.check_lab(config, ncu, tmp_path / "work", tmp_path / "out", GpuLock("fake-gpu"))
    assert checked.passed, checked.summary()
    assert checked.lines == ["scattered: ok   toy_kernel: load_sectors 32, the reference's 4 (wanted: more than 4x "
                             "the reference's)"]
    text = (tmp_path / "out/report.txt").read_text()
    assert "Slow variant 'scattered': neighbouring threads take elements 8 apart" in text
    sectors = next(line for line in text.splitlines() if line.strip().startswith("global load sectors"))
    assert sectors.split()[-2:] == ["32", "4"]  # the variant's column, then the reference's
    assert text.split("\ntoy_kernel:\n")[1].splitlines()[0].split()[1:] == ["scattered", "reference"]


def test_the_check_fails_a_variant_that_shows_too_little_or_does_not_build(tmp_path: Path, fake_builds):
    config = toy_lab(tmp_path / "repo", CHECKED)
    ncu = by_binary_ncu(tmp_path, {"reference": {"toy_kernel": measured(4)},
                                   "slow-scattered": {"toy_kernel": measured(8)}})
    checked = profilecheck.check_lab(config, ncu, tmp_path / "work", tmp_path / "out", GpuLock("fake-gpu"))
    assert not checked.passed and "FAIL toy_kernel: load_sectors 8, the reference's 4" in checked.summary()
    assert "profile check FAILED" in checked.summary()

    broken = toy_lab(tmp_path / "repo", CHECKED.replace('by = "', 'by = "compile error '))
    checked = profilecheck.check_lab(broken, ncu, tmp_path / "work2", tmp_path / "out2", GpuLock("fake-gpu"))
    assert not checked.passed and "FAIL scattered: it does not build:\ntoy.cu:1: error" in checked.summary()


def test_the_check_command_gives_one_verdict_a_lab_and_exits_1_when_one_fails(tmp_path: Path, fake_builds,
                                                                               monkeypatch, capsys):
    root = tmp_path / "repo"
    toy_lab(root, CHECKED)
    monkeypatch.setattr(cli, "load_lab", lambda lab: load_lab(lab, root))
    monkeypatch.setattr(sandbox, "apply_policy", lambda untrusted, opted_out: None)
    for sectors, code, verdict in ((32, 0, "passed"), (5, 1, "FAILED")):
        ncu = by_binary_ncu(tmp_path, {"reference": {"toy_kernel": measured(4)},
                                       "slow-scattered": {"toy_kernel": measured(sectors)}})
        monkeypatch.setattr(profile, "find_ncu", lambda: ncu)
        out = tmp_path / f"out-{sectors}"
        assert cli.main(["profile", "--check", "--lab", "50-toy", "--out", str(out)]) == code
        printed = capsys.readouterr().out
        assert f"50-toy: profile check {verdict}" in printed
        assert f"Profile check: {1 - code} of 1 labs passed" in printed
        assert (out / "50-toy/report.txt").is_file()


def profile_command_on_toy_lab(tmp_path: Path, monkeypatch, hidden: str, sectors_by_build: dict[str, float]) -> None:
    """`grader profile` on the toy lab with `hidden` as its variants, each build's load sectors stood in for."""
    root = tmp_path / "repo"
    toy_lab(root, hidden)
    monkeypatch.setattr(cli, "load_lab", lambda lab: load_lab(lab, root))
    monkeypatch.setattr(sandbox, "apply_policy", lambda untrusted, opted_out: None)
    monkeypatch.setattr(cli, "build_reference", lambda config, folder: grade.build_reference(config, folder))
    monkeypatch.setattr(cli, "check_configured", lambda config, configured: None)
    ncu = by_binary_ncu(tmp_path, {name: {"toy_kernel": measured(sectors)}
                                   for name, sectors in sectors_by_build.items()})
    monkeypatch.setattr(profile, "find_ncu", lambda: ncu)


def test_profile_variant_shows_a_slow_variant_beside_the_reference(tmp_path: Path, fake_builds, monkeypatch, capsys):
    profile_command_on_toy_lab(tmp_path, monkeypatch, CHECKED, {"reference": 4, "slow-scattered": 32})
    out = tmp_path / "out"
    assert cli.main(["profile", "--lab", "50-toy", "--variant", "scattered", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "scattered" in printed and "reference" in printed
    assert (out / "50-toy/slow-scattered/report.txt").read_text().startswith("Profile of 50-toy")
    assert cli.main(["profile", "--lab", "50-toy", "--variant", "no-such"]) == 2
    assert "has no slow variant or correct alternative 'no-such'" in capsys.readouterr().err


RIGHT_TOY = """
[[right]]
name = "index-reordered"
why = "a journey's step, say: the same index, its terms the other way round"
file = "toy.cu"
replace = "int i = blockIdx.x * blockDim.x + threadIdx.x;"
by = "int i = threadIdx.x + blockIdx.x * blockDim.x;"
"""


def test_profile_variant_shows_a_correct_alternative_beside_the_reference(tmp_path: Path, fake_builds, monkeypatch):
    profile_command_on_toy_lab(tmp_path, monkeypatch, CHECKED + RIGHT_TOY, {"reference": 4, "right-index-reordered": 6})
    out = tmp_path / "out"
    assert cli.main(["profile", "--lab", "50-toy", "--variant", "index-reordered", "--out", str(out)]) == 0
    report = (out / "50-toy/right-index-reordered/report.txt").read_text()
    sectors = next(line for line in report.splitlines() if line.strip().startswith("global load sectors"))
    assert sectors.split()[-2:] == ["6", "4"]  # the alternative's column, then the reference's


# -- a submission's profile in its feedback -----------------------------------------------------------------


def test_untrusted_code_is_profiled_with_ncu_inside_its_sandbox(tmp_path: Path, monkeypatch):
    judge = tmp_path / "lab-tests"
    judge.write_text("")
    (tmp_path / "lab-tests-runner").write_text("")
    confined = []
    monkeypatch.setattr(sandbox, "confine", lambda command, spec: confined.append(spec) or ["bwrap", *command])
    written = tmp_path / "ncu-out"
    run, env = profile.confined_command(judge, "timing", ["ncu", "--log-file", str(written / "r.csv")], written,
                                        tmp_path, None)
    assert run == [str(judge), "--test-case=timing", "--no-colors"]  # the judge itself stays outside
    assert env["KIT_RUNNER_PREFIX"].split("\n") == ["bwrap", "ncu", "--log-file", str(written / "r.csv")]
    assert env["KIT_RUNNER"] == str(tmp_path / "lab-tests-runner")
    [spec] = confined
    assert spec.writable == (written,) and spec.gpu and spec.readable == (tmp_path / "lab-tests-runner",)


def test_a_report_the_sandbox_could_have_written_is_read_as_untrusted_text(tmp_path: Path):
    secret = tmp_path / "grader-only.txt"
    secret.write_text("not for students")
    (tmp_path / "link.csv").symlink_to(secret)
    assert profile.read_untrusted(tmp_path / "link.csv") == ""  # a link could lead out of the sandbox
    os.mkfifo(tmp_path / "fifo.csv")
    assert profile.read_untrusted(tmp_path / "fifo.csv") == ""  # and a pipe would never end
    (tmp_path / "big.csv").write_text("x" * 100)
    assert profile.read_untrusted(tmp_path / "big.csv", limit=10) == "x" * 10
    assert profile.read_untrusted(tmp_path / "none.csv") == ""


def test_feedback_profiles_only_kernels_whose_timing_passed_and_says_it_costs_no_points(lab01, tmp_path: Path):
    ncu, calls = fake_ncu(tmp_path, {"vector_add_kernel": report_text({"vector_add_kernel": VECTOR_ADD})})
    case = lab01.profile[0].case
    mine = profile.profile_submission(lab01, Path("/bin/true"), ncu, tmp_path / "work", {case: "passed"})
    text = profile.feedback(lab01, mine, mine)
    assert text.startswith(profile.FEEDBACK_HEAD) and "earns and costs no points" in text
    assert "vector_add_kernel:" in text and "reference" in text

    calls.unlink()
    failed = profile.profile_submission(lab01, Path("/bin/true"), ncu, tmp_path / "work", {case: "failed"})
    assert not calls.exists()  # nothing ran under ncu
    assert "its timing case" in profile.feedback(lab01, failed, None) and "did not pass in grading" in \
        profile.feedback(lab01, failed, None)
    assert "Nsight Compute (ncu) is not installed" in profile.profile_submission(lab01, Path("/bin/true"), None,
                                                                                 tmp_path, {case: "passed"})
    locked, _ = fake_ncu(tmp_path / "locked", {"locked": True}) if (tmp_path / "locked").mkdir() is None else None
    said = profile.profile_submission(lab01, Path("/bin/true"), locked, tmp_path / "w2", {case: "passed"})
    assert "does not let Nsight Compute read the GPU's performance counters" in said


def test_a_submissions_profile_feedback_never_raises_whatever_it_wrote_for_ncu(lab01, tmp_path: Path):
    # The sandbox lets the submission write ncu's CSV: a field past the csv module's limit ends the reading there.
    hostile = report_text({"vector_add_kernel": VECTOR_ADD}) + '"' + "x" * 200_000 + '"\n'
    assert "vector_add_kernel" in profile.parse_report(hostile)
    assert profile.parse_report(HEADER + '\n"' + "x" * 200_000 + '"\n') == {}
    ncu, _ = fake_ncu(tmp_path, {"vector_add_kernel": hostile})
    case = lab01.profile[0].case

    def locked_reference():
        raise profile.ProfileError("counters locked")
    text = profile.submission_feedback(lab01, Path("/bin/true"), ncu, tmp_path / "work", {case: "passed"},
                                       locked_reference)
    assert text.startswith(profile.FEEDBACK_HEAD) and "vector_add_kernel:" in text
    assert "reference" not in text.split("vector_add_kernel:", 1)[1].splitlines()[1]  # the student's table alone

    def broken_reference():
        raise OSError("disk full")
    text = profile.submission_feedback(lab01, Path("/bin/true"), ncu, tmp_path / "w2", {case: "passed"},
                                       broken_reference)
    assert text == "No profile: the grader could not run it (OSError: disk full)."


def test_the_feedback_joins_the_output_and_leaves_the_score_alone(lab01):
    graded = grade.finish(lab01, grade.all_zero(lab01, "not run"), "Graded on a GPU.", 0.0)
    score = graded.results["score"]
    grade.add_feedback(graded, "Profile of your timed kernels ...")
    assert graded.results["output"] == "Graded on a GPU.\n\nProfile of your timed kernels ..."
    assert graded.table.endswith("Profile of your timed kernels ...") and graded.results["score"] == score


CLASS_TOML = TOY_CONFIG_HEAD + '''
[[tests]]
name = "toy: adds"
points = 10

[[perf]]
case = "toy timing: fast"
measurement = "toy_kernel"
points = 20

[[profile]]
kernel = "toy_kernel"
case = "toy timing: fast"
'''


@pytest.mark.parametrize("with_profile", [False, True])
def test_class_grading_adds_a_profile_to_each_timed_students_feedback_only_when_asked(tmp_path: Path, monkeypatch,
                                                                                     with_profile: bool):
    root = tmp_path / "repo"
    write(root / "labs/60-toy/lab.toml", CLASS_TOML)
    write(root / "solutions/60-toy/hidden.toml", "[grading]\nseed = 7\n")
    write(root / "solutions/60-toy/toy.cu", "// fake: {}\n")
    config = load_lab("60-toy", root)
    fakes = FakeBuilds(config, tmp_path / "runs.jsonl", reference={"medians": [0.001]})
    monkeypatch.setattr(classroom.grade, "build_submission", fakes.build_submission)
    monkeypatch.setattr(classroom, "build_reference_tree", fakes.build_reference_tree)
    monkeypatch.setattr(classroom, "list_gpus", lambda: [Gpu(key="fake-gpu", visible="0", name="Fake GPU")])
    monkeypatch.setenv("KIT_LOCK_DIR", str(tmp_path / "locks"))
    ncu, calls = fake_ncu(tmp_path, {"toy_kernel": report_text({"toy_kernel": VECTOR_ADD})})
    monkeypatch.setattr(profile, "find_ncu", lambda: ncu)
    write(tmp_path / "in/alice/toy.cu", "// fake: {}\n")
    write(tmp_path / "in/carol/toy.cu", '// fake: {"fail": ["toy: adds"]}\n')  # not timed, so not profiled
    classroom.grade_class(config, tmp_path / "in", tmp_path / "out", tmp_path / "work",
                          classroom.ClassOptions(jobs=2, gpu_jobs=2, profile=with_profile),
                          stream=open(os.devnull, "w"))
    alice = json.loads((tmp_path / "out/alice/results.json").read_text())
    carol = json.loads((tmp_path / "out/carol/results.json").read_text())
    assert alice["score"] == 30 and carol["score"] == 0  # the same with or without the profile
    assert ("earns and costs no points" in alice["output"]) == with_profile
    assert ("toy_kernel:" in alice["output"]) == with_profile
    assert "Nsight" not in carol["output"]  # never timed, so never profiled: her timing item says why
    if with_profile:
        # alice's kernel and the reference's, once each; carol's never.
        assert len(calls.read_text().splitlines()) == 2
    else:
        assert not calls.exists()
