"""Profiler feedback: each timed kernel of a build run once under Nsight Compute, its counters turned into
a short table beside the reference's, the hints the lab's config gives for them, and a roofline.

    python3 -m grader profile --lab 07-transpose [--submission DIR]     (make profile LAB=07-transpose)

For every [[profile]] entry of lab.toml (a kernel and the timing case that runs it), the test program runs
that case with its runner under `ncu` (KIT_RUNNER_PREFIX), which measures the kernel's first launches with the
pinned metrics below, and nothing else, and shows the longest of them. The student's build is the one
profiled; where solutions/ is there, the reference's is too, and each metric is shown beside it.
[[profile_hints]] entries say, for one metric past a threshold, what a student should try: the grader holds
no lab-specific text.

`make profile` profiles the student's own build on their own GPU, outside the sandbox: a student profiling their
own code has nothing to guard against. Reading the counters needs the driver's permission (ERR_NVGPUCTRPERM
otherwise; `counters_locked_message` says how to get it).

`grade --profile` and `grade-class --profile` (off by default) profile a submission after it is graded, as
feedback: the table and hints join the student's report, and nothing here feeds a score. The code is untrusted,
so ncu runs inside the runner's sandbox, in front of the runner (`confined_command`): the judge starts
`bwrap ... prlimit ... ncu ... runner`, ncu injects itself into the runner there, sees the GPU's device files the
runner sees, and writes its CSV into a fresh folder that is the one thing the sandbox lets it write. Student code
can write that folder too, so a submission can falsify its own profile: that misleads only its own feedback,
never a score, and the grader reads the file back as untrusted text (`read_untrusted`: no link followed, size
capped). Where the driver lets only administrators read the counters, ncu fails inside the sandbox (it drops
every capability and, for a grader run as root, runs as nobody), and the feedback says so instead of a table.
"""
from __future__ import annotations

import csv
import io
import re
import shutil
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from grader import sandbox
from grader.config import LabConfig, ProfileEntry, ProfileHint, Shows, VariantSpec
from grader.proc import run_process, scrubbed_env
from grader.run.runner import runner_confinement, runner_of, unsplit_confinement

NCU_NAMES = ("ncu", "nv-nsight-cu-cli")
NCU_FOLDERS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute")
# Launches of a kernel measured: its largest among them is shown. A launcher may make several passes (a reduction
# of 2^28 floats: 2^20 blocks, then 4096, then 16), and the first pass is the one its lesson is about. ncu replays
# each launch with its caches flushed, so a warm-up launch measures as any other.
LAUNCHES_MEASURED = 4
PROFILE_TIMEOUT_S = 600
COUNTERS_LOCKED = "ERR_NVGPUCTRPERM"
# ncu's CSV for one launch and these metrics is a few kilobytes; a file a submission grew past this is not ncu's.
REPORT_BYTES_READ = 1 << 20


@dataclass(frozen=True)
class Metric:
    """One row of the table: what it is called, its unit, the ncu metrics it is made of and how."""

    key: str
    label: str
    unit: str
    sources: tuple[str, ...]  # summed
    per: tuple[str, ...] = ()  # where given, the sources' sum is divided by these ones' sum
    scale: float = 1.0  # applied to the combined base-unit value (ns to ms, say)


