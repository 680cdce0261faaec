"""Grading a class: every submission in a folder, through a pipeline that keeps the cores and the GPU busy.

    roster -> intake -> build (a pool, one small build per student) -> correctness (a few test
    programs at once, GPU lock shared) -> serial tests and timing (one program at a time, for the
    students queued, in one exclusive hold of the GPU lock) -> score -> results.json; then
    gradebook.csv and the summary.

- A student is a folder or a .zip in the submissions folder (read_class); anything else there
  (grades.csv, .DS_Store) is skipped with one warning, not graded as a student with 0 points.
- The reference is built once, with every core, when the first student passes intake (a
  class that intake refuses whole builds nothing); each student's build links its
  compiled tests and harness (prebuilt.py), so only the student's files compile.
- Each student's test program runs through the run stage's one scheduler
  (grader/run/schedule.py), as `grade` runs one submission's: the plain
  correctness cases share one test program, and what did not pass there runs
  again alone; a case that runs out of time or memory spends the student's budget.
  This module decides only when: correctness a few students at once, then the
  serial tests and timing of a batch of students in one exclusive hold.
- A split lab's judge holds no student code, so its listing of the cases (and
  of the GPU it sees) is taken once per GPU and stands for every student's:
  one program start, one CUDA context fewer a student. For the same reason the
  reference build's judge serves every student's test programs and the
  reference's timing (grader/run/servers.py): a few judge processes a GPU,
  each with one CUDA context, where each program started one; the student's
  code still runs in a runner started for each program, in the sandbox.
- The reference is timed once per GPU (schedule.time_reference: three runs,
  each case's middle one), under that GPU's exclusive lock, and each
  student is scored against the reference of the GPU that timed them. Once the
  class is timed, each GPU times the reference again, and the summary says how
  far it moved (a warning past summary.REFERENCE_DRIFT_WARN).
- A test worth no points is not run (class_tests): those check the grader's own
  references, the same for every student, and the self-check and `make test`
  run them. Lab 06's took 2.5 s of CPU a student, and needed the GPU alone.
- A student is timed only where performance points are possible: the timing
  case earns points and the correctness tests it requires passed. Timing cases
  worth no points are not run at all, and within a timing case only the
  measurements that scores rest on are taken (schedule.scored_measurements;
  lab 08's sequential baselines and lab 11's one-value timings are left out):
  the student's and the reference's alike.
- A performance ratio just past a threshold (audit.RERUN_BAND) is timed again
  in the same hold; the better median counts (audit.py), and both are recorded.
- A result is kept when a later run finds the same fingerprint (same files,
  config and grader), unless a regrade is asked for: an interrupted run picks up
  where it stopped. Results are written atomically.
- Nothing a student submits stops the class: an unexpected error in one
  student's grading becomes a "grader problem" result for that student.
- With several GPUs, one grading uses them all (each program is sent to its
  GPU through CUDA_VISIBLE_DEVICES, under that GPU's lock): a student's
  correctness runs on the GPU with the fewest running (one not timing, if
  there is one), and their serial tests and timing on whichever GPU's thread
  is free first, not necessarily the same.
  A kernel that never ends holds its GPU's timing back until its case's time
  limit (60 s in lab 01): no timing can share a GPU with it. Its correctness
  programs go on beside it, and the other GPUs time the students meanwhile
  (_wait_while_hung); when each GPU was a grader process of its own with its own
  students, that minute of a GPU's timing was lost. Two GPUs still do not
  halve a class's time: the driver starts CUDA contexts one at a time for the
  whole host, and a class is mostly program starts (lab 01 on two H200s: 0.70x
  of one, docs/gpu-runs/2026-11-29-h200-h200x2-selfchecks-one-grading-two-gpus.md).
"""
from __future__ import annotations

import itertools
import queue
import shutil
import sys
import tempfile
import threading
import time
import traceback
from fnmatch import fnmatchcase
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from grader import audit, build, grade, intake, lms, profile, report, summary
from grader.config import LabConfig
from grader.errors import GraderError, NoGpu
from grader.gpulock import Gpu, GpuLock, HeldByHang, list_gpus, safe_key
from grader.progress import Progress
from grader.proc import cores
from grader.run.outcomes import CaseOutcome, RunInfo
from grader.run.schedule import (Evaluation, ProgramRun, plan, sanitizer_wrappers, scored_measurements,
                                  time_reference)
from grader.run.servers import JudgeServers
from grader.score import (NOT_RUN_WORTH_NO_POINTS, NOT_TIMED, NOT_TIMED_WORTH_NO_POINTS, Scored, score_lab,
                          unmet_requirements)

