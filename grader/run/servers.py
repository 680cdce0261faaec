"""Judges that serve many runs: class grading's test programs without a CUDA context apiece.

Each test program a class runs is a judge and a runner, each with a CUDA context, and the driver makes and tears
down contexts one process at a time for the whole host: with twelve programs starting at once a context took
1.9 s to make, whether they ran on one GPU or on two (docs/gpu-runs/2026-11-27-h200x2-pool-all-selfchecks.md). So
a class's programs queue on the host's driver, and a second GPU adds little.

A judge started with --kit-serve (harness/src/main.cpp) runs program after program in one process and one
context, each run as one start of the program would: the cases its arguments select, its own environment,
folder, output and results file, and a runner of its own, which it starts afresh in the student's sandbox. Only
a trusted judge serves, the reference build's, which holds no student code (runner.py): the judge of a split
lab is the same for every student, and the student's code is named in each run's environment (KIT_RUNNER).

A judge serves one kind of run, those whose environment is the same but for the per-run variables (PER_RUN):
a class's correctness programs share judges, and its timing programs, which wait for the GPU spinning rather
than blocking, share others. A judge retires after RUNS_PER_JUDGE runs, when its CUDA context reports an error
after a run, and when a run ran out of time (it is killed, its runner with it).
"""
from __future__ import annotations

import os
import select
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from grader.proc import WATCH_INTERVAL_S, ProcessResult, kill_group, read_tail

# What differs from one run to the next; the rest of a run's environment picks its judge.
PER_RUN = frozenset({"KIT_RESULTS", "KIT_RUNNER", "KIT_RUNNER_PREFIX", "HOME", "TMPDIR"})
# A judge's runs before it makes way for a fresh one: a bound on whatever a run might leave behind in it.
RUNS_PER_JUDGE = 64
# How long a judge may take to exit once told to.
EXIT_WAIT_S = 10.0


def _fields(args: list[str], workdir: Path, env: dict[str, str], output: Path) -> bytes:
    """A run as --kit-serve reads it: NUL-ended fields, an empty one last."""
    fields = ([f"arg={arg}" for arg in args] + [f"cwd={workdir}", f"out={output}"]
              + [f"env={name}={value}" for name, value in env.items()])
    return b"".join(field.encode() + b"\0" for field in fields) + b"\0"


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as file:
            return read_tail(file)
    except OSError:
        return ""


