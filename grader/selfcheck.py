"""The instructor's self-check: prove that a lab's tests and points do their job.

On binaries already built (make): the reference must score full marks (timed
against a second timing of itself), the untouched skeleton must score no
correctness points and fail cleanly (no crash, no hang), each deliberately
wrong variant must fail the tests hidden.toml says it must, with a message, and
keep at most the share of each performance measurement its `keeps_at_most`
gives (timed against the reference's first timing: a pipeline that overlaps
nothing must lose the points for overlap), and each correct alternative
([[right]]: another block or tile size) must pass every test that is not timed
(its speed may differ from the reference's, and with it the performance
points), or with `timed = true` every test and every performance point. The
listed test cases must match the config both ways.
"""
from __future__ import annotations

import time
from pathlib import Path

from grader import build, report
from grader.config import LabConfig, PerfSpec, WrongSpec
from grader.gpulock import GpuLock
from grader.grade import finish
from grader.run import judge
from grader.run.schedule import evaluate, time_reference
from grader.run.servers import JudgeServers
from grader.record import RESULTS_NAME
from grader.run.outcomes import CaseOutcome
from grader.score import Scored, autograded, perf_fraction, perf_ratio, score_lab, thresholds


def case_problems(config: LabConfig, binary: Path, workdir: Path, with_hidden: bool) -> list[str]:
    """Differences between the test cases a program has and the ones its config gives points for."""
    workdir.mkdir(parents=True, exist_ok=True)
    listing = judge.list_cases(binary, workdir)
    if listing.problem:
        return [f"{binary.name} could not list its test cases: {listing.problem}"]
    expected = {t.name: ("cpu" if not t.gpu else "") for t in config.tests if with_hidden or not t.hidden}
    expected.update({name: "timing" for name in config.timing_cases})
    problems = [f"{binary.name}: test case '{name}' is in the config but not in the test sources"
                for name in expected if name not in listing.cases]
    problems += [f"{binary.name}: test case '{name}' is in the test sources but the config gives it no points "
                 f"(add it under [[tests]] or [[perf]])" for name in listing.cases if name not in expected]
    problems += [f"{binary.name}: test case '{name}' is in doctest suite '{listing.cases[name]}' but the config "
                 f"says '{suite or 'gpu (no suite)'}'" for name, suite in expected.items()
                 if name in listing.cases and listing.cases[name] != suite]
    return problems


def reference_losses(items: list[Scored]) -> list[str]:
    """Where the reference misses full marks. Only the autograder's points count: the questions a TA grades by
    hand hold no score until a TA gives one."""
    return [f"reference loses points on '{i.name}': {i.output}" for i in autograded(items) if i.score < i.max_score]


def timings_disagree(config: LabConfig, first: dict[str, CaseOutcome], second: dict[str, CaseOutcome]) -> list[str]:
    """Where the reference's two timings differ by more than a measurement's points allow, either way. Two timings
    of one build on a GPU host with nothing else running agree within a few percent (0.95x to 1.06x over every
    lab's measurements on four H200s, docs/gpu-runs/2026-11-27-h200x4-all-labs-cross-gpu.md); farther apart, the
    first timing, the yardstick of every variant's verdict, measured something besides the reference."""
    problems = []
    for spec in config.perf:
        ratio = perf_ratio(spec, second.get(spec.case), first.get(spec.case))
        if ratio is None or 1.0 / spec.full_at <= ratio <= spec.full_at:
            continue
        problems.append(f"the reference's two timings of '{spec.measurement}' disagree: the second took {ratio:.2f}x "
                        f"the first, farther apart than the {spec.full_at:g}x its full points allow. The first timing "
                        f"is what every variant is judged against, so the verdicts on performance below prove "
                        f"nothing. Something else was using the GPU or its host while it ran: another grader, or "
                        f"programs on the host's other GPUs. Run the self-check again with the host to itself.")
    return problems


def _losing(config: LabConfig, wrong: WrongSpec) -> list[PerfSpec]:
    """The performance items whose points `wrong` must lose (its keeps_at_most), in config order."""
    return [spec for spec in config.perf if spec.points > 0 and spec.measurement in wrong.keeps_at_most]


def performance_kept(config: LabConfig, wrong: WrongSpec, outcomes: dict[str, CaseOutcome],
                     reference: dict[str, CaseOutcome]) -> tuple[list[str], list[str]]:
    """(problems, report lines) for the measurements `wrong` must lose: each one's share of its points, on the
    time alone, against the reference's timing. The timing case must pass: a variant that fails it loses the points
    for a reason other than the one it stands for, and so proves nothing about the scoring."""
    problems, lines = [], []
    for spec in _losing(config, wrong):
        allowed = wrong.keeps_at_most[spec.measurement]
        got = outcomes.get(spec.case)
        if got is None or not got.passed:
            why = " ".join(got.messages)[:500] if got else "it did not run"
            problems.append(f"wrong variant '{wrong.name}' ({wrong.why}) must lose the '{spec.measurement}' points on "
                            f"its time, but its timing case did not pass: {why}")
            lines.append(f"  performance: {spec.measurement}: timing case {got.status if got else 'not run'}")
            continue
        ratio = perf_ratio(spec, got, reference.get(spec.case))
        if ratio is None:
            problems.append(f"wrong variant '{wrong.name}': no ratio to the reference for '{spec.measurement}' (a "
                            f"record is missing from its timing case or from the reference's)")
            continue
        kept = perf_fraction(ratio, 1.0, spec.full_at, spec.zero_at, spec.falloff)
        lines.append(f"  performance: {spec.measurement}: {ratio:.2f}x the reference's, keeps {kept:.2f} of its "
                     f"{spec.points:g} points (at most {allowed:g})")
        if kept > allowed:
            problems.append(f"wrong variant '{wrong.name}' ({wrong.why}) keeps {kept:.2f} of the "
                            f"'{spec.measurement}' points at {ratio:.2f}x the reference's; it must keep at most "
                            f"{allowed:g} ({thresholds(spec)})")
    return problems, lines


