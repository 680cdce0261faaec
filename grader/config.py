"""Lab configuration: labs/<lab>/lab.toml, plus solutions/<lab>/hidden.toml where present.

Everything that changes from term to term lives in these two files: points,
sizes, tolerances, timeouts and performance thresholds. This module reads and
validates them into plain data; nothing else parses TOML.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox import Limits

REPO_ROOT = Path(__file__).resolve().parent.parent
LAB_NAME = re.compile(r"^\d\d-[a-z0-9-]+$")
# doctest's --test-case filter splits on commas and treats * ? [ ] as wildcards.
UNSAFE_IN_CASE_NAMES = re.compile(r"[,*?\[\]\\;\"]")
KNOWN_LIBRARIES = {"cublas": "CUDA::cublas", "cufft": "CUDA::cufft"}
VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}
GIB, MIB = 1 << 30, 1 << 20
# What one test program may take in the sandbox, unless [grading] says otherwise: the labs' largest
# tests hold a few GiB of host memory (2^28-element inputs and their CPU references). The process
# cap counts threads too, and every sandboxed program of a class run as the same user: the harness
# makes inputs on every core and CUDA adds its own threads, so it is set well above one program's
# need, and still far below what a fork bomb would reach.
DEFAULT_RUN_LIMITS = Limits(memory_bytes=24 * GIB, processes=4096, file_bytes=256 * MIB)
# compute-sanitizer's tools a test case may run under (a [[tests]] entry's `sanitizer`).
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


class ConfigError(Exception):
    """A lab's config is wrong; the message names the file and the problem."""


@dataclass(frozen=True)
class TestSpec:
    name: str
    points: float
    hidden: bool
    gpu: bool
    timeout_s: float
    serial: bool = False  # needs the GPU to itself (measures free memory or time, or takes much of its memory)
    # A serial test that reads nothing of the device an earlier case could leave behind (it only takes much memory):
    # it may run in one program with the submission's other such cases, alone on the GPU, instead of one of its own.
    share_program: bool = False
    extra_credit: bool = False  # counted in the score, not in the maximum
    sanitizer: str | None = None  # run under `compute-sanitizer --tool <this>`; a finding fails the test


# The metrics a profile shows (grader/profile.py's METRICS, in the same order), which [[profile_hints]] may name.
PROFILE_METRICS = ("duration_ms", "dram_pct", "occupancy_pct", "registers", "shared_bytes", "load_sectors",
                   "store_sectors", "bank_conflicts", "l2_hit_pct", "active_threads", "warp_instructions",
                   "fp32_pct")


@dataclass(frozen=True)
class ProfileEntry:
    """[[profile]] in lab.toml: a kernel `make profile` measures, and the timing case that runs it."""

    kernel: str  # its function's name, without template arguments or parameters
    case: str


@dataclass(frozen=True)
class ProfileHint:
    """[[profile_hints]] in lab.toml: what to tell a student whose kernel has `metric` above or below a
    threshold; `kernels` (regular expressions over kernel names) limits it to some kernels."""

    metric: str
    text: str
    above: float | None = None
    below: float | None = None
    kernels: tuple[str, ...] = ()


# How a performance item's share of points falls between full_at and zero_at ([[perf]]'s `falloff`):
# "inverse", points x full_at / ratio, none past zero_at; "linear", a straight line from all at full_at to none at
# zero_at.
FALLOFFS = ("inverse", "linear")


@dataclass(frozen=True)
class PerfSpec:
    """[[perf]] in lab.toml: the points of one measurement of a timing case, against the reference's same one.

    The number compared is the measurement's median time, or with `over_slowest_of` that time over the slowest
    (longest median) of the named measurements of the same case, which the same run measured: a pipeline's time
    over its slowest stage alone, its overlap. Either way the student's number is divided by the reference's
    from the same grading, and that ratio is scored against full_at and zero_at ([grading]'s unless the entry
    gives its own) with the entry's falloff."""

    case: str
    measurement: str
    points: float
    requires: tuple[str, ...]  # fnmatch patterns over test names that must all pass
    extra_credit: bool = False
    full_at: float = 1.2
    zero_at: float = 10.0
    falloff: str = "inverse"
    over_slowest_of: tuple[str, ...] = ()

    @property
    def records(self) -> tuple[str, ...]:
        """The measurements of the case the item is scored from: its own, then those it is divided by."""
        return (self.measurement,) + self.over_slowest_of


@dataclass(frozen=True)
class QuestionSpec:
    """[[questions]] in lab.toml: one question of the lab's written analysis (labs/<lab>/QUESTIONS.md), which a
    TA grades by hand from solutions/<lab>/RUBRIC.md. Its points count in the lab's total, never in the
    autograder's score."""

    name: str
    points: float