# Correctness test programs running at once on one GPU: each holds a CUDA context (about 0.5 GB)
# and its inputs, and computes its CPU reference on a core of its own.
DEFAULT_GPU_JOBS = 6
# Students whose serial tests and timing share one exclusive hold. Taking the lock stops new correctness runs
# and waits for the running ones to end: a drain of a few seconds in which the GPU is ever less busy. Taken
# for each student as they came (one or two at a time), the drains cost lab 01 on an H100 2.2 s of waiting a
# student. So while more students are in their correctness runs, the worker gathers up to ALONE_BATCH of
# them, waiting at most ALONE_GATHER_S after the first (lab 01's class of 200: 490 s before, 478 s after).
ALONE_BATCH = 8
ALONE_GATHER_S = 20.0
# How often a GPU's timing thread looks again whether a program there that looked hung has gone.
HUNG_POLL_S = 0.2


def default_jobs(gpu_jobs: int = DEFAULT_GPU_JOBS, gpus: int = 1) -> int:
    """Builds at once: the cores left after the test programs, and one core per GPU kept free for timing,
    so that a build never competes with what is being timed."""
    return max(1, cores() - (gpu_jobs + 1) * gpus)


@dataclass(frozen=True)
class Student:
    name: str
    path: Path | None  # None when the submission cannot be told apart from another
    problem: str = ""
    lms: dict[str, str] | None = None  # who the student is to the LMS whose export this is (lms.py)
    files: tuple[tuple[str, Path], ...] = ()  # an export's files kept under other names (Canvas): (given, where)


@dataclass(frozen=True)
class ClassOptions:
    jobs: int = 0  # builds at once; 0: default_jobs()
    gpu_jobs: int = DEFAULT_GPU_JOBS
    regrade_all: bool = False
    regrade: frozenset[str] = frozenset()
    keep_work: bool = False  # keep each student's build and run folders
    profile: bool = False  # profile each timed student's kernels as feedback (grader/profile.py); no points
    # Start a judge for each test program instead of sharing serving ones (servers.py): what they save is measured
    # by running a class both ways.
    judge_per_program: bool = False


@dataclass(frozen=True)
class ClassResult:
    students: list[str]
    summary: str
    stopped: bool = False
    phases_s: dict[str, float] = field(default_factory=dict)  # the reference's build and timing


def student_name(entry: Path) -> str:
    return entry.name[:-4] if entry.name.lower().endswith(".zip") else entry.name


# Folders that unpacking a class's archive on a Mac adds beside the students' (resource forks): no one's.
NOT_A_STUDENT = ("__MACOSX",)


def is_submission(entry: Path) -> bool:
    """A student is a folder or a .zip; anything else in the class folder (grades.csv, notes.txt, .DS_Store, a
    hidden folder) is no one's submission, and would otherwise become a student with 0 points."""
    if entry.name.startswith(".") or entry.name in NOT_A_STUDENT:
        return False
    return entry.is_dir() or entry.name.lower().endswith(".zip")


@dataclass(frozen=True)
class ClassFolder:
    students: list[Student]  # sorted by name
    skipped: list[str]  # the entries that are not submissions (is_submission), for one warning


def read_class(submissions: Path) -> ClassFolder:
    """The students of a submissions folder, and what else it holds: one folder or .zip per student, or an
    LMS's export as it comes (Gradescope's, Canvas's: lms.py)."""
    export = lms.read_export(submissions)
    if export is not None:
        return ClassFolder([Student(s.name, s.path, s.problem, s.identity, s.files) for s in export.students],
                           export.skipped)
    entries: dict[str, list[Path]] = {}
    skipped = []
    for entry in sorted(submissions.iterdir()):
        if is_submission(entry):
            entries.setdefault(student_name(entry), []).append(entry)
        else:
            skipped.append(entry.name)
    students = []
    for name, paths in sorted(entries.items()):
        if len(paths) == 1:
            students.append(Student(name, paths[0]))
        else:
            students.append(Student(name, None, "the submissions folder holds " + " and ".join(p.name for p in paths)
                                    + " for this student; keep one and grade again"))
    return ClassFolder(students, skipped)


def skipped_warning(skipped: list[str]) -> str:
    """One line naming what a class folder holds besides submissions ("" when nothing)."""
    if not skipped:
        return ""
    return (f"WARNING: skipped {len(skipped)} {'entry' if len(skipped) == 1 else 'entries'} of the submissions "
            f"folder, no student's (a student is a folder or a .zip): {', '.join(skipped)}")


def roster(submissions: Path, shard: tuple[int, int] | None = None) -> list[Student]:
    """The students of a submissions folder, sorted by name; with shard (i, n), every n-th from the i-th."""
    students = read_class(submissions).students
    if shard is not None:
        index, count = shard
        students = students[index::count]
    return students


@dataclass(frozen=True)
class IntakeCheck:
    student: str
    problem: str = ""  # why intake refuses the submission; "" when it takes it


