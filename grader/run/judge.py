"""The judge: start a lab's test program on a built submission, and read back what happened.

The test program is the instructor's: its test cases, inputs, checks, clock and
results file. In a split lab it holds no student code, so it runs as it is,
trusted and unconfined, and is handed the command of its runner (runner.py),
which does run student code, in the OS sandbox. A lab whose header cannot be
split (grader/calls.py; none of the twelve) runs whole in the sandbox instead.

A test case runs in a process of its own (run_case), so a crash or a hang
costs that case alone, with its own timeout; or several share one process
(run_group), which settles only their clean passes and a case that ran out of
its own time, and leaves the rest to run alone. What passed, failed and
measured is read from the results file the harness writes (outcomes.py).
Which cases run how, and when, is schedule.py's to decide.
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from grader import sandbox, sanitizer
from grader.proc import ProcessResult, run_process, scrubbed_env
from grader.run.outcomes import CaseOutcome, Listing, read_records, run_info
from grader.run.runner import runner_command, runner_of, unsplit_command
from grader.run.servers import JudgeServers

LISTING_TIMEOUT_S = 60


ONE_WORK_QUEUE = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}  # see _env


def _env(workdir: Path, results: Path, seed: int | None, beside_others: bool = False,
         one_work_queue: bool = True, measure_only: frozenset[str] | None = None,
         gpu: str | None = None) -> dict[str, str]:
    """The test program's environment. `beside_others`: it shares the GPU with other programs, whose waits
    for the GPU then block instead of spinning a core each (harness/include/kit/gpu_wait.hpp); a program
    that times keeps the spinning wait, which wakes soonest.

    `one_work_queue`: each CUDA context of the program (judge, runner, twin) gets one hardware work queue
    (CUDA_DEVICE_MAX_CONNECTIONS=1) instead of the driver's eight. The driver sets a context's queues up, and
    tears them down, one process at a time for the whole GPU: on an H100 with twelve programs starting at
    once, a context took a median 1.46 s to create with eight queues and 0.59 s with one, and 0.68 s against
    0.25 s to tear down (docs/gpu-runs/2026-11-26-h100-work-queues.md). But one queue runs a process's
    streams in the order their work was queued: overlap between streams disappears from a timing, and so
    does a race between streams from a test that is there to catch it (lab 12's self-check showed it: work
    queued on the default stream before its input had arrived passed). A lab whose tests rely on streams
    running at once says so (concurrent_streams) and keeps the eight in every program.

    `measure_only`: the measurements to take (KIT_MEASURE_ONLY, kit::measured); a timing case skips the others it
    would report for comparison. None: every one.

    `gpu`: the GPU it runs on, as CUDA_VISIBLE_DEVICES names it (a class graded on several GPUs sends each program
    to one); None: the grader's own CUDA_VISIBLE_DEVICES, passed through."""
    extra = {"KIT_RESULTS": str(results)}
    if gpu is not None:
        extra["CUDA_VISIBLE_DEVICES"] = gpu
    if measure_only is not None:
        extra["KIT_MEASURE_ONLY"] = ",".join(sorted(measure_only))
    if seed is not None:
        extra["KIT_SEED"] = str(seed)
    if beside_others:
        extra["KIT_GPU_WAIT"] = "block"
    if one_work_queue:
        extra.update(ONE_WORK_QUEUE)
    return scrubbed_env(workdir, extra)


def _start(binary: Path, args: list[str], workdir: Path, env: dict[str, str], timeout_s: float,
           limits: sandbox.Limits | None, wrapper: sanitizer.Wrapper | None = None,
           watch: Callable[[], bool] | None = None, servers: JudgeServers | None = None) -> ProcessResult:
    """Run a test program. A split lab's program is the judge, trusted and outside the sandbox; it starts the
    student's code (the runner) as the sandboxed command it is given in KIT_RUNNER_PREFIX and KIT_RUNNER,
    under compute-sanitizer when `wrapper` says so; with `servers`, one of their judges serves the run, starting
    the runner of `binary`. A lab in one process runs whole in the sandbox. The sandbox holds only the GPUs the
    environment's CUDA_VISIBLE_DEVICES names (sandbox.Spec.gpus)."""
    runner = runner_of(binary)
    gpus = env.get("CUDA_VISIBLE_DEVICES")
    if runner is None:
        return run_process(unsplit_command(binary, args, workdir, limits, wrapper, gpus), cwd=workdir, env=env,
                           timeout_s=timeout_s, watch=watch)
    started = runner_command(runner, limits, wrapper, gpus)
    env = {**env, "KIT_RUNNER": started[-1], "KIT_RUNNER_PREFIX": "\n".join(started[:-1])}
    if servers is not None:
        return servers.run(args, workdir, env, timeout_s, watch)
    return run_process([str(binary), *args], cwd=workdir, env=env, timeout_s=timeout_s, watch=watch)


