"""Progress of a class grading: one line with done / total, students needing a look, elapsed time and ETA.

On a terminal the line is rewritten in place under the students' score lines;
in a log (not a terminal) each finished student gets one plain line that ends
with the same counts.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO


def clock(seconds: float) -> str:
    """12:05, or 1:02:03 past an hour."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def eta(elapsed_s: float, graded_now: int, remaining: int) -> float | None:
    """Seconds left at the rate of the students graded in this run (those kept from an earlier run cost
    nothing and say nothing about the rate); None before the first one."""
    if remaining <= 0:
        return 0.0
    if graded_now <= 0:
        return None
    return elapsed_s / graded_now * remaining


@dataclass
class Counts:
    total: int
    done: int = 0  # graded in this run, or kept from an earlier one
    kept: int = 0
    needs_look: int = 0


def progress_line(counts: Counts, elapsed_s: float) -> str:
    left = eta(elapsed_s, counts.done - counts.kept, counts.total - counts.done)
    kept = f" ({counts.kept} kept from before)" if counts.kept else ""
    return (f"{counts.done}/{counts.total} done{kept}, {counts.needs_look} need a look, "
            f"{clock(elapsed_s)} elapsed, ETA {clock(left) if left is not None else '--:--'}")


class Progress:
    """Counts finished students and shows them; safe to call from several threads."""

    def __init__(self, total: int, stream: TextIO = sys.stdout, tty: bool | None = None):
        self.counts = Counts(total)
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def kept(self, student: str) -> None:
        with self._lock:
            self.counts.done += 1
            self.counts.kept += 1
            self._show(f"{student:<24} kept (graded before, unchanged)")

    def finished(self, student: str, score: float, maximum: float, attention: list[str],
                 extra_credit: float = 0.0) -> None:
        """A student's score out of the lab's maximum; where extra credit can lift it past that, by how much
        (lab 04's reference scores 106 of its autograded 90)."""
        with self._lock:
            self.counts.done += 1
            self.counts.needs_look += bool(attention)
            extra = f" (+{extra_credit:g} extra credit)" if extra_credit else ""
            note = f"  needs a look: {attention[0]}" if attention else ""
            self._show(f"{student:<24} {score:7.2f} / {maximum:g}{extra}{note}")

    def note(self, text: str) -> None:
        with self._lock:
            self._show(text)

    def close(self) -> None:
        with self._lock:
            if self.tty:
                self.stream.write("\n")
            self.stream.flush()

    def _show(self, text: str) -> None:
        line = progress_line(self.counts, time.monotonic() - self.started)
        if self.tty:
            self.stream.write(f"\r\x1b[K{text}\n{line}")
        else:
            self.stream.write(f"{text}  [{line}]\n")
        self.stream.flush()