def check_intake(config: LabConfig, submissions: Path, shard: tuple[int, int] | None = None) -> list[IntakeCheck]:
    """Intake alone for every student (files found, forbidden identifiers, zips): nothing is built or run, so it
    needs no GPU, sandbox or compute-sanitizer, and a TA can fix what it finds before grading."""
    checks = []
    with tempfile.TemporaryDirectory(prefix="kit-intake-") as folder:
        for student in roster(submissions, shard):
            checks.append(IntakeCheck(student.name, _intake_problem(config, student, Path(folder) / student.name)))
    return checks


def gathered(student: Student, scratch: Path) -> Path:
    """Where intake reads the student's files: their folder or .zip, or for an export that keeps them flat under
    other names (Canvas's), a folder in `scratch` of copies under the names the student gave them (or the one
    .zip they uploaded)."""
    if not student.files:
        return student.path
    if len(student.files) == 1 and student.files[0][0].lower().endswith(".zip"):
        return student.files[0][1]  # a zip uploaded alone is the submission, as in a class folder
    scratch.mkdir(parents=True, exist_ok=True)
    for name, source in student.files:
        shutil.copyfile(source, scratch / name)
    return scratch


def _intake_problem(config: LabConfig, student: Student, destination: Path) -> str:
    if student.path is None or student.problem:
        return student.problem
    try:
        intake.stage(gathered(student, destination.with_name(destination.name + "-export")), config, destination)
    except intake.IntakeError as error:
        return str(error)
    except OSError as error:  # unreadable (permissions): the TA's to fix, and worth a line rather than a traceback
        return f"{student.path.name} cannot be read ({error})"
    return ""


def parse_part(text: str) -> tuple[int, int]:
    """"2/8" -> (2, 8): the third of eight shards, counted from 0."""
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"'{text}' is not I/N (e.g. 0/4)") from None
    if not 0 <= index < count:
        raise ValueError(f"'{text}': I must be between 0 and N-1")
    return index, count


def _kept_fingerprint(out_dir: Path, student: str) -> str | None:
    """The fingerprint of a finished result, or None where there is none (or it was a grader problem,
    which a new run tries again)."""
    results = summary.read_results(out_dir, [student]).get(student)
    if results is None:
        return None
    extra = results.get("extra_data", {})
    return None if extra.get("status") == "grader_problem" else extra.get("fingerprint")


def build_reference_tree(config: LabConfig, folder: Path) -> Path:
    """Configure and build the reference in `folder` (every core); students' builds link its objects."""
    grade.check_configured(config, build.configure(config, folder, None))
    grade.build_reference(config, folder)
    return folder


def timed_cases(config: LabConfig) -> list[str]:
    """The timing cases that can earn points (the others are reported by `make grade`, not timed here)."""
    return [case for case in config.timing_cases if any(p.case == case and p.points > 0 for p in config.perf)]


def _timing_run(config: LabConfig, evaluation: Evaluation) -> dict:
    """What summary.write_reference_timings keeps of a timing of the reference: when, the medians of the
    measurements that scores rest on (those worth points, and what they are divided by), what failed."""
    scored = scored_measurements(config)
    return {"at": evaluation.programs[0]["at"][0] if evaluation.programs else time.time(),
            "medians": {t["name"]: t["median_s"] for o in evaluation.outcomes.values() if o.passed
                        for t in o.timings if t.get("name") in scored and "median_s" in t},
            "failed": [f"{name}: {o.status}" for name, o in evaluation.outcomes.items() if not o.passed]}


def class_tests(config: LabConfig) -> list[str]:
    """The correctness tests a class is graded on: those worth points, and any a timing worth points requires."""
    required = [p for spec in config.perf if spec.points > 0 for p in spec.requires]
    return [t.name for t in config.tests if t.points > 0 or any(fnmatchcase(t.name, p) for p in required)]


def attention(outcomes: dict[str, CaseOutcome]) -> list[str]:
    """What a TA should look at in a student's test outcomes."""
    notes = []
    for name, outcome in outcomes.items():
        if outcome.status == "timed_out":
            notes.append(f"timed out: {name}")
        elif outcome.status in ("crashed", "not_found"):
            notes.append(f"crashed: {name}")
    return notes


@dataclass
class _Device:
    """One GPU of a class's grading: its lock, the reference timing of the students it times, and the students it
    has in correctness runs now."""

    gpu: Gpu
    lock: GpuLock
    reference: Evaluation | None = None  # timed on this GPU; the students timed here are scored against it
    listed: RunInfo | None = None  # what the first listing here found: a split lab's judge lists alike
    reference_profile: profile.Profiled | None = None  # measured once, by the first profile here
    students_timed: int = 0  # the reference is timed again after them
    in_correctness: int = 0  # students whose correctness programs run here now
    timing: bool = False  # its thread waits for the GPU alone, or holds it: correctness here waits too

    @contextmanager
    def alone(self, unless_hung: bool = False) -> Iterator[float]:
        """The GPU's lock held exclusively (GpuLock.exclusive), `timing` while it is wanted or held."""
        self.timing = True
        try:
            with self.lock.exclusive(unless_hung=unless_hung) as waited:
                yield waited
        finally:
            self.timing = False