def list_cases(binary: Path, workdir: Path, limits: sandbox.Limits | None = None, gpu: str | None = None) -> Listing:
    """Ask the program which test cases it has (and which GPU it sees, of `gpu`: _env); needs no GPU."""
    results = workdir / "listing.jsonl"
    results.unlink(missing_ok=True)
    process = _start(binary, ["--list-test-cases", "--no-colors"], workdir, _env(workdir, results, None, gpu=gpu),
                     LISTING_TIMEOUT_S, limits)
    records = read_records(results)
    cases = {r["case"]: r.get("suite", "") for r in records if r.get("kind") == "listed"}
    problem = "" if process.ok else f"the test program {process.describe_exit()}:\n{process.output[-2000:]}"
    return Listing(info=run_info(records), cases=cases, problem=problem)


def run_case(binary: Path, case: str, timeout_s: float, workdir: Path, seed: int | None,
             limits: sandbox.Limits | None = None, wrapper: sanitizer.Wrapper | None = None,
             beside_others: bool = False, one_work_queue: bool = True,
             measure_only: frozenset[str] | None = None, servers: JudgeServers | None = None,
             gpu: str | None = None) -> CaseOutcome:
    """One test case in a program of its own (its student code in the sandbox), under compute-sanitizer when
    `wrapper` says so; `beside_others` when it shares the GPU, `one_work_queue` unless the lab's tests rely on
    streams running at once, `measure_only` the measurements to take, `gpu` the GPU it runs on (_env);
    `servers`: one of their judges runs it (_start)."""
    with tempfile.NamedTemporaryFile(dir=workdir, prefix="case-", suffix=".jsonl", delete=False) as f:
        results = Path(f.name)
    process = _start(binary, [f"--test-case={case}", "--no-colors"], workdir,
                     _env(workdir, results, seed, beside_others, one_work_queue, measure_only, gpu), timeout_s, limits,
                     wrapper, servers=servers)
    outcome = _outcome(case, read_records(results), process)
    return outcome if wrapper is None else _sanitized_outcome(outcome, process, wrapper.tool)


class _CaseClock:
    """Each case's own time limit inside a program that runs several: read from the results file as it grows,
    a case is overdue once it has run longer than its limit since its case_start record appeared. Between cases
    (start-up, the gaps, the exit) the longest limit applies."""

    def __init__(self, results: Path, timeouts: dict[str, float]):
        self.results = results
        self.timeouts = timeouts
        self.started: dict[str, float] = {}
        self.ended: set[str] = set()
        self.idle_since = time.monotonic()
        self.overdue: str | None = None  # the case stopped for running past its limit

    def __call__(self) -> bool:
        now = time.monotonic()
        for record in read_records(self.results):
            case = record.get("case")
            if case not in self.timeouts:
                continue
            if record.get("kind") == "case_start":
                self.started.setdefault(case, now)
            elif record.get("kind") == "case" and case not in self.ended:
                self.ended.add(case)
                self.idle_since = now
        running = [case for case in self.started if case not in self.ended]
        if running:
            case = running[-1]
            if now - self.started[case] > self.timeouts[case]:
                self.overdue = case
                return True
            return False
        return now - self.idle_since > max(self.timeouts.values())


