"""The one scheduler: which of a test program's cases run how, and when.

`grade` (one submission), `grade-class` (a class, many programs at once) and the
self-check run every case through a ProgramRun, so that all three decide alike:

- The program lists its cases first, and says which GPU it sees (NoGpu when none).
- Cases that may share the GPU run under its lock held shared: the plain
  correctness cases together in one program (one sandbox and one CUDA start
  instead of one each, under load most of a small case's time), then each case
  that did not settle there, and each case under compute-sanitizer, in a program
  of its own, whose run is its outcome.
- Cases that need the GPU alone (timing, and tests marked serial: they read
  device-wide free memory or time, or take much of its memory) run while the
  caller holds the lock exclusively: `evaluate` over one program, a class over a
  batch. So does a case that ran beside others and found the GPU busy where its
  check needs it free of the runner's work: there, others' work looks the same.
  The timing cases run together in one program, and so do the busy cases with
  the serial tests whose config lets them share one (`share_program`); any
  other serial test runs in a program of its own.
- A program has a budget: once one of its cases runs out of time or memory, its
  remaining cases are not run, so one hostile submission costs about one timeout.
- A timing case whose ratio to the reference lies near a threshold can be timed
  again (class grading does); the better median counts.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from grader import audit, sanitizer
from grader.config import LabConfig, PerfSpec
from grader.errors import GraderError, NoGpu
from grader.gpulock import Gpu, GpuLock
from grader.run import judge
from grader.run.outcomes import CaseOutcome, Listing, RunInfo
from grader.run.runner import runner_of
from grader.run.servers import JudgeServers
from grader.score import perf_ratio, scored_value

# The reference's timing runs. Every student's ratio is divided by the reference's time, so one run of it that
# came out fast or slow moves a whole class: on an H100 grading lab 02's class (2026-11-28) the reference's one
# run was 3% faster than its copies' median, and put 3 copies of it past full_at.
REFERENCE_TIMES = 3
# What a test program's exit or output says when it ran out of host memory under the sandbox's limit.
OUT_OF_MEMORY_SIGNS = ("std::bad_alloc", "SIGKILL", "Cannot allocate memory")
_Argument = TypeVar("_Argument")
_Result = TypeVar("_Result")


def seed_for(config: LabConfig) -> int | None:
    """The grading seed (secret, from hidden.toml) or None for the lab's public one."""
    return config.grading_seed


def case_timeout(config: LabConfig, case: str) -> float:
    return next((t.timeout_s for t in config.tests if t.name == case), config.timeout_s)



def needs_gpu_alone(config: LabConfig, case: str) -> bool:
    """Timing cases, and tests marked serial (they read device-wide state, or take much of its memory), run with
    nothing beside them."""
    return case in config.timing_cases or any(t.name == case and t.serial for t in config.tests)


def sanitizer_wrappers(config: LabConfig, names: list[str]) -> dict[str, sanitizer.Wrapper]:
    """How each test in `names` that the config runs under compute-sanitizer is run.

    Without compute-sanitizer this refuses (GraderError): running those tests without it
    would fail every submission on them, for a reason that is not the submission's.
    """
    tools = {t.name: t.sanitizer for t in config.tests if t.sanitizer and t.name in names}
    if not tools:
        return {}
    executable = sanitizer.find()
    if executable is None:
        raise GraderError(sanitizer.missing_message(config.name, config.sanitizer_tools))
    return {name: sanitizer.Wrapper(executable, tool) for name, tool in tools.items()}


def groups_sharing_a_program(config: LabConfig,
                             cases: list[str]) -> list[tuple[list[str], sanitizer.Wrapper | None]]:
    """The cases of `cases` that may share the GPU and can run together, each group in one program: those not
    under compute-sanitizer, then those under each of its tools (one sanitizer start for all of them; one
    report, which names no case, so they settle only when it found nothing). Each group has two cases or more."""
    wrappers = sanitizer_wrappers(config, cases)
    groups: dict[sanitizer.Wrapper | None, list[str]] = {None: []}  # those under no sanitizer first
    for case in cases:
        if not needs_gpu_alone(config, case):
            groups.setdefault(wrappers.get(case), []).append(case)
    return [(group, wrapper) for wrapper, group in groups.items() if len(group) > 1]


@dataclass(frozen=True)
class Plan:
    """A program's cases by how they hold the GPU, each list in the order it was given."""

    beside: list[str]  # may run beside other programs: the GPU lock held shared
    alone: list[str]  # need the GPU to themselves: the GPU lock held exclusively