@dataclass
class _Student:
    """One student on the way through the pipeline."""

    student: Student
    work: Path
    started: float
    fingerprint: str = ""
    staged: intake.Staged | None = None  # the student's files as intake copied them, and where each came from
    run: ProgramRun | None = None  # the student's built test program and what its cases came to, once built
    device: _Device | None = None  # where their programs ran last: the GPU that timed them, if one did
    order: int = 0  # their place in the queue for timing
    phases_s: dict[str, float] = field(default_factory=dict)  # where this student's time went
    profile_text: str = ""  # with --profile: the profile's table and hints for their feedback


class _Stop(Exception):
    """The run is stopping (interrupted, or no GPU): leave this student for the next run."""


def _move(state: _Student, device: _Device) -> None:
    """Sends the student's next test programs to `device`: on its GPU, under its lock."""
    state.device = device
    state.run.lock, state.run.gpu = device.lock, device.gpu


class ClassGrading:
    """A class's grading on the GPUs given: a build pool, a pool of correctness runs (DEFAULT_GPU_JOBS a GPU) and
    one thread a GPU that does everything needing that GPU alone, for whichever students are ready."""

    def __init__(self, config: LabConfig, students: list[Student], out_dir: Path, workroot: Path,
                 options: ClassOptions, gpus: list[Gpu], stream: TextIO = sys.stdout):
        self.config = config
        self.students = students
        self.out_dir = out_dir
        self.workroot = workroot.resolve()
        self.options = options
        self.devices = [_Device(gpu, GpuLock(gpu.key)) for gpu in gpus]
        self.devices_guard = threading.Lock()  # the devices' in_correctness
        self.progress = Progress(len(students), stream)
        self.reference_build: Path | None = None
        self.reference_built = threading.Event()
        self.reference_wanted = False  # once a student passes intake: a class that intake refuses whole needs none
        self.stopping = threading.Event()
        self.no_gpu = ""
        self.fatal: GraderError | None = None
        # The students ready for their serial tests and timing, in the order they came, for whichever GPU's thread
        # is free: (0, order, student); each thread's end (1, order, None) comes after every student, even one a
        # thread gave back (_serial_and_timing).
        self.alone: queue.PriorityQueue[tuple[int, int, _Student | None]] = queue.PriorityQueue()
        self.order = itertools.count()
        self.in_correctness = 0  # students given to the correctness pool whose correctness runs have not ended
        self.in_correctness_guard = threading.Lock()
        self.phases_s = {"reference_build_s": 0.0, "reference_timing_s": 0.0}
        self.graded_tests = class_tests(config)
        self.tests = plan(config, self.graded_tests)  # the tests graded, by how they hold the GPU
        self.ncu = profile.find_ncu() if options.profile else None
        self.afresh_said = threading.Event()  # builds that could not reuse the reference's configuration: said once
        self.servers: JudgeServers | None = None  # the reference judge's serving processes, once it is built

    # -- the run ------------------------------------------------------------------------------------------

    def run(self) -> bool:
        """Grade every student; returns False when interrupted. Raises NoGpu / GraderError at the end
        when the run could not finish for want of a GPU or because the reference is broken."""
        gpus = len(self.devices)
        builders = ThreadPoolExecutor(self.options.jobs or default_jobs(self.options.gpu_jobs, gpus),
                                      thread_name_prefix="build")
        self.correctness_pool = ThreadPoolExecutor(self.options.gpu_jobs * gpus, thread_name_prefix="run")
        timers = [threading.Thread(target=self._alone_worker, args=(device,), name=f"alone-{k}", daemon=True)
                  for k, device in enumerate(self.devices)]
        interrupted = False
        try:
            futures = []
            for timer in timers:
                timer.start()
            for student in self.students:  # intake is quick: refusals and kept results show at once
                if (state := self._intake(student)) is not None:
                    if not self.reference_wanted:  # the first student to build: the reference builds ahead of them
                        self.reference_wanted = True
                        futures.append(builders.submit(self._build_reference))
                    futures.append(builders.submit(self._build, state))
            wait(futures)
            self.correctness_pool.shutdown(wait=True)
        except KeyboardInterrupt:
            interrupted = True
            self.stopping.set()
            self.progress.note("Stopping: the test programs already running finish (within their time limits); "
                               "run the same command again to go on.")
            builders.shutdown(wait=True, cancel_futures=True)
            self.correctness_pool.shutdown(wait=True, cancel_futures=True)
        finally:
            builders.shutdown(wait=True)
            self.reference_built.set()
            for _ in timers:  # one end for each GPU's thread
                self.alone.put((1, next(self.order), None))
            for timer in timers:
                timer.join()
            if self.servers is not None:
                self.servers.close()
            self.progress.close()
        if self.fatal is not None:
            raise self.fatal
        if self.no_gpu:
            raise NoGpu(self.no_gpu)
        return not (interrupted or self.stopping.is_set())

    def _stop_requested(self, gpu_needed: bool = True) -> bool:
        """Whether to stop: interrupted, the reference is broken, or (for what runs on the GPU) there is none.
        Without a GPU the builds go on, so that build errors are graded and the builds measured."""
        return self.stopping.is_set() or self.fatal is not None or (gpu_needed and bool(self.no_gpu))

    def _check_stop(self, gpu_needed: bool = True) -> None:
        if self._stop_requested(gpu_needed):
            raise _Stop()

    def _no_gpu(self, why: str) -> None:
        if not self.no_gpu:
            self.no_gpu = why
            self.progress.note(f"No GPU usable ({why}): the submissions are still built, so that build errors "
                               f"are graded, but nothing is run; grade on a machine with an NVIDIA GPU.")

    # -- the reference ------------------------------------------------------------------------------------

    def _build_reference(self) -> None:
        started = time.monotonic()
        try:
            self.reference_build = build_reference_tree(self.config, self.workroot / "reference-build")
            if not self.options.judge_per_program:
                self.servers = JudgeServers(self._reference_binary(), self.workroot / "judges")
        except GraderError as error:
            self.fatal = error
        except Exception:  # a broken reference stops the class; say why
            self.fatal = GraderError(traceback.format_exc(limit=5))
        finally:
            self.phases_s["reference_build_s"] = time.monotonic() - started
            self.reference_built.set()

    def _reference_binary(self) -> Path:
        return build.binary_path(self.reference_build, self.config.name, "reference")

    def _time_reference(self, device: _Device) -> None:
        """The reference's timing on `device`, under its exclusive lock; the students it times are scored against
        it. The GPUs time theirs at once, each alone on its own GPU."""
        started = time.monotonic()
        evaluation = time_reference(self.config, self._reference_binary(), self._device_work(device, "reference-run"),
                                    device.lock, timed_cases(self.config), scored_measurements(self.config),
                                    servers=self.servers, gpu=device.gpu)
        failed = [f"{name}: {o.status}: {' '.join(o.messages)[:2000]}" for name, o in evaluation.outcomes.items()
                  if not o.passed]
        if failed:
            raise GraderError(f"the reference's timing cases failed on {device.gpu.name or device.gpu.key}, so "
                              f"no student can be scored for performance:\n" + "\n".join(failed))
        device.reference = evaluation
        self.phases_s["reference_timing_s"] = max(self.phases_s["reference_timing_s"], time.monotonic() - started)

    def _device_work(self, device: _Device, what: str) -> Path:
        """A folder of the run for `what` on `device` (each GPU times and profiles the reference in its own)."""
        return self.workroot / what if len(self.devices) == 1 else self.workroot / f"{what}-{safe_key(device.gpu.key)}"

    # -- intake and build (build pool) --------------------------------------------------------------------

    def _intake(self, student: Student) -> _Student | None:
        """Stage the student's files; None when that settles the student (refused, or kept from before)."""
        state = _Student(student, self.workroot / "students" / student.name, time.monotonic())
        try:
            if student.path is None or student.problem:
                return self._refuse(state, student.problem, {})
            submission = gathered(student, state.work / "export")
            try:
                state.staged = intake.stage(submission, self.config, state.work / "submission")
            except intake.IntakeError as error:
                return self._refuse(state, str(error), audit.submission_files(submission))
            files = {name: (state.staged.folder / name).read_bytes() for name in state.staged.files}
            state.fingerprint = audit.fingerprint(self.config, files)
            return None if self._keep(state) else state
        except Exception as error:  # noqa: BLE001 - one student's trouble must not stop the class
            self._grader_problem(state, error)
            return None

    def _build(self, state: _Student) -> None:
        try:
            self.reference_built.wait()
            self._check_stop(gpu_needed=False)
            started = time.monotonic()
            built = grade.build_submission(self.config, state.staged.folder, state.work / "build",
                                           self.reference_build)
            state.phases_s["build_s"] = time.monotonic() - started
            if built.configured_afresh and not self.afresh_said.is_set():
                self.afresh_said.set()
                self.progress.note(f"Note: student builds configure from scratch, a few seconds more each, because "
                                   f"CMake refused the reference build's configuration: {built.configured_afresh}")
            if not built.ok:
                # As `grade` says it: once, atop the report, naming the student's file rather than the staged copy.
                message = grade.compile_error_message(built, state.staged)
                self._write(state, grade.not_compiled(self.config, message, state.started), ["build error"],
                            "build_error")
                return
            state.run = ProgramRun(self.config, built.binary, state.work / "run",
                                   measure_only=scored_measurements(self.config), servers=self.servers)
            self._count_in_correctness(+1)
            self.correctness_pool.submit(self._guarded, state, self._correctness)
        except _Stop:
            pass
        except Exception as error:  # noqa: BLE001 - one student's trouble must not stop the class
            self._grader_problem(state, error)

    def _keep(self, state: _Student) -> bool:
        name = state.student.name
        if self.options.regrade_all or name in self.options.regrade:
            return False
        if _kept_fingerprint(self.out_dir, name) != state.fingerprint:
            return False
        self.progress.kept(name)
        return True

    def _refuse(self, state: _Student, why: str, files: dict[str, bytes]) -> None:
        state.fingerprint = audit.fingerprint(self.config, files)
        if not self._keep(state):
            self._write(state, grade.refused(self.config, why, state.started), [f"refused at intake: {why}"],
                        "refused")

    # -- correctness (correctness pool, GPU lock shared) --------------------------------------------------

    def _guarded(self, state: _Student, stage: Callable[[_Student], None]) -> None:
        try:
            stage(state)
        except _Stop:
            pass
        except NoGpu as error:
            self._no_gpu(str(error))
        except Exception as error:  # noqa: BLE001
            self._grader_problem(state, error)

    def _count_in_correctness(self, change: int) -> None:
        with self.in_correctness_guard:
            self.in_correctness += change

    def _correctness(self, state: _Student) -> None:
        """The student's tests that may share the GPU (the scheduler's plan), a few students at once; then the
        serial tests and timing are queued for the GPUs' threads that run them alone."""
        try:
            self._run_correctness(state)
        finally:
            self._count_in_correctness(-1)

    def _run_correctness(self, state: _Student) -> None:
        self._check_stop()
        started = time.monotonic()
        device = self._correctness_device()
        try:
            listed = self._correctness_on(device, state)
        finally:
            with self.devices_guard:
                device.in_correctness -= 1
        state.phases_s["correctness_s"] = time.monotonic() - started
        if listed and (self.tests.alone or state.run.busy_beside or self._timing_possible(state, True)):
            state.order = next(self.order)
            self.alone.put((0, state.order, state))
        else:
            self._score(state)

    def _correctness_device(self) -> _Device:
        """The GPU for the next student's correctness programs: of those with fewer than gpu_jobs students in
        theirs (the pool's size makes sure there is one), one that is not timing if there is one (its programs
        would wait for the timing to end), and of those the one with the fewest."""
        with self.devices_guard:
            device = min((d for d in self.devices if d.in_correctness < self.options.gpu_jobs),
                         key=lambda d: (d.timing, d.in_correctness))
            device.in_correctness += 1
            return device

    def _correctness_on(self, device: _Device, state: _Student) -> bool:
        """The student's correctness programs on `device`; False when the test program could not start."""
        _move(state, device)
        if not state.run.list_cases([t.name for t in self.config.tests], known=device.listed):
            return False
        device.listed = device.listed or state.run.info
        state.run.run_beside(self.tests.beside, before_each=self._check_stop)
        return True

    def _timing_possible(self, state: _Student, assume_alone_pass: bool = False) -> list[str]:
        """The timing cases worth running for this student: they earn points and what they require passed (or,
        with `assume_alone_pass`, is still to run alone: the serial tests, those that found the GPU busy)."""
        alone = set(self.tests.alone + state.run.busy_beside) if assume_alone_pass else set()
        cases = []
        for spec in self.config.perf:
            if spec.points > 0 and spec.case not in cases and not [
                    t for t in unmet_requirements(self.config, spec, state.run.outcomes) if t not in alone]:
                cases.append(spec.case)
        return cases

    # -- serial tests and timing (a thread a GPU, its GPU lock exclusive) ---------------------------------

    def _alone_worker(self, device: _Device) -> None:
        """`device`'s thread: the reference's timing there, then the serial tests and timing of whichever students
        are ready, a batch at a time, and the reference's timing again at the end."""
        self.reference_built.wait()
        if self.reference_wanted and self.fatal is None and not self._stop_requested():
            self._guarded_reference(device)
        last = False
        while not last:
            self._wait_while_hung(device)
            batch = self._gather_batch()
            last = batch[-1] is None
            batch = [state for state in batch if state is not None]
            if batch and device.reference is not None and not self._stop_requested():
                # A thread that took its end takes no more students: it keeps those it has, whatever they wait for.
                self._serial_and_timing(device, batch, may_give_back=not last)
        if device.students_timed and device.reference is not None and not self._stop_requested():
            self._time_reference_again(device)

    def _wait_while_hung(self, device: _Device) -> None:
        """With other GPUs to time the students, take none while a program on this one looks hung (a kernel that
        never ends, until its case's time limit): what is timed cannot share the GPU with it, and the others'
        threads go on meanwhile. Its correctness programs go on beside it."""
        while len(self.devices) > 1 and device.lock.suspect_hold() and not self._stop_requested():
            time.sleep(HUNG_POLL_S)

    def _gather_batch(self) -> list[_Student | None]:
        """The next students to time, in the order they came (None last once no more will come): up to
        ALONE_BATCH, gathered while others are still in their correctness runs and for at most ALONE_GATHER_S
        after the first."""
        batch = [self.alone.get()[2]]
        deadline = time.monotonic() + ALONE_GATHER_S
        while batch[-1] is not None and len(batch) < ALONE_BATCH:
            if self.alone.empty() and (self.in_correctness == 0 or self.stopping.is_set()):
                break  # none is on the way: waiting would only delay these
            try:
                batch.append(self.alone.get(timeout=min(max(0.0, deadline - time.monotonic()), 0.2))[2])
            except queue.Empty:
                if time.monotonic() >= deadline:
                    break
        return batch

    def _serial_and_timing(self, device: _Device, batch: list[_Student], may_give_back: bool) -> None:
        """The serial tests, the cases found busy beside others and the timing cases of the students in `batch`, in
        one exclusive hold of `device`; then their scores. With other GPUs to take them (and `may_give_back`), a
        batch whose hold would wait for a program that looks hung goes back to the queue, in its place."""
        done = []
        try:
            with device.alone(unless_hung=may_give_back and len(self.devices) > 1) as waited:
                for state in batch:
                    if self._stop_requested():
                        break
                    started = time.monotonic()
                    try:
                        _move(state, device)
                        state.run.run_correctness_alone(self.tests.alone)
                        timed = self._timing_possible(state)  # now that every correctness case has run
                        state.run.run_alone_together(timed)
                        state.run.time_again_near_thresholds(timed, device.reference.outcomes)
                    except Exception as error:  # noqa: BLE001
                        self._grader_problem(state, error)
                        continue
                    state.run.lock_wait["exclusive_s"] += waited
                    state.phases_s["serial_and_timing_s"] = time.monotonic() - started
                    done.append(state)
        except HeldByHang:
            for state in batch:
                self.alone.put((0, state.order, state))
            return
        device.students_timed += len(done)
        if self.options.profile:
            for state in done:
                if not self._stop_requested():
                    self._profile(device, state)
        for state in done:
            self._guarded(state, self._score)

    def _profile(self, device: _Device, state: _Student) -> None:
        """The student's timed kernels under Nsight Compute, in their sandbox, holding the GPU alone (a profile
        replays kernels, which would spoil a timing beside it); the reference's once a GPU, beside it. Feedback
        only: the text joins the student's output after scoring, and a failure here costs them nothing."""
        started = time.monotonic()
        status = {case: outcome.status for case, outcome in state.run.outcomes.items()}
        with device.alone():
            state.profile_text = profile.submission_feedback(self.config, state.run.binary, self.ncu,
                                                             state.work / "profile", status,
                                                             lambda: self._reference_profile(device),
                                                             device.gpu.visible)
        state.phases_s["profile_s"] = time.monotonic() - started

    def _reference_profile(self, device: _Device) -> profile.Profiled:
        """The reference's profile on `device`, taken once, by the first student's there (in that student's hold)."""
        if device.reference_profile is None:
            device.reference_profile = profile.profile_build(self.config, self._reference_binary(), self.ncu,
                                                             self._device_work(device, "reference-profile"),
                                                             gpu=device.gpu.visible)
        return device.reference_profile

    def _time_reference_again(self, device: _Device) -> None:
        """The reference's timing cases once more on `device`, after the class's, written beside the results with
        the timing its students were scored against (summary.py compares the two)."""
        try:
            again = time_reference(self.config, self._reference_binary(), self._device_work(device, "reference-again"),
                                   device.lock, timed_cases(self.config), scored_measurements(self.config),
                                   servers=self.servers, gpu=device.gpu)
            last = _timing_run(self.config, again)
        except Exception as error:  # noqa: BLE001 (the class is graded; only the check is lost)
            last = {"at": time.time(), "medians": {}, "failed": [f"grader problem: {error}"]}
        summary.write_reference_timings(self.out_dir, device.gpu.key, device.gpu.name,
                                        [_timing_run(self.config, device.reference), last])

    def _guarded_reference(self, device: _Device) -> None:
        try:
            self._time_reference(device)
        except NoGpu as error:
            self._no_gpu(str(error))
        except GraderError as error:
            self.fatal = error
        except Exception:  # noqa: BLE001
            self.fatal = GraderError(traceback.format_exc(limit=5))

    # -- the result ---------------------------------------------------------------------------------------

    def _score(self, state: _Student) -> None:
        # A stop by signal (Slurm's scancel or time limit, a node going down) reaches the test programs too: a
        # case it ended reads as a crash, so a student whose runs overlapped the stop is left for the next run.
        self._check_stop(gpu_needed=False)
        outcomes = dict(state.run.outcomes)
        for test in self.config.tests:
            if test.name not in self.graded_tests:
                outcomes[test.name] = CaseOutcome(test.name, "not_run", [NOT_RUN_WORTH_NO_POINTS])
        for case in self.config.timing_cases:
            if case not in outcomes:
                outcomes[case] = CaseOutcome(case, NOT_TIMED, [self._why_not_timed(case, outcomes)])
        reference = state.device.reference if state.device is not None else None
        items = score_lab(self.config, outcomes, reference.outcomes if reference else None)
        evaluation = state.run.evaluation()
        output = f"Graded on {evaluation.info.gpu} (driver {evaluation.info.driver})."
        if state.profile_text:  # scored above without it
            output += "\n\n" + state.profile_text
        self._finish(state, items, output, attention(evaluation.outcomes), "graded", evaluation)

    def _why_not_timed(self, case: str, outcomes: dict[str, CaseOutcome]) -> str:
        specs = [p for p in self.config.perf if p.case == case]
        if all(p.points == 0 for p in specs):
            return NOT_TIMED_WORTH_NO_POINTS
        unmet = sorted({t for p in specs for t in unmet_requirements(self.config, p, outcomes)})
        return "not timed, because these correctness tests must pass first: " + "; ".join(unmet)

    def _grader_problem(self, state: _Student, error: Exception) -> None:
        where = "".join(traceback.format_exception_only(type(error), error)).strip()
        message = f"Not graded because of a grader problem (tell your TA): {where}"
        self._finish(state, grade.all_zero(self.config, message), message, [f"grader problem: {where[:300]}"],
                     "grader_problem")

    def _finish(self, state: _Student, items: list[Scored], output: str, notes: list[str], status: str,
                evaluation: Evaluation | None = None) -> None:
        reference = state.device.reference if state.device is not None and evaluation is not None else None
        graded = grade.finish(self.config, items, output, state.started, evaluation, reference)
        self._write(state, graded, notes, status, evaluation)

    def _write(self, state: _Student, graded: grade.Graded, notes: list[str], status: str,
               evaluation: Evaluation | None = None) -> None:
        extra = graded.results["extra_data"]
        extra.update(student=state.student.name, status=status, attention=notes, fingerprint=state.fingerprint)
        if state.device is not None:  # the GPU that timed them (scored against its reference), or ran their tests
            gpu = state.device.gpu
            extra["scored_on_gpu"] = {"key": gpu.key, "name": gpu.name, "cuda_visible_devices": gpu.visible}
        extra["phases_s"] = {key: round(value, 3) for key, value in state.phases_s.items()}
        if state.student.lms:
            extra["lms"] = state.student.lms
        if evaluation is not None:
            extra["lock_wait_by_kind_s"] = {key: round(value, 3) for key, value in state.run.lock_wait.items()}
            extra["reruns"] = state.run.reruns
            extra["found_busy_beside_others"] = state.run.busy_beside  # each run again alone
            extra["case_s"] = state.run.case_s
            extra["programs"] = state.run.programs
            if state.device is not None and state.device.reference is not None:
                extra["reference_programs"] = state.device.reference.programs
        folder = self.out_dir / state.student.name
        report.write_json(folder / summary.RESULTS, graded.results)
        report.write_text(folder / "report.txt", graded.table + "\n")
        self.progress.finished(state.student.name, graded.results["score"], self.config.autograded_points, notes,
                               self.config.extra_credit_points)
        if not self.options.keep_work:
            shutil.rmtree(state.work, ignore_errors=True)