def run_group(binary: Path, cases: list[tuple[str, float]], workdir: Path, seed: int | None,
              limits: sandbox.Limits | None = None, one_work_queue: bool = True, beside_others: bool = True,
              measure_only: frozenset[str] | None = None, wrapper: sanitizer.Wrapper | None = None,
              servers: JudgeServers | None = None, gpu: str | None = None) -> dict[str, CaseOutcome]:
    """The settled outcomes of several (name, timeout) test cases run in one process (the config keeps doctest's
    filter syntax out of case names, so a comma-separated list names exactly them), so that they share one
    sandbox start and one CUDA context instead of one each (under load, most of a small case's time). Each case
    keeps its own time limit (_CaseClock). `beside_others`, `one_work_queue`, `measure_only`, `servers` and `gpu`
    as for run_case.
    Settled are only the cases that passed in a program that then exited on its own, or before it was stopped
    for a case that ran past its limit, and that case itself (timed out). Everything else, a failure, a crash
    and the cases after it, is for the caller to run again alone, so that no case is judged by what another one
    left behind. Beside other programs, a case whose check found the GPU busy (CaseOutcome.gpu_busy) is returned
    failed as it ran: their work looks like the runner's, so it is to run again with the GPU to itself, and a run
    of its own beside them would find the same. Under compute-sanitizer (`wrapper`), whose report names no test
    case, the passes settle only when the program ran every case and exited cleanly; otherwise only a case that
    ran past its limit does."""
    if not cases:
        return {}
    with tempfile.NamedTemporaryFile(dir=workdir, prefix="group-", suffix=".jsonl", delete=False) as f:
        results = Path(f.name)
    timeouts = dict(cases)
    clock = _CaseClock(results, timeouts)
    process = _start(binary, ["--test-case=" + ",".join(timeouts), "--no-colors"], workdir,
                     _env(workdir, results, seed, beside_others, one_work_queue, measure_only, gpu),
                     sum(timeouts.values()) + LISTING_TIMEOUT_S,
                     limits, wrapper, watch=clock, servers=servers)
    records = read_records(results)
    settled: dict[str, CaseOutcome] = {}
    if clock.overdue is not None:
        settled[clock.overdue] = CaseOutcome(clock.overdue, "timed_out", [
            f"The test program did not finish this test within its time limit ({timeouts[clock.overdue]:.0f} s) and "
            f"was killed: a kernel that never finishes, a loop that never ends, or a wait on work that never comes."],
            seconds=time.monotonic() - clock.started[clock.overdue])
    if wrapper is not None:
        # compute-sanitizer's verdict is the whole program's exit code, and its report names no test case: a
        # finding, a failure or a crash leaves every case (but one past its limit) to run alone.
        if clock.overdue is None and process.returncode == 0 and not process.timed_out:
            settled.update(_settled(records, timeouts))
        return settled
    exited_itself = not process.timed_out and process.returncode in (0, 1)  # 1: some test failed
    if exited_itself or clock.overdue is not None:
        settled.update(_settled(records, timeouts, busy_too=beside_others))
    return settled


def _settled(records: list[dict], cases: dict[str, float], busy_too: bool = False) -> dict[str, CaseOutcome]:
    """The outcomes of the cases of `cases` whose records say they passed, with their timings; `busy_too`: and of
    those that failed because their check found the GPU busy."""
    settled = {}
    for record in records:
        name = record.get("case")
        if record.get("kind") != "case" or name not in cases:
            continue
        timings = [r for r in records if r.get("kind") == "timing" and r.get("case") == name]
        if record.get("status") == "passed":
            settled[name] = CaseOutcome(name, "passed", [], timings, float(record.get("seconds", 0.0)))
        elif busy_too and record.get("status") == "failed" and record.get("gpu_busy"):
            settled[name] = CaseOutcome(name, "failed", [str(m) for m in record.get("messages", [])], timings,
                                        float(record.get("seconds", 0.0)), gpu_busy=True)
    return settled


def _outcome(case: str, records: list[dict], process: ProcessResult) -> CaseOutcome:
    mine = [r for r in records if r.get("case") == case]
    started = any(r.get("kind") == "case_start" for r in mine)
    ended = next((r for r in mine if r.get("kind") == "case"), None)
    timings = [r for r in mine if r.get("kind") == "timing"]
    tail = process.output[-3000:]
    if process.timed_out:
        return CaseOutcome(case, "timed_out", [
            f"The test program {process.describe_exit()}: a kernel that never finishes, a loop that never "
            f"ends, or a wait on work that never comes."], timings, process.seconds, tail)
    if ended is not None and ended.get("status") in ("passed", "failed"):
        messages = [str(m) for m in ended.get("messages", [])]
        status = ended["status"]
        if status == "passed" and process.returncode not in (0, None):
            status = "crashed"  # passed, then died on the way out (e.g. a fault in a destructor)
            messages.append(f"The test passed, but the program then {process.describe_exit()}.")
        return CaseOutcome(case, status, messages, timings, float(ended.get("seconds", process.seconds)), tail,
                           gpu_busy=status == "failed" and bool(ended.get("gpu_busy")))
    if started:
        return CaseOutcome(case, "crashed", [f"The test program {process.describe_exit()} during this test."],
                           timings, process.seconds, tail)
    return CaseOutcome(case, "not_found", [
        f"This test case did not run (the test program {process.describe_exit()} before starting it)."],
        timings, process.seconds, tail)


def _sanitized_outcome(outcome: CaseOutcome, process: ProcessResult, tool: str) -> CaseOutcome:
    """A test case run under compute-sanitizer fails when the sanitizer found an error, whatever the test said;
    the student reads the sanitizer's first report, then what the test itself reported, if it failed too."""
    found = None if process.timed_out else sanitizer.finding(tool, process.returncode, process.output)
    if found is None and outcome.status == "not_found":  # the sanitizer itself failed: show the TA what it said
        outcome.messages.append(f"It was to run under compute-sanitizer ({tool}); the end of the output:\n"
                                f"{process.output[-1500:]}")
    if found is None:
        return outcome
    own = outcome.messages if outcome.status == "failed" else []
    return CaseOutcome(outcome.name, "failed", found + own, outcome.timings, outcome.seconds, outcome.output_tail)
