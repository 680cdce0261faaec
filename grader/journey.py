"""An optimization journey timed in one run: each step's rate beside the same peer (hidden.toml [journey]).

Lab 04's journey takes the extra credit's kernel from shared-memory tiles to what cuBLAS's FP32 SGEMM does, one
optimization a step; each step is a build (the reference, or a [[right]] variant made from a whole file of
solutions/<lab>/journey/) and a timing case that measures it beside the peer in the same process. On a GPU,
`python3 -m grader journey --lab 04-tiled-matmul` builds the steps, runs each step's timing case once, in order,
holding the GPU alone as grading's timing does, and writes <build>/<lab>/journey.json:

    [{"name": step, "title": ..., "build": "reference" | "right-<variant>", "case": ..., "measurement": ...,
      "status": the timing case's, "median_s": ..., "rate": ..., "unit": ..., "ceilings": {yardstick: rate}}]

`python3 -m grader record` puts it into the GPU run record (labs.<lab>.journey), which `make charts` draws as
slides/charts/<lab>-journey.png, and from which `make figures` fills the figures that name a step.
"""
from __future__ import annotations

import json
from pathlib import Path

from grader import build
from grader.config import JourneyStep, LabConfig
from grader.gpulock import GpuLock
from grader.record import JOURNEY_NAME
from grader.run.schedule import evaluate


def build_name(step: JourneyStep) -> str:
    """The build a step times: "reference", or "right-<variant>" (grader.build's names)."""
    return f"right-{step.variant}" if step.variant else "reference"


def build_steps(config: LabConfig, build_dir: Path) -> list[str]:
    """Build every build the journey times; one line per build that failed, with its errors."""
    problems = []
    for name in dict.fromkeys(build_name(step) for step in config.journey.steps):
        built = build.build(config, build_dir, name)
        if not built.ok:
            problems.append(f"{name} did not build:\n{built.errors()}")
    return problems


def row(step: JourneyStep, status: str, timing: dict, gpu: str = "", driver: str = "") -> dict:
    """One step's line of journey.json, from its timing case's record of the measurement and the GPU it ran on."""
    return {"name": step.name, "title": step.title, "build": build_name(step), "case": step.case,
            "measurement": step.measurement, "status": status, "median_s": timing["median_s"],
            "rate": timing.get("rate"), "unit": timing.get("unit", ""),
            "ceilings": dict(zip(timing.get("ceiling_names", []), timing.get("ceiling_rates", []))),
            "gpu": gpu, "driver": driver}


def time_steps(config: LabConfig, build_dir: Path, workroot: Path,
               lock: GpuLock | None = None) -> tuple[list[dict], list[str]]:
    """(journey.json's rows, problems): each step's timing case run once, in the journey's order. A step whose case
    fails but still timed its kernel keeps its row, with the status (the extra credit's floor, a fraction of
    cuBLAS, fails an early step on purpose); a step with no timing is a problem."""
    rows, problems = [], []
    for step in config.journey.steps:
        binary = build.binary_path(build_dir, config.name, build_name(step))
        evaluation = evaluate(config, binary, workroot / step.name, [step.case], lock)
        outcome = evaluation.outcomes.get(step.case)
        timing = outcome.timing(step.measurement) if outcome else None
        if timing is None or not timing.get("rate"):
            why = " ".join(outcome.messages)[:500] if outcome else "it did not run"
            problems.append(f"step '{step.name}' ({build_name(step)}): no timing of '{step.measurement}' from "
                            f"'{step.case}': {why}")
            continue
        rows.append(row(step, outcome.status, timing, evaluation.info.gpu, evaluation.info.driver))
    return rows, problems


def peer_fraction(line: dict, peer: str) -> float | None:
    """A step's rate as a fraction of the peer measured beside it, where both are there."""
    rate, beside = line.get("rate"), (line.get("ceilings") or {}).get(peer)
    return rate / beside if rate and beside else None


def summary(config: LabConfig, rows: list[dict]) -> str:
    """One line a step: its rate and its fraction of the peer."""
    peer = config.journey.peer
    lines = [f"{config.name}: the journey, each step beside {peer} in its own timing case"]
    for line in rows:
        fraction = peer_fraction(line, peer)
        shown = f"{fraction:.2f} of {peer}" if fraction is not None else f"no {peer} beside it"
        note = "" if line["status"] == "passed" else f"  (timing case {line['status']})"
        lines.append(f"  {line['title']:<62} {line['rate']:>10,.0f} {line['unit']}  {shown}{note}")
    return "\n".join(lines)


def write(build_dir: Path, lab: str, rows: list[dict]) -> Path:
    path = build_dir / lab / JOURNEY_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1) + "\n")
    return path
