"""Run: execute a lab's test program and read back what happened.

A test case runs in a process of its own (run_case), so a
crash or a hang costs that case alone, with its own timeout; or several share
one process (run_group), which settles only their clean passes and a case that
ran out of its own time, and leaves the rest to run alone. What passed, failed and
measured is read from the results file the harness writes, never from the
console output. Where the lab is split (harness/runner/), the test program is the judge, trusted and run
as it is, and the student's code runs in the runner it starts, in the OS sandbox; a lab in one process
runs whole in the sandbox. A submission has a budget: once one of its cases runs out of
time or memory, the rest are not run, so one hostile submission costs the
class about one timeout.
"""
from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader import sandbox, sanitizer
from grader.proc import ProcessResult, run_process, scrubbed_env, tool_output

LISTING_TIMEOUT_S = 60
# What a test program's exit or output says when it ran out of host memory under the sandbox's limit.
OUT_OF_MEMORY_SIGNS = ("std::bad_alloc", "SIGKILL", "Cannot allocate memory")


@dataclass
class RunInfo:
    gpu_available: bool = False
    gpu: str = ""
    driver: str = ""
    why_no_gpu: str = ""
    seed: int | None = None


@dataclass
class CaseOutcome:
    name: str
    status: str  # passed, failed, crashed, timed_out, not_found, not_run
    messages: list[str] = field(default_factory=list)
    timings: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    output_tail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def timing(self, measurement: str) -> dict | None:
        return next((t for t in self.timings if t.get("name") == measurement), None)


@dataclass
class Listing:
    info: RunInfo
    cases: dict[str, str]  # test case name -> doctest suite
    problem: str = ""  # set when the program could not even list its cases


def read_records(path: Path) -> list[dict]:
    """The JSON lines of a results file; lines that are not JSON objects are skipped."""
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _run_info(records: list[dict]) -> RunInfo:
    run = next((r for r in records if r.get("kind") == "run"), {})
    return RunInfo(gpu_available=bool(run.get("gpu_available")), gpu=str(run.get("gpu", "")),
                   driver=str(run.get("driver", "")), why_no_gpu=str(run.get("why_no_gpu", "")),
                   seed=run.get("seed"))


def _env(workdir: Path, results: Path, seed: int | None) -> dict[str, str]:
    extra = {"KIT_RESULTS": str(results)}
    if seed is not None:
        extra["KIT_SEED"] = str(seed)
    return scrubbed_env(workdir, extra)


def confinement(binary: Path, workdir: Path, limits: sandbox.Limits | None) -> sandbox.Spec:
    """A test program sees its own file and its lab's parameters, writes only its folder, and uses the GPU."""
    params = binary.parent / "params.txt"  # read from beside the program (harness/src/params.cpp)
    readable = (binary, params) if params.is_file() else (binary,)
    return sandbox.Spec(writable=(workdir,), readable=readable, gpu=True, limits=limits)


def runner_of(binary: Path) -> Path | None:
    """The runner that holds the student's code when the lab is split into judge and runner (harness/runner/)."""
    runner = binary.with_name(binary.name + "-runner")
    return runner if runner.is_file() else None


def runner_confinement(runner: Path, limits: sandbox.Limits | None) -> sandbox.Spec:
    """The runner sees its own file and the GPU, and writes nothing but its private /tmp: not the results file,
    not the lab's parameters, not the judge's folder. Of the CUDA math libraries it sees only those it was
    linked with, which are those the lab lets students use: neither a look-up by name nor dlopen finds the
    others (the tests' yardstick, say)."""
    return sandbox.Spec(writable=(), readable=(runner,), gpu=True, limits=limits, chdir=Path("/tmp"),
                        hidden=sandbox.library_files_to_hide(linked_libraries(runner)))


def linked_libraries(program: Path) -> set[str]:
    """The CUDA math libraries (by the config's names) that `program` needs, from its dynamic section."""
    _, output, _ = tool_output(["readelf", "-d", str(program)])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[lib(\w+?)(?:\.so[^\]]*)?\]", output)
    return {name for name in sandbox.CUDA_MATH_LIBRARIES if name in needed}


def _start(binary: Path, args: list[str], workdir: Path, env: dict[str, str], timeout_s: float,
           limits: sandbox.Limits | None, wrapper: sanitizer.Wrapper | None = None,
           watch: Callable[[], bool] | None = None) -> ProcessResult:
    """Run a test program. A split lab's program is the judge, trusted and outside the sandbox; it starts the
    student's code (the runner) in the sandbox, under compute-sanitizer when `wrapper` says so, as the command
    it is given in KIT_RUNNER_PREFIX and KIT_RUNNER. A lab in one process runs whole in the sandbox."""
    runner = runner_of(binary)
    if runner is None:
        command = (wrapper.prefix() if wrapper is not None else []) + [str(binary), *args]
        return run_process(command, cwd=workdir, env=env, timeout_s=timeout_s,
                           confined=confinement(binary, workdir, limits), watch=watch)
    spec = runner_confinement(runner, limits)
    sandbox.prepare(spec)
    started = sandbox.wrap((wrapper.prefix() if wrapper is not None else []) + [str(runner)], spec)
    env = {**env, "KIT_RUNNER": started[-1], "KIT_RUNNER_PREFIX": "\n".join(started[:-1])}
    return run_process([str(binary), *args], cwd=workdir, env=env, timeout_s=timeout_s, watch=watch)


