"""Class grading through the whole pipeline, with stand-ins for the GPU test programs (fake_gpu.py).

Everything else is real: intake, fingerprints, the GPU lock (in a folder of the
test's own), the thread pools, scoring, results files, the gradebook and summary.
"""
import contextlib
import dataclasses
import functools
import io
import json
import threading
import time
import zipfile
from pathlib import Path

import pytest

from grader import classroom, gpulock, grade
from grader.bench import class_bench
from grader.config import load_lab
from grader.errors import NoGpu
from grader.gpulock import Gpu, GpuLock
from grader.run import schedule
from grader.tests.conftest import TOY_CONFIG_HEAD, write
from grader.tests.fake_gpu import FakeBuilds

LAB_TOML = TOY_CONFIG_HEAD + """
[[tests]]
name = "toy: adds"
points = 10

[[tests]]
name = "toy: hangs when broken"
points = 10
timeout_s = 4

[[tests]]
name = "toy: holds little device memory"
points = 5
serial = true

[[perf]]
case = "toy timing: fast"
measurement = "toy_kernel"
points = 20

[[perf]]
case = "toy timing: with copies"
measurement = "toy_with_copies"
points = 0
"""

MAX = 45.0


def toy(behaviour: str, extra: str = "") -> str:
    return f"// fake: {behaviour}\n__global__ void toy_kernel(int* out, int n) {{ {extra} }}\n"


@pytest.fixture
def lab(tmp_path: Path, monkeypatch):
    return toy_lab(tmp_path, monkeypatch, LAB_TOML)


def toy_lab(tmp_path: Path, monkeypatch, lab_toml: str):
    root = tmp_path / "repo"
    write(root / "labs/60-toy/lab.toml", lab_toml)
    write(root / "solutions/60-toy/hidden.toml", "[grading]\nseed = 7\n")
    write(root / "solutions/60-toy/toy.cu", toy("{}"))
    config = load_lab("60-toy", root)
    log = tmp_path / "runs.jsonl"
    fakes = FakeBuilds(config, log, reference={"medians": [0.001]})
    monkeypatch.setattr(classroom.grade, "build_submission", fakes.build_submission)
    monkeypatch.setattr(classroom, "build_reference_tree", fakes.build_reference_tree)
    monkeypatch.setattr(classroom, "list_gpus", lambda: [Gpu(key="fake-gpu", visible="0", name="Fake GPU")])
    monkeypatch.setenv("KIT_LOCK_DIR", str(tmp_path / "locks"))
    return config, fakes, log


