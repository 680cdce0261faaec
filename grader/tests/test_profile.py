"""Profiler feedback (grader/profile.py) without a GPU: ncu's CSV read, the metrics derived, the hints chosen,
the report and roofline written, and a run with a stand-in for ncu."""
import json
import sys
from pathlib import Path

import pytest

from grader import cli, config as config_module, profile
from grader.config import ConfigError, ProfileHint, load_lab
from grader.tests.conftest import TOY_CONFIG_HEAD, write

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def rows(launch: int, kernel: str, metrics: dict[str, str]) -> list[str]:
    return [f'"{launch}","4242","01-vector-add-tests-runner","host","{kernel}","1","7","(256, 1, 1)","(4096, 1, 1)",'
            f'"0","9.0","Command line profiler metrics","{name}","","{value}"' for name, value in metrics.items()]


# What a launch of a vector add measures, in base units (nanoseconds, bytes), as ncu prints it.
VECTOR_ADD = {
    "gpu__time_duration.sum": "302,144", "dram__throughput.avg.pct_of_peak_sustained_elapsed": "91.2",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "78.5", "launch__registers_per_thread": "16",
    "launch__shared_mem_per_block_static": "0", "launch__shared_mem_per_block_dynamic": "0",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "16,777,216",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "4,194,304",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "8,388,608",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "2,097,152",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "0",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "0",
    "smsp__sass_inst_executed_op_shared_ld.sum": "0", "smsp__sass_inst_executed_op_shared_st.sum": "0",
    "lts__t_sector_hit_rate.pct": "33.4", "smsp__thread_inst_executed_pred_on.sum": "1,000",
    "smsp__inst_executed.sum": "40",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "2.1",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": "0",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": "67,108,864",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": "0", "dram__bytes.sum": "805,306,368",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": "16,896",
    "sm__cycles_elapsed.avg.per_second": "1,755,000,000", "dram__bytes.sum.peak_sustained": "1,024",
    "dram__cycles_elapsed.avg.per_second": "3,272,000,000",
}


def report_text(kernels: dict[str, dict[str, str]]) -> str:
    lines = ["==PROF== Connected to process 4242", HEADER]
    for launch, (kernel, metrics) in enumerate(kernels.items()):
        lines += rows(launch, kernel, metrics)
    return "\n".join(lines) + "\n"


def test_the_csv_is_read_past_ncus_own_lines_with_thousands_separators_and_the_longest_launch_kept():
    text = report_text({"vector_add_kernel": VECTOR_ADD}) + "\n".join(
        rows(9, "vector_add_kernel", {"gpu__time_duration.sum": "999"})) + "\n"
    kernels = profile.parse_report(text)
    assert list(kernels) == ["vector_add_kernel"]
    assert kernels["vector_add_kernel"]["gpu__time_duration.sum"] == 302144.0  # the longer launch, not launch 9
    assert kernels["vector_add_kernel"]["dram__bytes.sum"] == 805306368.0
    # A launcher's passes: the first, largest one is what its lesson is about, wherever it came among those measured.
    later_and_longer = text + "\n".join(rows(10, "vector_add_kernel", {"gpu__time_duration.sum": "1,000,000",
                                                                      "dram__bytes.sum": "7"})) + "\n"
    assert profile.parse_report(later_and_longer)["vector_add_kernel"] == {"gpu__time_duration.sum": 1e6,
                                                                           "dram__bytes.sum": 7.0}
    assert profile.parse_report("==PROF== no kernel matched\n") == {}


def test_a_kernel_is_known_by_its_plain_name_however_ncu_prints_it():
    text = report_text({"void kit::tile_scan_kernel<float>(const float *, float *, float *, int, bool)": VECTOR_ADD})
    assert list(profile.parse_report(text)) == ["tile_scan_kernel"]
    assert profile.base_name("vector_add_kernel(const float *, const float *, float *, int)") == "vector_add_kernel"
    assert profile.base_name("vector_add_kernel") == "vector_add_kernel"


