"""Grading one submission, or a whole class, from submission to results.json.

intake -> build -> run -> score -> report; each stage is its own module and
this one only passes plain data between them.
"""
from __future__ import annotations

import csv
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import build, intake, report, run, sanitizer
from grader.config import LabConfig
from grader.score import Scored, score_lab


class NoGpu(Exception):
    """Grading needs a CUDA GPU and this machine has none usable."""


class GraderError(Exception):
    """Something is wrong with the instructor's side (config, reference, build files), not the submission."""


@dataclass
class Evaluation:
    """What running one test program produced."""

    info: run.RunInfo
    outcomes: dict[str, run.CaseOutcome] = field(default_factory=dict)


@dataclass
class Graded:
    items: list[Scored]
    results: dict  # Gradescope's results.json
    table: str


def seed_for(config: LabConfig) -> int | None:
    """The grading seed (secret, from hidden.toml) or None for the lab's public one."""
    return config.grading_seed


def evaluate(config: LabConfig, binary: Path, workdir: Path, cases: list[str] | None = None) -> Evaluation:
    """Run a built test program's test cases (all the config names, unless `cases` says which)."""
    workdir.mkdir(parents=True, exist_ok=True)
    listing = run.list_cases(binary, workdir, config.run_limits)
    if listing.problem and not listing.cases:
        return Evaluation(info=listing.info, outcomes={
            name: run.CaseOutcome(name, "crashed", [f"The test program could not start: {listing.problem}"])
            for name in (cases or config.all_case_names)})
    if not listing.info.gpu_available:
        raise NoGpu(listing.info.why_no_gpu or "no CUDA device found")
    timeouts = {t.name: t.timeout_s for t in config.tests}
    wanted = cases if cases is not None else list(config.all_case_names)
    outcomes = run.run_cases(binary, [(name, timeouts.get(name, config.timeout_s)) for name in wanted],
                             workdir, seed_for(config), config.run_limits, sanitizer_wrappers(config, wanted))
    return Evaluation(info=listing.info, outcomes=outcomes)


def sanitizer_wrappers(config: LabConfig, names: list[str]) -> dict[str, sanitizer.Wrapper]:
    """How each test in `names` that the config runs under compute-sanitizer is run.

    Without compute-sanitizer this refuses (GraderError): running those tests without it
    would fail every submission on them, for a reason that is not the submission's.
    """
    tools = {t.name: t.sanitizer for t in config.tests if t.sanitizer and t.name in names}
    if not tools:
        return {}
    executable = sanitizer.find()
    if executable is None:
        raise GraderError(sanitizer.missing_message(config.name, config.sanitizer_tools))
    return {name: sanitizer.Wrapper(executable, tool) for name, tool in tools.items()}


def build_reference(config: LabConfig, build_dir: Path) -> Path:
    if config.solution_dir is None:
        raise GraderError(f"no solutions/{config.name}/: the reference is needed for performance points")
    result = build.build(config, build_dir, "reference")
    if not result.ok:
        raise GraderError(f"the reference solution of {config.name} does not build:\n{result.errors()}")
    return result.binary


def time_reference(config: LabConfig, binary: Path, workdir: Path) -> Evaluation:
    return evaluate(config, binary, workdir, list(config.timing_cases))


def _all_zero(config: LabConfig, message: str) -> list[Scored]:
    items = score_lab(config, {}, None)
    return [Scored(i.name, 0.0, i.max_score, message, i.visibility, i.kind, i.hidden, i.extra_credit) for i in items]


def _extra(config: LabConfig, evaluation: Evaluation | None, reference: Evaluation | None) -> dict:
    extra: dict = {"lab": config.name, "seed": seed_for(config) if seed_for(config) is not None
                   else config.params.get("seed")}
    if evaluation is not None:
        extra.update(gpu=evaluation.info.gpu, driver=evaluation.info.driver)
        extra["timings"] = {case: o.timings for case, o in evaluation.outcomes.items() if o.timings}
    if reference is not None:
        extra["reference_timings"] = {case: o.timings for case, o in reference.outcomes.items() if o.timings}
    return extra


