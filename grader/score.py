"""Score: turn test outcomes into points through the lab config.

Correctness tests are all or nothing. Performance points compare the
submission's number with the reference's from the same grading run. The
number is a measurement's median time T, or, where its [[perf]] entry names
`over_slowest_of`, T over the slowest of those measurements of the same run
(a pipeline's time over its slowest stage alone: how well it overlaps). With
ratio = mine / the reference's: full points at ratio <= full_at, and none past
zero_at; in between, points * full_at / ratio ("inverse", the default) or a
straight line from all to none ("linear"). The thresholds are [grading]'s
unless the entry gives its own. Performance points need the timed output to be
right and every test named in the entry's `requires` to pass.

The written analysis ([[questions]]) is scored by a TA, not here: each
question is an item of kind "manual" that holds no score, so that no total of
the autograder's counts it (autograded()).
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from grader.config import LabConfig, PerfSpec
from grader.run.outcomes import CaseOutcome

MESSAGE_LIMIT = 3000
# The status of a timing case that was deliberately not run (class grading times only what can earn points).
NOT_TIMED = "not_timed"
# Why class grading did not take a measurement: it earns no points (classroom and _perf_item say it alike).
NOT_TIMED_WORTH_NO_POINTS = ("not timed in class grading, because this measurement earns no points "
                             "(`make grade` shows it for comparison).")
NOT_RUN_WORTH_NO_POINTS = ("Not run in class grading: this test checks the grader's own reference, not your code, "
                           "and earns no points (`make grade` runs it, as does the lab's self-check).")


@dataclass(frozen=True)
class Scored:
    name: str
    score: float
    max_score: float
    output: str
    visibility: str
    kind: str  # "test", "perf" or "manual" (a question a TA grades by hand; its score is always 0 here)
    hidden: bool = False
    extra_credit: bool = False

    @property
    def by_hand(self) -> bool:
        return self.kind == "manual"


def autograded(items: list[Scored]) -> list[Scored]:
    """The items the autograder scores: every one but the questions a TA grades by hand."""
    return [i for i in items if not i.by_hand]


def by_hand_output(config: LabConfig) -> str:
    """What a question's item says: who grades it and from what."""
    return (f"Graded by hand by your TA, from your answer in labs/{config.name}/ANSWERS.md to this question of "
            f"labs/{config.name}/QUESTIONS.md; not part of the autograder's score.")


def perf_fraction(time_s: float, reference_s: float, full_at: float, zero_at: float,
                  falloff: str = "inverse") -> float:
    """The share of a performance item's points earned at time_s against reference_s (or any two numbers of
    the same kind: a pipeline's overlap ratio against the reference's)."""
    if time_s <= 0 or reference_s <= 0:
        return 0.0
    ratio = time_s / reference_s
    if ratio <= full_at:
        return 1.0
    if ratio > zero_at:
        return 0.0
    if falloff == "linear":
        return (zero_at - ratio) / (zero_at - full_at)
    return full_at / ratio


@dataclass(frozen=True)
class ScoredValue:
    """What a performance item is scored on in one run: `value`, the measurement's median time or, with
    over_slowest_of, that time over `slowest`'s (the slowest of those measurements, by name and record)."""

    value: float
    timing: dict
    slowest: tuple[str, dict] | None = None


def scored_value(spec: PerfSpec, outcome: CaseOutcome) -> ScoredValue | str:
    """The number `spec` scores in `outcome`'s run, or why there is none."""
    mine = outcome.timing(spec.measurement)
    if mine is None:
        return f"the timing case reported no measurement '{spec.measurement}'"
    median = mine.get("median_s")
    if not isinstance(median, (int, float)) or median <= 0:
        return f"the measurement '{spec.measurement}' has no positive median time"
    if not spec.over_slowest_of:
        return ScoredValue(float(median), mine)
    stages = {}
    for name in spec.over_slowest_of:
        stage = outcome.timing(name)
        stage_median = stage.get("median_s") if stage else None
        if not isinstance(stage_median, (int, float)) or stage_median <= 0:
            return f"the timing case reported no positive median time for '{name}', which '{spec.measurement}' " \
                   f"is scored against"
        stages[name] = stage
    slowest = max(stages, key=lambda name: stages[name]["median_s"])
    return ScoredValue(float(median) / float(stages[slowest]["median_s"]), mine, (slowest, stages[slowest]))


def perf_ratio(spec: PerfSpec, outcome: CaseOutcome | None, reference: CaseOutcome | None) -> float | None:
    """The ratio `spec` is scored on: the outcome's number over the reference's; None where either has none."""
    if outcome is None or reference is None:
        return None
    mine, theirs = scored_value(spec, outcome), scored_value(spec, reference)
    if isinstance(mine, str) or isinstance(theirs, str):
        return None
    return mine.value / theirs.value


def thresholds(spec: PerfSpec) -> str:
    """How a performance item's points fall with its ratio, in words."""
    if spec.falloff == "linear":
        return f"full points at <= {spec.full_at:g}x, falling in a straight line to none at {spec.zero_at:g}x"
    return f"full points at <= {spec.full_at:g}x, none past {spec.zero_at:g}x"


