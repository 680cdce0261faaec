"""Starting processes: the only module that does.

Every child runs in a process group of its own, with a timeout that kills the
whole group (a submission's stray children too), and its output goes to a file
of which only the tail is kept, so a program that prints without end cannot
fill the grader's memory. This module knows nothing of the OS sandbox: a child
that runs or compiles student code is given its command as `grader.sandbox`
confines it, and is started here like any other.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

OUTPUT_TAIL_BYTES = 16_000
# Variables a CUDA program needs from the grader's environment; nothing else passes.
PASSED_THROUGH = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES",
                  "NVIDIA_DRIVER_CAPABILITIES")
# CUDA numbers GPUs fastest first unless told otherwise, nvidia-smi by PCI bus. The GPU lock maps an index in
# CUDA_VISIBLE_DEVICES to a GPU through nvidia-smi's listing (gpulock.choose_gpus), so every child numbers them as
# nvidia-smi does: on a host where the two orders differ, a program set on "GPU 1" would otherwise run on a GPU
# whose lock it does not hold, and time itself beside another grader's programs.
DEVICE_ORDER = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

# What a signal usually means for a test program, in words a student can act on.
SIGNAL_MEANINGS = {
    "SIGSEGV": " (a host pointer used wrongly: a device pointer read on the host, or memory past an array's end)",
    "SIGABRT": " (an uncaught error or a failed assertion)",
    "SIGXFSZ": " (it wrote more output or file data than the grader allows)",
    "SIGXCPU": " (it used more CPU time than the grader allows)",
    "SIGKILL": " (stopped from outside, usually for taking more memory than the grader allows)",
}


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None when killed on timeout
    timed_out: bool
    output: str  # the tail of stdout and stderr together
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def signal(self) -> int | None:
        """The signal that ended the program, if one did (the sandbox reports it as exit code 128 + N)."""
        code = self.returncode
        if code is None:
            return None
        if code < 0:
            return -code
        return code - 128 if 128 < code < 128 + 65 else None

    def describe_exit(self) -> str:
        if self.timed_out:
            return f"did not finish within its time limit and was killed after {self.seconds:.0f} s"
        number = self.signal
        if number is None:
            return f"exited with code {self.returncode}"
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}{SIGNAL_MEANINGS.get(name, '')}"


def cores() -> int:
    """The cores this process may use (a Slurm task's or taskset's share, not the whole node)."""
    return len(os.sched_getaffinity(0))


def scrubbed_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {key: os.environ[key] for key in PASSED_THROUGH if key in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(home), **DEVICE_ORDER})
    env.update(extra or {})
    return env


WATCH_INTERVAL_S = 0.2


def run_process(command: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                watch: Callable[[], bool] | None = None) -> ProcessResult:
    """Run `command` to completion or timeout. `watch`, called every WATCH_INTERVAL_S while it runs, may end it
    early by returning True (reported as timed out)."""
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
            _wait(child, start + timeout_s, watch)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            kill_group(child.pid)
            child.wait()
        seconds = time.monotonic() - start
        output = read_tail(log)
    return ProcessResult(returncode=None if timed_out else child.returncode, timed_out=timed_out,
                         output=output, seconds=seconds)


def read_tail(log: BinaryIO) -> str:
    """The last OUTPUT_TAIL_BYTES of a program's output file, as text."""
    log.seek(0, os.SEEK_END)
    log.seek(max(0, log.tell() - OUTPUT_TAIL_BYTES))
    return log.read().decode("utf-8", errors="replace")


def _wait(child: subprocess.Popen, deadline: float, watch: Callable[[], bool] | None) -> None:
    """Wait for `child` until `deadline` (monotonic) or until `watch` says stop; raises TimeoutExpired then."""
    if watch is None:
        child.wait(timeout=max(0.0, deadline - time.monotonic()))
        return
    while True:
        try:
            child.wait(timeout=max(0.0, min(WATCH_INTERVAL_S, deadline - time.monotonic())))
            return
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline or watch():
                raise


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def interrupt_on_sigterm() -> None:
    """Stop on SIGTERM as on Ctrl-C (KeyboardInterrupt), so that what is done is written: Slurm ends a task
    that runs out of time with it, and `timeout` a command."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)


def tool_output(command: list[str], stdin: str = "", timeout_s: float = 120) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a trusted tool reading files (nm, objdump, c++filt); all of stdout is kept."""
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return 127, "", str(error)
    return done.returncode, done.stdout, done.stderr


def run_attached(command: list[str]) -> int:
    """Run `command` with this process's standard streams (a sandboxed compiler under the build tool)."""
    return subprocess.run(command, check=False).returncode