DURATION = "gpu__time_duration.sum"
# The pinned set: enough to see why a kernel is slow in every lab, few enough to read at a glance. Each
# source is an ncu metric in its base unit (`--print-units base`).
METRICS = (
    Metric("duration_ms", "duration", "ms", (DURATION,), scale=1e-6),
    Metric("dram_pct", "DRAM throughput", "% of peak", ("dram__throughput.avg.pct_of_peak_sustained_elapsed",)),
    Metric("occupancy_pct", "achieved occupancy", "% of peak", ("sm__warps_active.avg.pct_of_peak_sustained_active",)),
    Metric("registers", "registers per thread", "", ("launch__registers_per_thread",)),
    Metric("shared_bytes", "shared memory per block", "bytes",
           ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")),
    Metric("load_sectors", "global load sectors per request", "",
           ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",), ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)),
    Metric("store_sectors", "global store sectors per request", "",
           ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",), ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",)),
    # Per shared-memory instruction (loads and stores), the extra passes its conflicts cost: 0 when the 32
    # threads touch 32 banks, 31 when they all touch one.
    Metric("bank_conflicts", "shared-memory bank conflicts per request", "",
           ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
           ("smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum")),
    Metric("l2_hit_pct", "L2 hit rate", "%", ("lts__t_sector_hit_rate.pct",)),
    # Threads whose predicate is on: a short `if` compiles to predicated instructions, not a branch, and a thread
    # predicated off does no work although it counts as active.
    Metric("active_threads", "active threads per warp instruction", "of 32",
           ("smsp__thread_inst_executed_pred_on.sum",), ("smsp__inst_executed.sum",)),
    # All the work the warps issued: what divergence costs shows here. A reduction tree whose working threads are
    # spread over every warp keeps every warp issuing each step (lab 05 on an H100: 2.1 billion against 0.9).
    Metric("warp_instructions", "warp instructions executed", "millions", ("smsp__inst_executed.sum",), scale=1e-6),
    Metric("fp32_pct", "FP32 pipe utilization", "% of peak", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",)),
)
# For the roofline: the kernel's FP32 operations (an FMA is two) and its DRAM bytes.
FLOP_SOURCES = {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 2.0,
                "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 1.0,
                "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 1.0}
DRAM_BYTES = "dram__bytes.sum"
# The roofs, as Nsight Compute gives them for the GPU it measured on: FMAs a cycle (two operations each) at the
# SMs' clock, and DRAM bytes a cycle at the memory's clock.
FMA_PEAK, SM_CLOCK = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", "sm__cycles_elapsed.avg.per_second"
DRAM_PEAK, DRAM_CLOCK = "dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second"


def ncu_metrics() -> list[str]:
    """Every ncu metric the profile reads."""
    names = [source for metric in METRICS for source in metric.sources + metric.per] + list(FLOP_SOURCES)
    return list(dict.fromkeys(names + [DRAM_BYTES, FMA_PEAK, SM_CLOCK, DRAM_PEAK, DRAM_CLOCK]))


def find_ncu(search_path: str | None = None) -> Path | None:
    """Nsight Compute's command line: on the PATH, else in the CUDA toolkit's or its own install folder."""
    for name in NCU_NAMES:
        if found := shutil.which(name, path=search_path):
            return Path(found)
    for folder in NCU_FOLDERS:
        for candidate in sorted(Path(folder).glob("**/ncu"), reverse=True) if Path(folder).is_dir() else []:
            if candidate.is_file():
                return candidate
    return None


def ncu_command(ncu: Path, kernel: str, report: Path) -> list[str]:
    """What goes in front of the command of the process that runs `kernel` to measure its first launches into
    the CSV file `report`."""
    return [str(ncu), "--kernel-name", kernel, "--kernel-name-base", "function",
            "--launch-count", str(LAUNCHES_MEASURED), "--metrics", ",".join(ncu_metrics()), "--print-units",
            "base", "--csv", "--log-file", str(report)]


def command(binary: Path, case: str, ncu: list[str]) -> tuple[list[str], dict[str, str]]:
    """The test program's command line running `case` and what its environment adds: in a split lab, the judge
    starts its runner, where the kernels run, behind the words of KIT_RUNNER_PREFIX (README, "Profiling your
    kernels"); a program that holds the kernels itself runs under ncu whole."""
    run = [str(binary), f"--test-case={case}", "--no-colors"]
    if runner_of(binary) is not None:
        return run, {"KIT_RUNNER_PREFIX": "\n".join(ncu)}
    return ncu + run, {}


def confined_command(binary: Path, case: str, ncu: list[str], writable: Path, workdir: Path,
                     limits: sandbox.Limits | None, gpus: str | None = None) -> tuple[list[str], dict[str, str]]:
    """As `command`, for untrusted code: ncu runs inside the sandbox of the code it measures (with the GPUs `gpus`
    names), in front of the runner (or of a whole unsplit program), and may write only `writable`, where its CSV
    goes. The judge stays outside, as in grading."""
    run = [str(binary), f"--test-case={case}", "--no-colors"]
    runner = runner_of(binary)
    if runner is None:
        spec = unsplit_confinement(binary, workdir, limits, gpus)
        return sandbox.confine(ncu + run, replace(spec, writable=spec.writable + (writable,))), {}
    started = sandbox.confine(ncu + [str(runner)],
                              replace(runner_confinement(runner, limits, gpus), writable=(writable,)))
    return run, {"KIT_RUNNER": started[-1], "KIT_RUNNER_PREFIX": "\n".join(started[:-1])}


def read_untrusted(path: Path, limit: int = REPORT_BYTES_READ) -> str:
    """The text of a file that code in the sandbox could have written or replaced: "" unless it is a regular file
    (a link is not followed: it could lead out of the sandbox to a file of the grader's), and at most `limit`
    bytes of it."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return ""
        return file.read(limit).decode(errors="replace")


def counters_locked_message() -> str:
    return ("Nsight Compute may not read this GPU's performance counters (ERR_NVGPUCTRPERM): the driver lets only "
            "administrators read them. On your own machine, allow every user once and reboot:\n"
            "  echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee /etc/modprobe.d/nvprof.conf\n"
            "  sudo update-initramfs -u   # then reboot\n"
            "or run `make profile` with sudo. On a shared cluster, ask its administrators: NVIDIA's page "
            "'ERR_NVGPUCTRPERM' explains the choice.")


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def base_name(kernel: str) -> str:
    """A kernel's plain function name, as [[profile]] gives it, from the name ncu prints, which may be demangled
    whole: "void kit::tile_scan_kernel<float>(const float *, float *, int)" -> "tile_scan_kernel"."""
    words = kernel.split("(", 1)[0].split("<", 1)[0].split()
    return words[-1].rsplit("::", 1)[-1] if words else kernel


def parse_report(text: str) -> dict[str, dict[str, float]]:
    """Kernel name (its plain function name) -> {ncu metric: value} from ncu's CSV (one row per launch and
    metric, after whatever lines ncu printed before its header); of a kernel's launches, the longest
    (LAUNCHES_MEASURED says why), the first of equals. Code in the sandbox can write this file: text that is no
    CSV the csv module reads (a field past its size limit) ends the reading there, as if ncu had measured no more."""
    start = text.find('"ID"')
    if start < 0:
        return {}
    launches: dict[str, dict[str, dict[str, float]]] = {}  # kernel -> launch ID -> its metrics, in launch order
    try:
        for row in csv.DictReader(io.StringIO(text[start:])):
            kernel, launch, name = base_name(row.get("Kernel Name") or ""), row.get("ID", ""), row.get("Metric Name", "")
            value = _number(row.get("Metric Value", ""))
            if kernel and name and value is not None:
                launches.setdefault(kernel, {}).setdefault(launch, {})[name] = value
    except csv.Error:
        pass
    return {kernel: max(measured.values(), key=lambda raw: raw.get(DURATION, 0.0))
            for kernel, measured in launches.items()}


def derive(raw: dict[str, float]) -> dict[str, float | None]:
    """The table's metrics from one kernel's ncu metrics; None where a source is missing (or a ratio's
    denominator is zero: a kernel with no shared-memory instruction has no conflicts per request)."""
    values: dict[str, float | None] = {}
    for metric in METRICS:
        parts, per = [raw.get(source) for source in metric.sources], [raw.get(source) for source in metric.per]
        if any(part is None for part in parts + per):
            values[metric.key] = None
        elif metric.per:
            values[metric.key] = sum(parts) / sum(per) * metric.scale if sum(per) else None
        else:
            values[metric.key] = sum(parts) * metric.scale
    return values


@dataclass(frozen=True)
class RooflinePoint:
    label: str
    flops_per_byte: float
    gflops: float


def roofline_point(label: str, raw: dict[str, float]) -> RooflinePoint | None:
    """Where a kernel sits on the roofline: FP32 operations per DRAM byte, and GFLOP/s; None without both."""
    flops = sum(raw.get(name, 0.0) * weight for name, weight in FLOP_SOURCES.items())
    seconds = raw.get(DURATION, 0.0) * 1e-9
    dram = raw.get(DRAM_BYTES, 0.0)
    if flops <= 0 or seconds <= 0 or dram <= 0:
        return None
    return RooflinePoint(label, flops / dram, flops / seconds / 1e9)


def roofs(raw: dict[str, float]) -> tuple[float, float] | None:
    """(FP32 GFLOP/s, DRAM GB/s) this GPU allows, from a kernel's ncu metrics; None where they are missing."""
    needed = [raw.get(name) for name in (FMA_PEAK, SM_CLOCK, DRAM_PEAK, DRAM_CLOCK)]
    if any(not value for value in needed):
        return None
    fma, sm_clock, dram, dram_clock = needed
    return 2 * fma * sm_clock / 1e9, dram * dram_clock / 1e9


def matching_hints(hints: list[ProfileHint], kernel: str, values: dict[str, float | None]) -> list[str]:
    """The config's hints whose metric is past its threshold for this kernel."""
    said = []
    for hint in hints:
        value = values.get(hint.metric)
        if value is None or (hint.kernels and not any(re.fullmatch(k, kernel) for k in hint.kernels)):
            continue
        if (hint.above is not None and value > hint.above) or (hint.below is not None and value < hint.below):
            said.append(hint.text)
    return said


def _shown(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0 or 0.01 <= abs(value) < 1e5:
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return f"{value:.2e}"


def table(kernel: str, mine: dict[str, float | None], reference: dict[str, float | None] | None,
          label: str = "yours") -> str:
    """One kernel's metrics (headed `label`), beside the reference's where there is one."""
    heads = ["metric", label] + (["reference"] if reference is not None else [])
    rows = [[f"{m.label}" + (f" ({m.unit})" if m.unit else ""), _shown(mine.get(m.key))]
            + ([_shown(reference.get(m.key))] if reference is not None else []) for m in METRICS]
    widths = [max(len(row[i]) for row in rows + [heads]) for i in range(len(heads))]
    lines = [f"{kernel}:", "  " + "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in
                                           enumerate(zip(heads, widths)))]
    lines += ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
              for row in rows]
    return "\n".join(lines)


def report(config: LabConfig, mine: dict[str, dict[str, float]], reference: dict[str, dict[str, float]] | None,
           missing: dict[str, str], label: str = "yours", entries: Sequence[ProfileEntry] | None = None,
           counterparts: dict[str, str] | None = None) -> str:
    """The whole text: per kernel of the config (or of `entries`), its table and hints, or why it has none. Each
    kernel is set beside the reference's of the same name, or the one `counterparts` names for it (a variant's
    kernel in place of the reference's: variant_entries)."""
    parts = [f"Profile of {config.name}'s timed kernels (Nsight Compute, one launch each)."]
    for entry in config.profile if entries is None else entries:
        if entry.kernel in missing:
            parts.append(f"{entry.kernel}: not measured: {missing[entry.kernel]}")
            continue
        values = derive(mine.get(entry.kernel, {}))
        theirs_name = (counterparts or {}).get(entry.kernel, entry.kernel)
        theirs = derive(reference[theirs_name]) if reference and theirs_name in reference else None
        heading = entry.kernel if theirs_name == entry.kernel else f"{entry.kernel} (the reference: {theirs_name})"
        parts.append(table(heading, values, theirs, label))
        for text in matching_hints(config.profile_hints, entry.kernel, values):
            parts.append(f"  hint: {text}")
    return "\n\n".join(parts) + "\n"


def draw_roofline(path: Path, title: str, points: list[RooflinePoint], peak_gflops: float,
                  bandwidth_gbs: float) -> str:
    """A log-log roofline: the memory slope (bandwidth_gbs) up to the FP32 roof (peak_gflops), with each kernel
    as a point. Returns a line for the report: where the picture is, or why there is none."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "(no roofline picture: it needs matplotlib, Debian's python3-matplotlib)"
    if not points or peak_gflops <= 0 or bandwidth_gbs <= 0:
        return "(no roofline picture: no kernel had both FP32 operations and DRAM traffic to place)"
    ridge = peak_gflops / bandwidth_gbs
    low = min([p.flops_per_byte for p in points] + [ridge]) / 10
    high = max([p.flops_per_byte for p in points] + [ridge]) * 10
    figure, axes = plt.subplots(figsize=(7, 4.5))
    xs = [low, ridge, high]
    axes.loglog(xs, [min(peak_gflops, bandwidth_gbs * x) for x in xs], color="black", linewidth=1.5)
    axes.annotate(f"DRAM {bandwidth_gbs:.0f} GB/s", (low * 1.5, bandwidth_gbs * low * 1.5 * 1.3), fontsize=8)
    axes.annotate(f"FP32 {peak_gflops / 1e3:.1f} TFLOP/s", (ridge * 1.2, peak_gflops * 1.1), fontsize=8)
    for point in points:
        axes.plot(point.flops_per_byte, point.gflops, "o")
        axes.annotate(point.label, (point.flops_per_byte, point.gflops), textcoords="offset points", xytext=(5, -10),
                      fontsize=8)
    axes.set_xlabel("FP32 operations per DRAM byte")
    axes.set_ylabel("GFLOP/s")
    axes.set_title(title)
    axes.set_ylim(top=peak_gflops * 3, bottom=min([p.gflops for p in points] + [peak_gflops]) / 10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return f"Roofline: {path}"


# -- running it ---------------------------------------------------------------------------------------------


@dataclass
class Profiled:
    """One build's profile: kernel -> its ncu metrics, and for each kernel not measured, why."""

    kernels: dict[str, dict[str, float]]
    missing: dict[str, str]


def profile_build(config: LabConfig, binary: Path, ncu: Path, workdir: Path,
                  entries: Sequence[ProfileEntry] | None = None, confined: bool = False,
                  timeout_s: float = PROFILE_TIMEOUT_S, gpu: str | None = None) -> Profiled:
    """Each [[profile]] kernel of a built test program (or those of `entries`), measured in a run of its timing
    case under ncu. `confined`: the code is untrusted, and ncu runs in its sandbox (confined_command). `gpu`: the
    GPU it runs on, as CUDA_VISIBLE_DEVICES names it; None: the grader's own."""
    workdir.mkdir(parents=True, exist_ok=True)
    profiled = Profiled({}, {})
    for entry in config.profile if entries is None else entries:
        written = workdir / f"ncu-{entry.kernel}"  # the one folder the sandbox lets ncu (and the code) write
        written.mkdir(exist_ok=True)
        csv_report = written / "report.csv"
        csv_report.unlink(missing_ok=True)
        results = workdir / f"{entry.kernel}.jsonl"
        words = ncu_command(ncu, entry.kernel, csv_report)
        env = scrubbed_env(workdir, {"KIT_RESULTS": str(results),
                                     **({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {})})
        run, extra = (confined_command(binary, entry.case, words, written, workdir, config.run_limits,
                                       env.get("CUDA_VISIBLE_DEVICES")) if confined
                      else command(binary, entry.case, words))
        process = run_process(run, cwd=workdir, env={**env, **extra}, timeout_s=timeout_s)
        text = read_untrusted(csv_report)
        measured = parse_report(text)
        if entry.kernel in measured:
            profiled.kernels[entry.kernel] = measured[entry.kernel]
        elif COUNTERS_LOCKED in text + process.output:
            raise ProfileError(counters_locked_message())
        else:
            profiled.missing[entry.kernel] = (
                f"Nsight Compute saw no launch of it while '{entry.case}' ran (the program "
                f"{process.describe_exit()}). Does that test pass (`make test`)? The end of the output:\n"
                + (text + process.output)[-1500:])
    return profiled


class ProfileError(Exception):
    """Profiling cannot run here: the message says why and what to do."""


def variant_entries(config: LabConfig, variant: VariantSpec) -> tuple[list[ProfileEntry], dict[str, str]]:
    """The kernels to profile in a variant's build: the lab's [[profile]], each replaced by the variant's own
    kernel where its `kernels` names one; and, for each replacement, the reference's kernel it is set beside."""
    renamed = dict(variant.kernels)
    entries = [replace(entry, kernel=renamed.get(entry.kernel, entry.kernel)) for entry in config.profile]
    return entries, {mine: theirs for theirs, mine in renamed.items()}


def write_profile(config: LabConfig, mine: Profiled, reference: Profiled | None, out: Path,
                  label: str = "yours", entries: Sequence[ProfileEntry] | None = None,
                  counterparts: dict[str, str] | None = None) -> str:
    """report.txt and roofline.png in `out`, `mine` headed `label` (its kernels those of `entries`, each beside
    the reference's `counterparts` names, where given: report); returns the report's text."""
    out.mkdir(parents=True, exist_ok=True)
    text = report(config, mine.kernels, reference.kernels if reference else None, mine.missing, label, entries,
                  counterparts)
    points = points_of(mine, f"({label})") + (points_of(reference, "(reference)") if reference else [])
    text += "\n" + write_picture(out, f"{config.name}: timed kernels", points, mine.kernels) + "\n"
    (out / "report.txt").write_text(text)
    return text


def points_of(profiled: Profiled, suffix: str) -> list[RooflinePoint]:
    """The roofline's points of one build's kernels, each labelled with its kernel and `suffix`."""
    return [point for kernel, raw in profiled.kernels.items() if (point := roofline_point(f"{kernel} {suffix}", raw))]


def write_picture(out: Path, title: str, points: list[RooflinePoint], measured: dict[str, dict[str, float]]) -> str:
    """<out>/roofline.png under the roofs of the GPU that `measured` (kernel -> ncu metrics) ran on; the report's
    line saying where it is, or why there is none."""
    out.mkdir(parents=True, exist_ok=True)
    limits = next((found for raw in measured.values() if (found := roofs(raw))), None)
    return draw_roofline(out / "roofline.png", title, points, *(limits or (0.0, 0.0)))


# -- what a slow variant must show (grader profile --check) ---------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One `shows` condition of a [[slow]] variant, judged: its value, the reference's, and whether it held."""

    shows: Shows
    value: float | None
    reference: float | None
    held: bool
    why_not: str = ""  # where it could not be judged: what was missing

    def line(self) -> str:
        head = f"{'ok  ' if self.held else 'FAIL'} {self.shows.kernel}: {self.shows.metric}"
        if self.why_not:
            return f"{head}: {self.why_not} (wanted: {wanted(self.shows)})"
        return (f"{head} {_shown(self.value)}, the reference's {_shown(self.reference)} "
                f"(wanted: {wanted(self.shows)})")


def wanted(shows: Shows) -> str:
    """The bounds of a condition in words: "more than 4x the reference's, above 4"."""
    said = []
    if shows.more_than_reference is not None:
        said.append(f"more than {shows.more_than_reference:g}x the reference's")
    if shows.less_than_reference is not None:
        said.append(f"less than {shows.less_than_reference:g}x the reference's")
    if shows.above is not None:
        said.append(f"above {shows.above:g}")
    if shows.below is not None:
        said.append(f"below {shows.below:g}")
    return ", ".join(said)


def judge_shows(shows: Shows, variant: Profiled, reference: Profiled) -> Verdict:
    """Whether the variant's profile shows what `shows` says, against the reference's."""
    if shows.kernel in variant.missing or shows.kernel not in variant.kernels:
        why = variant.missing.get(shows.kernel, "not measured")
        return Verdict(shows, None, None, False, f"the variant's kernel was not measured: {why}")
    value = derive(variant.kernels[shows.kernel])[shows.metric]
    theirs = derive(reference.kernels[shows.kernel])[shows.metric] if shows.kernel in reference.kernels else None
    if value is None:
        return Verdict(shows, None, theirs, False, "the variant's profile has no value for it")
    needs_reference = shows.more_than_reference is not None or shows.less_than_reference is not None
    if needs_reference and theirs is None:
        why = reference.missing.get(shows.kernel, "the reference's profile has no value for it")
        return Verdict(shows, value, None, False, f"no reference value to compare with: {why}")
    held = all([
        shows.more_than_reference is None or value > shows.more_than_reference * theirs,
        shows.less_than_reference is None or value < shows.less_than_reference * theirs,
        shows.above is None or value > shows.above,
        shows.below is None or value < shows.below,
    ])
    return Verdict(shows, value, theirs, held)


# -- feedback for a graded submission (grade --profile, grade-class --profile) ----------------------------

FEEDBACK_HEAD = ("Profile of your timed kernels (Nsight Compute), for feedback only: it earns and costs no points. "
                 "Each table shows your kernel's counters beside the reference solution's; the hints below a table "
                 "say what to try where a counter is past what the lab expects.")


def untrusted_timeout_s(config: LabConfig) -> float:
    """How long a profiled run of a submission's timing case may take: ncu replays the measured launch once per
    group of counters, so a few times the case's own limit, and never more than PROFILE_TIMEOUT_S."""
    return min(PROFILE_TIMEOUT_S, 4 * config.timeout_s + 60)


def profile_submission(config: LabConfig, binary: Path, ncu: Path | None, workdir: Path,
                       case_status: dict[str, str], gpu: str | None = None) -> Profiled | str:
    """The submission's timed kernels under ncu, in its sandbox, on `gpu` (profile_build); or, where none can be
    measured, why (for the student). Only kernels whose timing case passed are measured: a case that failed or
    hung in grading would only do it again under the profiler."""
    if ncu is None:
        return ("No profile: Nsight Compute (ncu) is not installed on the grading machine. "
                "`make profile LAB=" + config.name + "` shows the same table on your own GPU.")
    entries = [entry for entry in config.profile if case_status.get(entry.case) == "passed"]
    skipped = {entry.kernel: f"its timing case '{entry.case}' did not pass in grading, so it was not profiled"
               for entry in config.profile if entry not in entries}
    try:
        profiled = profile_build(config, binary, ncu, workdir, entries, confined=True,
                                 timeout_s=untrusted_timeout_s(config), gpu=gpu) if entries else Profiled({}, {})
    except ProfileError:
        return ("No profile: the grading machine does not let Nsight Compute read the GPU's performance counters "
                "(ERR_NVGPUCTRPERM). `make profile LAB=" + config.name + "` shows the same table on your own GPU.")
    profiled.missing.update(skipped)
    return profiled


def submission_feedback(config: LabConfig, binary: Path, ncu: Path | None, workdir: Path,
                        case_status: dict[str, str],
                        reference: Callable[[], Profiled | None], gpu: str | None = None) -> str:
    """What a graded submission's report gets (grade --profile, grade-class --profile): its timed kernels profiled
    in its sandbox on `gpu` (profile_submission), beside `reference()`'s where that gives one, as text. The caller
    holds the GPU alone. It never raises: a profile is feedback only, and a grader problem here must not cost the
    student their grade, nor a submission that wrote something odd for ncu's file its results."""
    try:
        mine = profile_submission(config, binary, ncu, workdir, case_status, gpu)
        theirs = None
        if not isinstance(mine, str) and mine.kernels:
            try:
                theirs = reference()
            except ProfileError:
                theirs = None  # the student's table stands alone; their profile was taken all the same
        return feedback(config, mine, theirs)
    except Exception as error:  # noqa: BLE001 - see above
        return f"No profile: the grader could not run it ({type(error).__name__}: {error})."


def feedback(config: LabConfig, mine: Profiled | str, reference: Profiled | None) -> str:
    """The text a student's report gets: the tables and hints, or why there are none."""
    if isinstance(mine, str):
        return mine
    body = report(config, mine.kernels, reference.kernels if reference else None, mine.missing)
    return FEEDBACK_HEAD + "\n\n" + body.split("\n\n", 1)[-1]