def list_cases(binary: Path, workdir: Path, limits: sandbox.Limits | None = None) -> Listing:
    """Ask the program which test cases it has (and which GPU it sees); needs no GPU."""
    results = workdir / "listing.jsonl"
    results.unlink(missing_ok=True)
    process = _start(binary, ["--list-test-cases", "--no-colors"], workdir, _env(workdir, results, None),
                     LISTING_TIMEOUT_S, limits)
    records = read_records(results)
    cases = {r["case"]: r.get("suite", "") for r in records if r.get("kind") == "listed"}
    problem = "" if process.ok else f"the test program {process.describe_exit()}:\n{process.output[-2000:]}"
    return Listing(info=_run_info(records), cases=cases, problem=problem)


def run_case(binary: Path, case: str, timeout_s: float, workdir: Path, seed: int | None,
             limits: sandbox.Limits | None = None, wrapper: sanitizer.Wrapper | None = None) -> CaseOutcome:
    """One test case in a process of its own, in the sandbox; under compute-sanitizer when `wrapper` says so."""
    with tempfile.NamedTemporaryFile(dir=workdir, prefix="case-", suffix=".jsonl", delete=False) as f:
        results = Path(f.name)
    process = _start(binary, [f"--test-case={case}", "--no-colors"], workdir, _env(workdir, results, seed),
                     timeout_s, limits, wrapper)
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
              limits: sandbox.Limits | None = None) -> dict[str, CaseOutcome]:
    """The settled outcomes of several (name, timeout) test cases run in one process (the config keeps doctest's
    filter syntax out of case names, so a comma-separated list names exactly them), so that they share one
    sandbox start and one CUDA context instead of one each (under load, most of a small case's time). Each case
    keeps its own time limit (_CaseClock). Settled are only the cases that passed in a program that then exited
    on its own, or before it was stopped for a case that ran past its limit, and that case itself (timed out).
    Everything else, a failure, a crash and the cases after it, is for the caller to run again alone, so that
    no case is judged by what another one left behind."""
    if not cases:
        return {}
    with tempfile.NamedTemporaryFile(dir=workdir, prefix="group-", suffix=".jsonl", delete=False) as f:
        results = Path(f.name)
    timeouts = dict(cases)
    clock = _CaseClock(results, timeouts)
    process = _start(binary, ["--test-case=" + ",".join(timeouts), "--no-colors"], workdir,
                     _env(workdir, results, seed), sum(timeouts.values()) + LISTING_TIMEOUT_S, limits, watch=clock)
    records = read_records(results)
    settled: dict[str, CaseOutcome] = {}
    if clock.overdue is not None:
        settled[clock.overdue] = CaseOutcome(clock.overdue, "timed_out", [
            f"The test program did not finish this test within its time limit ({timeouts[clock.overdue]:.0f} s) and "
            f"was killed: a kernel that never finishes, a loop that never ends, or a wait on work that never comes."],
            seconds=time.monotonic() - clock.started[clock.overdue])
    exited_itself = not process.timed_out and process.returncode in (0, 1)  # 1: some test failed
    if exited_itself or clock.overdue is not None:
        for record in records:
            name = record.get("case")
            if record.get("kind") == "case" and name in timeouts and record.get("status") == "passed":
                timings = [r for r in records if r.get("kind") == "timing" and r.get("case") == name]
                settled[name] = CaseOutcome(name, "passed", [], timings, float(record.get("seconds", 0.0)))
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
        return CaseOutcome(case, status, messages, timings, float(ended.get("seconds", process.seconds)), tail)
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


def run_cases(binary: Path, cases: list[tuple[str, float]], workdir: Path, seed: int | None,
              limits: sandbox.Limits | None = None,
              wrappers: dict[str, sanitizer.Wrapper] | None = None) -> dict[str, CaseOutcome]:
    """Run (name, timeout) test cases one by one (those named in `wrappers` under compute-sanitizer), within
    one budget."""
    wrappers = wrappers or {}
    budget = Budget()
    return {name: budget.run(name, lambda: run_case(binary, name, timeout, workdir, seed, limits, wrappers.get(name)))
            for name, timeout in cases}