def test_the_tables_metrics_are_derived_in_their_units():
    values = profile.derive(profile.parse_report(report_text({"k": VECTOR_ADD}))["k"])
    assert values["duration_ms"] == pytest.approx(0.302144)
    assert values["load_sectors"] == 4.0 and values["store_sectors"] == 4.0
    assert values["shared_bytes"] == 0.0
    assert values["bank_conflicts"] is None  # no shared-memory instruction: no ratio to show
    assert values["active_threads"] == 25.0
    transpose = dict(VECTOR_ADD, **{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "3,100",
                                    "smsp__sass_inst_executed_op_shared_ld.sum": "100",
                                    "smsp__sass_inst_executed_op_shared_st.sum": "100"})
    conflicts = profile.derive(profile.parse_report(report_text({"k": transpose}))["k"])["bank_conflicts"]
    assert conflicts == 15.5  # loads down a column of an unpadded tile (31 each), stores along rows (none)
    assert profile.derive({})["dram_pct"] is None


def test_the_config_and_the_profile_name_the_same_metrics_in_the_same_order():
    assert tuple(m.key for m in profile.METRICS) == config_module.PROFILE_METRICS


def test_a_hint_is_given_past_its_threshold_and_only_for_its_kernels():
    hints = [ProfileHint("bank_conflicts", "pad the tile", above=1.0, kernels=("transpose_(tiled|padded)_kernel",)),
             ProfileHint("dram_pct", "more threads in flight", below=60.0)]
    assert profile.matching_hints(hints, "transpose_tiled_kernel", {"bank_conflicts": 8.0, "dram_pct": 70.0}) == [
        "pad the tile"]
    assert profile.matching_hints(hints, "transpose_padded_kernel", {"bank_conflicts": 1.0, "dram_pct": 50.0}) == [
        "more threads in flight"]
    assert profile.matching_hints(hints, "transpose_naive_kernel", {"bank_conflicts": 8.0, "dram_pct": None}) == []


def test_the_roofline_places_a_kernel_under_this_gpus_roofs():
    raw = profile.parse_report(report_text({"k": VECTOR_ADD}))["k"]
    point = profile.roofline_point("k", raw)
    assert point.flops_per_byte == pytest.approx(67108864 / 805306368)
    assert point.gflops == pytest.approx(67108864 / 302144e-9 / 1e9)
    peak, bandwidth = profile.roofs(raw)
    assert peak == pytest.approx(2 * 16896 * 1.755e9 / 1e9)  # 59.3 TFLOP/s
    assert bandwidth == pytest.approx(1024 * 3.272e9 / 1e9)  # 3350 GB/s
    assert profile.roofline_point("k", {}) is None and profile.roofs({}) is None


def test_the_report_shows_each_kernel_beside_the_reference_with_its_hints_or_why_it_is_missing(lab01):
    raw = profile.parse_report(report_text({"vector_add_kernel": VECTOR_ADD}))
    slow = dict(raw["vector_add_kernel"], **{"dram__throughput.avg.pct_of_peak_sustained_elapsed": 30.0})
    text = profile.report(lab01, {"vector_add_kernel": slow}, raw, {})
    assert "vector_add_kernel:" in text and "yours" in text and "reference" in text
    line = next(l for l in text.splitlines() if l.strip().startswith("DRAM throughput"))
    assert line.split()[-2:] == ["30", "91.2"]
    assert "hint: The kernel moves data at less than 60%" in text
    alone = profile.report(lab01, {}, None, {"vector_add_kernel": "the test failed"})
    assert "vector_add_kernel: not measured: the test failed" in alone and "reference" not in alone


def test_the_roofline_picture_is_drawn(tmp_path: Path):
    pytest.importorskip("matplotlib")
    line = profile.draw_roofline(tmp_path / "r.png", "lab", [profile.RooflinePoint("k", 0.08, 220.0)], 59000.0, 3350.0)
    assert line == f"Roofline: {tmp_path / 'r.png'}"
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "no kernel" in profile.draw_roofline(tmp_path / "none.png", "lab", [], 59000.0, 3350.0)


# -- a run, with a stand-in for ncu -----------------------------------------------------------------------

FAKE_NCU = r'''#!PYTHON
import json, sys
args = sys.argv[1:]
behaviour = json.load(open(BEHAVIOUR))
kernel = args[args.index("--kernel-name") + 1]
log = args[args.index("--log-file") + 1]
with open(CALLS, "a") as calls:
    calls.write(json.dumps(args) + "\n")
if behaviour.get("locked"):
    open(log, "w").write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\n")
    sys.exit(1)
open(log, "w").write(behaviour.get(kernel, "==PROF== nothing matched\n"))
'''