def check_lab(config: LabConfig, build_dir: Path, workroot: Path,
              lock: GpuLock | None = None) -> tuple[list[str], str]:
    """(problems, report text); no problems means the lab's grading is sound. With `lock`, what is timed
    holds the GPU lock, as in grading. Every build runs as class grading runs a student's: its programs served by
    the reference's judges (grader/run/servers.py), so that the self-check proves that way of grading too."""
    reference = build.binary_path(build_dir, config.name, "reference")
    with JudgeServers(reference, workroot / "judges") as servers:
        return _check_lab(config, build_dir, workroot, lock, servers)


def _check_lab(config: LabConfig, build_dir: Path, workroot: Path, lock: GpuLock | None,
               servers: JudgeServers) -> tuple[list[str], str]:
    reference = build.binary_path(build_dir, config.name, "reference")
    skeleton = build.binary_path(build_dir, config.name, "student")
    problems = case_problems(config, reference, workroot / "list", with_hidden=True)
    text = []

    first = evaluate(config, reference, workroot / "reference", lock=lock, servers=servers)
    second = time_reference(config, reference, workroot / "reference-again", lock, servers=servers)
    items = score_lab(config, first.outcomes, second.outcomes)
    graded = finish(config, items, "The reference, graded against a second timing of itself.", time.monotonic(), first,
                    second)
    report.write_json(build_dir / config.name / RESULTS_NAME, graded.results)  # for the GPU run record
    text.append(report.table(f"{config.name}: reference, against a second timing of itself", items))
    costs = [f"reference {first.cost()}", f"its second timing {second.cost()}"]
    problems += timings_disagree(config, first.outcomes, second.outcomes) + reference_losses(items)

    skeleton_run = evaluate(config, skeleton, workroot / "skeleton", [t.name for t in config.tests], lock,
                            servers=servers)
    skeleton_items = score_lab(config, skeleton_run.outcomes, None)
    text.append(report.table(f"{config.name}: untouched skeleton", skeleton_items))
    costs.append(f"skeleton {skeleton_run.cost()}")
    gpu_tests = {t.name for t in config.tests if t.gpu}
    problems += [f"skeleton earns {i.score} points on '{i.name}'" for i in skeleton_items
                 if i.name in gpu_tests and i.score > 0]
    problems += [f"skeleton {o.status.replace('_', ' ')} in '{name}' (it must fail cleanly): {o.messages}"
                 for name, o in skeleton_run.outcomes.items() if o.status in ("crashed", "timed_out", "not_found")]

    for right in config.right:
        binary = build.binary_path(build_dir, config.name, f"right-{right.name}")
        # A timed alternative runs every case, timing included, and is scored against the reference's first timing.
        cases = list(config.all_case_names) if right.timed else [t.name for t in config.tests]
        outcome = evaluate(config, binary, workroot / f"right-{right.name}", cases, lock, servers=servers)
        costs.append(f"right-{right.name} {outcome.cost()}")
        failed = {name: o for name, o in outcome.outcomes.items() if not o.passed}
        text.append(f"{config.name}: correct alternative: {right.name} ({right.why}): "
                    f"{len(outcome.outcomes) - len(failed)} of {len(outcome.outcomes)} tests passed")
        problems += [f"correct alternative '{right.name}' ({right.why}) fails '{name}': "
                     f"{' '.join(o.messages)[:500]}" for name, o in failed.items()]
        if right.timed:
            right_items = score_lab(config, outcome.outcomes, first.outcomes)
            text.append(report.table(f"{config.name}: correct alternative {right.name}, against the reference's "
                                     f"first timing", right_items))
            # Its failed tests are reported above; here the performance points it misses.
            problems += [f"correct alternative '{right.name}' ({right.why}) loses points on '{i.name}': {i.output}"
                         for i in right_items if i.kind == "perf" and i.score < i.max_score]

    for wrong in config.wrong:
        binary = build.binary_path(build_dir, config.name, f"wrong-{wrong.name}")
        # Only the tests that must catch the mistake, and the timing cases of the measurements it must lose: the
        # variant's other results prove nothing.
        timed = list(dict.fromkeys(spec.case for spec in _losing(config, wrong)))
        cases = list(dict.fromkeys(list(wrong.must_fail) + timed))
        outcome = evaluate(config, binary, workroot / f"wrong-{wrong.name}", cases, lock, servers=servers)
        costs.append(f"wrong-{wrong.name} {outcome.cost()}")
        caught = [f"  {name}: {outcome.outcomes[name].status}" for name in wrong.must_fail]
        found, lines = performance_kept(config, wrong, outcome.outcomes, first.outcomes)
        text.append(f"{config.name}: wrong on purpose: {wrong.name} ({wrong.why})\n" + "\n".join(caught + lines))
        problems += found
        for name in wrong.must_fail:
            got = outcome.outcomes.get(name)
            if got is None or got.passed:
                problems.append(f"wrong variant '{wrong.name}' ({wrong.why}) passes '{name}', which must catch it")
            elif not any(m.strip() for m in got.messages):
                problems.append(f"wrong variant '{wrong.name}' fails '{name}' without a message saying why")
    # Where the self-check's time went, so that an instructor sees which variant or stage is slow.
    text.append(f"{config.name}: time taken\n" + "\n".join(f"  {cost}" for cost in costs))
    return problems, "\n\n".join(text)
