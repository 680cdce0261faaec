"""The class benchmark's parts that need no GPU: the generated class, the broken submissions, the analysis."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import proc, sandbox
from grader.bench import class_bench
from grader.config import REPO_ROOT, ConfigError

KERNEL = "__global__ void add(float* c, int n) {\n  c[0] = 1.0f;\n}\nvoid launch() {\n  add<<<1, 1>>>(c, n);\n}\n"


def test_a_class_of_200_has_every_kind_and_mostly_references():
    kinds = class_bench.composition(200, wrong=4)
    assert len(kinds) == 200
    assert {"compile-error", "forbidden", "skeleton", "faults", "never-ends", "slow"} <= set(kinds)
    assert {f"wrong-{i}" for i in range(4)} <= set(kinds)
    assert kinds.count("never-ends") == 1 and kinds.count("slow") == 10
    assert kinds.count("reference") > 100


def test_a_run_is_held_to_the_class_target_at_its_pace():
    assert class_bench.class_pace(60.0, 20, graded=20) == {"per_student_s": 3.0, "class_of_200_s": 600.0,
                                                           "class_of_200_paid_once_s": 600.0,
                                                           "within_class_target": True}
    assert class_bench.class_pace(61.0, 20, graded=20)["within_class_target"] is False
    # A run that stopped before grading 20, or graded nobody, is fast but says nothing of the target.
    assert class_bench.class_pace(10.0, 20, graded=12) == {"per_student_s": None, "class_of_200_s": None,
                                                          "class_of_200_paid_once_s": None,
                                                          "within_class_target": False}
    assert class_bench.class_pace(0.0, 0, graded=0)["within_class_target"] is False
    stopped = {"graded": 12, **class_bench.class_pace(10.0, 20, graded=12)}
    assert "12 of 20 students graded, fewer than the 20" in class_bench.pace_line("01-vector-add", stopped, 20)
    done = {"graded": 20, **class_bench.class_pace(80.0, 20, graded=20)}
    assert class_bench.pace_line("01-vector-add", done, 20) == \
        ("01-vector-add: 4.0 s a student, so 800 s for a class of 200 on this machine: OVER the 600 s target; "
         "a Slurm array of 2 GPUs (grader slurm --shards 2) takes about 400 s. A class of 20 also pays the "
         "reference's build and one student's whole grading, start to finish, before its pace settles, so it "
         "overstates a class of 200: run N=200 to know")
    whole = {"graded": 200, **class_bench.class_pace(800.0, 200, graded=200)}
    assert "overstates" not in class_bench.pace_line("01-vector-add", whole, 200)


def test_a_run_stopped_after_an_even_sample_of_20_or_more_is_held_to_the_target_at_its_pace():
    # 71 of 200 graded in 470 s: 6.62 s each (those still in flight cost time too, so the pace errs slow)
    pace = class_bench.class_pace(470.0, 200, graded=71, fixed_s=25.0)
    assert pace["per_student_s"] == 6.62 and pace["class_of_200_s"] == 1323.9 and not pace["within_class_target"]
    assert pace["slurm"]["shards"] == 3
    line = class_bench.pace_line("05-reduction", {"graded": 71, **pace}, 200)
    assert "stopped after 71 of 200, an even sample" in line and "OVER the 600 s target" in line
    assert class_bench.class_pace(50.0, 200, graded=20)["within_class_target"] is True
    # what no scheduling can overlap: each student's time with the GPU alone, times the class
    held = {"graded": 71, "phases_s": {"serial_and_timing_s": {"mean": 3.27}}, **pace}
    assert "held the GPU alone 3.27 s each (serial tests and timing), 654 s of any class of 200" in \
        class_bench.pace_line("05-reduction", held, 200)


def test_a_lab_past_the_target_is_given_the_slurm_array_that_meets_it():
    # Each task pays the reference's build and timing, then grades its share at the run's pace without them.
    assert class_bench.class_pace(120.0, 20, graded=20, fixed_s=20.0)["slurm"] == {"shards": 2, "task_s": 520.0}
    assert class_bench.slurm_shards(3.0, 100.0) == {"shards": 2, "task_s": 400.0}
    assert class_bench.slurm_shards(9.0, 0.0) == {"shards": 4, "task_s": 450.0}
    assert class_bench.slurm_shards(700.0, 0.0) is None  # not even one student a task fits
    assert "slurm" not in class_bench.class_pace(60.0, 20, graded=20)  # within the target: none needed
    # Over the target only because the reference's 21 s counted in each of 69 students' pace: one GPU, said so.
    near = {"graded": 69, **class_bench.class_pace(217.7, 200, graded=69, fixed_s=21.2)}
    assert near["class_of_200_s"] == 631.0 and near["class_of_200_paid_once_s"] == 590.8
    assert "slurm" not in near  # one GPU is enough: no array to suggest
    line = class_bench.pace_line("02-picture-kernel", near, 200)
    assert "OVER the 600 s target" in line and "Slurm array of 1" not in line
    assert "reference's build and timing paid once rather than in each student's pace, one GPU grades the class " \
           "in about 591 s" in line


def test_a_class_can_be_generated_without_a_kind_to_see_a_run_apart_from_it():
    whole = class_bench.composition(200, wrong=4)
    assert {class_bench.family(k) for k in whole} - {"reference"} == set(class_bench.KINDS)  # every kind named
    without = class_bench.composition(200, wrong=4, leave_out=frozenset({"never-ends", "wrong"}))
    assert len(without) == 200 and "never-ends" not in without
    assert not any(k.startswith("wrong-") for k in without)
    assert without.count("reference") == whole.count("reference") + 1 + sum(k.startswith("wrong-") for k in whole)
    assert [k for k in without if k != "reference"] == [k for k in whole if k not in ("reference", "never-ends")
                                                        and not k.startswith("wrong-")]  # the rest where it was
    entry = {"graded": 200, **class_bench.class_pace(150.0, 200, graded=200)}
    assert "without its never-ends submissions" in class_bench.pace_line("01-vector-add", entry, 200, ("never-ends",))
    assert "without" not in class_bench.pace_line("01-vector-add", entry, 200)


def test_leave_out_is_refused_for_a_class_given_by_its_submissions(tmp_path, capsys):
    with pytest.raises(SystemExit):
        class_bench.main(["--lab", "01-vector-add", "--submissions", str(tmp_path), "--leave-out", "never-ends"])
    assert "--leave-out shapes a generated class" in capsys.readouterr().err


def test_a_smaller_class_is_an_even_sample_of_the_class_of_200():
    # Lab 05 has 20 wrong variants: one of each kind would make a class of 20 13 wrong and 1 reference.
    kinds = class_bench.composition(20, wrong=20)
    assert len(kinds) == 20 and kinds[0] == "reference"
    assert kinds.count("reference") == 14 and sum(k.startswith("wrong-") for k in kinds) == 4
    assert kinds.count("slow") == 1
    assert class_bench.composition(1, wrong=2) == ["reference"]
    assert len(class_bench.composition(400, wrong=4)) == 400  # larger classes keep their own shares


def test_each_kind_is_spread_through_the_roster_so_a_stopped_run_graded_a_sample():
    kinds = class_bench.composition(200, wrong=20)
    first_quarter = kinds[:50]
    assert kinds[0] == "reference"
    assert abs(first_quarter.count("reference") - kinds.count("reference") / 4) <= 1
    assert sum(k.startswith("wrong-") for k in first_quarter) == 10  # 40 wrong in all, variants in turn
    assert first_quarter.count("slow") in (2, 3) and kinds.count("slow") == 10
    assert sorted(class_bench.spread(["b", "a", "b", "wrong-1", "wrong-0"])) == ["a", "b", "b", "wrong-0", "wrong-1"]


@pytest.mark.parametrize("kind, expected", [
    ("never-ends", "while (clock64() >= 0)"),
    ("faults", "*static_cast<volatile int*>(nullptr) = 0;"),
    ("forbidden", "= system;"),
    ("compile-error", "int this_line_does_not_compile = ;"),
])
def test_each_broken_kind_changes_the_reference_as_it_says(kind: str, expected: str):
    text = class_bench.broken(kind, KERNEL)
    assert expected in text and text != KERNEL


def test_a_slow_submission_launches_every_kernel_twice():
    assert class_bench.broken("slow", KERNEL).count("add<<<1, 1>>>(c, n);") == 2


def test_the_analysis_sums_phases_and_cases(lab01, tmp_path: Path):
    for student, score, kind in (("s0", 100.0, "reference"), ("s1", 40.0, "wrong x")):
        folder = tmp_path / student
        folder.mkdir()
        extra = {"phases_s": {"build_s": 10.0}, "case_s": {"a": {"run": 2.0, "test": 1.5}, "b": {"run": 1.0, "test": 0.5}},
                 "found_busy_beside_others": ["a"]}
        tests = [{"name": "performance: vector_add_kernel", "score": 30.0 if kind == "reference" else 0.0,
                  "max_score": 30.0}]
        (folder / "results.json").write_text(json.dumps({"score": score, "tests": tests, "extra_data": extra}))
    report = class_bench.analyse(lab01, {"s0": "reference", "s1": "wrong x"}, tmp_path)
    assert report["graded"] == 2 and report["references_full_marks"] == "1/1"
    assert report["phases_s"]["build_s"]["sum"] == 20.0
    assert list(report["cases_s"]) == ["a", "b"]  # the costliest first
    assert report["cases_s"]["a"]["run"]["mean"] == 2.0 and report["cases_s"]["a"]["test"]["sum"] == 3.0
    assert report["scores_by_kind"]["wrong"]["mean"] == 40.0
    assert report["phases_by_kind_s"] == {"reference": {"build_s": 10.0}, "wrong": {"build_s": 10.0}}
    assert report["found_busy_beside_others"] == {"a": 2}


def test_the_analysis_shows_what_each_measurement_of_a_timing_case_took(lab01, tmp_path: Path):
    case = "vector add timing: kernel on device-resident vectors"
    for student, took in (("s0", 0.4), ("s1", 0.6)):
        folder = tmp_path / student
        folder.mkdir()
        records = [{"name": "copy ceiling", "median_s": 1e-4, "took_s": 0.1},
                   {"name": "vector_add_kernel", "median_s": 3e-4, "took_s": took, "took_verify_s": took / 2,
                    "took_clocked_s": 0.1},
                   {"name": "from an older harness", "median_s": 3e-4}]
        (folder / "results.json").write_text(json.dumps({"score": 85.0, "tests": [],
                                                         "extra_data": {"timings": {case: records}}}))
    report = class_bench.analyse(lab01, {"s0": "reference", "s1": "reference"}, tmp_path)
    took = report["measurements_s"][case]
    assert list(took) == ["vector_add_kernel", "copy ceiling"]  # the costliest first; no took_s, not shown
    assert took["vector_add_kernel"]["sum"] == 1.0 and took["copy ceiling"]["mean"] == 0.1
    # where the kernel's measurement went, on average: half of it in the checks against the reference
    assert report["measurement_parts_s"][case] == {"vector_add_kernel": {"verify": 0.25, "rest": 0.15, "clocked": 0.1}}


def test_the_analysis_splits_a_reference_copys_timing_program_into_start_set_up_and_measuring(lab01, tmp_path: Path):
    timed = list(lab01.timing_cases)
    for student, run in (("s0", 1.0), ("s1", 1.4), ("s2", 9.0)):
        folder = tmp_path / student
        folder.mkdir()
        # an even share of the program's run for each case; each case's own seconds; its measurements' took_s
        extra = {"case_s": {case: {"run": run / len(timed), "test": 0.6 / len(timed)} for case in timed},
                 "timings": {case: [{"name": "m", "median_s": 1e-4, "took_s": 0.4 / len(timed)}] for case in timed}}
        (folder / "results.json").write_text(json.dumps({"score": 100.0, "tests": [], "extra_data": extra}))
    report = class_bench.analyse(lab01, {"s0": "reference", "s1": "reference", "s2": "slow"}, tmp_path)
    # the slow copy is no reference: the mean of s0 and s1 alone
    assert report["timing_program_s"] == {"program": 1.2, "start_and_exit": 0.6, "set_up_in_cases": 0.2,
                                          "measurements": 0.4}
    (tmp_path / "s1" / "results.json").write_text(json.dumps({"score": 0.0, "tests": [], "extra_data": {}}))
    assert class_bench.analyse(lab01, {"s1": "reference"}, tmp_path)["timing_program_s"] == {}  # never timed


def test_the_report_numbers_hidden_tests_instead_of_naming_them(lab01, tmp_path: Path):
    hidden = next(t.name for t in lab01.tests if t.hidden)
    folder = tmp_path / "s0"
    folder.mkdir()
    extra = {"case_s": {hidden: {"run": 1.0, "test": 0.5}}}
    (folder / "results.json").write_text(json.dumps({"score": 100.0, "tests": [], "extra_data": extra}))
    report = class_bench.analyse(lab01, {"s0": "reference"}, tmp_path)
    assert hidden not in json.dumps(report)
    assert list(report["cases_s"]) == [f"hidden test 1 of {lab01.name} (named in solutions/)"]


def test_the_report_says_where_reference_copies_lost_points_without_hidden_text(lab01, tmp_path: Path):
    hidden = next(t.name for t in lab01.tests if t.hidden)
    public, blank = [t.name for t in lab01.tests if not t.hidden][:2]
    lost = {"s0": [(hidden, "n = 268435459: the check could not run"), (public, "1 of 3 elements wrong\nat 7")],
            "s1": [(hidden, "the same")], "s2": []}
    for student, tests in lost.items():
        folder = tmp_path / student
        folder.mkdir()
        results = [{"name": name, "score": 0.0, "max_score": 8.0, "output": told} for name, told in tests]
        results.append({"name": blank, "score": 0.0, "max_score": 6.0, "output": " \n"})
        results.append({"name": "performance: vector_add_kernel", "score": 3.0, "max_score": 3.0, "output": ""})
        results.append({"name": "Q1: Your kernel against the copy ceiling", "max_score": 5.0, "output": ""})  # by hand
        (folder / "results.json").write_text(json.dumps({"score": 0.0, "tests": results, "extra_data": {}}))
    report = class_bench.analyse(lab01, {s: "reference" for s in lost}, tmp_path)
    losses = report["reference_copies_losing_points"]
    shown = next(name for name in losses if name != public)
    assert losses[shown] == {"copies": 2, "students": ["s0", "s1"]}  # which, but not what a hidden test said
    assert losses[public] == {"copies": 1, "students": ["s0"], "told": "1 of 3 elements wrong"}
    assert losses[blank]["told"] == ""  # an output of blanks says nothing
    assert hidden not in json.dumps(report) and "268435459" not in json.dumps(report)


def _gpu_result(gpu: str, score: float, programs: list, reference_at: list, reference_median: float,
                reference_gpu: str = "") -> dict:
    """A student's results scored on `gpu`, against the reference timed at `reference_at` on `reference_gpu`
    (default: the same GPU)."""
    extra = {"scored_on_gpu": {"key": gpu, "name": "H100", "cuda_visible_devices": gpu}, "programs": programs,
             "reference_programs": [{"cases": ["t"], "hold": "alone", "at": reference_at,
                                     "gpu": reference_gpu or gpu}],
             "reference_timings": {"t": [{"name": "k", "median_s": reference_median}]}}
    return {"score": score, "tests": [], "extra_data": extra}


def test_each_gpu_is_reported_with_its_own_reference_and_overlaps_are_caught(lab01):
    full = lab01.autograded_points
    results = {
        "s0": _gpu_result("gpu-0", full, [{"cases": ["a"], "hold": "shared", "at": [10.0, 12.0], "gpu": "gpu-0"},
                                          {"cases": ["t"], "hold": "alone", "at": [12.5, 13.5], "gpu": "gpu-0"}],
                          [1.0, 2.0], 1e-3),
        # on the other GPU at the same time: no overlap, since overlaps count on one GPU only
        "s1": _gpu_result("gpu-1", full, [{"cases": ["t"], "hold": "alone", "at": [12.6, 13.4], "gpu": "gpu-1"}],
                          [1.1, 2.1], 1.1e-3),
        # tested on gpu-0 while s0 was timed there (the lock failed), then timed on gpu-1 and scored there
        "s2": _gpu_result("gpu-1", full - 1, [{"cases": ["a"], "hold": "shared", "at": [13.0, 14.0], "gpu": "gpu-0"},
                                              {"cases": ["t"], "hold": "alone", "at": [14.5, 15.0], "gpu": "gpu-1"}],
                          [1.1, 2.1], 1.1e-3),
    }
    kinds = {"s0": "reference", "s1": "reference", "s2": "reference", "s3": "compile-error"}
    results["s3"] = {"score": 0.0, "tests": [], "extra_data": {}}  # ran nowhere: no GPU's
    report = class_bench.gpus(lab01, kinds, results)
    assert set(report) == {"gpu-0", "gpu-1"}
    assert report["gpu-1"]["students"] == 2 and report["gpu-1"]["references_full_marks"] == 1
    assert report["gpu-1"]["reference_timings"] == [{"t": [1.1e-3]}]
    assert report["gpu-0"]["last_program_ended_s"] == 13.0 and report["gpu-1"]["last_program_ended_s"] == 14.0
    assert all(gpu["timed_against_its_own_reference"] for gpu in report.values())
    exclusivity = class_bench.gpu_exclusivity(results)
    assert exclusivity["gpu-1"] == {"programs": 3, "alone": 3, "overlapping_an_alone_one": []}
    [overlap] = exclusivity["gpu-0"]["overlapping_an_alone_one"]
    assert overlap.startswith("s0 (alone") and "s2 (shared" in overlap


def test_programs_are_timed_by_the_company_they_kept_and_the_gpus_idle_time_is_shown():
    group = {"cases": ["a", "b"], "hold": "shared"}
    results = {
        # two group programs side by side for 2 s of their 4, then each alone: about half a neighbour each
        "s0": _gpu_result("gpu-0", 0.0, [dict(group, at=[0.0, 4.0]), {"cases": ["t"], "hold": "alone",
                                                                          "at": [8.0, 9.0]}], [20.0, 21.0], 1e-3),
        "s1": _gpu_result("gpu-0", 0.0, [dict(group, at=[2.0, 6.0]),
                                          {"cases": ["m"], "hold": "shared", "at": [10.0, 12.0]}], [20.0, 21.0], 1e-3),
    }
    durations = class_bench.program_durations(results)["gpu-0"]
    assert durations["shared, several cases"] == {"under 1": {"count": 2, "sum": 8.0, "mean": 4.0, "median": 4.0,
                                                             "max": 4.0}}
    assert durations["alone"]["under 1"]["count"] == 2  # the student's timing and the reference's
    assert durations["shared, one case"]["under 1"]["median"] == 2.0
    # from 0 to 21 s: 2 s with both groups; 2 + 2 + 1 + 2 + 1 s with one program; 2 + 1 + 8 s with none
    levels = class_bench.gpu_busy_levels(results)["gpu-0"]
    assert levels == {"0": round(11.0 / 21, 3), "1": round(8.0 / 21, 3), "2": round(2.0 / 21, 3)}


def test_program_starts_are_counted_a_student_and_a_second_on_each_gpu():
    group = {"cases": ["a", "b"], "hold": "shared"}
    results = {
        "s0": _gpu_result("gpu-0", 0.0, [dict(group, at=[0.0, 4.0]), {"cases": ["t"], "hold": "alone",
                                                                          "at": [8.0, 9.0]}], [19.0, 20.0], 1e-3),
        "s1": _gpu_result("gpu-0", 0.0, [dict(group, at=[2.0, 6.0])], [19.0, 20.0], 1e-3),
        "s2": _gpu_result("gpu-1", 0.0, [dict(group, at=[5.0, 7.0])], [1.0, 3.0], 1e-3),
    }
    starts = class_bench.program_starts(results)
    # gpu-0: three students' programs and the reference's timing, from 0 to 20 s, for two students
    assert starts["gpu-0"] == {"programs": 4, "per_student": 2.0, "per_second": 0.2}
    assert starts["gpu-1"] == {"programs": 2, "per_student": 2.0, "per_second": round(2 / 6.0, 2)}


def test_a_gpu_scored_against_two_reference_timings_or_another_gpus_is_flagged(lab01):
    one = _gpu_result("gpu-0", 0.0, [], [1.0, 2.0], 1e-3)
    other = _gpu_result("gpu-0", 0.0, [], [3.0, 4.0], 2e-3)
    borrowed = _gpu_result("gpu-1", 0.0, [], [1.0, 2.0], 1e-3)  # gpu-0's reference timing
    assert not class_bench.gpus(lab01, {}, {"a": one, "b": other})["gpu-0"]["timed_against_its_own_reference"]
    report = class_bench.gpus(lab01, {}, {"a": one, "c": borrowed})
    assert not report["gpu-0"]["timed_against_its_own_reference"]
    assert not report["gpu-1"]["timed_against_its_own_reference"]
    # scored against one timing, its only one, but taken on the other GPU
    elsewhere = _gpu_result("gpu-1", 0.0, [], [5.0, 6.0], 1e-3, reference_gpu="gpu-0")
    assert not class_bench.gpus(lab01, {}, {"a": one, "d": elsewhere})["gpu-1"]["timed_against_its_own_reference"]


def test_the_cores_busy_share_counts_idle_and_io_wait_as_not_busy():
    #         user nice system idle iowait irq softirq steal
    before = [100, 0, 50, 800, 50, 0, 0, 0]
    after = [400, 0, 150, 1300, 150, 0, 0, 0]  # 400 busy, 600 idle or waiting
    assert class_bench.cpu_busy_share(before, after) == 0.4
    assert class_bench.cpu_busy_share(None, after) is None
    assert class_bench.cpu_busy_share(before, before) is None


def test_gpu_utilization_is_averaged_per_gpu_and_skips_what_is_not_a_sample():
    samples = "0, 100\n1, 20\n0, 50\n1, 40\n0, [N/A]\ngarbage\n"
    assert class_bench.gpu_utilization(samples) == {"0": {"mean_percent": 75.0, "busy_share": 1.0, "samples": 2},
                                                    "1": {"mean_percent": 30.0, "busy_share": 1.0, "samples": 2}}


def test_other_gpus_of_the_host_that_ran_kernels_are_named_and_the_pace_is_said_not_to_be_one_gpus():
    utilization = class_bench.gpu_utilization("0, 40\n1, 0\n2, 3\n0, 60\n1, 0\n2, 0\n3, 0\n3, 0\n")
    assert utilization["2"]["busy_share"] == 0.5
    # Graded on GPU 0: GPU 2 ran kernels in half of the seconds, GPUs 1 and 3 in none.
    others = class_bench.other_gpus_in_use(utilization, {"0"})
    assert others == {"2": 0.5}
    assert class_bench.other_gpus_in_use(utilization, {"0", "2"}) == {}  # lanes of this run are not others
    entry = {"graded": 200, "machine": {"other_gpus_in_use": others}, **class_bench.class_pace(400.0, 200, graded=200)}
    line = class_bench.pace_line("02-picture-kernel", entry, 200)
    assert "Other GPUs of this host ran kernels meanwhile (GPU 2 in 50% of its seconds)" in line
    assert line.endswith("so this is not one GPU's pace")
    quiet = {"graded": 200, "machine": {"other_gpus_in_use": {}}, **class_bench.class_pace(400.0, 200, graded=200)}
    assert "Other GPUs" not in class_bench.pace_line("02-picture-kernel", quiet, 200)


def test_machine_use_reports_the_cores_and_the_cpu_seconds_of_what_it_ran():
    with class_bench.MachineUse() as use:
        subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    assert use.report["cores"] >= 1 and use.report["grading_cpu_s"] > 0.05
    busy = use.report["cpu_busy_share"]
    assert busy is None or 0 < busy <= 1


def test_sigterm_stops_the_bench_as_ctrl_c_does(monkeypatch):
    called = []
    monkeypatch.setattr(class_bench, "interrupt_on_sigterm", lambda: called.append(True))
    with pytest.raises(ConfigError):
        class_bench.main(["--lab", "99-no-such-lab"])
    assert called  # before anything is graded
    previous = signal.getsignal(signal.SIGTERM)
    try:
        proc.interrupt_on_sigterm()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_reference_copies_ratios_show_their_spread_and_any_drift_over_the_run(lab01):
    spec = next(p for p in lab01.perf if p.points > 0)
    results = {}
    for k, ratio in enumerate([1.0, 1.1, 1.0, 1.3, 1.5, 1.6]):  # timed in this order: slower as the run went on
        extra = {"timings": {spec.case: [{"name": spec.measurement, "median_s": ratio * 1e-3}]},
                 "reference_timings": {spec.case: [{"name": spec.measurement, "median_s": 1e-3}]},
                 "programs": [{"cases": [spec.case], "hold": "alone", "at": [100.0 + k, 100.5 + k]}]}
        results[f"s{k}"] = {"score": 0.0, "tests": [], "extra_data": extra}
    kinds = {f"s{k}": "reference" for k in range(6)}
    kinds["s5"] = "slow"  # not a copy of the reference: left out
    report = class_bench.reference_copies_timed(lab01, kinds, results)[spec.measurement]
    assert report["copies"] == 5 and report["ratio_max"] == 1.5 and report["ratio_median"] == 1.1
    assert report["past_full_at"] == 2  # 1.3 and 1.5, past lab 01's 1.2
    assert report["ratio_median_by_third"] == [1.0, 1.05, 1.4]


def test_a_run_records_table_counts_the_reference_once_and_only_from_an_even_sample():
    spec = importlib.util.spec_from_file_location("bench_table", REPO_ROOT / "docs/gpu-runs/scripts/bench_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    run = {"graded": 69, "total_s": 217.7, "per_student_s": 3.16, "class_of_200_s": 631.0,
           "reference_s": {"reference_build_s": 19.4, "reference_timing_s": 1.8},
           "phases_s": {"serial_and_timing_s": {"mean": 1.25}}, "references_full_marks": "47/47",
           "reference_copies_timed": {"rgb_to_gray_kernel": {"ratio_min": 0.89, "ratio_max": 1.06}}}
    row = table.row("3", {"lab": "02-picture-kernel", "n": 200, "runs": [run]})
    assert row[5:8] == ["631", "591", "1.25"] and row[9] == "rgb_to_gray_kernel 0.89-1.06"
    few = {**run, "graded": 12, "per_student_s": None, "class_of_200_s": None}
    assert table.row("1", {"lab": "08-streams", "n": 200, "runs": [few]})[4:7] == ["-", "-", "-"]
    # A bench run outside the sandbox is named so; reports from before the bench said are left as they were.
    assert row[1] == "02-picture-kernel"
    assert table.row("3", {"lab": "02-picture-kernel", "n": 200, "sandboxed": False, "runs": [run]})[1] == \
        "02-picture-kernel (no sandbox)"


def test_the_report_is_written_when_a_program_still_writes_in_the_work_folder(monkeypatch, tmp_path: Path):
    """A stopped class lets its programs in flight finish; one still writing while the work folder is removed made
    the removal fail, and the run lost its report (a class of 200 on an H100, 2026-11-28)."""
    writers = []

    def grade_class(config, submissions, graded, work, options):
        def keep_writing():
            folder = work / "still-running"
            folder.mkdir()
            for i in range(20000):
                (folder / f"f{i}").write_text("x")
        writer = threading.Thread(target=keep_writing)
        writer.start()
        writers.append(writer)
        time.sleep(0.05)  # the writer is under way when the bench goes on
        graded.mkdir(parents=True, exist_ok=True)
        return class_bench.classroom.ClassResult(students=[], summary="", stopped=True)

    monkeypatch.setattr(class_bench.classroom, "grade_class", grade_class)
    monkeypatch.setattr(sandbox, "_policy", sandbox.current())  # the bench sets this process's policy: put back
    try:
        assert class_bench.main(["--lab", "01-vector-add", "--n", "20", "--out", str(tmp_path)]) == 0
    finally:
        for writer in writers:
            writer.join()
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["runs"][0]["stopped"] is True


def _graded_policies(monkeypatch) -> list[bool]:
    """Stands in for the class's grading: the sandbox policy each grading ran under."""
    policies = []

    def grade_class(config, submissions, graded, work, options):
        policies.append(sandbox.current().enabled)
        graded.mkdir(parents=True, exist_ok=True)
        return class_bench.classroom.ClassResult(students=[], summary="", stopped=True)

    monkeypatch.setattr(class_bench.classroom, "grade_class", grade_class)
    monkeypatch.setattr(sandbox, "_policy", sandbox.current())  # the bench sets this process's policy: put back
    return policies


