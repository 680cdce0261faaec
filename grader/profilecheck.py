"""The instructor's check of the profile: for each lab, the reference and every slow variant ([[slow]] in
hidden.toml) profiled, and each variant's `shows` asserted against the reference's counters.

    python3 -m grader profile --check [--lab L ...]        (make profile-check)

It proves on a GPU that the profile a student gets shows the difference each lab teaches: no padding shows
bank conflicts, scattered loads show sectors per request, interleaved addressing shows the warp instructions
it costs. Per lab,
the reference is built once; each variant is built as a submission that links the reference's compiled tests and
harness, so only its one file compiles. Only the kernels some `shows` names are profiled, each in one run of its
timing case, while the GPU lock is held exclusively. Every variant is the instructor's own code: it runs outside
the sandbox, as `make profile` runs a student's own.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from grader import build, grade, profile, variants
from grader.config import LabConfig, ProfileEntry, SlowSpec
from grader.gpulock import GpuLock


@dataclass
class LabCheck:
    """One lab's check: whether every condition held, one line per condition, the report's text, and its cost."""

    lab: str
    passed: bool
    lines: list[str]
    report: str
    seconds: float

    def summary(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        return f"{self.lab}: profile check {verdict} ({self.seconds:.0f} s)\n" + "\n".join(f"  {l}" for l in self.lines)


def entries_shown(config: LabConfig, slow: list[SlowSpec]) -> list[ProfileEntry]:
    """The [[profile]] entries whose kernels the variants' `shows` name: all that needs measuring."""
    kernels = {shows.kernel for variant in slow for shows in variant.shows}
    return [entry for entry in config.profile if entry.kernel in kernels]


def build_variant(config: LabConfig, table: str, name: str, reference_tree: Path,
                  workroot: Path) -> build.BuildResult:
    """A variant's files (from hidden.toml's `table`, "slow" or "right": the reference's with its replacement, or
    a whole file of a journey) built as a submission against the reference's compiled tests and harness, in
    <workroot>/<table>-<name>/."""
    folder = workroot / f"{table}-{name}" / "files"
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in variants.sources(config, table)[name].items():
        (folder / file).write_text(text)
    return grade.build_submission(config, folder, workroot / f"{table}-{name}" / "build", reference_tree)


def check_lab(config: LabConfig, ncu: Path, workroot: Path, out: Path, lock: GpuLock,
              names: list[str] | None = None) -> LabCheck:
    """Profile the reference and the lab's slow variants (those of `names`, else all), judge every `shows`, and
    write <out>/report.txt, roofline.png and measurements.json (each build's raw ncu metrics per kernel)."""
    started = time.monotonic()
    slow = [variant for variant in config.slow if names is None or variant.name in names]
    if not slow:
        return LabCheck(config.name, False, [f"no [[slow]] variant in solutions/{config.name}/hidden.toml"
                                             + (f" named {names}" if names else "")], "", 0.0)
    tree = workroot / "reference-build"
    grade.check_configured(config, build.configure(config, tree, None))
    reference_binary = grade.build_reference(config, tree)
    entries = entries_shown(config, slow)
    lines, texts, points = [], [], []
    raw: dict[str, dict] = {}  # build -> kernel -> its ncu metrics, kept beside the report to draw or compare again
    passed = True
    reference: profile.Profiled | None = None
    for variant in slow:
        built = build_variant(config, "slow", variant.name, tree, workroot)
        if not built.ok:
            lines.append(f"FAIL {variant.name}: it does not build:\n{built.errors()}")
            passed = False
            continue
        with lock.exclusive():
            measured = profile.profile_build(config, built.binary, ncu, workroot / f"slow-{variant.name}" / "ncu",
                                             entries)
            if reference is None:  # once, in the same hold as the first variant that built
                reference = profile.profile_build(config, reference_binary, ncu, workroot / "reference-ncu", entries)
        verdicts = [profile.judge_shows(shows, measured, reference) for shows in variant.shows]
        passed = passed and all(verdict.held for verdict in verdicts)
        lines += [f"{variant.name}: {verdict.line()}" for verdict in verdicts]
        texts.append(f"Slow variant '{variant.name}': {variant.why}\n"
                     + "\n".join(verdict.line() for verdict in verdicts) + "\n\n"
                     + profile.report(config, measured.kernels, reference.kernels, measured.missing,
                                      label=variant.name, entries=entries))
        points += profile.points_of(measured, f"({variant.name})")
        raw[variant.name] = measured.kernels
    if reference is not None:
        points += profile.points_of(reference, "(reference)")
        raw["reference"] = reference.kernels
    text = "\n\n".join(texts)
    passed = passed and reference is not None
    text += "\n" + profile.write_picture(out, f"{config.name}: reference and slow variants", points,
                                         reference.kernels if reference else {}) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.txt").write_text(text)
    (out / "measurements.json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    return LabCheck(config.name, passed, lines, text, time.monotonic() - started)