@dataclass(frozen=True)
class VariantSpec:
    """A submission made from the reference by one text replacement: [[right]] in hidden.toml, a correct
    alternative (another block or tile size) that must pass every test case that is not timed; with `timed`, it
    is timed too and must earn every point the autograder gives, performance included."""

    name: str
    why: str
    file: str
    replace: str
    by: str
    timed: bool = False
    # A variant that is a whole other kernel rather than an edit: `source` is a file of solutions/<lab>/ (e.g.
    # "journey/03-next-step.cu") that takes the place of the reference from the line holding `source_from`
    # (hidden.toml's `from`) to its end, or of the whole file where `from` is not given. `replace`/`by`, where
    # given too, then edit the result.
    source: str = ""
    source_from: str = ""
    # [[right]] `kernels`: the variant's own kernel in place of a [[profile]] kernel of the reference, as
    # (reference's kernel, variant's kernel) pairs, e.g. kernels = { register_tile_scan_kernel =
    # "single_pass_scan_kernel" }: `grader profile --variant` measures the variant's, beside the one it replaces.
    kernels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class WrongSpec(VariantSpec):
    """[[wrong]] in hidden.toml: a deliberately wrong variant, which must fail the tests it names, and keep at most
    the given share of each performance measurement it names in `keeps_at_most` (a correct submission that misses
    what the measurement is about: a pipeline that overlaps nothing). Its timing case must pass for that: the
    points must be lost on the time itself."""

    must_fail: tuple[str, ...] = ()
    keeps_at_most: dict[str, float] = field(default_factory=dict)  # measurement -> the share of its points kept


@dataclass(frozen=True)
class Shows:
    """One thing a slow variant's profile must show against the reference's (`shows` of [[slow]]): `metric` of
    `kernel` beyond the reference's same value by a factor (more_than_reference, less_than_reference), and/or
    beyond a fixed bound (above, below, as [[profile_hints]] give them). Every bound given must hold."""

    kernel: str
    metric: str
    more_than_reference: float | None = None  # the variant's value > this x the reference's
    less_than_reference: float | None = None  # the variant's value < this x the reference's
    above: float | None = None  # the variant's value > this
    below: float | None = None  # the variant's value < this

    @property
    def wants_more(self) -> bool:
        return self.more_than_reference is not None or self.above is not None


@dataclass(frozen=True)
class SlowSpec(VariantSpec):
    """[[slow]] in hidden.toml: a correct variant that is slow in the way its lab teaches (no padding, divergent
    threads, scattered loads), and what `grader profile --check` must see in its profile beside the reference's.
    It proves that the profile, and the hints the lab gives from it, show a student what the lab is about."""

    shows: tuple[Shows, ...] = ()


@dataclass(frozen=True)
class JourneyStep:
    """One step of an optimization journey (hidden.toml [journey]): a build (the reference, or a [[right]] variant)
    and the timing case that times it beside the journey's peer. `python3 -m grader journey` times every step in one
    run, and the lab's deck charts them from the GPU run record."""

    name: str  # the step's name in the record and in figures' expressions, e.g. "gemm-7-tuned"
    title: str  # what the step adds, as the chart labels it
    case: str  # a timing case of the lab
    measurement: str  # that case's measurement ([[perf]])
    variant: str = ""  # a [[right]] variant's name; empty: the reference


@dataclass(frozen=True)
class Journey:
    title: str  # what the journey is, as its chart's heading names it (e.g. "the GEMM journey")
    peer: str  # the yardstick every step's timing case measures beside it (e.g. "cuBLAS SGEMM (FP32)")
    steps: tuple[JourneyStep, ...]


# The lab.toml tables that say how the lab's header crosses between judge and runner (grader/calls.py).
CALL_TABLES = ("host_buffers", "shared_host_buffers", "host_allocators", "objects")


@dataclass(frozen=True)
class CallTables:
    # function -> {host-memory parameter (or struct member, "setup.weights") -> its element count, a C++ expression}
    host_buffers: dict[str, dict[str, str]] = field(default_factory=dict)
    # function -> host-memory parameters that point into memory both processes map (no count, no copy)
    shared_host_buffers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # allocator -> {count: element count in its parameters, free: the function that frees what it returns}
    host_allocators: dict[str, dict[str, str]] = field(default_factory=dict)
    # function that returns an object the student's code makes -> {destroy: the function that ends it}
    objects: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class LabConfig:
    name: str
    title: str
    lab_dir: Path
    solution_dir: Path | None
    student_files: tuple[str, ...]
    libraries: tuple[str, ...]
    forbidden: tuple[str, ...]
    allowed_calls: tuple[str, ...]  # functions student code may call beyond grader/linkcheck.py's set
    timeout_s: float
    build_timeout_s: float
    full_at: float
    zero_at: float
    hidden_visibility: str
    grading_seed: int | None
    params: dict[str, object]
    tests: tuple[TestSpec, ...]
    perf: tuple[PerfSpec, ...]
    wrong: tuple[WrongSpec, ...] = field(default=())
    right: tuple[VariantSpec, ...] = field(default=())
    slow: tuple[SlowSpec, ...] = field(default=())  # slow on purpose: what `grader profile --check` must show
    questions: tuple[QuestionSpec, ...] = field(default=())
    journey: Journey | None = None  # hidden.toml [journey]: steps timed side by side (`grader journey`)
    hours: float | None = None  # the handout's estimate of a student's time on the lab, questions included
    run_limits: Limits = field(default_factory=lambda: DEFAULT_RUN_LIMITS)
    # [grading] concurrent_streams: the lab's tests rely on CUDA streams running at once (overlap timed, races
    # between streams caught), so its programs keep every hardware work queue (grader/run/judge.py, _env).
    concurrent_streams: bool = False
    profile: tuple[ProfileEntry, ...] = field(default=())  # the kernels `make profile` measures
    profile_hints: tuple[ProfileHint, ...] = field(default=())
    # How the lab's header crosses between judge and runner (grader/calls.py): [host_buffers],
    # [shared_host_buffers], [host_allocators] and [objects].
    call_tables: CallTables = field(default_factory=lambda: CallTables())

    @property
    def host_buffers(self) -> dict[str, dict[str, str]]:
        return self.call_tables.host_buffers

    @property
    def timing_cases(self) -> tuple[str, ...]:
        """The timing test cases, each once, in config order."""
        return tuple(dict.fromkeys(p.case for p in self.perf))

    @property
    def student_libraries(self) -> tuple[str, ...]:
        """The CUDA libraries student code may use: those the tests link, less those it is forbidden. A sandbox
        around student code alone shows it no other (sandbox.library_files_to_hide)."""
        return tuple(name for name in self.libraries if name not in self.forbidden)

    @property
    def all_case_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tests) + self.timing_cases

    @property
    def max_points(self) -> float:
        """The lab's total, without extra credit: the autograder's points and the questions' graded by hand."""
        return self.autograded_points + self.question_points

    @property
    def autograded_points(self) -> float:
        """What the autograder's score is out of: tests and performance, without extra credit."""
        return (sum(t.points for t in self.tests if not t.extra_credit)
                + sum(p.points for p in self.perf if not p.extra_credit))

    @property
    def question_points(self) -> float:
        """The written analysis's points, which a TA grades by hand."""
        return sum(q.points for q in self.questions)

    @property
    def extra_credit_points(self) -> float:
        return (sum(t.points for t in self.tests if t.extra_credit)
                + sum(p.points for p in self.perf if p.extra_credit))

    def test(self, name: str) -> TestSpec:
        return next(t for t in self.tests if t.name == name)

    @property
    def sanitizer_tools(self) -> tuple[str, ...]:
        """The compute-sanitizer tools the lab's tests run under, each once, in config order."""
        return tuple(dict.fromkeys(t.sanitizer for t in self.tests if t.sanitizer))


