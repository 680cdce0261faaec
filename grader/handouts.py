"""Handouts: the grading section of each labs/<lab>/README.md, generated from the lab's config.

A handout states the points of every public test, performance measurement and question of the
written analysis (which it links), the thresholds of the performance points, the timing sizes, the
total and the hours the lab takes. Written by hand, those numbers drift from
lab.toml; here they are made from it, between two markers, and `--check` fails when a committed
handout differs from what its config makes. Handouts are published, so of hidden.toml only the
hidden tests' point total appears: no hidden test's name, no hidden parameter.
"""
from __future__ import annotations

import re
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

from grader import questions
from grader.config import LabConfig, PerfSpec
from grader.intake import FORBIDDEN_EVERYWHERE

BEGIN = "<!-- grading: generated from lab.toml by the instructor's grader (python3 -m grader handouts); do not edit -->"
END = "<!-- end grading -->"
# A lab's points without extra credit: scores read as percentages, and the gradebook assumes it.
EXPECTED_TOTAL = 100.0
# Timing parameters that say how a measurement is taken rather than how large its input is.
_NOT_SIZES = ("timing_warmup", "timing_repeats")
_NOT_SIZE_PREFIXES = ("timing_check_", "timing_period_")


class HandoutError(Exception):
    """A handout cannot be generated or checked (markers missing or doubled); names the file."""


@dataclass(frozen=True)
class Difference:
    lab: str
    text: str

    def __str__(self) -> str:
        return f"{self.lab}: {self.text}"


def _wrap(text: str) -> list[str]:
    """A paragraph in lines of the handouts' width."""
    return textwrap.wrap(text, width=100, break_long_words=False, break_on_hyphens=False)


def _cell(text: str) -> str:
    """Text in a Markdown table cell: a | would end the cell."""
    return text.replace("|", "\\|")


def _calls(count: object, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _points(value: float) -> str:
    return f"{value:g}"


def _public_params(config: LabConfig) -> dict[str, object]:
    """The [params] of lab.toml alone, as graded: a key hidden.toml overrides is left out, since its value
    when graded is not public."""
    with (config.lab_dir / "lab.toml").open("rb") as f:
        public = tomllib.load(f).get("params", {})
    return {key: value for key, value in public.items() if config.params.get(key) == value}


def _size(key: str, value: object) -> str:
    """A timing parameter's value as a student reads it: powers of two as 2^k, shapes as a × b."""
    if isinstance(value, list):
        return " × ".join(str(v) for v in value)
    if isinstance(value, int) and key.endswith("_mib") and value >= 1024 and value % 1024 == 0:
        return f"{value} MiB ({value // 1024} GiB)"
    if isinstance(value, int) and key.endswith("_mib"):
        return f"{value} MiB"
    if isinstance(value, int) and value >= 1 << 20 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1} ({value})"
    return str(value)


def timing_sizes(config: LabConfig) -> dict[str, object]:
    """The public parameters that size the timed inputs (timing_n, timing_size, ...), in lab.toml order."""
    return {key: value for key, value in _public_params(config).items()
            if key.startswith("timing_") and key not in _NOT_SIZES and not key.startswith(_NOT_SIZE_PREFIXES)}


def fewer_calls(config: LabConfig, params: dict[str, object]) -> list[str]:
    """The measurements timed on counts of their own, `<word>_timing_repeats` (and `<word>_timing_warmup`, else
    the lab's): those whose names contain the word, as "`vector_add_host`: of 5 after 3"."""
    exceptions = []
    for key, repeats in params.items():
        if not key.endswith("_timing_repeats"):
            continue
        word = key.removesuffix("_timing_repeats")
        names = [spec.measurement for spec in config.perf if word in spec.measurement]
        if not names:
            raise HandoutError(f"{config.name}: [params] {key} names no measurement: the timing counts it sets apply "
                               f"to the [[perf]] measurements whose names contain '{word}', and none does")
        warmup = params.get(f"{word}_timing_warmup", params.get("timing_warmup", 0))
        exceptions.append(f"{_names(names)}: of {repeats} after {warmup}")
    return exceptions


def _requires(spec: PerfSpec) -> str:
    if spec.requires == ("*",):
        return "every correctness test"
    names = ", ".join(f"`{pattern.rstrip('*')}…`" if pattern.endswith("*") else f"`{pattern}`"
                      for pattern in spec.requires)
    return f"every test named {names}"