def plan(config: LabConfig, cases: list[str]) -> Plan:
    alone = [c for c in cases if needs_gpu_alone(config, c)]
    return Plan(beside=[c for c in cases if c not in alone], alone=alone)


def exhausted(outcome: CaseOutcome) -> bool:
    """Did this case run out of time or memory (so the submission's budget is spent)?"""
    if outcome.status == "timed_out":
        return True
    text = " ".join(outcome.messages) + outcome.output_tail
    return outcome.status == "crashed" and any(sign in text for sign in OUT_OF_MEMORY_SIGNS)


@dataclass
class Budget:
    """One submission's budget: spent once one of its cases runs out of time or memory. After that its
    remaining cases are not run, so one hostile submission costs the class about one timeout."""

    spent_by: CaseOutcome | None = None

    def run(self, case: str, start: Callable[[], CaseOutcome]) -> CaseOutcome:
        """`start()` the case, or, once the budget is spent, say why it was not run."""
        if self.spent_by is not None:
            spent = self.spent_by
            return CaseOutcome(case, "not_run", [
                f"Not run: test case '{spent.name}' of this submission already ran out of time or memory "
                f"({spent.messages[0] if spent.messages else spent.status}). Once that happens the remaining "
                f"cases are skipped, so fix that case first; its message says what happened."])
        outcome = start()
        if exhausted(outcome):
            self.spent_by = outcome
        return outcome


def hold(lock: GpuLock | None, alone: bool):
    """The GPU lock, exclusive or shared (a context that gives the seconds waited); nothing without a lock."""
    if lock is None:
        return nullcontext(0.0)
    return lock.exclusive() if alone else lock.shared()


def could_not_start(listing: Listing, cases: list[str]) -> dict[str, CaseOutcome]:
    return {name: CaseOutcome(name, "crashed", [f"The test program could not start: {listing.problem}"])
            for name in cases}


def ratio(outcome: CaseOutcome, reference: dict[str, CaseOutcome], spec: PerfSpec) -> float | None:
    """The ratio `spec` is scored on (score.perf_ratio) for the outcome against the reference's same case; None
    where either has none."""
    return perf_ratio(spec, outcome, reference.get(outcome.name))


@dataclass
class Evaluation:
    """What running one test program produced."""

    info: RunInfo
    outcomes: dict[str, CaseOutcome] = field(default_factory=dict)
    lock_wait_s: float = 0.0  # time spent waiting for the GPU lock
    seconds: float = 0.0  # the whole run's wall time, lock waits included
    test_s: float = 0.0  # of which the tests' own seconds, as the test programs measured them
    programs: list[dict] = field(default_factory=list)  # each test program's run (ProgramRun.programs)

    def cost(self) -> str:
        """Where the run's time went, for a report: the programs' starts (sandbox, CUDA, inputs) are the rest."""
        return f"{self.seconds:.1f} s (tests {self.test_s:.1f} s, GPU lock {self.lock_wait_s:.1f} s)"


def _go_on() -> None:
    """What run_beside does before each program unless told otherwise: nothing, the run goes on."""