def submit(folder: Path, name: str, source: str, as_zip: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if as_zip:
        with zipfile.ZipFile(folder / f"{name}.zip", "w") as z:
            z.writestr(f"{name}/toy.cu", source)
    else:
        write(folder / name / "toy.cu", source)


def a_class(folder: Path) -> None:
    submit(folder, "alice", toy("{}"))  # right, as fast as the reference
    submit(folder, "bob", toy("compile error"), as_zip=True)
    submit(folder, "carol", toy('{"fail": ["toy: adds"]}'))  # wrong: no timing for her
    submit(folder, "dave", toy("{}", "system(\"ls\");"))  # refused at intake
    submit(folder, "erin", toy('{"hang": ["toy: hangs when broken", "toy: adds"]}'))
    submit(folder, "gina", toy('{"medians": [0.001215, 0.00115]}'))  # 1.215x: near full_at, timed again


def grade_it(config, submissions: Path, out: Path, tmp_path: Path, stream=None, **options):
    options.setdefault("jobs", 3)
    options.setdefault("gpu_jobs", 3)
    return classroom.grade_class(config, submissions, out, tmp_path / "work", classroom.ClassOptions(**options),
                                 stream=stream or open("/dev/null", "w"))


def results(out: Path, student: str) -> dict:
    return json.loads((out / student / "results.json").read_text())


def by_name(result: dict) -> dict:
    return {t["name"]: t for t in result["tests"]}


def test_a_class_is_graded_with_every_outcome(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    out = tmp_path / "out"
    graded = grade_it(config, tmp_path / "in", out, tmp_path)
    assert graded.students == ["alice", "bob", "carol", "dave", "erin", "gina"] and not graded.stopped

    assert results(out, "alice")["score"] == MAX
    assert results(out, "gina")["score"] == MAX  # the better median counted
    bob, carol, dave, erin = (results(out, s) for s in ("bob", "carol", "dave", "erin"))
    assert bob["score"] == 0 and "did not compile" in bob["output"] and "expected a" in bob["output"]
    assert bob["extra_data"]["attention"] == ["build error"]
    assert dave["score"] == 0 and "system" in dave["output"]
    assert dave["extra_data"]["attention"][0].startswith("refused at intake")
    assert carol["score"] == 10 + 5  # the hang test and the serial test pass; no performance
    perf = by_name(carol)["performance: toy_kernel"]
    assert "not timed" in perf["output"] and "toy: adds" in perf["output"]
    assert erin["extra_data"]["attention"] == ["timed out: toy: adds"]
    second = by_name(erin)["toy: hangs when broken"]["output"]
    assert second.startswith("Not run") and "'toy: adds'" in second  # one timeout spends the budget

    gradebook = (out / "gradebook.csv").read_text().splitlines()
    assert gradebook[0] == "student,60-toy,max" and len(gradebook) == 7
    text = (out / "summary.txt").read_text()
    assert "6 students graded" in text and "Needs a TA's look: 3" in text
    for student in ("bob", "dave", "erin"):
        assert f"  {student} " in text


def test_timing_runs_alone_and_only_where_it_can_earn_points(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    alone = [r for r in runs if r["case"] in ("toy timing: fast", "toy: holds little device memory")]
    for run in alone:
        beside = [r for r in runs if r is not run and r["start"] < run["end"] and run["start"] < r["end"]]
        assert not beside, f"{run['who']}: '{run['case']}' ran beside {beside}"
    timed = sorted(r["who"] for r in runs if r["case"] == "toy timing: fast")
    # gina's second run is the re-timing near full_at; the reference's, its timings at the start and again once
    # the class is timed
    assert timed == ["alice", "gina", "gina"] + ["reference"] * 2 * schedule.REFERENCE_TIMES
    assert max(r["start"] for r in runs if r["case"] == "toy timing: fast") == max(
        r["start"] for r in runs if r["who"] == "reference")  # the reference's second timing came last
    assert not [r for r in runs if r["case"] == "toy timing: with copies"]  # worth 0 points: never timed


def test_students_are_timed_in_batches_while_others_are_still_in_their_correctness_runs(lab, tmp_path: Path,
                                                                                        monkeypatch):
    # Each exclusive hold drains the correctness runs on the GPU first. Students whose correctness runs end one
    # by one must not each cost a drain: the timing thread gathers those that come while others are running.
    config, fakes, log = lab
    holds = []
    exclusive = GpuLock.exclusive

    def counted(self, **kwargs):
        holds.append(self.key)
        return exclusive(self, **kwargs)
    monkeypatch.setattr(GpuLock, "exclusive", counted)
    for k in range(9):
        submit(tmp_path / "in", f"student{k}", toy(f'{{"seconds": {0.1 + 0.1 * (k % 3)}}}'))
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path, gpu_jobs=2)
    timed = sorted({json.loads(line)["who"] for line in log.read_text().splitlines()
                    if json.loads(line)["case"] == "toy timing: fast"})
    assert timed == ["reference"] + [f"student{k}" for k in range(9)]
    students_holds = len(holds) - 2 * schedule.REFERENCE_TIMES  # the reference's timings, and again at the end
    assert students_holds <= 3, f"{students_holds} exclusive holds for 9 students: one for every few, not one each"


def test_the_summary_says_whether_the_reference_held_still_over_the_run(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    grade_it(config, tmp_path / "in", tmp_path / "steady", tmp_path)
    text = (tmp_path / "steady" / "summary.txt").read_text()
    assert "Fake GPU: at the start and at the end: toy_kernel 1.000 -> 1.000 ms (+0.0%)" in text
    assert "WARNING" not in text

    # A measurement of the case that no score rests on may move as it likes: it is not shown
    fakes.reference = {"medians": [0.001], "stages": {"for_comparison": [0.001] * schedule.REFERENCE_TIMES + [0.005]}}
    grade_it(config, tmp_path / "in", tmp_path / "aside", tmp_path / "aside-work")
    text = (tmp_path / "aside" / "summary.txt").read_text()
    assert "toy_kernel 1.000 -> 1.000 ms" in text and "for_comparison" not in text and "WARNING" not in text

    fakes.reference = {"medians": [0.001] * schedule.REFERENCE_TIMES + [0.0013]}  # 30 % slower by the end
    grade_it(config, tmp_path / "in", tmp_path / "drifting", tmp_path / "again")
    text = (tmp_path / "drifting" / "summary.txt").read_text()
    assert "toy_kernel 1.000 -> 1.300 ms (+30.0%)" in text
    assert "WARNING: on Fake GPU the reference's own time moved by +30% during the run" in text


def test_audit_trail_in_results(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    out = tmp_path / "out"
    grade_it(config, tmp_path / "in", out, tmp_path)
    extra = results(out, "gina")["extra_data"]
    assert extra["grader_commit"] and extra["fingerprint"] and extra["status"] == "graded"
    assert extra["scored_on_gpu"] == {"key": "fake-gpu", "name": "Fake GPU", "cuda_visible_devices": "0"}
    assert extra["gpu"] == "Fake GPU"  # the name the test program saw, as `grade` writes it
    assert {program["gpu"] for program in extra["programs"] + extra["reference_programs"]} == {"fake-gpu"}
    assert set(extra["lock_wait_by_kind_s"]) == {"shared_s", "exclusive_s"}
    assert extra["lock_wait_s"] == pytest.approx(sum(extra["lock_wait_by_kind_s"].values()), abs=0.002)
    [rerun] = extra["reruns"]
    assert rerun["counted"] == "second" and rerun["ratios"][0] == pytest.approx(1.215)
    assert rerun["ratios"][1] == pytest.approx(1.15)
    assert extra["timings"]["toy timing: fast"][0]["median_s"] == pytest.approx(0.00115)
    assert extra["reference_timings"]["toy timing: fast"][0]["median_s"] == pytest.approx(0.001)
    assert results(out, "alice")["extra_data"]["reruns"] == []
    # Each case the student ran: the program's whole run, and the seconds its test reported (0.05 in fake_gpu).
    assert set(extra["case_s"]) == {"toy: adds", "toy: hangs when broken", "toy: holds little device memory",
                                    "toy timing: fast"}
    assert all(s["test"] == pytest.approx(0.05) and s["run"] >= s["test"] for s in extra["case_s"].values())
    # Each program, how it held the GPU and when: the serial test, the timing and its second timing near full_at
    # each alone in a program of its own; the reference's listing (no cases), then its timing, each time.
    assert [p["cases"] for p in extra["programs"] if p["hold"] == "alone"] == [
        ["toy: holds little device memory"], ["toy timing: fast"], ["toy timing: fast"]]
    assert all(p["at"][0] <= p["at"][1] for p in extra["programs"])
    assert [(p["cases"], p["hold"]) for p in extra["reference_programs"]] == [
        ([], "shared"), (["toy timing: fast"], "alone")] * schedule.REFERENCE_TIMES
    # No program ran beside one that held the GPU alone: alice 2, carol 1 (her serial test), gina 3 and the
    # reference's timings; erin spent her budget before hers.
    students = {s: results(out, s) for s in ("alice", "bob", "carol", "dave", "erin", "gina")}
    [gpu] = class_bench.gpu_exclusivity(students).values()
    assert gpu["alone"] == 6 + schedule.REFERENCE_TIMES and gpu["overlapping_an_alone_one"] == []


def test_resume_keeps_finished_students_and_regrades_changed_ones(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    out = tmp_path / "out"
    grade_it(config, tmp_path / "in", out, tmp_path)
    first = {s: (out / s / "results.json").read_text() for s in ("alice", "bob", "carol", "dave")}
    fakes.builds.clear()

    submit(tmp_path / "in", "carol", toy("{}"))  # carol fixed her kernel
    grade_it(config, tmp_path / "in", out, tmp_path / "again", regrade=frozenset({"bob"}))
    rebuilt = sorted(p.parent.name for p in fakes.builds)
    assert rebuilt == ["bob", "carol"]  # asked for, and changed; the others kept
    assert (out / "alice" / "results.json").read_text() == first["alice"]
    assert (out / "dave" / "results.json").read_text() == first["dave"]
    assert results(out, "carol")["score"] == MAX

    fakes.builds.clear()
    grade_it(config, tmp_path / "in", out, tmp_path / "all", regrade_all=True)
    assert len(fakes.builds) == 5  # all but dave, whom intake refuses before any build


def test_a_student_whose_grading_raises_gets_a_result_and_the_class_goes_on(lab, tmp_path: Path, monkeypatch):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    real = fakes.build_submission

    def flaky(config, staged_folder, build_dir, reference_build=None):
        if staged_folder.parent.name == "carol":
            raise OSError("disk full")
        return real(config, staged_folder, build_dir, reference_build)

    monkeypatch.setattr(classroom.grade, "build_submission", flaky)
    out = tmp_path / "out"
    grade_it(config, tmp_path / "in", out, tmp_path)
    carol = results(out, "carol")
    assert carol["score"] == 0 and "grader problem" in carol["output"] and "disk full" in carol["output"]
    assert carol["extra_data"]["status"] == "grader_problem"
    assert results(out, "alice")["score"] == MAX
    assert "carol" in (out / "gradebook.csv").read_text()

    monkeypatch.setattr(classroom.grade, "build_submission", real)  # a grader problem is retried next run
    grade_it(config, tmp_path / "in", out, tmp_path / "again")
    assert results(out, "carol")["extra_data"]["status"] == "graded"


def test_without_a_gpu_builds_are_graded_and_the_run_says_so(lab, tmp_path: Path):
    config, fakes, log = lab
    fakes.reference["gpu"] = False
    submit(tmp_path / "in", "alice", toy('{"gpu": false}'))
    submit(tmp_path / "in", "bob", toy("compile error"))
    out = tmp_path / "out"
    with pytest.raises(NoGpu, match="no driver in this test"):
        grade_it(config, tmp_path / "in", out, tmp_path)
    assert results(out, "bob")["extra_data"]["attention"] == ["build error"]
    assert not (out / "alice").exists()  # not graded: the next run on a GPU does it
    assert "Not graded yet (1; run grade-class again to finish): alice" in (out / "summary.txt").read_text()


def test_two_submissions_of_one_student_are_refused(lab, tmp_path: Path):
    config, fakes, log = lab
    submit(tmp_path / "in", "alice", toy("{}"))
    submit(tmp_path / "in", "alice", toy("{}"), as_zip=True)
    out = tmp_path / "out"
    grade_it(config, tmp_path / "in", out, tmp_path)
    assert "alice and alice.zip" in results(out, "alice")["output"]


def test_shards_split_the_sorted_roster(tmp_path: Path):
    for name in ("dan", "amy", "cat", "bo.zip", "eve", ".DS_Store"):
        (tmp_path / name).mkdir()
    assert [s.name for s in classroom.roster(tmp_path)] == ["amy", "bo", "cat", "dan", "eve"]
    assert [s.name for s in classroom.roster(tmp_path, (0, 2))] == ["amy", "cat", "eve"]
    assert [s.name for s in classroom.roster(tmp_path, (1, 2))] == ["bo", "dan"]
    assert classroom.parse_part("3/8") == (3, 8)
    with pytest.raises(ValueError):
        classroom.parse_part("8/8")


def test_ctrl_c_stops_the_run_and_writes_the_gradebook_of_what_is_done(lab, tmp_path: Path, monkeypatch):
    config, fakes, log = lab
    submit(tmp_path / "in", "alice", toy("{}"))
    submit(tmp_path / "in", "bob", toy("compile error"))
    # Slow and wrong: 2 s a test case, and both his failed cases run again alone, each in a hold of the GPU lock
    # of its own, after the program they shared, so he is still in those runs when alice is done (her timing
    # goes between two of his holds), with 2 s to spare for the Ctrl-C to land. Every limit is 4 s or more,
    # twice his need even with a loaded machine's slow starts: a case that timed out would end him early.
    submit(tmp_path / "in", "zed", toy('{"seconds": 2.0, "fail": ["toy: adds", "toy: hangs when broken"]}'))
    out = tmp_path / "out"

    def ctrl_c_once_alice_is_done(futures):  # the main thread waits here, where Ctrl-C lands
        for _ in range(600):
            if (out / "alice" / "results.json").exists():
                raise KeyboardInterrupt
            time.sleep(0.1)
        raise AssertionError("alice was never graded")

    monkeypatch.setattr(classroom, "wait", ctrl_c_once_alice_is_done)
    monkeypatch.setattr(classroom, "ALONE_GATHER_S", 0.0)  # alice is timed as soon as she is ready, not with zed
    # and the reference timed once, not three times over, so that she is ready well before zed is done
    monkeypatch.setattr(classroom, "time_reference", functools.partial(schedule.time_reference, times=1))
    graded = grade_it(config, tmp_path / "in", out, tmp_path)
    assert graded.stopped
    done = sorted(p.parent.name for p in out.glob("*/results.json"))
    assert done == ["alice", "bob"]  # zed was in the middle of his tests: left for the next run
    gradebook = (out / "gradebook.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in gradebook[1:]] == done
    assert "Not graded yet (1; run grade-class again to finish): zed" in (out / "summary.txt").read_text()


def test_a_student_whose_tests_ran_as_the_run_stopped_is_left_for_the_next_run(lab, tmp_path: Path, monkeypatch):
    """Slurm cancels a task with SIGTERM to each of its processes, test programs included, so a case that ran as
    the run stopped may read as a crash: nothing is scored once the stop is seen."""
    config, fakes, log = lab
    submit(tmp_path / "in", "alice", toy("{}"))
    gradings = []
    made = classroom.ClassGrading.__init__

    def kept(self, *args, **kwargs):
        made(self, *args, **kwargs)
        gradings.append(self)
    real = classroom.ProgramRun.run_alone

    def run_then_stop(self, cases, *args, **kwargs):  # alice's serial test or timing, as the signal lands
        outcome = real(self, cases, *args, **kwargs)
        if "reference" not in self.binary.name:
            gradings[0].stopping.set()  # what the signal's KeyboardInterrupt sets
        return outcome

    monkeypatch.setattr(classroom.ClassGrading, "__init__", kept)
    monkeypatch.setattr(classroom.ProgramRun, "run_alone", run_then_stop)
    graded = grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    assert graded.stopped
    assert not (tmp_path / "out" / "alice" / "results.json").exists()


def test_every_gpu_tests_and_times_students_and_the_others_time_them_while_one_waits_on_a_hang(lab, tmp_path: Path,
                                                                                          monkeypatch):
    """One grading on two GPUs: each student's programs go to one GPU at a time, under its lock, and a student is
    scored against the reference timing of the GPU that timed them. While a program that never ends holds one GPU
    (to its case's 4 s limit), that GPU times nobody, gives back the students it was about to time, and the other
    GPU goes on timing the class."""
    config, fakes, log = lab
    gpus = [Gpu(key=f"gpu-{k}", visible=str(k), name=f"GPU {k}") for k in range(2)]
    monkeypatch.setattr(classroom, "list_gpus", lambda: gpus)
    gave_back = []
    exclusive = GpuLock.exclusive

    @contextlib.contextmanager
    def noted(self, **kwargs):
        try:
            with exclusive(self, **kwargs) as waited:
                yield waited
        except gpulock.HeldByHang:
            gave_back.append((self.key, time.time()))
            raise
    monkeypatch.setattr(GpuLock, "exclusive", noted)
    monkeypatch.setattr(gpulock, "SUSPECT_AFTER_S", 1.0)  # the hang looks hung after 1 s of its 4, not 5
    monkeypatch.setattr(classroom, "ALONE_GATHER_S", 0.5)
    hung = "s12"  # mid-class: both GPUs' threads are timing students when it starts
    for k in range(24):
        submit(tmp_path / "in", f"s{k:02d}", toy('{"hang": ["toy: hangs when broken"]}' if k == 12 else "{}"))
    out = tmp_path / "out"
    graded = grade_it(config, tmp_path / "in", out, tmp_path, jobs=2, gpu_jobs=2)
    assert not graded.stopped
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    timings = [r for r in runs if r["case"] == "toy timing: fast" and r["who"] != "reference"]
    assert {r["gpu"] for r in runs if r["case"] == "toy: adds"} == {"0", "1"}  # correctness on both
    assert {r["gpu"] for r in runs if r["who"] == "reference"} == {"0", "1"}  # each times its reference
    for timing in (r for r in runs if r["case"] == "toy timing: fast"):  # the reference's included
        beside = [r for r in runs if r is not timing and r["gpu"] == timing["gpu"]
                  and r["start"] < timing["end"] and timing["start"] < r["end"]]
        assert not beside, (timing, beside)
    for k in (k for k in range(24) if f"s{k:02d}" != hung):
        result = results(out, f"s{k:02d}")
        assert result["score"] == MAX, result["output"]
        [timed] = [r for r in timings if r["who"] == f"s{k:02d}"]  # timed once, on one GPU
        gpu = gpus[int(timed["gpu"])]
        assert result["extra_data"]["scored_on_gpu"]["key"] == gpu.key  # scored on the GPU that timed them
        assert {p["gpu"] for p in result["extra_data"]["reference_programs"]} == {gpu.key}  # against its reference
    hang = next(p for p in results(out, hung)["extra_data"]["programs"] if "toy: hangs when broken" in p["cases"])
    other = next(g.key for g in gpus if g.key != hang["gpu"])
    # Once it looked hung (1 s in), its GPU timed no one until it was killed; the other GPU went on.
    during = [r for r in timings if hang["at"][0] + 1.5 < r["start"] < hang["at"][1]]
    assert during and all(gpus[int(r["gpu"])].key == other for r in during), (hang, during)
    # Any students its thread had taken went back to the queue rather than wait there.
    assert all(key == hang["gpu"] and hang["at"][0] < at < hang["at"][1] for key, at in gave_back)


def test_a_gpu_held_by_a_hang_gives_its_students_back_in_their_place(lab, tmp_path: Path, monkeypatch):
    """The students a GPU's thread took to time while a program there turned out to hang go back to the queue, in
    front of those that came after them and of the threads' ends, for the other GPUs; with one GPU, it waits."""
    config, fakes, log = lab
    monkeypatch.setattr(gpulock, "SUSPECT_AFTER_S", 0.2)
    gpus = [Gpu(key=f"gpu-{k}", visible=str(k), name=f"GPU {k}") for k in range(2)]
    grading = classroom.ClassGrading(config, [], tmp_path / "out", tmp_path / "work", classroom.ClassOptions(),
                                     gpus, open("/dev/null", "w"))
    held = grading.devices[0]
    students = [classroom._Student(classroom.Student(f"s{k}", None), tmp_path / f"s{k}", 0.0, order=k)
                for k in range(3)]
    grading.order = iter(range(3, 100))
    grading.alone.put((0, students[2].order, students[2]))  # came later, and was not taken
    grading.alone.put((1, next(grading.order), None))
    hung = threading.Event()

    def hang():
        with held.lock.shared():
            hung.set()
            time.sleep(3.0)
    threading.Thread(target=hang, daemon=True).start()
    hung.wait()
    started = time.monotonic()
    grading._serial_and_timing(held, students[:2], may_give_back=True)
    assert time.monotonic() - started < 2.0  # gave up once the hold looked hung, not at its end
    assert not held.timing and held.students_timed == 0
    assert grading._gather_batch() == students + [None]


def test_a_students_correctness_goes_to_the_gpu_with_the_fewest_running_and_room_preferring_one_not_timing(
        lab, tmp_path: Path):
    config, fakes, log = lab
    gpus = [Gpu(key=f"gpu-{k}", visible=str(k), name=f"GPU {k}") for k in range(3)]
    grading = classroom.ClassGrading(config, [], tmp_path / "out", tmp_path / "work",
                                     classroom.ClassOptions(gpu_jobs=2), gpus, open("/dev/null", "w"))
    first, second, third = grading.devices
    first.in_correctness, second.in_correctness, third.in_correctness = 0, 1, 2
    first.timing = True  # its correctness would wait for the timing: the next one goes to the second GPU
    assert grading._correctness_device() is second and second.in_correctness == 2
    # the second now has gpu_jobs running and the third had them already: only the timing one has room
    assert grading._correctness_device() is first and first.in_correctness == 1
    first.timing = False
    assert grading._correctness_device() is first and first.in_correctness == 2


def test_correctness_cases_share_one_program_and_failures_run_again_alone(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    alice = [p["cases"] for p in programs if p["who"] == "alice"]
    assert ["toy: adds", "toy: hangs when broken"] in alice  # one program, one CUDA start, for both
    assert ["toy: adds"] not in alice  # both passed: neither ran again
    carol = [p["cases"] for p in programs if p["who"] == "carol"]
    assert carol[:3] == [["toy: adds", "toy: hangs when broken"], ["toy: adds"], ["toy: holds little device memory"]]
    assert by_name(results(tmp_path / "out", "alice"))["toy: adds"]["score"] == 10
    assert by_name(results(tmp_path / "out", "carol"))["toy: adds"]["score"] == 0  # its own run's failure


def test_a_check_that_found_the_gpu_busy_beside_others_is_run_again_alone_and_counts_there(lab, tmp_path: Path):
    # Beside other students' programs, the judge cannot tell their GPU work from its own runner's: a check that
    # needs the GPU free of the runner's work (lab 01's very large vector) must not cost an honest student.
    config, fakes, log = lab
    submit(tmp_path / "in", "hal", toy('{"busy_beside": ["toy: adds"]}'))
    submit(tmp_path / "in", "ida", toy("{}"))
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    assert results(tmp_path / "out", "hal")["score"] == MAX  # correct, and timed once the check passed alone
    assert results(tmp_path / "out", "hal")["extra_data"]["found_busy_beside_others"] == ["toy: adds"]
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    hal = [(p["cases"], p["gpu_wait"]) for p in programs if p["who"] == "hal"]
    assert (["toy: adds"], None) in hal  # run again with the GPU to itself (a program alone spins)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    again = [r for r in runs if r["who"] == "hal" and r["case"] == "toy: adds"][-1]
    assert not [r for r in runs if r is not again and r["start"] < again["end"] and again["start"] < r["end"]]


def test_a_test_worth_no_points_is_not_run_in_class_grading_and_says_why(tmp_path: Path, monkeypatch):
    # Such tests check the grader's own references (lab 06's GPU scan against its CPU scan): the same for every
    # student, and run by the self-check; a class of 200 ran lab 06's 200 times, 2.5 s of CPU each.
    checks_reference = '\n[[tests]]\nname = "toy reference: agrees with a worked example"\npoints = 0\n'
    requires_toy = LAB_TOML.replace('points = 20\n', 'points = 20\nrequires = ["toy: *"]\n', 1)
    config, fakes, log = toy_lab(tmp_path, monkeypatch, requires_toy + checks_reference)
    submit(tmp_path / "in", "alice", toy("{}"))
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    assert not [p for p in programs if "toy reference: agrees with a worked example" in p["cases"]]
    alice = results(tmp_path / "out", "alice")
    assert alice["score"] == MAX
    item = by_name(alice)["toy reference: agrees with a worked example"]
    assert (item["score"], item["max_score"]) == (0, 0) and "Not run in class grading" in item["output"]


def test_a_test_worth_no_points_still_runs_where_a_scored_timing_requires_it(tmp_path: Path, monkeypatch):
    required = LAB_TOML.replace('points = 20\n', 'points = 20\nrequires = ["toy reference*"]\n', 1) + (
        '\n[[tests]]\nname = "toy reference: agrees with a worked example"\npoints = 0\n')
    config, fakes, log = toy_lab(tmp_path, monkeypatch, required)
    assert "toy reference: agrees with a worked example" in classroom.class_tests(config)
    submit(tmp_path / "in", "alice", toy("{}"))
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    assert results(tmp_path / "out", "alice")["score"] == MAX  # run, passed, and the timing it gates scored


def test_a_split_labs_judge_is_listed_once_not_for_every_student(lab, tmp_path: Path):
    config, fakes, log = lab
    for k in range(8):
        submit(tmp_path / "in", f"s{k}", toy('{"split": true}'))
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path, gpu_jobs=1)
    listed = Path(str(log) + ".listings").read_text().split()
    # The judge holds no student code: the first student's listing stands for all (the reference lists for its
    # timings at the start and again at the end).
    assert listed.count("reference") == 2 * schedule.REFERENCE_TIMES and len(listed) == listed.count("reference") + 1
    for k in range(8):
        assert results(tmp_path / "out", f"s{k}")["score"] == MAX
        assert "Graded on Fake GPU" in results(tmp_path / "out", f"s{k}")["output"]
    # Nor does it start for each program: two judges serve every student's, one the programs beside others, one
    # those alone.
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    students = [p for p in programs if p["who"] != "reference"]
    assert len(students) >= 16 and {p["who"] for p in students} == {f"s{k}" for k in range(8)}
    judges = {p["served_by"] for p in students}
    assert len(judges) == 2 and None not in judges
    per_program = tmp_path / "per-program"
    grade_it(config, tmp_path / "in", per_program, tmp_path, gpu_jobs=1, judge_per_program=True)
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()][len(programs):]
    assert {p["served_by"] for p in programs if p["who"] != "reference"} == {None}
    assert all(results(per_program, f"s{k}")["score"] == MAX for k in range(8))


def test_a_program_that_holds_student_code_is_listed_for_each_student(lab, tmp_path: Path):
    config, fakes, log = lab
    for k in range(3):
        submit(tmp_path / "in", f"s{k}", toy("{}"))  # no runner: the whole program is the student's build
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path, gpu_jobs=1)
    listed = sorted(Path(str(log) + ".listings").read_text().split())
    assert listed == ["reference"] * 2 * schedule.REFERENCE_TIMES + ["s0", "s1", "s2"]


def test_programs_beside_others_block_on_the_gpu_and_those_alone_spin(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    alone = {"toy timing: fast", "toy: holds little device memory"}
    assert {p["gpu_wait"] for p in programs if set(p["cases"]) & alone} == {None}  # timing wakes soonest
    assert {p["gpu_wait"] for p in programs if not set(p["cases"]) & alone} == {"block"}


def test_every_program_has_one_work_queue_unless_the_lab_relies_on_streams_at_once(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    assert {p["work_queues"] for p in programs} == {"1"}

    streams = dataclasses.replace(config, concurrent_streams=True)
    Path(str(log) + ".programs").unlink()
    grade_it(streams, tmp_path / "in", tmp_path / "out2", tmp_path)
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    assert {p["work_queues"] for p in programs} == {None}  # the driver's default: streams overlap, and race


def test_class_grading_takes_only_the_measurements_that_score(tmp_path: Path, monkeypatch):
    # A measurement worth no points inside a scored timing case, reported before the scored one, as lab 08's
    # sequential baselines are: class grading asks the program to skip it (kit::measured), the reference's
    # timing and the students' alike, and the student reads why it is missing.
    root = tmp_path / "repo"
    write(root / "labs/60-toy/lab.toml", LAB_TOML + """
[[perf]]
case = "toy timing: fast"
measurement = "toy_baseline"
points = 0
""")
    write(root / "solutions/60-toy/hidden.toml", "[grading]\nseed = 7\n")
    write(root / "solutions/60-toy/toy.cu", toy("{}"))
    config = load_lab("60-toy", root)
    log = tmp_path / "runs.jsonl"
    fakes = FakeBuilds(config, log, reference={"medians": [0.001], "stages": {"toy_baseline": [0.002]}})
    monkeypatch.setattr(classroom.grade, "build_submission", fakes.build_submission)
    monkeypatch.setattr(classroom, "build_reference_tree", fakes.build_reference_tree)
    monkeypatch.setattr(classroom, "list_gpus", lambda: [Gpu(key="fake-gpu", visible="0", name="Fake GPU")])
    monkeypatch.setenv("KIT_LOCK_DIR", str(tmp_path / "locks"))
    assert schedule.scored_measurements(config) == {"toy_kernel"}

    submit(tmp_path / "in", "alice", toy('{"stages": {"toy_baseline": [0.002]}}'))
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    programs = [json.loads(line) for line in Path(str(log) + ".programs").read_text().splitlines()]
    timing = [p for p in programs if "toy timing: fast" in p["cases"]]
    assert {p["who"] for p in timing} == {"reference", "alice"}
    assert {p["measure_only"] for p in timing} == {"toy_kernel"}
    alice = results(tmp_path / "out", "alice")
    assert alice["score"] == MAX
    assert by_name(alice)["performance: toy_baseline"]["output"] == (
        "No performance points: not timed in class grading, because this measurement earns no points "
        "(`make grade` shows it for comparison).")
    assert "toy_baseline" not in {t["name"] for t in alice["extra_data"]["timings"]["toy timing: fast"]}


def test_stray_files_in_the_class_folder_are_skipped_not_graded(lab, tmp_path: Path):
    config, fakes, log = lab
    a_class(tmp_path / "in")
    for stray in ("grades.csv", "notes.txt", ".DS_Store"):
        (tmp_path / "in" / stray).write_text("not a submission")
    write(tmp_path / "in" / "__MACOSX" / "alice" / "._toy.cu", "a Mac's resource fork")
    folder = classroom.read_class(tmp_path / "in")
    assert folder.skipped == [".DS_Store", "__MACOSX", "grades.csv", "notes.txt"]
    warning = classroom.skipped_warning(folder.skipped)
    assert warning == ("WARNING: skipped 4 entries of the submissions folder, no student's (a student is a folder "
                       "or a .zip): .DS_Store, __MACOSX, grades.csv, notes.txt")
    out = tmp_path / "out"
    graded = grade_it(config, tmp_path / "in", out, tmp_path)
    assert graded.students == ["alice", "bob", "carol", "dave", "erin", "gina"]
    assert not (out / "grades.csv").exists() and not (out / "notes.txt").exists()
    assert [line.split(",")[0] for line in (out / "gradebook.csv").read_text().splitlines()[1:]] == graded.students


def test_a_zip_that_is_no_zip_is_refused_for_that_student_only(lab, tmp_path: Path):
    config, fakes, log = lab
    submit(tmp_path / "in", "alice", toy("{}"))
    (tmp_path / "in" / "carol.zip").write_bytes(b"PK but cut off")
    out = tmp_path / "out"
    grade_it(config, tmp_path / "in", out, tmp_path)
    carol = results(out, "carol")
    assert carol["output"] == ("Not graded: carol.zip is not a valid zip archive (File is not a zip file); "
                               "zip the files again")
    assert carol["extra_data"]["attention"][0].startswith("refused at intake: carol.zip is not a valid zip")
    assert results(out, "alice")["score"] == MAX


def test_a_refused_submission_says_why_once_and_each_test_says_it_did_not_run(lab, tmp_path: Path):
    config, fakes, log = lab
    submit(tmp_path / "in", "alice", toy("{}"))
    write(tmp_path / "in" / "ivan" / "src" / "Toy.cu", toy("{}"))  # a near miss of toy.cu
    out = tmp_path / "out"
    grade_it(config, tmp_path / "in", out, tmp_path)
    ivan = results(out, "ivan")
    why = "found Toy.cu; expected toy.cu"
    assert ivan["output"].startswith(f"Not graded: {why} (") and ivan["score"] == 0
    assert {t["output"] for t in ivan["tests"]} == {grade.NOT_RUN_REFUSED}  # not the reason again, per test
    report = (out / "ivan" / "report.txt").read_text()
    assert report.count(why) == 1 and report.startswith(f"Not graded: {why}")
    assert report.count(grade.NOT_RUN_REFUSED) == len(ivan["tests"])


def test_a_compile_error_is_said_once_naming_the_students_own_file(lab, tmp_path: Path):
    """As `make grade` says it: the compiler's message once, above the tests, with the path the student knows (their
    zip's entry, their folder's file), never the path of the copy the grader compiled."""
    config, fakes, log = lab
    submit(tmp_path / "in", "bob", toy("compile error"), as_zip=True)
    write(tmp_path / "in" / "carl" / "src" / "toy.cu", toy("compile error"))
    out = tmp_path / "out"
    grade_it(config, tmp_path / "in", out, tmp_path)
    for student, path in (("bob", "bob.zip:bob/toy.cu"), ("carl", "src/toy.cu")):
        said = results(out, student)
        error = f'{path}(3): error: expected a ";"'
        assert said["output"] == f"Your code did not compile, so no test could run. The compiler said:\n{error}"
        assert {t["output"] for t in said["tests"]} == {grade.NOT_RUN_COMPILE}  # not the message again, per test
        report = (out / student / "report.txt").read_text()
        assert report.startswith(said["output"]) and report.count(error) == 1
        assert str(tmp_path / "work") not in json.dumps(said) + report


def test_check_intake_checks_every_student_and_builds_nothing(lab, tmp_path: Path, monkeypatch):
    config, fakes, log = lab

    def never(*args, **kwargs):
        raise AssertionError("intake alone must not build")
    monkeypatch.setattr(classroom.grade, "build_submission", never)
    monkeypatch.setattr(classroom, "build_reference_tree", never)
    a_class(tmp_path / "in")
    (tmp_path / "in" / "hal.zip").write_bytes(b"")
    write(tmp_path / "in" / "ivan" / "a" / "toy.cu", toy("{}"))
    write(tmp_path / "in" / "ivan" / "b" / "toy.cu", toy("{}"))
    (tmp_path / "in" / "notes.txt").write_text("not a student")
    checks = {c.student: c.problem for c in classroom.check_intake(config, tmp_path / "in")}
    assert sorted(checks) == ["alice", "bob", "carol", "dave", "erin", "gina", "hal", "ivan"]
    assert {name for name, problem in checks.items() if not problem} == {"alice", "bob", "carol", "erin", "gina"}
    assert "uses 'system'" in checks["dave"]
    assert checks["hal"].startswith("hal.zip is not a valid zip archive")
    assert "(a/toy.cu, b/toy.cu)" in checks["ivan"]
    assert [c.student for c in classroom.check_intake(config, tmp_path / "in", (1, 4))] == ["bob", "gina"]


def test_an_empty_share_builds_and_runs_nothing(lab, tmp_path: Path, monkeypatch):
    config, fakes, log = lab

    def never(*args, **kwargs):
        raise AssertionError("an empty share must not build the reference")
    monkeypatch.setattr(classroom, "build_reference_tree", never)
    submit(tmp_path / "in", "alice", toy("{}"))
    graded = classroom.grade_class(config, tmp_path / "in", tmp_path / "out", tmp_path / "work",
                                   classroom.ClassOptions(jobs=1, gpu_jobs=1), shard=(1, 2),
                                   stream=open("/dev/null", "w"))
    assert graded.students == [] and not graded.stopped
    assert (tmp_path / "out" / "gradebook.csv").read_text().splitlines() == ["student,60-toy,max"]


@pytest.mark.parametrize("gpu_count", [1, 2])
def test_a_class_that_intake_refuses_whole_builds_and_times_nothing(lab, tmp_path: Path, monkeypatch, gpu_count: int):
    """The submissions of another lab, say: every student is refused with the reason, without the reference's build
    (12 s for lab 01) or timing, on one GPU or several."""
    config, fakes, log = lab

    def never(*args, **kwargs):
        raise AssertionError("a class with no one to build must not build, time or split the reference")
    for name in ("build_reference_tree", "time_reference"):
        monkeypatch.setattr(classroom, name, never)
    gpus = [Gpu(key=f"fake-gpu-{k}", visible=str(k), name="Fake GPU") for k in range(gpu_count)]
    monkeypatch.setattr(classroom, "list_gpus", lambda: gpus)
    write(tmp_path / "in" / "alice" / "vector_add.cu", "__global__ void k() {}\n")  # lab 01's file
    submit(tmp_path / "in", "dave", toy("{}", "system(\"ls\");"))
    out = tmp_path / "out"
    graded = grade_it(config, tmp_path / "in", out, tmp_path)
    assert graded.students == ["alice", "dave"] and not graded.stopped
    assert graded.phases_s["reference_build_s"] == 0
    assert results(out, "alice")["output"] == "Not graded: the submission has no toy.cu (lab 60-toy needs toy.cu)"
    assert "uses 'system'" in results(out, "dave")["output"]
    assert "2 students graded" in (out / "summary.txt").read_text()


def test_grade_and_a_class_start_the_same_programs_for_a_student(lab, tmp_path: Path):
    """One scheduler: for the cases a class grading runs for a student, `grade`'s entry point (schedule.evaluate)
    starts the same test programs, each with the same cases, in the same order: the plain correctness cases
    together, a failure again alone, then the serial test and the timing each in a program of its own."""
    config, fakes, log = lab
    submit(tmp_path / "in", "alice", toy("{}"))
    submit(tmp_path / "in", "carol", toy('{"fail": ["toy: adds"]}'))
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path)
    started = Path(str(log) + ".programs")
    by_class = [json.loads(line) for line in started.read_text().splitlines()]
    started.unlink()
    tests = [t.name for t in config.tests]
    for who, cases in (("alice", tests + ["toy timing: fast"]), ("carol", tests)):  # carol is not timed
        staged = write(tmp_path / "alone" / who / "submission" / "toy.cu",
                       (tmp_path / "in" / who / "toy.cu").read_text()).parent
        built = fakes.build_submission(config, staged, tmp_path / "alone" / who / "build")
        schedule.evaluate(config, built.binary, tmp_path / "alone" / who / "run", cases,
                          GpuLock("fake-gpu", tmp_path / "locks"))
    by_grade = [json.loads(line) for line in started.read_text().splitlines()]
    for who in ("alice", "carol"):
        assert [p["cases"] for p in by_grade if p["who"] == who] == [p["cases"] for p in by_class if p["who"] == who]
    assert [p["cases"] for p in by_grade if p["who"] == "carol"] == [
        ["toy: adds", "toy: hangs when broken"], ["toy: adds"], ["toy: holds little device memory"]]


def test_builds_that_could_not_reuse_the_reference_configuration_are_said_once(lab, tmp_path: Path, monkeypatch):
    config, fakes, log = lab
    refused = "CMake Error: Parse error in cache file /tmp/x/CMakeCache.txt on line 400. Offending entry: "

    def afresh(*args, **kwargs):
        return dataclasses.replace(fakes.build_submission(*args, **kwargs), configured_afresh=refused)

    monkeypatch.setattr(classroom.grade, "build_submission", afresh)
    for name in ("alice", "frank", "gina"):
        submit(tmp_path / "in", name, toy("{}"))
    shown = io.StringIO()
    grade_it(config, tmp_path / "in", tmp_path / "out", tmp_path, stream=shown)
    notes = [line for line in shown.getvalue().splitlines() if "configure from scratch" in line]
    assert len(notes) == 1 and refused in notes[0]
    assert results(tmp_path / "out", "frank")["score"] == MAX  # a slower build, the same grade
