"""The instructor's self-check: prove that a lab's tests and points do their job.

On binaries already built (make): the reference must score full marks (timed
against a second timing of itself), the untouched skeleton must score no
correctness points and fail cleanly (no crash, no hang), each deliberately
wrong variant must fail the tests hidden.toml says it must, with a message, and
each correct alternative ([[right]]: another block or tile size) must pass every
test that is not timed (its speed may differ from the reference's, and with it
the performance points). The listed test cases must match the config both ways.
"""
from __future__ import annotations

import time
from pathlib import Path

from grader import build, report
from grader.config import LabConfig
from grader.gpulock import GpuLock
from grader.grade import finish
from grader.run import judge
from grader.run.schedule import evaluate, time_reference
from grader.record import RESULTS_NAME
from grader.score import Scored, autograded, score_lab


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


def check_lab(config: LabConfig, build_dir: Path, workroot: Path,
              lock: GpuLock | None = None) -> tuple[list[str], str]:
    """(problems, report text); no problems means the lab's grading is sound. With `lock`, what is timed
    holds the GPU lock, as in grading."""
    reference = build.binary_path(build_dir, config.name, "reference")
    skeleton = build.binary_path(build_dir, config.name, "student")
    problems = case_problems(config, reference, workroot / "list", with_hidden=True)
    text = []

    first = evaluate(config, reference, workroot / "reference", lock=lock)
    second = time_reference(config, reference, workroot / "reference-again", lock)
    items = score_lab(config, first.outcomes, second.outcomes)
    graded = finish(config, items, "The reference, graded against a second timing of itself.", time.monotonic(), first,
                    second)
    report.write_json(build_dir / config.name / RESULTS_NAME, graded.results)  # for the GPU run record
    text.append(report.table(f"{config.name}: reference, against a second timing of itself", items))
    costs = [f"reference {first.cost()}", f"its second timing {second.cost()}"]
    problems += reference_losses(items)

    skeleton_run = evaluate(config, skeleton, workroot / "skeleton", [t.name for t in config.tests], lock)
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
        outcome = evaluate(config, binary, workroot / f"right-{right.name}", [t.name for t in config.tests], lock)
        costs.append(f"right-{right.name} {outcome.cost()}")
        failed = {name: o for name, o in outcome.outcomes.items() if not o.passed}
        text.append(f"{config.name}: correct alternative: {right.name} ({right.why}): "
                    f"{len(outcome.outcomes) - len(failed)} of {len(outcome.outcomes)} tests passed")
        problems += [f"correct alternative '{right.name}' ({right.why}) fails '{name}': "
                     f"{' '.join(o.messages)[:500]}" for name, o in failed.items()]

    for wrong in config.wrong:
        binary = build.binary_path(build_dir, config.name, f"wrong-{wrong.name}")
        # Only the tests that must catch the mistake: the variant's other results prove nothing.
        outcome = evaluate(config, binary, workroot / f"wrong-{wrong.name}", list(wrong.must_fail), lock)
        costs.append(f"wrong-{wrong.name} {outcome.cost()}")
        caught = [f"  {name}: {outcome.outcomes[name].status}" for name in wrong.must_fail]
        text.append(f"{config.name}: wrong on purpose: {wrong.name} ({wrong.why})\n" + "\n".join(caught))
        for name in wrong.must_fail:
            got = outcome.outcomes.get(name)
            if got is None or got.passed:
                problems.append(f"wrong variant '{wrong.name}' ({wrong.why}) passes '{name}', which must catch it")
            elif not any(m.strip() for m in got.messages):
                problems.append(f"wrong variant '{wrong.name}' fails '{name}' without a message saying why")
    # Where the self-check's time went, so that an instructor sees which variant or stage is slow.
    text.append(f"{config.name}: time taken\n" + "\n".join(f"  {cost}" for cost in costs))
    return problems, "\n\n".join(text)