@dataclass
class ProgramRun:
    """The cases of one built test program (a student's, the reference's, a variant's), run the grader's way:
    its student code in the sandbox with the lab's limits (runner.py), under compute-sanitizer where the config
    says so, within one budget, under the GPU lock when one is given. What each case came to is booked here as
    it runs."""

    config: LabConfig
    binary: Path
    workdir: Path
    lock: GpuLock | None = None
    info: RunInfo = field(default_factory=RunInfo)
    outcomes: dict[str, CaseOutcome] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    lock_wait: dict[str, float] = field(default_factory=lambda: {"shared_s": 0.0, "exclusive_s": 0.0})
    # Per test case: the program's whole run (sandbox, CUDA start, inputs, test; for cases settled in a shared
    # program, an even share of it) and the test's own seconds.
    case_s: dict[str, dict[str, float]] = field(default_factory=dict)
    reruns: list[dict] = field(default_factory=list)  # each timing taken again near a threshold, and which counted
    # Each test program run: its cases, how it held the GPU ("hold": "shared" or "alone") and when (wall clock, seconds since
    # the epoch, so that the runs of several graders on one machine line up): the audit that no timing ran beside
    # anything on its GPU reads these.
    programs: list[dict] = field(default_factory=list)
    # The measurements a timing case takes (judge._env's measure_only); None: every one. Class grading takes
    # only those scores rest on (scored_measurements).
    measure_only: frozenset[str] | None = None
    # Cases run beside other programs whose check found the GPU busy (CaseOutcome.gpu_busy), where their work
    # looks like the runner's: run again with the GPU to itself (run_correctness_alone).
    busy_beside: list[str] = field(default_factory=list)
    # Judges that serve many runs (servers.py), which class grading shares between its students; None: each
    # program is a judge started for it.
    servers: JudgeServers | None = None
    # The GPU its programs run on, and whose `lock` they hold; None: the grader's own (its CUDA_VISIBLE_DEVICES). A
    # class graded on several GPUs may move a student's run to another GPU between its correctness and its timing.
    gpu: Gpu | None = None

    def list_cases(self, cases: list[str], known: RunInfo | None = None) -> bool:
        """List the program's cases under the shared lock and note the GPU it sees (NoGpu when it sees none).
        False when the program could not even start: each of `cases` is then booked as crashed, saying why.

        `known` is what an earlier listing of the same lab's judge found. A split lab's judge holds no student
        code, so every student's lists alike: it is then taken as this one's, and no program is started (a
        class saves a CUDA start a student)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if known is not None and runner_of(self.binary) is not None:
            self.info = known
            return True
        with hold(self.lock, alone=False), self._program([], "shared"):  # no cases: it lists them
            listing = judge.list_cases(self.binary, self.workdir, self.config.run_limits, self._visible())
        if (listing.cases or not listing.problem) and not listing.info.gpu_available:
            raise NoGpu(listing.info.why_no_gpu or "no CUDA device found")
        self.info = listing.info
        if listing.problem and not listing.cases:
            self.outcomes.update(could_not_start(listing, cases))
            return False
        return True

    def run_beside(self, cases: list[str], before_each: Callable[[], None] = _go_on) -> None:
        """`cases` (plan(...).beside) under the shared lock, one hold a program: those that can share a program
        together, then each case that did not settle there in a program of its own. `before_each` is called
        before each program starts, and may raise to stop the run there (a class grading's Ctrl-C)."""
        settled: dict[str, CaseOutcome] = {}
        for together, wrapper in groups_sharing_a_program(self.config, cases):
            before_each()
            settled.update(self._shared(lambda group: self._settle_together(group, "shared", wrapper), together))
        for case in (c for c in cases if c not in settled):
            before_each()
            self._shared(lambda c: self._run_and_book(c, "shared"), case)
        self.busy_beside += [c for c in cases if c in self.outcomes and self.outcomes[c].gpu_busy]

    def run_alone(self, cases: list[str]) -> None:
        """Each of `cases` in a program of its own, while the caller holds the GPU lock exclusively
        (hold(lock, alone=True)), over this program's cases or over a batch of programs."""
        for case in cases:
            self._run_and_book(case, "alone")

    def run_correctness_alone(self, serial: list[str]) -> None:
        """The correctness cases that need the GPU to themselves, while the caller holds the GPU lock exclusively:
        `serial` (the serial tests), each in a program of its own unless its config lets it share one (lab 05's
        four 8 GiB sums: one program start instead of four, each start about 0.4 s of the hold), then those found
        busy beside other programs (busy_beside), together with the serial tests that may share."""
        sharing = {t.name for t in self.config.tests if t.share_program}
        self.run_alone([c for c in serial if c not in sharing])
        self.run_alone_together([c for c in serial if c in sharing] + self.busy_beside)

    def run_alone_together(self, cases: list[str]) -> None:
        """Cases that need the GPU alone but not a program of their own (the timing cases; or those found busy
        beside other programs, busy_beside), while the caller holds the GPU lock exclusively: together in one
        program where there are two or more, then each case that did not settle there in a program of its own
        (run_alone). A program's start and exit (the sandbox, the judge's, the runner's and the twin's CUDA
        contexts) took most of a short timing case's time alone on the GPU; one program for all of them pays it
        once. The reference is timed the same way (time_reference), in the same order, so each ratio compares
        like with like. A case under compute-sanitizer keeps a program of its own, and so does a serial test that
        may not share one (run_correctness_alone): what it reads of the GPU (its free memory, a time) must not
        depend on what an earlier case in the same processes left behind."""
        wrappers = sanitizer_wrappers(self.config, cases)
        together = [c for c in cases if c not in wrappers]
        settled = self._settle_together(together, "alone") if len(together) > 1 else {}
        self.run_alone([c for c in cases if c not in settled])

    def time_again_near_thresholds(self, cases: list[str], reference: dict[str, CaseOutcome]) -> None:
        """Time again each timing case of `cases` that passed with a ratio to `reference` near full_at or zero_at
        (audit.near_threshold), within the same exclusive hold; the better median counts, and `reruns` says
        which did."""
        for case in cases:
            first = self.outcomes.get(case)
            if first is None or not first.passed:
                continue
            near = [(spec, r) for spec in self.config.perf if spec.case == case and spec.points > 0
                    and (r := ratio(first, reference, spec)) is not None and audit.near_threshold(r, spec)]
            if near:
                self.outcomes[case] = self._better_of(first, self._run(case, "alone"), near, reference)

    def evaluation(self, cases: list[str] | None = None) -> Evaluation:
        """What the run came to: the outcomes of `cases`, in that order (default: all, as they came)."""
        outcomes = self.outcomes if cases is None else {name: self.outcomes[name] for name in cases}
        return Evaluation(info=self.info, outcomes=dict(outcomes), lock_wait_s=sum(self.lock_wait.values()),
                          test_s=sum(o.seconds for o in outcomes.values()), programs=list(self.programs))

    def _visible(self) -> str | None:
        return self.gpu.visible if self.gpu is not None else None

    @contextmanager
    def _program(self, cases: list[str], held: str):
        """Books one test program's run of `cases`, with the GPU held as `held` says, in `programs` (with the GPU's
        key where the run names its GPU)."""
        started = time.time()
        try:
            yield
        finally:
            booked = {"cases": cases, "hold": held, "at": [round(started, 3), round(time.time(), 3)]}
            if self.gpu is not None:
                booked["gpu"] = self.gpu.key
            self.programs.append(booked)

    def _shared(self, start: Callable[[_Argument], _Result], argument: _Argument) -> _Result:
        """`start(argument)` under the GPU lock held shared, booking the wait."""
        with hold(self.lock, alone=False) as waited:
            result = start(argument)
        self.lock_wait["shared_s"] += waited
        return result

    def _run(self, case: str, held: str) -> CaseOutcome:
        """One case in a program of its own, with the GPU held as `held` says ("shared" or "alone"), or not at
        all once the budget is spent."""
        wrapper = sanitizer_wrappers(self.config, [case]).get(case)

        def start() -> CaseOutcome:
            with self._program([case], held):
                return judge.run_case(self.binary, case, case_timeout(self.config, case), self.workdir,
                                      seed_for(self.config), self.config.run_limits, wrapper,
                                      beside_others=held == "shared",
                                      one_work_queue=not self.config.concurrent_streams,
                                      measure_only=self.measure_only, servers=self.servers, gpu=self._visible())
        return self.budget.run(case, start)

    def _run_and_book(self, case: str, held: str) -> None:
        started = time.monotonic()
        outcome = self._run(case, held)
        self.case_s[case] = {"run": round(time.monotonic() - started, 3), "test": round(outcome.seconds, 3)}
        self.outcomes[case] = outcome

    def _settle_together(self, cases: list[str], held: str,
                         wrapper: sanitizer.Wrapper | None = None) -> dict[str, CaseOutcome]:
        """`cases` in one program (judge.run_group), under compute-sanitizer when `wrapper` says so, with the GPU
        held as `held` says ("shared" or "alone"): the outcomes it settles are booked, each with an even share of
        the program's seconds, a case that ran out of time spending the budget. The caller runs each case it did
        not settle in a program of its own, so that the outcome of a case that failed or crashed is always its own
        run's."""
        if self.budget.spent_by is not None:
            return {}
        started = time.monotonic()
        with self._program(cases, held):
            settled = judge.run_group(self.binary, [(c, case_timeout(self.config, c)) for c in cases], self.workdir,
                                      seed_for(self.config), self.config.run_limits,
                                      one_work_queue=not self.config.concurrent_streams,
                                      beside_others=held == "shared", measure_only=self.measure_only,
                                      wrapper=wrapper, servers=self.servers, gpu=self._visible())
        share = (time.monotonic() - started) / len(cases)
        for name, outcome in settled.items():
            self.outcomes[name] = outcome if outcome.passed else self.budget.run(name, lambda o=outcome: o)
            self.case_s[name] = {"run": round(share, 3), "test": round(outcome.seconds, 3)}
        return settled

    def _better_of(self, first: CaseOutcome, second: CaseOutcome, near: list[tuple[PerfSpec, float]],
                   reference: dict[str, CaseOutcome]) -> CaseOutcome:
        """`first` with, for each (performance item, first ratio) of `near`, the second timing where its ratio is
        the better one (the item's own record and those it is divided by, which belong together); each comparison
        is recorded in `reruns`."""
        timings = list(first.timings)
        for spec, first_ratio in near:
            again = ratio(second, reference, spec) if second.passed else None
            counted = "second" if again is not None and again < first_ratio else "first"
            if counted == "second":
                timings = [second.timing(t["name"]) if t.get("name") in spec.records else t for t in timings]
            self.reruns.append({"case": first.name, "measurement": spec.measurement, "ratios": [first_ratio, again],
                                "second_status": second.status, "counted": counted})
        return replace(first, timings=timings)


def scored_measurements(config: LabConfig) -> frozenset[str]:
    """The measurements that scores rest on: each one worth points, and those it is divided by."""
    return frozenset(name for spec in config.perf if spec.points > 0 for name in spec.records)


def evaluate(config: LabConfig, binary: Path, workdir: Path, cases: list[str] | None = None,
             lock: GpuLock | None = None, measure_only: frozenset[str] | None = None,
             servers: JudgeServers | None = None, gpu: Gpu | None = None) -> Evaluation:
    """Run a built test program's test cases (all the config names, unless `cases` says which), under the GPU
    lock when one is given: those that may share the GPU first, then those that need it alone, in one
    exclusive hold. `measure_only`: the measurements its timing cases take; `servers`: the judges that run
    them; `gpu`: the GPU they run on, the lock's (ProgramRun)."""
    started = time.monotonic()
    wanted = list(cases) if cases is not None else list(config.all_case_names)
    program = ProgramRun(config, binary, workdir, lock, measure_only=measure_only, servers=servers, gpu=gpu)
    if program.list_cases(wanted):
        order = plan(config, wanted)
        program.run_beside(order.beside)
        if order.alone or program.busy_beside:
            timed = [c for c in order.alone if c in config.timing_cases]
            with hold(lock, alone=True) as waited:
                program.run_correctness_alone([c for c in order.alone if c not in timed])
                program.run_alone_together(timed)
            program.lock_wait["exclusive_s"] += waited
    return replace(program.evaluation(wanted), seconds=time.monotonic() - started)


def time_reference(config: LabConfig, binary: Path, workdir: Path, lock: GpuLock | None = None,
                   cases: list[str] | None = None, measure_only: frozenset[str] | None = None,
                   times: int = REFERENCE_TIMES, servers: JudgeServers | None = None,
                   gpu: Gpu | None = None) -> Evaluation:
    """The reference's timing cases (all, unless `cases` says which), run as a submission's are (through
    `servers` where theirs are, on `gpu`), `times` times over; each case keeps its middle run (middle_runs). A run
    that fails a case ends it there: it is returned as it is, for the caller to report."""
    wanted = list(cases if cases is not None else config.timing_cases)
    runs: list[Evaluation] = []
    for _ in range(times):
        runs.append(evaluate(config, binary, workdir, wanted, lock, measure_only, servers, gpu))
        if not all(outcome.passed for outcome in runs[-1].outcomes.values()):
            return runs[-1]
    return middle_runs(config, runs)


def _scored_number(spec: PerfSpec, outcome: CaseOutcome) -> float:
    scored = scored_value(spec, outcome)
    return 0.0 if isinstance(scored, str) else scored.value


def middle_runs(config: LabConfig, runs: list[Evaluation]) -> Evaluation:
    """One evaluation of `runs` (of the same passed cases): each case's outcome from the run whose first scored
    value (score.scored_value) is the middle one, whole, since a case's measurements are divided by each other;
    the runs' costs added up."""
    outcomes = {}
    for case, first in runs[0].outcomes.items():
        specs = [spec for spec in config.perf if spec.case == case and spec.points > 0]
        if not specs:
            outcomes[case] = first
            continue
        in_order = sorted((run.outcomes[case] for run in runs), key=lambda outcome: _scored_number(specs[0], outcome))
        outcomes[case] = in_order[len(in_order) // 2]
    return Evaluation(info=runs[0].info, outcomes=outcomes, lock_wait_s=sum(r.lock_wait_s for r in runs),
                      seconds=sum(r.seconds for r in runs), test_s=sum(r.test_s for r in runs),
                      programs=[program for r in runs for program in r.programs])