class _Judge:
    """One judge process serving runs, one at a time."""

    def __init__(self, program: Path, env: dict[str, str], home: Path):
        # What it says before it serves (a library the loader cannot find, say): between runs it says nothing.
        with tempfile.NamedTemporaryFile(dir=home, prefix="judge-", suffix=".log", delete=False) as log:
            self.log = Path(log.name)
            self.process = subprocess.Popen([str(program), "--kit-serve"], cwd=home, env=env, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        self.started = False  # its "ready" has come
        self.runs = 0
        self.usable = True  # may serve another run
        self._pending = b""

    def _line(self, deadline: float, watch: Callable[[], bool] | None) -> str | None:
        """The judge's next line; "" when it exited; None when `deadline` passed or `watch` said stop first."""
        stream = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or (watch is not None and watch()):
                return None
            readable, _, _ = select.select([stream], [], [], min(WATCH_INTERVAL_S, left))
            if readable:
                chunk = os.read(stream, 4096)
                if not chunk:
                    return ""
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace") + "\n"

    def run(self, args: list[str], workdir: Path, env: dict[str, str], timeout_s: float,
            watch: Callable[[], bool] | None) -> ProcessResult:
        """One run, as proc.run_process would report the program's: its exit code, or timed out, and its
        output's tail. A judge that exited, ran out of time or said "retire" serves no more (usable)."""
        start = time.monotonic()
        deadline = start + timeout_s
        with tempfile.NamedTemporaryFile(dir=workdir, prefix="judge-output-", suffix=".txt", delete=False) as f:
            output = Path(f.name)
        try:
            reply = None
            if not self.started:
                reply = self._line(deadline, watch)
                self.started = reply == "ready\n"
            if self.started:
                self.process.stdin.write(_fields(args, workdir, env, output))
                self.process.stdin.flush()
                reply = self._line(deadline, watch)
            self.runs += 1
            return self._result(reply, output, time.monotonic() - start)
        except (OSError, ValueError) as error:  # its pipes closed: it had exited, or the class is stopping
            self.usable = False
            return ProcessResult(returncode=self._exit_code(), timed_out=False,
                                 output=f"{_tail(output)}\nthe judge stopped reading runs: {error}",
                                 seconds=time.monotonic() - start)
        finally:
            output.unlink(missing_ok=True)

    def _result(self, reply: str | None, output: Path, seconds: float) -> ProcessResult:
        if reply is None:  # out of time, or stopped by `watch`
            self.kill()
            return ProcessResult(returncode=None, timed_out=True, output=_tail(output), seconds=seconds)
        words = reply.split()
        if len(words) == 3 and words[0] == "done" and words[1].lstrip("-").isdigit():
            self.usable = words[2] == "ok"
            return ProcessResult(returncode=int(words[1]), timed_out=False, output=_tail(output), seconds=seconds)
        self.usable = False  # it exited (a crash, a signal) or said something else
        said = _tail(output) or _tail(self.log)  # a judge that never served says why in its log
        return ProcessResult(returncode=self._exit_code(), timed_out=False, output=said, seconds=seconds)

    def _exit_code(self) -> int | None:
        self.kill()
        return self.process.returncode

    def kill(self) -> None:
        """Ends the judge and everything it started (its runner's sandbox dies with its parent)."""
        self.usable = False
        kill_group(self.process.pid)
        self.process.wait()
        self._close_pipes()
        self.log.unlink(missing_ok=True)

    def close(self) -> None:
        """Tells an idle judge to exit (its input ends), and kills it if it does not."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=EXIT_WAIT_S)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass


class JudgeServers:
    """The judges of a class, started as runs need them and shared by its threads: a run takes an
    idle judge of its kind or starts one, and gives it back when done. A run's kind includes its
    CUDA_VISIBLE_DEVICES, so a class graded on several GPUs has judges for each, each with its CUDA context on the
    GPU its runs use. Close it (or use it in a with block) to end them all."""

    def __init__(self, program: Path, home: Path, runs_per_judge: int = RUNS_PER_JUDGE):
        self.program = program
        self.home = home  # the judges' folder between runs
        self.runs_per_judge = runs_per_judge
        self._idle: dict[tuple, list[_Judge]] = {}
        self._every: list[_Judge] = []
        self._guard = threading.Lock()
        self.started = 0  # judges started, for the class's record
        self.retired: list[int] = []  # the process ids of judges ended before the class's end, in order

    def run(self, args: list[str], workdir: Path, env: dict[str, str], timeout_s: float,
            watch: Callable[[], bool] | None = None) -> ProcessResult:
        """A run of the test program with `args` in `workdir` and `env`, as proc.run_process runs a program."""
        kind = tuple(sorted((name, value) for name, value in env.items() if name not in PER_RUN))
        try:
            judge = self._take(kind)
        except OSError as error:
            return ProcessResult(returncode=127, timed_out=False, output=f"could not start {self.program}: {error}",
                                 seconds=0.0)
        result = judge.run(args, workdir, env, timeout_s, watch)
        if judge.usable and judge.runs < self.runs_per_judge:
            with self._guard:
                self._idle.setdefault(kind, []).append(judge)
        else:
            judge.close()
            with self._guard:
                self._every.remove(judge)
                self.retired.append(judge.process.pid)
        return result

    def pids(self) -> list[int]:
        """The process ids of the judges now started, idle or serving."""
        with self._guard:
            return [judge.process.pid for judge in self._every]

    def _take(self, kind: tuple) -> _Judge:
        with self._guard:
            idle = self._idle.get(kind, [])
            if idle:
                return idle.pop()
        self.home.mkdir(parents=True, exist_ok=True)
        judge = _Judge(self.program, {**dict(kind), "HOME": str(self.home), "TMPDIR": str(self.home)}, self.home)
        with self._guard:
            self._every.append(judge)
            self.started += 1
        return judge

    def close(self) -> None:
        """Ends every judge, idle or serving (a stopping class's)."""
        with self._guard:
            judges, self._every, self._idle = list(self._every), [], {}
        for judge in judges:
            judge.close()

    def __enter__(self) -> JudgeServers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