def fake_ncu(tmp_path: Path, behaviour: dict) -> tuple[Path, Path]:
    (tmp_path / "behaviour.json").write_text(json.dumps(behaviour))
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.replace("PYTHON", sys.executable).replace("BEHAVIOUR", repr(str(tmp_path / "behaviour.json")))
                   .replace("CALLS", repr(str(tmp_path / "calls.jsonl"))))
    ncu.chmod(0o755)
    return ncu, tmp_path / "calls.jsonl"


def test_each_kernel_is_measured_in_a_run_of_its_timing_case_with_the_pinned_metrics(lab01, tmp_path: Path):
    ncu, calls = fake_ncu(tmp_path, {"vector_add_kernel": report_text({"vector_add_kernel": VECTOR_ADD})})
    profiled = profile.profile_build(lab01, Path("/bin/true"), ncu, tmp_path / "work")
    assert list(profiled.kernels) == ["vector_add_kernel"] and profiled.missing == {}
    [args] = [json.loads(line) for line in calls.read_text().splitlines()]
    assert args[args.index("--kernel-name") + 1] == "vector_add_kernel"
    assert "--launch-skip" not in args  # ncu replays a launch with its caches flushed: no warm-up to skip
    assert args[args.index("--launch-count") + 1] == str(profile.LAUNCHES_MEASURED)
    assert set(args[args.index("--metrics") + 1].split(",")) == set(profile.ncu_metrics())
    assert args[-3:] == ["/bin/true", f"--test-case={lab01.profile[0].case}", "--no-colors"]  # no runner: whole

    out = tmp_path / "out"
    text = profile.write_profile(lab01, profiled, None, out)
    assert (out / "report.txt").read_text() == text and "vector_add_kernel:" in text


def test_in_a_split_lab_the_runner_is_started_under_ncu(tmp_path: Path):
    judge = tmp_path / "lab-tests"
    judge.write_text("")
    (tmp_path / "lab-tests-runner").write_text("")
    run, env = profile.command(judge, "timing", ["ncu", "--kernel-name", "k"])
    assert run == [str(judge), "--test-case=timing", "--no-colors"]
    assert env == {"KIT_RUNNER_PREFIX": "ncu\n--kernel-name\nk"}  # one word a line, as the judge reads it


def test_a_kernel_ncu_never_saw_is_reported_missing_with_what_to_check(lab01, tmp_path: Path):
    ncu, _ = fake_ncu(tmp_path, {})
    profiled = profile.profile_build(lab01, Path("/bin/true"), ncu, tmp_path / "work")
    assert profiled.kernels == {}
    assert "saw no launch of it" in profiled.missing["vector_add_kernel"]
    assert "make test" in profiled.missing["vector_add_kernel"]


def test_locked_counters_stop_the_profile_with_how_to_unlock_them(lab01, tmp_path: Path):
    ncu, _ = fake_ncu(tmp_path, {"locked": True})
    with pytest.raises(profile.ProfileError, match="NVreg_RestrictProfilingToAdminUsers=0"):
        profile.profile_build(lab01, Path("/bin/true"), ncu, tmp_path / "work")


def test_without_ncu_the_command_says_where_it_looked(monkeypatch, capsys):
    monkeypatch.setattr(profile, "find_ncu", lambda: None)
    assert cli.main(["profile", "--lab", "07-transpose"]) == 2
    assert "Nsight Compute's `ncu` was not found" in capsys.readouterr().err


def test_a_lab_without_profile_entries_says_so(capsys):
    assert cli.main(["profile", "--lab", "00-device-basics"]) == 2
    assert "names no kernel to profile" in capsys.readouterr().err