# A kernel as [[profile]] and [[right]] `kernels` name it: its function's plain name, no template arguments.
KERNEL_NAME = re.compile(r"[A-Za-z_]\w*")


def list_labs(root: Path = REPO_ROOT) -> list[str]:
    return sorted(p.parent.name for p in (root / "labs").glob("*/lab.toml"))


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def _number(table: dict, key: str, where: str, default: float | None = None, minimum: float = 0.0) -> float:
    value = table.get(key, default)
    if value is None:
        raise ConfigError(f"{where}: '{key}' is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise ConfigError(f"{where}: '{key}' must be a number >= {minimum}, not {value!r}")
    return float(value)


def _flag(table: dict, key: str, where: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: '{key}' must be true or false, not {value!r}")
    return value


def _strings(table: dict, key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings")
    return tuple(value)


def _params(table: dict, where: str) -> dict[str, object]:
    for key, value in table.items():
        scalar = isinstance(value, (int, float, str)) and not isinstance(value, bool)
        int_list = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        if not (scalar or int_list) or not re.fullmatch(r"[a-z0-9_]+", key):
            raise ConfigError(f"{where} [params]: '{key}' must be a lower_case name holding a number, "
                              f"a string or a list of integers")
    return dict(table)


def _name(entry: dict, here: str, meaning: str) -> str:
    """An entry's non-empty 'name'; ConfigError saying what it must be otherwise."""
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{here}: 'name' must be {meaning}")
    return name


TEST_KEYS = ("name", "points", "gpu", "timeout_s", "serial", "share_program", "extra_credit", "sanitizer")


def _tests(entries: list, hidden: bool, default_timeout: float, where: str) -> list[TestSpec]:
    tests = []
    for i, entry in enumerate(entries):
        here = f"{where} [[tests]] #{i + 1}"
        if unknown := set(entry) - set(TEST_KEYS):  # a misspelt key would otherwise be ignored without a word
            raise ConfigError(f"{here}: unknown key(s) {sorted(unknown)} (known: {', '.join(TEST_KEYS)})")
        name = _name(entry, here, "the test case's name as written in TEST_CASE(...)")
        if UNSAFE_IN_CASE_NAMES.search(name):
            raise ConfigError(f"{here}: test case name {name!r} may not contain any of , * ? [ ] \\ ; \"")
        gpu = bool(entry.get("gpu", True))
        sanitizer = entry.get("sanitizer")
        if sanitizer is not None and sanitizer not in SANITIZER_TOOLS:
            raise ConfigError(f"{here}: 'sanitizer' must be one of the compute-sanitizer tools "
                              f"{list(SANITIZER_TOOLS)}, not {sanitizer!r}")
        if sanitizer is not None and not gpu:
            raise ConfigError(f"{here}: a test run under compute-sanitizer runs kernels, so it cannot say gpu = false")
        serial, share_program = bool(entry.get("serial", False)), bool(entry.get("share_program", False))
        if share_program and not serial:
            raise ConfigError(f"{here}: 'share_program' is for a test that says serial = true (the others share a "
                              f"program already)")
        tests.append(TestSpec(name=name, points=_number(entry, "points", here), hidden=hidden, gpu=gpu,
                              timeout_s=_number(entry, "timeout_s", here, default_timeout, minimum=1),
                              serial=serial, share_program=share_program,
                              extra_credit=bool(entry.get("extra_credit", False)), sanitizer=sanitizer))
    return tests


def _perf(entries: list, where: str, full_at: float, zero_at: float) -> list[PerfSpec]:
    """[[perf]] entries; `full_at` and `zero_at` are [grading]'s, which an entry may override."""
    perf = []
    for i, entry in enumerate(entries):
        here = f"{where} [[perf]] #{i + 1}"
        for key in ("case", "measurement"):
            if not isinstance(entry.get(key), str):
                raise ConfigError(f"{here}: '{key}' is required")
        if UNSAFE_IN_CASE_NAMES.search(entry["case"]):
            raise ConfigError(f"{here}: case name {entry['case']!r} may not contain any of , * ? [ ] \\ ; \"")
        own_full = _number(entry, "full_at", here, full_at, minimum=1)
        own_zero = _number(entry, "zero_at", here, zero_at, minimum=1)
        if own_zero <= own_full:
            raise ConfigError(f"{here}: zero_at ({own_zero:g}) must be larger than full_at ({own_full:g})")
        falloff = entry.get("falloff", "inverse")
        if falloff not in FALLOFFS:
            raise ConfigError(f"{here}: 'falloff' must be one of {list(FALLOFFS)}, not {falloff!r}")
        over = _strings(entry, "over_slowest_of", here)
        if "over_slowest_of" in entry and not over:
            raise ConfigError(f"{here}: 'over_slowest_of' must name the measurements of the case to divide by")
        if entry["measurement"] in over:
            raise ConfigError(f"{here}: 'over_slowest_of' names the measurement itself ({entry['measurement']!r}): "
                              f"its ratio to itself is always 1")
        perf.append(PerfSpec(case=entry["case"], measurement=entry["measurement"],
                             points=_number(entry, "points", here),
                             requires=_strings(entry, "requires", here) or ("*",),
                             extra_credit=bool(entry.get("extra_credit", False)),
                             full_at=own_full, zero_at=own_zero, falloff=falloff, over_slowest_of=over))
    return perf


def _variants(entries: list, table: str, student_files: tuple[str, ...], where: str) -> list[VariantSpec]:
    """[[wrong]], [[right]] or [[slow]] entries: each one replacement of text in a reference file."""
    variants = []
    for i, entry in enumerate(entries):
        here = f"{where} [[{table}]] #{i + 1}"
        name = entry.get("name", "")
        if not re.fullmatch(r"[a-z0-9-]+", name):
            raise ConfigError(f"{here}: 'name' must be lower-case words joined by '-'")
        if entry.get("file") not in student_files:
            raise ConfigError(f"{here}: 'file' must be one of the student files {list(student_files)}")
        if not isinstance(entry.get("why"), str):
            raise ConfigError(f"{here}: 'why' is required")
        fields = dict(name=name, why=entry["why"], file=entry["file"], **_variant_text(entry, here))
        if "kernels" in entry and table != "right":
            raise ConfigError(f"{here}: 'kernels' is for a correct alternative ([[right]]) whose kernel has another "
                              f"name than the reference's")
        if table == "slow":
            for key in ("must_fail", "keeps_at_most", "timed"):
                if key in entry:
                    raise ConfigError(f"{here}: a slow variant has no '{key}': it is correct, and `grader profile "
                                      f"--check` judges it by its profile ('shows')")
            variants.append(VariantSpec(**fields))  # its `shows` are read once the lab's [[profile]] is known
            continue
        if table == "right":
            for key in ("must_fail", "keeps_at_most"):
                if key in entry:
                    raise ConfigError(f"{here}: a correct alternative has no '{key}' (it must pass every test)")
            timed = entry.get("timed", False)
            if not isinstance(timed, bool):
                raise ConfigError(f"{here}: 'timed' must be true or false")
            variants.append(VariantSpec(**fields, timed=timed, kernels=_kernel_pairs(entry.get("kernels", {}), here)))
            continue
        if "timed" in entry:
            raise ConfigError(f"{here}: 'timed' is for a correct alternative ([[right]]); a wrong variant's timing "
                              f"cases run where 'keeps_at_most' names their measurements")
        must_fail = _strings(entry, "must_fail", here)
        keeps = _shares(entry.get("keeps_at_most", {}), here)
        if not must_fail and not keeps:
            raise ConfigError(f"{here}: 'must_fail' must name the tests this mistake has to fail, or 'keeps_at_most' "
                              f"the performance measurements it must lose (e.g. keeps_at_most = {{ pipelined = 0.25 }})")
        variants.append(WrongSpec(**fields, must_fail=must_fail, keeps_at_most=keeps))
    names = [v.name for v in variants]
    if duplicates := {n for n in names if names.count(n) > 1}:
        raise ConfigError(f"{where} [[{table}]]: names appear twice: {sorted(duplicates)}")
    return variants


def _kernel_pairs(table: object, here: str) -> tuple[tuple[str, str], ...]:
    """[[right]] `kernels`: { reference's kernel = "variant's kernel", ... }, each a function's plain name."""
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise ConfigError(f"{here}: 'kernels' must map the reference's kernel to the variant's, e.g. kernels = "
                          f"{{ scan_kernel = \"single_pass_scan_kernel\" }}")
    for name in (*table, *table.values()):
        if not KERNEL_NAME.fullmatch(name):
            raise ConfigError(f"{here}: 'kernels': {name!r} must be a function's plain name")
    return tuple(table.items())


def _variant_text(entry: dict, here: str) -> dict[str, str]:
    """How a variant's text is made: `replace` -> `by` in the reference, or a whole file of solutions/<lab>/
    (`source`) in place of the reference's end (from the line holding `from`) or of all of it, optionally edited
    by `replace` -> `by` after."""
    source, start = entry.get("source"), entry.get("from")
    if source is None:
        if start is not None:
            raise ConfigError(f"{here}: 'from' says where a 'source' file starts to replace the reference; there "
                              f"is no 'source'")
        for key in ("replace", "by"):
            if not isinstance(entry.get(key), str):
                raise ConfigError(f"{here}: '{key}' is required (or 'source', a file of solutions/<lab>/ that "
                                  f"replaces the reference)")
        return dict(replace=entry["replace"], by=entry["by"])
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(f"{here}: 'source' must be a file name in solutions/<lab>/, e.g. "
                          f"\"journey/03-next-step.cu\"")
    parts = Path(source).parts
    if Path(source).is_absolute() or ".." in parts or not parts:
        raise ConfigError(f"{here}: 'source' must be a path inside solutions/<lab>/ (no '..', not absolute): "
                          f"{source!r}")
    if start is not None and (not isinstance(start, str) or not start.strip()):
        raise ConfigError(f"{here}: 'from' must be a text of the reference, found once (e.g. a heading comment)")
    if ("replace" in entry) != ("by" in entry):
        raise ConfigError(f"{here}: 'replace' and 'by' go together: with 'source', both or neither")
    for key in ("replace", "by"):
        if key in entry and not isinstance(entry[key], str):
            raise ConfigError(f"{here}: '{key}' must be a string")
    return dict(replace=entry.get("replace", ""), by=entry.get("by", ""), source=source, source_from=start or "")


SHOWS_BOUNDS = ("more_than_reference", "less_than_reference", "above", "below")


def _slow(variant: VariantSpec, entry: dict, profile: list[ProfileEntry], where: str) -> SlowSpec:
    """A [[slow]] entry with its `shows`, each checked against the lab's [[profile]] kernels and the pinned
    metrics."""
    here = f"{where} [[slow]] '{variant.name}'"
    if not profile:
        raise ConfigError(f"{here}: the lab's lab.toml names no kernel to profile ([[profile]]), so a slow variant "
                          f"has nothing to show")
    entries = entry.get("shows")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"{here}: 'shows' must list what its profile shows against the reference's, e.g. "
                          f"shows = [{{ kernel = \"{profile[0].kernel}\", metric = \"bank_conflicts\", "
                          f"more_than_reference = 4.0 }}]")
    kernels = list(dict.fromkeys(p.kernel for p in profile))
    return SlowSpec(name=variant.name, why=variant.why, file=variant.file, replace=variant.replace, by=variant.by,
                    source=variant.source, source_from=variant.source_from,
                    shows=tuple(_shows(e, kernels, f"{here} shows #{i + 1}") for i, e in enumerate(entries)))


def _shows(entry: dict, kernels: list[str], here: str) -> Shows:
    """One condition of `shows`: a kernel of [[profile]] (may be left out where the lab profiles one), a pinned
    metric, and bounds that all point one way (more, or less)."""
    if unknown := set(entry) - {"kernel", "metric", *SHOWS_BOUNDS}:
        raise ConfigError(f"{here}: unknown key(s) {sorted(unknown)} (known: kernel, metric, "
                          f"{', '.join(SHOWS_BOUNDS)})")
    kernel = entry.get("kernel", kernels[0] if len(kernels) == 1 else None)
    if kernel not in kernels:
        raise ConfigError(f"{here}: 'kernel' must be one of the lab's [[profile]] kernels {kernels}, not "
                          f"{entry.get('kernel')!r}")
    if entry.get("metric") not in PROFILE_METRICS:
        raise ConfigError(f"{here}: 'metric' must be one of {list(PROFILE_METRICS)}, not {entry.get('metric')!r}")
    bounds = {key: _number(entry, key, here) for key in SHOWS_BOUNDS if key in entry}
    if not bounds:
        raise ConfigError(f"{here}: give at least one of {', '.join(SHOWS_BOUNDS)}")
    more = {"more_than_reference", "above"} & set(bounds)
    less = {"less_than_reference", "below"} & set(bounds)
    if more and less:
        raise ConfigError(f"{here}: {sorted(more)} and {sorted(less)} point opposite ways: a slow variant shows a "
                          f"metric up or down, not both")
    if bounds.get("more_than_reference", 1.0) < 1.0:
        raise ConfigError(f"{here}: 'more_than_reference' is a factor of at least 1 (the variant's value is more "
                          f"than that many times the reference's), not {bounds['more_than_reference']:g}")
    if not 0.0 < bounds.get("less_than_reference", 0.5) <= 1.0:
        raise ConfigError(f"{here}: 'less_than_reference' is a factor above 0 and at most 1 (the variant's value is "
                          f"less than that share of the reference's), not {bounds['less_than_reference']:g}")
    return Shows(kernel=kernel, metric=entry["metric"], **bounds)


def _shares(table: object, here: str) -> dict[str, float]:
    """[[wrong]]'s keeps_at_most: measurement -> the share of its points (0 to 1, below 1) the variant may keep."""
    if not isinstance(table, dict):
        raise ConfigError(f"{here}: 'keeps_at_most' must be a table of measurements, e.g. {{ pipelined = 0.25 }}")
    shares = {}
    for measurement, share in table.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
            raise ConfigError(f"{here}: keeps_at_most's '{measurement}' must be a share of its points from 0 to "
                              f"below 1, not {share!r}")
        shares[measurement] = float(share)
    return shares


def load_lab(lab: str, root: Path = REPO_ROOT) -> LabConfig:
    """Read and check a lab's config; raises ConfigError naming the file and the problem."""
    if not LAB_NAME.match(lab):
        raise ConfigError(f"'{lab}' is not a lab name (expected NN-name, e.g. 01-vector-add)")
    lab_dir = root / "labs" / lab
    public_path = lab_dir / "lab.toml"
    if not public_path.is_file():
        known = ", ".join(list_labs(root)) or "none"
        raise ConfigError(f"no lab '{lab}': {public_path} does not exist (labs: {known})")
    public = _read(public_path)
    solution_dir = root / "solutions" / lab
    hidden_path = solution_dir / "hidden.toml"
    hidden = _read(hidden_path) if hidden_path.is_file() else {}

    where = str(public_path.relative_to(root))
    hidden_where = str(hidden_path.relative_to(root))
    unknown = set(public) - {"lab", "grading", "params", "tests", "perf", "questions", "profile", "profile_hints",
                             *CALL_TABLES}
    unknown |= set(hidden) - {"grading", "params", "tests", "wrong", "right", "slow", "journey"}
    if unknown:
        raise ConfigError(f"{where} or {hidden_where}: unknown table(s) {sorted(unknown)}")

    info = public.get("lab", {})
    grading = public.get("grading", {})
    student_files = _strings(info, "student_files", f"{where} [lab]")
    if not student_files:
        raise ConfigError(f"{where} [lab]: 'student_files' must list the files a student writes")
    libraries = _strings(info, "libraries", f"{where} [lab]")
    if unknown_libs := set(libraries) - set(KNOWN_LIBRARIES):
        raise ConfigError(f"{where} [lab]: unknown libraries {sorted(unknown_libs)} (known: {sorted(KNOWN_LIBRARIES)})")
    timeout = _number(grading, "timeout_s", f"{where} [grading]", 60, minimum=1)

    params = _params(public.get("params", {}), where)
    params.update(_params(hidden.get("params", {}), hidden_where))
    full_at = _number(grading, "full_at", f"{where} [grading]", 1.2, minimum=1)
    zero_at = _number(grading, "zero_at", f"{where} [grading]", 10.0, minimum=1)
    if zero_at <= full_at:
        raise ConfigError(f"{where} [grading]: zero_at ({zero_at}) must be larger than full_at ({full_at})")
    perf = _perf(public.get("perf", []), where, full_at, zero_at)
    # The timing cases' parameters (kit::TimingOptions::from_params), where the lab has timing cases: a lab
    # with no [[perf]] (lab 00, whose students write no kernel to race) times nothing with them.
    for key in ("seed",) + (("timing_warmup", "timing_repeats", "ceiling_margin") if perf else ()):
        if key not in params:
            raise ConfigError(f"{where} [params]: '{key}' is required")
    if "ceiling_margin" in params:
        # A measurement faster than this many times a bound ceiling fails as implausible.
        _number(params, "ceiling_margin", f"{where} [params]", minimum=1)

    tests = _tests(public.get("tests", []), False, timeout, where)
    tests += _tests(hidden.get("tests", []), True, timeout, hidden_where)
    names = [t.name for t in tests]
    if duplicates := {n for n in names if names.count(n) > 1}:
        raise ConfigError(f"{where}: test names appear twice: {sorted(duplicates)}")
    if overlap := set(names) & {p.case for p in perf}:
        raise ConfigError(f"{where}: {sorted(overlap)} are listed both as tests and as timing cases")

    visibility = hidden.get("grading", {}).get("visibility", "after_due_date")
    if visibility not in VISIBILITIES:
        raise ConfigError(f"{hidden_where} [grading]: visibility must be one of {sorted(VISIBILITIES)}")
    seed = hidden.get("grading", {}).get("seed")
    if seed is not None and (not isinstance(seed, int) or seed < 0):
        raise ConfigError(f"{hidden_where} [grading]: seed must be a non-negative integer")

    wrong = _variants(hidden.get("wrong", []), "wrong", student_files, hidden_where)
    known_cases = set(names) | {p.case for p in perf}
    for variant in wrong:
        if unknown_cases := [name for name in variant.must_fail if name not in known_cases]:
            raise ConfigError(f"{hidden_where} [[wrong]] '{variant.name}': must_fail names no test case: "
                              f"{unknown_cases}")
        scored = {p.measurement for p in perf if p.points > 0}
        if unknown_measurements := [m for m in variant.keeps_at_most if m not in scored]:
            raise ConfigError(f"{hidden_where} [[wrong]] '{variant.name}': keeps_at_most names no measurement that "
                              f"earns points ([[perf]] with points > 0): {unknown_measurements}")

    profile = _profile(public.get("profile", []), {p.case for p in perf}, where)
    slow = _variants(hidden.get("slow", []), "slow", student_files, hidden_where)
    slow = [_slow(variant, entry, profile, hidden_where) for variant, entry in zip(slow, hidden.get("slow", []))]

    right = _variants(hidden.get("right", []), "right", student_files, hidden_where)
    profiled = {entry.kernel for entry in profile}
    for variant in right:
        if unknown_kernels := [theirs for theirs, _ in variant.kernels if theirs not in profiled]:
            raise ConfigError(f"{hidden_where} [[right]] '{variant.name}': 'kernels' names no [[profile]] kernel of "
                              f"{where}: {unknown_kernels} (known: {sorted(profiled)})")
    journey = _journey(hidden.get("journey"), perf, right, hidden_where) if "journey" in hidden else None

    return LabConfig(
        name=lab, title=str(info.get("title", lab)), lab_dir=lab_dir,
        solution_dir=solution_dir if solution_dir.is_dir() else None,
        student_files=student_files, libraries=libraries,
        forbidden=_strings(info, "forbidden", f"{where} [lab]"),
        allowed_calls=_strings(info, "allowed_calls", f"{where} [lab]"),
        timeout_s=timeout,
        build_timeout_s=_number(grading, "build_timeout_s", f"{where} [grading]", 600, minimum=1),
        full_at=full_at, zero_at=zero_at, hidden_visibility=visibility, grading_seed=seed,
        params=params, tests=tuple(tests), perf=tuple(perf),
        wrong=tuple(wrong),
        right=tuple(right), journey=journey,
        run_limits=_run_limits(grading, f"{where} [grading]"),
        concurrent_streams=_flag(grading, "concurrent_streams", f"{where} [grading]"),
        call_tables=_call_tables(public, where),
        questions=tuple(_questions(public.get("questions", []), known_cases, where)),
        hours=_number(info, "hours", f"{where} [lab]", minimum=0.5) if "hours" in info else None,
        profile=tuple(profile), slow=tuple(slow),
        profile_hints=tuple(_profile_hints(public.get("profile_hints", []), where)),
    )


def _journey(table: object, perf: list[PerfSpec], right: list[VariantSpec], where: str) -> Journey:
    """hidden.toml [journey]: a `title`, a `peer`, and [[journey.steps]], each a `name`, a `title`, a timing `case`
    (and its `measurement`, where the case has several), and optionally the [[right]] `variant` it times (the
    reference where none is named)."""
    here = f"{where} [journey]"
    if not isinstance(table, dict):
        raise ConfigError(f"{here}: must be a table with 'title', 'peer' and [[journey.steps]]")
    journey_title = table.get("title")
    if not isinstance(journey_title, str) or not journey_title:
        raise ConfigError(f"{here}: 'title' must name the journey for its chart (e.g. \"the GEMM journey\")")
    peer = table.get("peer")
    if not isinstance(peer, str) or not peer:
        raise ConfigError(f"{here}: 'peer' must name the yardstick every step's timing case measures beside it")
    measurements: dict[str, list[str]] = {}  # each timing case's measurements, in lab.toml's order
    for p in perf:
        measurements.setdefault(p.case, []).append(p.measurement)
    variants = {v.name for v in right}
    steps = []
    for i, entry in enumerate(table.get("steps", [])):
        at = f"{here} steps #{i + 1}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{at}: must be a table")
        name = entry.get("name", "")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9-]+", name):
            raise ConfigError(f"{at}: 'name' must be lower-case words joined by '-'")
        if name in variants:
            raise ConfigError(f"{at} '{name}': a step's name must not be a variant's: a handout's figure names the "
                              f"step, and the release refuses every variant's name")
        title = entry.get("title")
        if not isinstance(title, str) or not title:
            raise ConfigError(f"{at} '{name}': 'title' must say what the step adds")
        case = entry.get("case")
        if case not in measurements:
            raise ConfigError(f"{at} '{name}': 'case' must be one of the lab's timing cases ([[perf]]): "
                              f"{sorted(measurements)}")
        measurement = entry.get("measurement", measurements[case][0] if len(measurements[case]) == 1 else None)
        if measurement not in measurements[case]:
            raise ConfigError(f"{at} '{name}': 'measurement' must name one of its case's measurements "
                              f"({', '.join(measurements[case])})")
        variant = entry.get("variant", "")
        if variant and variant not in variants:
            raise ConfigError(f"{at} '{name}': 'variant' names no [[right]] variant: {variant!r} (the reference "
                              f"is the step without one)")
        steps.append(JourneyStep(name=name, title=title, case=case, measurement=measurement, variant=variant))
    if not steps:
        raise ConfigError(f"{here}: no [[journey.steps]]")
    names = [s.name for s in steps]
    if duplicates := {n for n in names if names.count(n) > 1}:
        raise ConfigError(f"{here}: step names appear twice: {sorted(duplicates)}")
    return Journey(title=journey_title, peer=peer, steps=tuple(steps))