def class_outputs(config: LabConfig, out_dir: Path, students: list[str]) -> str:
    """The gradebook, summary and histogram of the results in `out_dir`: the autograder's scores, with the
    questions a TA grades by hand kept apart."""
    return summary.write_all(out_dir, config.name, config.autograded_points, students, config.question_points)


def grade_class(config: LabConfig, submissions: Path, out_dir: Path, workroot: Path,
                options: ClassOptions = ClassOptions(), shard: tuple[int, int] | None = None,
                stream: TextIO = sys.stdout) -> ClassResult:
    """Grade the students of `submissions` (the shard's share, if given) into `out_dir`, on every GPU this process
    may use: results per student, then gradebook.csv and the summary."""
    students = roster(submissions, shard)
    if not students:  # an empty share (of a small class, or an empty folder) has nothing to build, run or time
        return ClassResult([], class_outputs(config, out_dir, []))
    sanitizer_wrappers(config, list(config.all_case_names))  # refuse before any student if it is missing
    gpus = list_gpus()
    grading = ClassGrading(config, students, out_dir, workroot, options, gpus, stream)
    if len(gpus) > 1:
        grading.progress.note(f"{len(gpus)} GPUs ({', '.join(g.name or g.key for g in gpus)}): each runs correctness "
                              f"programs and times whichever students are ready, against its own reference timing")
    names = [s.name for s in students]
    completed = False
    try:
        completed = grading.run()
    finally:
        text = class_outputs(config, out_dir, names)  # written even when interrupted, from what is done
    return ClassResult(names, text, stopped=not completed, phases_s=grading.phases_s)
