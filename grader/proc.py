"""Starting processes: the only module that does.

Every child runs in a process group of its own, with a timeout that kills the
whole group (a submission's stray children too), and its output goes to a file
of which only the tail is kept, so a program that prints without end cannot
fill the grader's memory.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

OUTPUT_TAIL_BYTES = 16_000
# Variables a CUDA program needs from the grader's environment; nothing else passes.
PASSED_THROUGH = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES",
                  "NVIDIA_DRIVER_CAPABILITIES")


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None when killed on timeout
    timed_out: bool
    output: str  # the tail of stdout and stderr together
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe_exit(self) -> str:
        if self.timed_out:
            return f"did not finish within its time limit and was killed after {self.seconds:.0f} s"
        if self.returncode is not None and self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"was killed by {name}"
        return f"exited with code {self.returncode}"


def scrubbed_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {key: os.environ[key] for key in PASSED_THROUGH if key in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(home)})
    env.update(extra or {})
    return env


def run_process(command: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> ProcessResult:
    with tempfile.TemporaryFile() as log:
        start = time.monotonic()
        try:
            child = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as error:
            return ProcessResult(returncode=127, timed_out=False, output=f"could not start {command[0]}: {error}",
                                 seconds=0.0)
        timed_out = False
        try:
            child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(child.pid)
            child.wait()
        seconds = time.monotonic() - start
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - OUTPUT_TAIL_BYTES))
        output = log.read().decode("utf-8", errors="replace")
    return ProcessResult(returncode=None if timed_out else child.returncode, timed_out=timed_out,
                         output=output, seconds=seconds)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
