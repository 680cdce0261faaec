"""The GPU lock: what is timed runs alone on its GPU, whichever grader on this machine started it.

One lock file per GPU (keyed by the GPU's UUID where nvidia-smi gives it, else
its index), taken with flock(2), so that separate grader processes queue too:

- a test case that is timed, or that needs the GPU to itself (`serial = true`:
  it reads device-wide free memory), holds the lock EXCLUSIVELY;
- every other test program holds it SHARED, so correctness cases run side by
  side but never while something is timed.

A second file, the turnstile, keeps an exclusive holder from waiting forever
behind a stream of shared ones: a waiting exclusive holder takes the turnstile
first, and shared holders pass through it on their way in, so none can start
while an exclusive one waits. Each hold reports how long it waited, for the
audit trail.

A waiting exclusive holder does not keep the turnstile shut behind a shared
holder of its own grader that looks hung: one that has held the lock for
longer than SUSPECT_FACTOR times what nine in ten of its grader's recent shared
holds took (and SUSPECT_AFTER_S at least), such as a student's kernel that never
ends, held until its case's time limit. Shutting everyone out behind it would
stop the whole class's correctness runs for that long (a minute, by default)
to wait for the one program. So the exclusive holder opens the turnstile and
waits outside it until that program has gone; the other correctness runs go
on meanwhile. What is timed still waits for the GPU to be free of it, unless the holder would rather not wait
(`exclusive(unless_hung=True)`: a class graded on several GPUs times its students on another GPU meanwhile).
"""
from __future__ import annotations

import fcntl
import os
import re
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.proc import run_process, scrubbed_env

DEFAULT_LOCK_DIR = Path("/tmp/cuda-lab-kit-locks")
LOCK_DIR_VARIABLE = "KIT_LOCK_DIR"
SMI_TIMEOUT_S = 30
SMI_LINE = re.compile(r"^GPU (\d+): (.*?) \(UUID: ([^)]+)\)")
# A shared hold of this grader's looks hung once it has lasted this many times what nine in ten of its recent
# shared holds took (a lab whose programs vary in length keeps its long ones), and at least this long.
SUSPECT_FACTOR = 2.0
SUSPECT_AFTER_S = 5.0
RECENT_HOLDS = 50
# How often a waiting exclusive holder looks again at the lock and at suspect holds.
POLL_S = 0.01


class HeldByHang(Exception):
    """exclusive(unless_hung=True) gave up: a shared hold of this grader's on the GPU looks hung."""


@dataclass(frozen=True)
class Gpu:
    """One GPU as the grader addresses it."""

    key: str  # names its lock file: the UUID where known, else the index
    visible: str  # the value of CUDA_VISIBLE_DEVICES that selects it
    name: str = ""


def parse_smi_listing(text: str) -> list[Gpu]:
    """The GPUs in `nvidia-smi -L` output ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)")."""
    gpus = []
    for line in text.splitlines():
        match = SMI_LINE.match(line.strip())
        if match:
            index, name, uuid = match.groups()
            gpus.append(Gpu(key=uuid, visible=uuid, name=name))
    return gpus


def choose_gpus(listed: list[Gpu], visible: str | None) -> list[Gpu]:
    """The GPUs this grader may use: those CUDA_VISIBLE_DEVICES names (UUIDs or indices into the
    listing, in nvidia-smi's order, which proc.DEVICE_ORDER gives every child too), or every listed one;
    without a listing, the indices it names (or GPU 0)."""
    if visible is None:
        return listed or [Gpu(key="0", visible="0")]
    chosen = []
    for entry in (e.strip() for e in visible.split(",")):
        if not entry:
            continue
        by_uuid = next((g for g in listed if g.key == entry), None)
        by_index = listed[int(entry)] if entry.isdigit() and int(entry) < len(listed) else None
        chosen.append(by_uuid or by_index or Gpu(key=entry, visible=entry))
    return chosen


def host_gpus() -> list[Gpu]:
    """Every GPU of this machine, in nvidia-smi's order (a GPU's place is its index), whichever this process may
    use; none where nvidia-smi is missing or fails."""
    with tempfile.TemporaryDirectory(prefix="kit-smi-") as folder:
        listing = run_process(["nvidia-smi", "-L"], cwd=Path(folder), env=scrubbed_env(Path(folder)),
                              timeout_s=SMI_TIMEOUT_S)
    return parse_smi_listing(listing.output) if listing.ok else []