def _profile(entries: list, timing_cases: set[str], where: str) -> list[ProfileEntry]:
    """[[profile]]: each a kernel and the timing case that runs it."""
    profile = []
    for i, entry in enumerate(entries):
        here = f"{where} [[profile]] #{i + 1}"
        for key in ("kernel", "case"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise ConfigError(f"{here}: '{key}' is required")
        if entry["case"] not in timing_cases:
            raise ConfigError(f"{here}: case {entry['case']!r} is no timing case of [[perf]]")
        if not KERNEL_NAME.fullmatch(entry["kernel"]):
            raise ConfigError(f"{here}: kernel {entry['kernel']!r} must be a function's plain name, no template "
                              f"arguments or parameters")
        profile.append(ProfileEntry(kernel=entry["kernel"], case=entry["case"]))
    return profile


def _profile_hints(entries: list, where: str) -> list[ProfileHint]:
    """[[profile_hints]]: a metric, `above` or `below`, the sentence for the student, and optionally `kernels`."""
    hints = []
    for i, entry in enumerate(entries):
        here = f"{where} [[profile_hints]] #{i + 1}"
        if entry.get("metric") not in PROFILE_METRICS:
            raise ConfigError(f"{here}: 'metric' must be one of {list(PROFILE_METRICS)}, not {entry.get('metric')!r}")
        if not isinstance(entry.get("text"), str) or not entry["text"].strip():
            raise ConfigError(f"{here}: 'text' is required: what the student should try")
        if ("above" in entry) == ("below" in entry):
            raise ConfigError(f"{here}: give 'above' or 'below', one of the two")
        kernels = _strings(entry, "kernels", here)
        for pattern in kernels:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ConfigError(f"{here}: kernels pattern {pattern!r} is no regular expression: {error}") from None
        hints.append(ProfileHint(metric=entry["metric"], text=entry["text"].strip(),
                                 above=_number(entry, "above", here) if "above" in entry else None,
                                 below=_number(entry, "below", here) if "below" in entry else None,
                                 kernels=kernels))
    return hints


def _questions(entries: list, case_names: set[str], where: str) -> list[QuestionSpec]:
    """[[questions]]: the written analysis, each question named as QUESTIONS.md heads it."""
    questions = []
    for i, entry in enumerate(entries):
        here = f"{where} [[questions]] #{i + 1}"
        name = _name(entry, here, "the question's heading in QUESTIONS.md")
        if name in case_names:
            raise ConfigError(f"{here}: {name!r} is also a test case: a question needs a name of its own")
        questions.append(QuestionSpec(name=name, points=_number(entry, "points", here)))
    names = [q.name for q in questions]
    if duplicates := {n for n in names if names.count(n) > 1}:
        raise ConfigError(f"{where} [[questions]]: names appear twice: {sorted(duplicates)}")
    return questions


def load_call_tables(path: Path) -> CallTables:
    """The call tables of a TOML file outside labs/ (the harness's own test of the judge/runner split)."""
    return _call_tables(_read(path), str(path))


def _call_tables(document: dict, where: str) -> CallTables:
    return CallTables(
        host_buffers=_host_buffers(document.get("host_buffers", {}), f"{where} [host_buffers]"),
        shared_host_buffers=_shared_host_buffers(document.get("shared_host_buffers", {}),
                                                 f"{where} [shared_host_buffers]"),
        host_allocators=_named_functions(document.get("host_allocators", {}), ("count", "free"),
                                         f"{where} [host_allocators]"),
        objects=_named_functions(document.get("objects", {}), ("destroy",), f"{where} [objects]"))


def _shared_host_buffers(table: object, where: str) -> dict[str, tuple[str, ...]]:
    """[shared_host_buffers]: each function's host-memory parameters that point into memory both processes map."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table of functions")
    shared: dict[str, tuple[str, ...]] = {}
    for function, params in table.items():
        if not isinstance(params, list) or not params or not all(isinstance(p, str) and p for p in params):
            raise ConfigError(f"{where} {function}: list the parameters by name, e.g. [\"h_in\", \"h_out\"]")
        shared[function] = tuple(params)
    return shared


def _named_functions(table: object, keys: tuple[str, ...], where: str) -> dict[str, dict[str, str]]:
    """A table of functions, each with exactly `keys`, each a non-empty string."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table of functions")
    for function, entry in table.items():
        if not isinstance(entry, dict) or set(entry) != set(keys) or \
                not all(isinstance(v, str) and v.strip() for v in entry.values()):
            raise ConfigError(f"{where} {function}: give exactly {', '.join(keys)}, each a string, e.g. "
                              + "{ " + ", ".join(f'{k} = \"...\"' for k in keys) + " }")
    return {function: dict(entry) for function, entry in table.items()}


def _host_buffers(table: object, where: str) -> dict[str, dict[str, str]]:
    """[host_buffers]: each function's host-memory parameters and their element counts."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table of functions")
    buffers: dict[str, dict[str, str]] = {}
    for function, params in table.items():
        if not isinstance(params, dict) or not all(isinstance(v, str) and v.strip() for v in params.values()):
            raise ConfigError(f"{where} {function}: give each host-memory parameter its element count as a "
                              f"C++ expression in the function's parameters, e.g. {{ h_a = \"n\" }}")
        buffers[function] = dict(params)
    return buffers


def _run_limits(grading: dict, where: str) -> Limits:
    """The sandbox's caps on one test program: memory_limit_gb, process_limit, file_limit_mb."""
    default = DEFAULT_RUN_LIMITS
    return Limits(
        memory_bytes=int(_number(grading, "memory_limit_gb", where, default.memory_bytes / GIB, minimum=1) * GIB),
        processes=int(_number(grading, "process_limit", where, default.processes, minimum=16)),
        file_bytes=int(_number(grading, "file_limit_mb", where, default.file_bytes / MIB, minimum=1) * MIB))
