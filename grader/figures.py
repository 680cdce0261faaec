"""Measured figures in the handouts and decks: written from the newest GPU run records, or checked against them.

A number a student reads as a measurement ("0.91 of the copy", "1.65x as fast", a line of timing output) and a
claim that one kernel is faster than another come from docs/gpu-runs/, as the slides' charts do: `make figures`
(`python3 -m grader figures`) rewrites them after a new GPU run, and `make test` (`--check`) fails while a
figure differs from its record, a record contradicts a claim, or a handout, question sheet or deck states such a
figure or claim without saying where it comes from. A lab's record is the newest one that measured it
(grader.record.newest, the charts' choice too). Each figure is marked where it stands, with a one-line HTML
comment, which GitHub does not show and slides/build.sh leaves out of the decks:

- A figure: the number (and its ×, x or %), then at once `<!-- measured: EXPRESSION -->`; the number is rewritten
  with the decimals it has (and thousands separators if it has them):
      The reference reaches 0.91<!-- measured: rate(vector_add_kernel) / rate(vector_add_kernel, "copy") --> of it.
- A claim: `<!-- measured: EXPRESSION < EXPRESSION -->` (or >, <=, >=, chained) in its sentence; checked only:
      part 3 is slower than part 2<!-- measured: time(histogram_warp_aggregated) > time(histogram_shared) -->
- Program output: `<!-- measured -->` on the line right before a fenced block. Its `[timing]` lines with numbers
  take their time, rate and yardsticks from the record, with the harness's decimals, in the layout they have
  (yardsticks may go on indented lines below); a line of another tag takes its first numbers, in order, from
  the expressions the mark gives for that tag:
      <!-- measured: [overlap] time(pipelined) / time(stage_copy_in); [speedup] EXPRESSION, EXPRESSION -->
- The GPU the figures were measured on: its name, then at once `<!-- measured: gpu -->`; the name is rewritten
  as the record gives it ("NVIDIA H100 80GB HBM3" is an H100), so that a record from another GPU cannot leave
  its numbers beside the old GPU's name:
      What the reference printed on the kit's last GPU run, an H100<!-- measured: gpu -->:
- What no record holds (a datasheet figure, a model's prediction, a comparison no timing case makes):
  `<!-- unmeasured: why -->` right after the number, or in the claim's sentence; `--list` lists them.

EXPRESSION is arithmetic (numbers, + - * /, parentheses) over the lab's record: `time(m)` is measurement m's
median time in seconds, `rate(m)` its rate, `rate(m, "yardstick")` the rate of a yardstick measured beside it.
The lab is the file's (labs/<lab>/..., slides/<lab>.md); `<!-- measured 01-vector-add: ... -->` names another.
A step of a lab's journey (grader/journey.py) is a measurement named as the step, from the newest record holding
the journey: `rate("gemm-7-tuned") / rate("gemm-7-tuned", "cuBLAS SGEMM (FP32)")`. `gpu` is the GPU of the lab's
newest record.

What needs a mark, in prose (not in code, headings, comments or the generated grading section): a decimal
before "of" (0.34 of cuBLAS), "within" a percentage, a ratio before ×/x and a comparison (1.9x as fast, a 3×
speedup), a number before "times faster/slower/more/as", "expect" and a number, the GPU named after "last GPU run, a(n)";
and, in their sentence, "faster
/slower than", "faster/slower still", "is/are/runs/gets faster/slower", "times faster/slower/more", "beats",
"wins", "a tenth of", "a fraction of", unless the sentence asks a question. Arithmetic shown on the page (a
number after "≈" or "=") needs none. In a code block, a `[tag]` line with a decimal needs the block's mark.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader import handouts, record
from grader.config import REPO_ROOT, list_labs

MARK = re.compile(r"<!--\s*(?P<kind>measured|unmeasured)\b(?:[ \t]+(?P<lab>\d\d-[a-z0-9-]+))?[ \t]*"
                  r"(?::(?P<body>.*?))?\s*-->")
FENCE = re.compile(r"^\s*(```+|~~~+)")
NUMBER_BEFORE = re.compile(r"(?<![\w.,])(?P<n>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?P<sign>[×x%]?)$")
NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
TAG_LINE = re.compile(r"^\s*\[(?P<tag>[a-z][\w-]*)\]")
TIMING_LINE = re.compile(r"^\s*\[timing\]\s+(?P<name>\S+)\s+(?P<ms>\d+\.\d+) ms\s+(?P<rate>\d+\.\d+) "
                         r"(?P<unit>\S+(?: \S+)*?)(?=  |$)")
YARDSTICK = re.compile(r"\((?P<ratio>\d+\.\d+) of (?P<name>.+?) at (?P<rate>\d+\.\d+)\)")
DECIMAL = re.compile(r"\d+\.\d+")
# The harness's report (harness/src/timing.cu, report()): decimals of the time in ms, the rate, a yardstick's
# ratio and its rate.
TIMING_DECIMALS = {"ms": 3, "rate": 1, "ratio": 2, "yardstick": 1}

# Figures that must be marked: the number (group n) must be followed at once by a mark.
NUMBER_PATTERNS = (
    re.compile(r"(?<![\w.])(?P<n>\d*\.\d+)\s+of\b"),
    re.compile(r"\bwithin\s+(?P<n>\d+(?:\.\d+)?\s?%)"),
    re.compile(r"(?P<n>\d+(?:\.\d+)?)\s?[×x](?=[\s,]+(?:as fast|faster|slower|quicker|speedup|longer|shorter|"
               r"the speed)\b)"),
    re.compile(r"(?P<n>\d+(?:\.\d+)?)\s?[×x]\s+speedup"),
    re.compile(r"(?P<n>\d+(?:\.\d+)?)\s+times\s+(?:faster|slower|quicker|more|less|longer|shorter|as)\b"),
    re.compile(r"(?i)\bexpect(?:s|ed)?\s+(?:about|around|roughly|near|over|under|at least|at most)?\s*"
               r"(?P<n>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"),
)
# A GPU's name as a text gives it (H100, A100, T4, RTX 4090): right before a gpu mark, and in a record's GPU.
GPU_NAME = r"(?:RTX )?[A-Z]*\d+[A-Za-z]*"
GPU_NAME_BEFORE = re.compile(rf"(?<![\w.-])(?P<n>{GPU_NAME})$")
GPU_IN_RECORD = re.compile(rf"(?<![\w-]){GPU_NAME}(?![\w])")
GPU_MARK = "gpu"
# Where a text says which GPU its figures came from, the GPU's name needs a gpu mark right after it.
GPU_PATTERNS = (re.compile(rf"\blast GPU run, an? (?P<n>{GPU_NAME})"),)
# Claims that need a mark (measured or unmeasured) somewhere in their sentence.
CLAIM_PATTERNS = (
    re.compile(r"\b(?:faster|slower|quicker)\s+than\b", re.IGNORECASE),
    re.compile(r"\b(?:faster|slower)\s+still\b", re.IGNORECASE),
    re.compile(r"\b(?:is|are|was|were|runs?|gets?)\s+(?:far\s+|much\s+|a\s+little\s+|slightly\s+|no\s+)?"
               r"(?:faster|slower)\b", re.IGNORECASE),
    re.compile(r"\btimes\s+(?:faster|slower|quicker|more|less|longer|as fast)\b", re.IGNORECASE),
    re.compile(r"\b(?:beats?|wins?)\b", re.IGNORECASE),
    re.compile(r"\ba (?:tenth|fraction) of\b", re.IGNORECASE),
)
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)[.!?](?=\s|$)")
# A question that asks for a measurement states none.
QUESTION = re.compile(r"\?|\bhow many times\b", re.IGNORECASE)


class FigureError(Exception):
    """A mark cannot be evaluated: an unknown measurement or yardstick, or an expression outside the grammar."""


@dataclass(frozen=True)
class Source:
    """The newest record of one lab: where it is, and its measurements by name."""
    record: str
    date: str
    gpu: str
    measurements: dict[str, dict]
    elsewhere: dict[str, str] = field(default_factory=dict)  # journey steps another record holds: name -> record

    def origin(self, name: str) -> str:
        """The record that holds measurement or journey step `name`."""
        return self.elsewhere.get(name, self.record)

    def measurement(self, name: str) -> dict:
        if name not in self.measurements:
            raise FigureError(f"no measurement '{name}' in {self.record} (it has {', '.join(self.measurements)})")
        return self.measurements[name]


def sources(records: Path = record.RECORDS_DIR, root: Path = REPO_ROOT) -> dict[str, Source]:
    """Each lab's newest record (labs without one have no entry)."""
    def shown(path: Path) -> str:
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

    out = {}
    for lab, (path, data) in record.newest(records).items():
        out[lab] = Source(shown(path), str(data.get("date", "?")), str(data.get("gpu", "?")),
                          {m["name"]: m for m in data["labs"][lab]["measurements"]})
    # A journey's steps (grader/journey.py), by step name, from the newest record that holds the lab's journey:
    # rate("gemm-7-tuned") / rate("gemm-7-tuned", "cuBLAS SGEMM (FP32)").
    for lab, (path, data) in record.newest_journey(records).items():
        steps = {m["name"]: m for m in data["labs"][lab]["journey"]}
        if lab in out:
            added = {name: m for name, m in steps.items() if name not in out[lab].measurements}
            out[lab].measurements.update(added)
            out[lab].elsewhere.update({name: shown(path) for name in added})
        else:
            out[lab] = Source(shown(path), str(data.get("date", "?")), str(data.get("gpu", "?")), steps)
    return out