def test_the_bench_grades_in_the_sandbox_as_grade_class_does(monkeypatch, tmp_path: Path):
    """Before 2026-11-29 the bench never set the policy, so every class it timed ran outside the sandbox, which no
    TA's grade-class does."""
    policies = _graded_policies(monkeypatch)
    monkeypatch.setattr(sandbox, "_working_mode", lambda: ("plain", ""))
    assert class_bench.main(["--lab", "01-vector-add", "--n", "20", "--out", str(tmp_path)]) == 0
    assert policies == [True]
    assert json.loads((tmp_path / "bench.json").read_text())["sandboxed"] is True


def test_without_a_sandbox_the_bench_refuses_unless_told_and_its_report_says_so(monkeypatch, tmp_path: Path, capsys):
    policies = _graded_policies(monkeypatch)
    monkeypatch.setattr(sandbox, "_working_mode", lambda: ("", "bubblewrap is not installed"))
    assert class_bench.main(["--lab", "01-vector-add", "--n", "20", "--out", str(tmp_path)]) == sandbox.UNAVAILABLE_EXIT
    assert "grade-class would refuse" in capsys.readouterr().err
    assert policies == [] and not (tmp_path / "bench.json").exists()

    assert class_bench.main(["--lab", "01-vector-add", "--n", "20", "--out", str(tmp_path), "--no-sandbox"]) == 0
    assert policies == [False]
    assert json.loads((tmp_path / "bench.json").read_text())["sandboxed"] is False
    assert "WARNING: running without the OS sandbox" in capsys.readouterr().err