def list_gpus() -> list[Gpu]:
    """The GPUs of this machine that this process may use (nvidia-smi -L and CUDA_VISIBLE_DEVICES)."""
    return choose_gpus(host_gpus(), os.environ.get("CUDA_VISIBLE_DEVICES"))


def lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_VARIABLE, str(DEFAULT_LOCK_DIR)))


def safe_key(key: str) -> str:
    """A GPU's key as part of a file name: its lock's, and its reference timings' (summary.py)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", key)


class GpuLock:
    """The lock of one GPU; `with lock.shared() as wait_s:` / `with lock.exclusive() as wait_s:`."""

    def __init__(self, key: str, directory: Path | None = None):
        folder = directory or lock_dir()
        folder.mkdir(parents=True, exist_ok=True)
        if folder.stat().st_uid == os.getuid():
            folder.chmod(0o1777)  # the graders of every user on this machine queue on the same files
        self.key = key
        self.path = folder / f"gpu-{safe_key(key)}.lock"
        self.turnstile = folder / f"gpu-{safe_key(key)}.turnstile"
        # This grader's shared holds: when each one still held began, and how long recent ones lasted.
        self._guard = threading.Lock()
        self._holding: dict[object, float] = {}
        self._recent_s: deque[float] = deque(maxlen=RECENT_HOLDS)

    @staticmethod
    def _open(path: Path) -> int:
        return os.open(path, os.O_RDONLY | os.O_CREAT, 0o444)  # flock needs no write access

    @contextmanager
    def shared(self) -> Iterator[float]:
        start = time.monotonic()
        turnstile = self._open(self.turnstile)
        lock = self._open(self.path)
        try:
            fcntl.flock(turnstile, fcntl.LOCK_EX)  # waits while an exclusive holder is queued
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_SH)
            with self._booked() as held_from:
                yield held_from - start
        finally:
            os.close(lock)  # closing releases the locks
            os.close(turnstile)

    @contextmanager
    def exclusive(self, unless_hung: bool = False) -> Iterator[float]:
        """Holds the GPU alone; with `unless_hung`, raises HeldByHang instead of waiting out a hold that looks hung
        (suspect_hold)."""
        start = time.monotonic()
        turnstile = self._open(self.turnstile)
        lock = self._open(self.path)
        try:
            while True:
                if unless_hung and self.suspect_hold():
                    raise HeldByHang(f"a program on GPU {self.key} looks hung")
                while self.suspect_hold():  # let the others go on while it lasts
                    time.sleep(POLL_S)
                fcntl.flock(turnstile, fcntl.LOCK_EX)  # no new shared holder gets in from now on
                try:
                    if self._take_unless_suspect(lock):  # the ones inside finish
                        break
                finally:
                    fcntl.flock(turnstile, fcntl.LOCK_UN)
            yield time.monotonic() - start
        finally:
            os.close(lock)
            os.close(turnstile)

    def suspect_hold(self) -> bool:
        """Whether a shared hold of this grader's has lasted so long that it looks hung (see the module's
        docstring)."""
        with self._guard:
            if not self._holding:
                return False
            recent = sorted(self._recent_s)
            usual = recent[int(0.9 * (len(recent) - 1))] if recent else 0.0  # nine in ten took no longer
            oldest = min(self._holding.values())
        return time.monotonic() - oldest > max(SUSPECT_AFTER_S, SUSPECT_FACTOR * usual)

    def _take_unless_suspect(self, lock: int) -> bool:
        """Takes the lock exclusively once its holders have gone; gives up (False) when one of this grader's own
        starts to look hung while it waits."""
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if self.suspect_hold():
                    return False
                time.sleep(POLL_S)

    @contextmanager
    def _booked(self) -> Iterator[float]:
        """Books a shared hold of this grader's while it lasts (suspect_hold reads them); gives when it began."""
        hold, held_from = object(), time.monotonic()
        with self._guard:
            self._holding[hold] = held_from
        try:
            yield held_from
        finally:
            with self._guard:
                del self._holding[hold]
                self._recent_s.append(time.monotonic() - held_from)