# --- expressions ---------------------------------------------------------------------------------

_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
            ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise FigureError(f"'{ast.unparse(node)}' is not a measurement's or a yardstick's name")


def _value(node: ast.expr, source: Source) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, source)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _value(node.left, source), _value(node.right, source)
        if isinstance(node.op, ast.Div) and right == 0:
            raise FigureError(f"'{ast.unparse(node)}' divides by zero in {source.record}")
        return _ARITHMETIC[type(node.op)](left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = [_name(arg) for arg in node.args]
        if node.func.id == "time" and len(args) == 1:
            return float(source.measurement(args[0])["median_s"])
        if node.func.id == "rate" and len(args) == 1:
            rate = source.measurement(args[0]).get("rate")
            if rate is None:
                raise FigureError(f"measurement '{args[0]}' has no rate in {source.record}")
            return float(rate)
        if node.func.id == "rate" and len(args) == 2:
            yardsticks = source.measurement(args[0]).get("ceilings") or {}
            if args[1] not in yardsticks:
                raise FigureError(f"measurement '{args[0]}' has no yardstick '{args[1]}' in {source.record} "
                                  f"(it has {', '.join(repr(y) for y in yardsticks) or 'none'})")
            return float(yardsticks[args[1]])
    raise FigureError(f"'{ast.unparse(node)}' is not time(m), rate(m), rate(m, \"yardstick\"), a number or "
                      f"arithmetic on them")


def parse(expression: str) -> ast.expr:
    try:
        return ast.parse(expression.strip(), mode="eval").body
    except SyntaxError as error:
        raise FigureError(f"'{expression.strip()}' is not an expression ({error.msg})") from None


def evaluate(expression: str, source: Source) -> float | bool:
    """A figure's value, or whether a claim holds, in the source's record."""
    node = parse(expression)
    if isinstance(node, ast.Compare):
        if not all(type(op) in _COMPARE for op in node.ops):
            raise FigureError(f"'{expression.strip()}': a claim compares with <, <=, > or >=")
        values = [_value(node.left, source)] + [_value(c, source) for c in node.comparators]
        return all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:]))
    return _value(node, source)