def finish(config: LabConfig, items: list[Scored], output: str, started: float,
           evaluation: Evaluation | None = None, reference: Evaluation | None = None) -> Graded:
    title = f"{config.name}: {config.title}"
    results = report.gradescope_results(items, output, time.monotonic() - started,
                                        _extra(config, evaluation, reference))
    return Graded(items=items, results=results, table=report.table(title, items))


def grade_submission(config: LabConfig, submission: Path, workroot: Path,
                     reference: Evaluation | None = None, with_reference: bool = True) -> Graded:
    """Grade one submission in a fresh folder under `workroot`.

    `reference` is the reference solution's timing, when the caller already has
    one from this grading run (a class); otherwise it is built and timed here,
    unless with_reference is False (a student's local grade without solutions/).
    """
    started = time.monotonic()
    try:
        staged = intake.stage(submission, config, workroot / "submission")
    except intake.IntakeError as error:
        return finish(config, _all_zero(config, f"Not graded: {error}"), f"Not graded: {error}", started)

    build_dir = workroot / "build"
    configured = build.configure(config, build_dir, staged.folder)
    if not configured.ok:
        raise GraderError(f"CMake could not configure lab {config.name}:\n{configured.log[-4000:]}")
    built = build.build(config, build_dir, "student")
    if not built.ok:
        message = f"Your code did not compile, so no test could run. The compiler said:\n{built.errors()}"
        return finish(config, _all_zero(config, message), message, started)

    if reference is None and with_reference and config.solution_dir is not None:
        reference = time_reference(config, build_reference(config, build_dir), workroot / "reference-run")
    evaluation = evaluate(config, built.binary, workroot / "run")
    items = score_lab(config, evaluation.outcomes, reference.outcomes if reference else None)
    output = f"Graded on {evaluation.info.gpu} (driver {evaluation.info.driver})."
    return finish(config, items, output, started, evaluation, reference)


def grade_class(config: LabConfig, submissions: Path, out_dir: Path, workroot: Path) -> list[tuple[str, float]]:
    """Grade every entry (folder or .zip) of `submissions`; results per student and a gradebook CSV."""
    ref_build = workroot / "reference-build"
    configured = build.configure(config, ref_build, None)
    if not configured.ok:
        raise GraderError(f"CMake could not configure lab {config.name}:\n{configured.log[-4000:]}")
    reference = time_reference(config, build_reference(config, ref_build), workroot / "reference-run")
    sanitizer_wrappers(config, list(config.all_case_names))  # refuse now, before any student, if it is missing
    gradebook = []
    for entry in sorted(submissions.iterdir()):
        student = entry.name.removesuffix(".zip")
        with tempfile.TemporaryDirectory(prefix=f"grade-{student}-", dir=workroot) as folder:
            try:
                graded = grade_submission(config, entry, Path(folder), reference)
            except GraderError as error:  # one broken build must not stop the class
                message = f"Not graded because of a grader problem (tell your TA): {error}"
                graded = finish(config, _all_zero(config, message), message, time.monotonic())
        report.write_json(out_dir / student / "results.json", graded.results)
        (out_dir / student / "report.txt").write_text(graded.table + "\n")
        gradebook.append((student, graded.results["score"]))
        print(f"{student:<30} {graded.results['score']:7.2f} / {config.max_points:g}", flush=True)
    with (out_dir / "gradebook.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", config.name, "max"])
        writer.writerows([(s, score, config.max_points) for s, score in gradebook])
    return gradebook


def fresh_workroot() -> Path:
    return Path(tempfile.mkdtemp(prefix="kit-grade-"))


def remove_workroot(path: Path, keep: bool) -> None:
    if keep:
        print(f"(work files kept in {path})")
    else:
        shutil.rmtree(path, ignore_errors=True)