@pytest.mark.parametrize("entry, problem", [
    ('[[profile]]\nkernel = "k"\ncase = "no such case"\n', "is no timing case"),
    ('[[profile]]\nkernel = "k<float>"\ncase = "toy timing: fast"\n', "plain name"),
    ('[[profile_hints]]\nmetric = "speed"\nabove = 1\ntext = "t"\n', "'metric' must be one of"),
    ('[[profile_hints]]\nmetric = "dram_pct"\nabove = 1\nbelow = 2\ntext = "t"\n', "'above' or 'below'"),
    ('[[profile_hints]]\nmetric = "dram_pct"\nbelow = 2\n', "'text' is required"),
])
def test_profile_entries_are_checked_when_the_config_is_read(tmp_path: Path, entry: str, problem: str):
    write(tmp_path / "labs/60-toy/lab.toml", TOY_CONFIG_HEAD + '\n[[perf]]\ncase = "toy timing: fast"\n'
          'measurement = "toy_kernel"\npoints = 20\n\n' + entry)
    with pytest.raises(ConfigError, match=problem):
        load_lab("60-toy", tmp_path)


TOY_WITH_PROFILE = (TOY_CONFIG_HEAD + '\n[[perf]]\ncase = "toy timing: fast"\nmeasurement = "toy_kernel"\npoints = 20\n\n'
                    '[[profile]]\nkernel = "toy_kernel"\ncase = "toy timing: fast"\n')
RIGHT_TOY = '[[right]]\nname = "other"\nwhy = "another kernel"\nfile = "toy.cu"\nreplace = "a"\nby = "b"\n'


@pytest.mark.parametrize("kernels, problem", [
    ('kernels = { no_such_kernel = "other_kernel" }', "names no \\[\\[profile\\]\\] kernel"),
    ('kernels = { toy_kernel = "other<int>" }', "plain name"),
    ('kernels = ["other_kernel"]', "must map the reference's kernel to the variant's"),
    ('kernels = { toy_kernel = "other_kernel" }\n[[wrong]]\nname = "w"\nwhy = "w"\nfile = "toy.cu"\nreplace = "a"\n'
     'by = "b"\nmust_fail = ["toy timing: fast"]\nkernels = { toy_kernel = "k" }', "is for a correct alternative"),
])
def test_a_right_variants_kernels_are_checked_when_the_config_is_read(tmp_path: Path, kernels: str, problem: str):
    write(tmp_path / "labs/60-toy/lab.toml", TOY_WITH_PROFILE)
    write(tmp_path / "solutions/60-toy/hidden.toml", RIGHT_TOY + kernels + "\n")
    with pytest.raises(ConfigError, match=problem):
        load_lab("60-toy", tmp_path)


def test_a_variant_whose_kernel_has_another_name_is_profiled_by_it_beside_the_one_it_replaces(tmp_path: Path):
    write(tmp_path / "labs/60-toy/lab.toml", TOY_WITH_PROFILE)
    write(tmp_path / "solutions/60-toy/hidden.toml", RIGHT_TOY + 'kernels = { toy_kernel = "other_kernel" }\n')
    config = load_lab("60-toy", tmp_path)
    entries, counterparts = profile.variant_entries(config, config.right[0])
    assert [(e.kernel, e.case) for e in entries] == [("other_kernel", "toy timing: fast")]
    assert counterparts == {"other_kernel": "toy_kernel"}

    ncu, calls = fake_ncu(tmp_path, {"other_kernel": report_text({"other_kernel": VECTOR_ADD})})
    mine = profile.profile_build(config, Path("/bin/true"), ncu, tmp_path / "work", entries=entries)
    [args] = [json.loads(line) for line in calls.read_text().splitlines()]
    assert args[args.index("--kernel-name") + 1] == "other_kernel"
    reference = profile.Profiled(profile.parse_report(report_text({"toy_kernel": VECTOR_ADD})), {})
    text = profile.write_profile(config, mine, reference, tmp_path / "out", "other", entries, counterparts)
    assert "other_kernel (the reference: toy_kernel):" in text and "not measured" not in text
    line = next(l for l in text.splitlines() if l.strip().startswith("DRAM throughput"))
    assert line.split()[-2:] == ["91.2", "91.2"]  # the reference's column is its toy_kernel's


def test_every_labs_profile_names_its_timing_cases_and_known_metrics():
    for lab in config_module.list_labs():
        config = load_lab(lab)
        assert {e.case for e in config.profile} <= set(config.timing_cases)
        assert all(hint.metric in config_module.PROFILE_METRICS for hint in config.profile_hints)