def records_behind(expression: str, source: Source) -> str:
    """The record or records that hold what an expression measures (a journey's steps may come from another)."""
    names = [_name(node.args[0]) for node in ast.walk(parse(expression)) if isinstance(node, ast.Call) and node.args]
    return " and ".join(dict.fromkeys(source.origin(name) for name in names)) or source.record


def operands(expression: str, source: Source) -> str:
    """The values a claim compares, for a message saying why it fails."""
    node = parse(expression)
    parts = [node.left] + list(node.comparators) if isinstance(node, ast.Compare) else [node]
    return ", ".join(f"{ast.unparse(p)} = {_value(p, source):.6g}" for p in parts)


def _split(text: str, sep: str) -> list[str]:
    """text split at sep outside parentheses and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def short_gpu_name(name: str) -> str:
    """The name a text gives the GPU a record names: "NVIDIA H100 80GB HBM3" -> "H100", "Tesla T4" -> "T4",
    "NVIDIA GeForce RTX 4090" -> "RTX 4090"; "" where it names none."""
    for maker in ("NVIDIA ", "GeForce ", "Tesla "):
        name = name.replace(maker, "")
    found = GPU_IN_RECORD.search(name)
    return found.group() if found else ""


def format_like(value: float, written: str) -> str:
    """value with as many decimals as `written` has, and thousands separators if it has them."""
    decimals = len(written.split(".", 1)[1]) if "." in written else 0
    return f"{value:,.{decimals}f}" if "," in written else f"{value:.{decimals}f}"


# --- one document ---------------------------------------------------------------------------------

@dataclass
class Mark:
    """One evaluated mark, for --list."""
    where: str
    text: str


@dataclass
class Outcome:
    text: str
    problems: list[str] = field(default_factory=list)   # anything that makes --check fail
    stale: list[str] = field(default_factory=list)      # figures the record gives otherwise (rewritten by write)
    marks: list[Mark] = field(default_factory=list)


def _put(line: str, start: int, end: int, new: str, keep_width: bool) -> str:
    """line with [start, end) replaced by new; with keep_width, right-aligned in the spaces before it."""
    if keep_width:
        left = start
        while left > 0 and line[left - 1] == " ":
            left -= 1
        if left < start:
            width = end - left
            padded = new.rjust(width) if len(new) < width else " " + new
            return line[:left] + padded + line[end:]
    return line[:start] + new + line[end:]


class _Document:
    def __init__(self, text: str, where: str, lab: str | None, found: dict[str, Source]):
        self.lines = text.split("\n")
        self.where, self.lab, self.found = where, lab, found
        self.out = Outcome(text)

    def problem(self, number: int, text: str) -> None:
        self.out.problems.append(f"{self.where}:{number}: {text}")

    def source(self, lab: str | None) -> Source:
        lab = lab or self.lab
        if lab is None:
            raise FigureError("this file belongs to no lab: name one (<!-- measured 01-vector-add: ... -->)")
        if lab not in self.found:
            raise FigureError(f"no GPU run record in docs/gpu-runs/ has measurements of {lab}")
        return self.found[lab]

    def update(self, index: int, start: int, end: int, value: float, decimals_of: str, what: str,
               keep_width: bool = False) -> None:
        """Put value where [start, end) of line index stands, noting a stale figure."""
        line = self.lines[index]
        written = line[start:end]
        new = format_like(value, decimals_of)
        if new != written:
            self.out.stale.append(f"{self.where}:{index + 1}: {written} should be {new} ({what})")
            self.lines[index] = _put(line, start, end, new, keep_width)

    # -- regions

    def regions(self) -> tuple[set[int], list[tuple[int, int]]]:
        """Indices of lines that are not prose (front matter, the grading section), and the fenced blocks as
        (opening, closing) line indices."""
        skip: set[int] = set()
        if self.lines and self.lines[0].strip() == "---":
            for i in range(1, len(self.lines)):
                if self.lines[i].strip() == "---":
                    skip.update(range(0, i + 1))
                    break
        begin = [i for i, line in enumerate(self.lines) if line.strip() == handouts.BEGIN]
        end = [i for i, line in enumerate(self.lines) if line.strip() == handouts.END]
        if len(begin) == 1 and len(end) == 1 and begin[0] < end[0]:
            skip.update(range(begin[0], end[0] + 1))
        blocks, opened = [], None
        for i, line in enumerate(self.lines):
            if i in skip:
                continue
            fence = FENCE.match(line)
            if fence and opened is None:
                opened = (i, fence.group(1)[0], len(fence.group(1)))
            elif fence and fence.group(1)[0] == opened[1] and len(fence.group(1)) >= opened[2] \
                    and not line.strip()[len(fence.group(1)):].strip():
                blocks.append((opened[0], i))
                opened = None
        if opened is not None:
            blocks.append((opened[0], len(self.lines)))
        return skip, blocks

    # -- program output

    def block(self, mark: re.Match, opening: int, closing: int) -> None:
        items: dict[str, list[str]] = {}
        try:
            source = self.source(mark["lab"])
            for item in _split(mark["body"] or "", ";"):
                tag = re.match(r"\[(?P<tag>[\w-]+)\]\s*(?P<rest>.*)$", item, re.DOTALL)
                if not tag or not tag["rest"].strip():
                    raise FigureError(f"'{item}' is not '[tag] EXPRESSION, ...'")
                items[tag["tag"]] = _split(tag["rest"], ",")
        except FigureError as error:
            self.problem(opening, str(error))
            return
        used = set()
        current: dict | None = None
        for index in range(opening + 1, closing):
            line = self.lines[index]
            tag = TAG_LINE.match(line)
            try:
                if tag and tag["tag"] == "timing" and TIMING_LINE.match(line):
                    current = self.timing_line(index, source)
                elif tag and tag["tag"] in items:
                    current = None
                    used.add(tag["tag"])
                    self.tagged_line(index, items[tag["tag"]], source)
                elif tag:
                    current = None
                    if tag["tag"] == "timing" and DECIMAL.search(line):
                        raise FigureError("a [timing] line with figures, but not as the harness prints one "
                                          "('[timing] NAME  T ms  R UNIT  (X of YARDSTICK at R)')")
                    if DECIMAL.search(line):
                        raise FigureError(f"the [{tag['tag']}] line has figures, but the mark above the block gives "
                                          f"no expressions for [{tag['tag']}]")
                elif current is not None and line[:1].isspace() and YARDSTICK.search(line):
                    self.yardsticks(index, current, source)
                else:
                    current = None
            except FigureError as error:
                self.problem(index + 1, str(error))
        for tag in sorted(set(items) - used):
            self.problem(opening, f"the mark gives expressions for [{tag}], but the block has no [{tag}] line")
        self.out.marks.append(Mark(f"{self.where}:{opening}", f"program output from {source.record}"))

    def timing_line(self, index: int, source: Source) -> dict:
        match = TIMING_LINE.match(self.lines[index])
        m = source.measurement(match["name"])
        if match["unit"] != m.get("unit"):
            raise FigureError(f"{match['name']} is in {m.get('unit')!r} in {source.record}, not {match['unit']!r}")
        what = f"{match['name']} in {source.record}"
        ms, rate = "0." + "0" * TIMING_DECIMALS["ms"], "0." + "0" * TIMING_DECIMALS["rate"]
        # Right to left, so that the earlier offsets still hold.
        self.yardsticks(index, m, source)
        self.update(index, match.start("rate"), match.end("rate"), m["rate"], rate, what, keep_width=True)
        self.update(index, match.start("ms"), match.end("ms"), m["median_s"] * 1e3, ms, what, keep_width=True)
        return m

    def yardsticks(self, index: int, m: dict, source: Source) -> None:
        ceilings = m.get("ceilings") or {}
        for match in reversed(list(YARDSTICK.finditer(self.lines[index]))):
            if match["name"] not in ceilings:
                raise FigureError(f"{m['name']} has no yardstick {match['name']!r} in {source.record} (it has "
                                  f"{', '.join(repr(y) for y in ceilings) or 'none'}); write its whole name")
            what = f"{m['name']} against {match['name']} in {source.record}"
            rate = ceilings[match["name"]]
            self.update(index, match.start("rate"), match.end("rate"), rate, "0." + "0" * TIMING_DECIMALS["yardstick"],
                        what)
            self.update(index, match.start("ratio"), match.end("ratio"), m["rate"] / rate,
                        "0." + "0" * TIMING_DECIMALS["ratio"], what)

    def tagged_line(self, index: int, expressions: list[str], source: Source) -> None:
        numbers = list(NUMBER.finditer(self.lines[index]))
        if len(numbers) < len(expressions):
            raise FigureError(f"the mark gives {len(expressions)} expressions for a line with {len(numbers)} numbers")
        for match, expression in reversed(list(zip(numbers, expressions))):
            value = evaluate(expression, source)
            if isinstance(value, bool):
                raise FigureError(f"'{expression}' is a claim; a line of output takes figures")
            self.update(index, match.start(), match.end(), value, match.group(), f"{expression} in {source.record}")

    # -- prose

    def inline(self, index: int) -> None:
        line = self.lines[index]
        for mark in reversed(list(MARK.finditer(line))):
            if mark["kind"] == "unmeasured":
                if not (mark["body"] or "").strip():
                    self.problem(index + 1, "<!-- unmeasured: ... --> says why no record holds the figure")
                else:
                    self.out.marks.append(Mark(f"{self.where}:{index + 1}", f"unmeasured: {mark['body'].strip()}"))
                continue
            body = (mark["body"] or "").strip()
            try:
                if not body:
                    raise FigureError("a mark in the text says what it measures: <!-- measured: EXPRESSION -->")
                source = self.source(mark["lab"])
                if body == GPU_MARK:
                    self.gpu_name(index, mark.start(), source)
                    line = self.lines[index]
                    continue
                value = evaluate(body, source)
                if isinstance(value, bool):
                    if not value:
                        raise FigureError(f"the claim {body} is false in {records_behind(body, source)} "
                                          f"({operands(body, source)}): rewrite it to say what was measured")
                    self.out.marks.append(Mark(f"{self.where}:{index + 1}",
                                               f"holds in {records_behind(body, source)}: {body}"))
                    continue
                number = NUMBER_BEFORE.search(line[:mark.start()])
                if not number:
                    raise FigureError(f"the figure of <!-- measured: {body} --> must stand right before it, "
                                      f"with no space")
                origin = records_behind(body, source)
                self.update(index, number.start("n"), number.end("n"), value, number["n"], f"{body} in {origin}")
                self.out.marks.append(Mark(f"{self.where}:{index + 1}",
                                           f"{format_like(value, number['n'])} = {body} in {origin}"))
                line = self.lines[index]
            except FigureError as error:
                self.problem(index + 1, str(error))

    def gpu_name(self, index: int, mark_at: int, source: Source) -> None:
        """The GPU's name right before a gpu mark at `mark_at` of line index: the GPU of the lab's newest record."""
        name = short_gpu_name(source.gpu)
        if not name:
            raise FigureError(f"{source.record} names no GPU that a text could ({source.gpu!r})")
        written = GPU_NAME_BEFORE.search(self.lines[index][:mark_at])
        if not written:
            raise FigureError(f"the GPU's name ({name}) must stand right before <!-- measured: {GPU_MARK} -->, "
                              f"with no space")
        if written["n"] != name:
            self.out.stale.append(f"{self.where}:{index + 1}: {written['n']} should be {name} (the GPU of "
                                  f"{source.record}, {source.gpu})")
            self.lines[index] = _put(self.lines[index], written.start("n"), written.end("n"), name, False)
        self.out.marks.append(Mark(f"{self.where}:{index + 1}", f"{name} = the GPU of {source.record}"))

    def unmarked(self, block: list[int]) -> None:
        """Figures and claims of one paragraph, list item or table row that carry no mark."""
        # The text without comments and with code blanked out, the same text with its code (for messages), each
        # character's line, and the marks by position.
        plain, shown, origin, marks = [], [], [], {}
        for index in block:
            line = self.lines[index]
            position = 0
            for piece in re.finditer(r"<!--.*?-->|`[^`]*`", line):
                plain.extend(line[position:piece.start()])
                shown.extend(line[position:piece.start()])
                origin.extend([index] * (piece.start() - position))
                if piece.group().startswith("<!--"):
                    mark = MARK.fullmatch(piece.group())
                    if mark:
                        marks.setdefault(len(plain), []).append(mark["kind"])
                else:
                    plain.extend("_" * len(piece.group()))
                    shown.extend(piece.group())
                    origin.extend([index] * len(piece.group()))
                position = piece.end()
            plain.extend(line[position:] + " ")
            shown.extend(line[position:] + " ")
            origin.extend([index] * (len(line) - position + 1))
        text, display = "".join(plain), "".join(shown)
        ends = [m.end() for m in SENTENCE_END.finditer(text)]

        def sentence(at: int) -> tuple[int, int]:
            start = max([e for e in ends if e <= at], default=0)
            end = min([e for e in ends if e > at], default=len(text))
            return start, end

        def snippet(match: re.Match) -> str:
            return " ".join(display[max(0, match.start() - 30):match.end() + 20].split())

        flagged: set[tuple[int, int]] = set()   # one problem per sentence
        for pattern in NUMBER_PATTERNS:
            for match in pattern.finditer(text):
                end = match.end("n")
                if end in marks or (text[end:end + 1] in ("×", "x", "%") and end + 1 in marks):
                    continue
                before = text[:match.start("n")].rstrip()
                if before.endswith(("≈", "=")) or sentence(match.start("n")) in flagged:
                    continue   # arithmetic shown on the page, or a sentence already named
                flagged.add(sentence(match.start("n")))
                self.problem(origin[match.start("n")] + 1, f"'…{snippet(match)}…': a measured figure with no mark "
                                                           f"right after its number")
        for pattern in GPU_PATTERNS:
            for match in pattern.finditer(text):
                if match.end("n") not in marks:
                    self.problem(origin[match.start("n")] + 1, f"'…{snippet(match)}…': the GPU the figures came "
                                                               f"from, with no <!-- measured: {GPU_MARK} --> right "
                                                               f"after its name")
        for pattern in CLAIM_PATTERNS:
            for match in pattern.finditer(text):
                start, end = sentence(match.start())
                if any(start <= at <= end for at in marks) or QUESTION.search(text[start:end + 1]) \
                        or (start, end) in flagged:
                    continue
                flagged.add((start, end))
                self.problem(origin[match.start()] + 1, f"'…{snippet(match)}…': a comparison with no mark in its "
                                                        f"sentence")

    def run(self) -> Outcome:
        skip, blocks = self.regions()
        in_code = {i for opening, closing in blocks for i in range(opening, closing + 1)}
        block_marks = {}
        for opening, closing in blocks:
            above = opening - 1
            mark = MARK.fullmatch(self.lines[above].strip()) if above >= 0 else None
            if mark and mark["kind"] == "measured" and above not in skip:
                block_marks[above] = mark
                self.block(mark, opening, closing)
            else:
                for index in range(opening + 1, closing):
                    tag = TAG_LINE.match(self.lines[index])
                    if tag and DECIMAL.search(self.lines[index]):
                        self.problem(index + 1, f"a [{tag['tag']}] line of program output with figures, and no "
                                                f"<!-- measured --> on the line before its block")
                        break
        paragraph: list[int] = []
        paragraphs: list[list[int]] = []
        for index, line in enumerate(self.lines):
            prose = index not in skip and index not in in_code and index not in block_marks
            if not prose or not line.strip() or line.lstrip().startswith("#") or line.strip() == "---":
                if paragraph:
                    paragraphs.append(paragraph)
                paragraph = []
                continue
            mark = MARK.fullmatch(line.strip())
            if mark and mark["kind"] == "measured" and (not mark["body"] or mark["body"].strip().startswith("[")):
                self.problem(index + 1, "a mark for program output stands on the line right before its fenced block")
            else:
                self.inline(index)
            if LIST_ITEM.match(line) or line.lstrip().startswith("|"):
                if paragraph:
                    paragraphs.append(paragraph)
                paragraph = []
            paragraph.append(index)
        if paragraph:
            paragraphs.append(paragraph)
        for paragraph in paragraphs:
            self.unmarked(paragraph)
        self.out.text = "\n".join(self.lines)
        return self.out


def process(text: str, where: str, lab: str | None, found: dict[str, Source]) -> Outcome:
    """A handout's or deck's text with its marked figures written from the records, and its problems."""
    return _Document(text, where, lab, found).run()


# --- the repository -------------------------------------------------------------------------------

def documents(root: Path = REPO_ROOT) -> list[tuple[Path, str | None]]:
    """Every handout, question sheet and deck, with the lab it belongs to (None: the course deck)."""
    labs = list_labs(root)
    found = [(root / "labs" / lab / name, lab) for lab in labs for name in ("README.md", "QUESTIONS.md")
             if (root / "labs" / lab / name).is_file()]
    found += [(deck, deck.stem if deck.stem in labs else None)
              for deck in sorted((root / "slides").glob("[0-9][0-9]-*.md"))]
    return found


@dataclass
class Result:
    problems: list[str]
    stale: list[str]
    changed: list[str]
    marks: list[Mark]


def run(root: Path = REPO_ROOT, records: Path | None = None, write: bool = False) -> Result:
    """Every document's figures against the newest records; with write, stale figures are rewritten."""
    found = sources(records or root / "docs" / "gpu-runs", root)
    result = Result([], [], [], [])
    for path, lab in documents(root):
        shown = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        outcome = process(text, shown, lab, found)
        result.problems += outcome.problems
        result.stale += outcome.stale
        result.marks += outcome.marks
        if write and outcome.text != text:
            path.write_text(outcome.text, encoding="utf-8")
            result.changed.append(shown)
    return result