def _trim(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + "\n[... cut]"


def _test_output(outcome: CaseOutcome | None) -> str:
    if outcome is None:
        return "Not run."
    if outcome.passed:
        return "Passed."
    return _trim("\n".join(outcome.messages) or f"Failed ({outcome.status}).")


def unmet_requirements(config: LabConfig, spec: PerfSpec, outcomes: dict[str, CaseOutcome]) -> list[str]:
    """The correctness tests that a performance item requires and that did not pass."""
    # Core performance never waits on extra-credit tests; extra credit may name them.
    return [t.name for t in config.tests
            if (spec.extra_credit or not t.extra_credit) and any(fnmatchcase(t.name, p) for p in spec.requires)
            and not (outcomes.get(t.name) and outcomes[t.name].passed)]


def _perf_item(spec: PerfSpec, config: LabConfig, outcomes: dict[str, CaseOutcome],
               reference: dict[str, CaseOutcome] | None) -> tuple[float, str]:
    """(fraction of the points, explanation)."""
    outcome = outcomes.get(spec.case)
    if outcome is not None and outcome.status == NOT_TIMED:
        return 0.0, _trim("No performance points: " + " ".join(outcome.messages))
    if outcome is None or not outcome.passed:
        why = "\n".join(outcome.messages) if outcome else "it did not run"
        return 0.0, _trim(f"No performance points: the timing case did not pass ({why}).")
    failing = unmet_requirements(config, spec, outcomes)
    mine = outcome.timing(spec.measurement)
    if mine is None and spec.points == 0:  # class grading takes only what scores (schedule.scored_measurements)
        return 0.0, "No performance points: " + NOT_TIMED_WORTH_NO_POINTS
    if mine is None:
        return 0.0, f"No performance points: the timing case reported no measurement '{spec.measurement}'."
    summary = _describe(mine)
    if why := implausible(mine):
        return 0.0, _trim(f"{summary}\nNo performance points: {why}")
    if failing:
        return 0.0, _trim(f"{summary}\nNo performance points until these correctness tests pass: "
                          + "; ".join(failing))
    ref_outcome = reference.get(spec.case) if reference else None
    ref = scored_value(spec, ref_outcome) if ref_outcome and ref_outcome.passed else None
    if ref is None or isinstance(ref, str):
        return 0.0, (f"{summary}\nNo reference timing in this run, so no performance points here; "
                     f"they are awarded when your submission is graded beside the reference solution.")
    own = scored_value(spec, outcome)
    if isinstance(own, str):
        return 0.0, _trim(f"{summary}\nNo performance points: {own}.")
    fraction = perf_fraction(own.value, ref.value, spec.full_at, spec.zero_at, spec.falloff)
    ratio = own.value / ref.value
    if own.slowest is None:
        return fraction, (f"{summary}\nReference: {_describe(ref.timing)}\n"
                          f"Your time is {ratio:.2f}x the reference's ({thresholds(spec)}).")
    slowest, ref_slowest = own.slowest[0], ref.slowest[0]
    return fraction, (f"{summary}\nReference: {_describe(ref.timing)}\n"
                      f"Scored on its time over the slowest of {', '.join(spec.over_slowest_of)}, timed in the same "
                      f"run: yours is {own.value:.2f} (over {slowest}, {own.slowest[1]['median_s'] * 1e3:.3f} ms), "
                      f"the reference's {ref.value:.2f} (over {ref_slowest}, "
                      f"{ref.slowest[1]['median_s'] * 1e3:.3f} ms); yours is {ratio:.2f}x the reference's "
                      f"({thresholds(spec)}).")


def implausible(timing: dict) -> str:
    """Why a timing record cannot be true ("" when it can): the harness said so, or its rate passes a bound
    ceiling (a limit of the hardware measured in the same run) by more than its margin. The judge fails such a
    case itself; this holds even for a record that reached the results file some other way."""
    if timing.get("implausible"):
        return "the test found the rate faster than the hardware allows."
    rates = dict(zip(timing.get("ceiling_names", []), timing.get("ceiling_rates", [])))
    margin = timing.get("ceiling_margin")
    for name in timing.get("ceiling_bounds", []):
        ceiling, rate = rates.get(name), timing.get("rate")
        if not isinstance(ceiling, (int, float)) or not isinstance(rate, (int, float)) or ceiling <= 0:
            return f"the record's bound '{name}' has no usable rate."
        if not isinstance(margin, (int, float)) or not rate <= margin * ceiling:
            return f"{rate:.1f} is more than {margin} times {name} ({ceiling:.1f}), which no correct call reaches."
    return ""


def _describe(timing: dict) -> str:
    text = f"median {timing['median_s'] * 1e3:.3f} ms, {timing.get('rate', 0):.1f} {timing.get('unit', '')}"
    for name, rate in zip(timing.get("ceiling_names", []), timing.get("ceiling_rates", [])):
        if rate:
            text += f", {timing.get('rate', 0) / rate:.2f} of {name}"
    return text


def score_lab(config: LabConfig, outcomes: dict[str, CaseOutcome],
              reference: dict[str, CaseOutcome] | None) -> list[Scored]:
    items = []
    for test in config.tests:
        outcome = outcomes.get(test.name)
        passed = outcome is not None and outcome.passed
        items.append(Scored(name=test.name, score=test.points if passed else 0.0, max_score=test.points,
                            output=_test_output(outcome),
                            visibility=config.hidden_visibility if test.hidden else "visible",
                            kind="test", hidden=test.hidden, extra_credit=test.extra_credit))
    for spec in config.perf:
        fraction, output = _perf_item(spec, config, outcomes, reference)
        items.append(Scored(name=f"performance: {spec.measurement}", score=round(spec.points * fraction, 2),
                            max_score=spec.points, output=output, visibility="visible", kind="perf",
                            extra_credit=spec.extra_credit))
    items += [Scored(name=q.name, score=0.0, max_score=q.points, output=by_hand_output(config), visibility="visible",
                     kind="manual") for q in config.questions]
    return items
