"""What a test program's run comes to: plain data, read from the results file the judge writes.

What passed, failed and measured is read from that file, never from the console
output, which student code can print to.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


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
    # Failed, and a check found the GPU busy where it needs it free of the runner's work (kit::remote::gpu_free).
    # In a program beside others that proves nothing against the student: their work looks the same.
    gpu_busy: bool = False

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


def run_info(records: list[dict]) -> RunInfo:
    """The GPU, driver and seed the program's run record names."""
    run = next((r for r in records if r.get("kind") == "run"), {})
    return RunInfo(gpu_available=bool(run.get("gpu_available")), gpu=str(run.get("gpu", "")),
                   driver=str(run.get("driver", "")), why_no_gpu=str(run.get("why_no_gpu", "")),
                   seed=run.get("seed"))