def _names(names: list[str] | tuple[str, ...]) -> str:
    quoted = [f"`{name}`" for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _rule(spec: PerfSpec) -> tuple:
    """What decides how a performance item is scored, apart from its points."""
    return spec.full_at, spec.zero_at, spec.falloff, spec.over_slowest_of


def scoring_rule(spec: PerfSpec, measurements: list[str], named: bool = False) -> str:
    """How the points of `measurements` (which share `spec`'s rule) are scored, as a sentence; naming them in its
    subject where the rule is not the lab's only one (`named`)."""
    full, zero = _points(spec.full_at), _points(spec.zero_at)
    subject = "Performance points" + (f" for {_names(measurements)}" if named else "")
    if spec.over_slowest_of:
        what = (f"{subject} score the median time of {_names(measurements)} over that of the slowest of "
                f"{_names(spec.over_slowest_of)} alone, timed in the same run (for a pipeline, how well its stages "
                f"overlap: 1.00 when everything else hides behind the slowest), against the same ratio of the "
                f"reference solution, timed on the same GPU in the same grading run")
        unit = "the reference's ratio"
    else:
        what = (f"{subject} compare your median time with the reference solution's, timed on the same GPU in the "
                f"same grading run")
        unit = "the reference's time"
    if spec.falloff == "linear":
        middle = _points(round((spec.full_at + spec.zero_at) / 2, 3))
        how = (f"full points at ≤ {full}× {unit}, then fewer in a straight line (at {middle}× half of them), none "
               f"from {zero}×")
    else:
        half = f" (at {_points(2 * spec.full_at)}× half of them)" if 2 * spec.full_at <= spec.zero_at else ""
        how = f"full points at ≤ {full}× {unit}, then the points × {full} / your ratio{half}, none past {zero}×"
    return f"{what}: {how}."


def scoring_rules(config: LabConfig) -> list[str]:
    """One sentence per way the lab's performance points are scored: one for the whole lab where its
    measurements that earn points share a rule, else one naming each rule's measurements."""
    scored = [spec for spec in config.perf if spec.points > 0] or list(config.perf)
    rules: dict[tuple, list[PerfSpec]] = {}
    for spec in scored:
        rules.setdefault(_rule(spec), []).append(spec)
    return [scoring_rule(specs[0], [spec.measurement for spec in specs], named=len(rules) > 1)
            for specs in rules.values()]


def _perf_row(spec: PerfSpec) -> str:
    label = f"performance: `{spec.measurement}` ({_cell(spec.case)})"
    if spec.points == 0:
        label += ", reported for comparison, no points"
    return f"| {label} | {_points(spec.points)} |"


# How a handout names a library that a lab's `forbidden` prefix stands for.
LIBRARY_TITLES = {"cublas": "cuBLAS", "cufft": "cuFFT", "cub": "CUB", "thrust": "Thrust", "curand": "cuRAND",
                  "cusparse": "cuSPARSE", "cusolver": "cuSOLVER"}


def _question_row(name: str, points: float) -> str:
    return f"| written analysis, graded by hand: {_cell(name)} | {_points(points)} |"


def written_analysis(config: LabConfig) -> list[str]:
    """The handout's paragraph on the questions and the time the lab takes: where they are, where the answers go,
    who grades them."""
    text = ""
    if config.questions:
        text = (f"Written analysis: the questions in [{questions.QUESTIONS_NAME}]({questions.QUESTIONS_NAME}), "
                f"{_points(config.question_points)} of the points above, are answered with measurements you take "
                f"yourself. Write your answers in `{questions.ANSWERS_NAME}` in this folder and hand it in with your "
                f"code; your TA grades them by hand, so `make grade` shows them as not yet graded.")
    if config.hours is not None:
        text += f"{' ' if text else ''}Estimated time: about {_points(config.hours)} hours, the questions included."
    return _wrap(text) + [""] if text else []


def may_not_use(config: LabConfig) -> list[str]:
    """The handout's paragraph on what student code may not use: the lab's `forbidden`, and the grader's rules for
    every lab (grader/intake.py's identifiers, grader/linkcheck.py's calls), which `make <lab>` checks too."""
    lab = ", ".join(f"{LIBRARY_TITLES.get(f.lower(), f)} (no identifier or #include starting with `{f}`)"
                    for f in config.forbidden)
    words = ", ".join(f"`{word}`" for word in FORBIDDEN_EVERYWHERE)
    return _wrap(
        f"What your code may not use: {lab + '; in every lab, ' if lab else 'in every lab, '}files, processes, "
        f"signals, threads, dynamic loading or raw system calls, and these identifiers outside comments and "
        f"strings: {words}. Grading refuses code that does, and so does `make {config.name}` (`python3 -m grader "
        f"check --lab {config.name}`) before it builds.")


def generate(config: LabConfig) -> str:
    """The grading section of the lab's handout, markers included, ending in a newline."""
    core_tests = [t for t in config.tests if not t.hidden and not t.extra_credit]
    extra_tests = [t for t in config.tests if not t.hidden and t.extra_credit]
    hidden_core = sum(t.points for t in config.tests if t.hidden and not t.extra_credit)
    hidden_extra = sum(t.points for t in config.tests if t.hidden and t.extra_credit)
    core_perf = [p for p in config.perf if not p.extra_credit]
    extra_perf = [p for p in config.perf if p.extra_credit]

    lines = [BEGIN, "", "| test | points |", "|---|---|"]
    lines += [f"| {_cell(t.name)} | {_points(t.points)} |" for t in core_tests]
    if hidden_core:
        lines.append(f"| hidden tests, run by your TA | {_points(hidden_core)} |")
    lines += [_perf_row(p) for p in core_perf]
    lines += [_question_row(q.name, q.points) for q in config.questions]
    lines.append(f"| **total** | **{_points(config.max_points)}** |")
    if config.extra_credit_points:
        lines += [f"| *extra credit:* {_cell(t.name)} | {_points(t.points)} |" for t in extra_tests]
        if hidden_extra:
            lines.append(f"| *extra credit:* hidden tests, run by your TA | {_points(hidden_extra)} |")
        lines += [_perf_row(p).replace("| performance", "| *extra credit:* performance", 1) for p in extra_perf]
        lines.append(f"| **with extra credit** | **{_points(config.max_points + config.extra_credit_points)}** |")

    if config.perf:
        lines += [""] + _wrap(" ".join(scoring_rules(config)) + " A measurement earns points only when its timing "
                              "case passes and so do the tests it needs (hidden tests whose names match included):")
        lines += [""]
        lines += [f"- `{p.measurement}`: {_requires(p)}" for p in config.perf if p.points > 0]
        params = _public_params(config)
        sizes = timing_sizes(config)
        if sizes or "timing_repeats" in params:
            lines.append("")
            text = "Timing (`[params]` in `lab.toml`):"
            if "timing_repeats" in params:
                text += (f" each measurement is the median of {params['timing_repeats']} timed calls after "
                         f"{_calls(params.get('timing_warmup', 0), 'warm-up call')}")
                text += "".join(f" ({exception})" for exception in fewer_calls(config, params))
                text += ", each call on new inputs" + (";" if sizes else ".")
            if sizes:
                text += " " + ", ".join(f"`{key}` = {_size(key, value)}" for key, value in sizes.items()) + "."
            lines += _wrap(text)
    lines += [""] + written_analysis(config) + may_not_use(config) + ["", END]
    return "\n".join(lines) + "\n"


def _section(text: str, path: Path) -> tuple[int, int]:
    """The start and end offsets of the generated section in a handout, markers included."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise HandoutError(f"{path}: needs exactly one line `{BEGIN}` and one `{END}` around its grading table")
    start, end = text.index(BEGIN), text.index(END)
    if end < start:
        raise HandoutError(f"{path}: `{END}` comes before `{BEGIN}`")
    end += len(END)
    if text[end:end + 1] == "\n":
        end += 1
    return start, end


def handout_path(config: LabConfig) -> Path:
    return config.lab_dir / "README.md"


def shown_path(config: LabConfig) -> Path:
    """The handout's path as its repository names it, e.g. labs/01-vector-add/README.md."""
    return handout_path(config).relative_to(config.lab_dir.parent.parent)


def _stated_sizes(case: str) -> list[int]:
    """The sizes a timing case's name states: 2^k, and each side of a shape such as 4096x4096."""
    sizes = [1 << int(k) for k in re.findall(r"(?<![\w^])2\^(\d+)(?![\d+])", case)]
    for shape in re.findall(r"(?<![\w])\d+(?:x\d+)+(?![\w])", case):
        sizes += [int(side) for side in shape.split("x")]
    return list(dict.fromkeys(sizes))


def stale_case_names(config: LabConfig) -> list[str]:
    """Timing case names (shown in the handout's table) stating a size no public timing parameter holds: the
    name was written for an older size."""
    held = {item for value in timing_sizes(config).values()
            for item in (value if isinstance(value, list) else [value])}
    return [f"{case!r} states {size}, which no timing size in lab.toml's [params] holds "
            f"({', '.join(f'{k} = {_size(k, v)}' for k, v in timing_sizes(config).items()) or 'none'})"
            for case in config.timing_cases for size in _stated_sizes(case) if size not in held]


def problems(config: LabConfig) -> list[Difference]:
    """Why the lab's handout does not follow its config: its total, timing case names that state an old size,
    questions that QUESTIONS.md or the rubric states otherwise, then the first line of the grading section that
    differs."""
    found = [Difference(config.name, f"the timing case {stale}") for stale in stale_case_names(config)]
    found += [Difference(config.name, problem) for problem in questions.problems(config)]
    if config.max_points != EXPECTED_TOTAL:
        found.append(Difference(config.name, f"its points sum to {_points(config.max_points)} without extra "
                                             f"credit, not {_points(EXPECTED_TOTAL)} (lab.toml and hidden.toml)"))
    path = handout_path(config)
    try:
        start, end = _section(path.read_text(), shown_path(config))
    except (OSError, HandoutError) as error:
        return found + [Difference(config.name, str(error))]
    have = path.read_text()[start:end].splitlines()
    want = generate(config).splitlines()
    if have != want:
        # The first line that differs, as the handout has it and as the config makes it.
        at = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
        found.append(Difference(config.name, f"{shown_path(config)}: the grading "
                                             f"section differs from the config (run `make handouts`) at its line "
                                             f"{at + 1}:\n  handout: {have[at] if at < len(have) else '(ends)'}"
                                             f"\n  config:  {want[at] if at < len(want) else '(ends)'}"))
    return found


def write(config: LabConfig) -> bool:
    """Replace the handout's grading section with the generated one; True when the file changed."""
    path = handout_path(config)
    text = path.read_text()
    start, end = _section(text, shown_path(config))
    new = text[:start] + generate(config) + text[end:]
    if new == text:
        return False
    path.write_text(new)
    return True
