"""Profiler feedback: each timed kernel of a build run once under Nsight Compute, its counters turned into
a short table beside the reference's, the hints the lab's config gives for them, and a roofline.

    python3 -m grader profile --lab 07-transpose [--submission DIR]     (make profile LAB=07-transpose)

For every [[profile]] entry of lab.toml (a kernel and the timing case that runs it), the test program runs
that case with its runner under `ncu` (KIT_RUNNER_PREFIX), which measures the kernel's third launch (past the
first calls' warm-up) with the pinned metrics below, and nothing else. The student's build is the one
profiled; where solutions/ is there, the reference's is too, and each metric is shown beside it.
[[profile_hints]] entries say, for one metric past a threshold, what a student should try: the grader holds
no lab-specific text.

It profiles the student's own build on their own GPU, outside the sandbox: a student profiling their own
code has nothing to guard against. Reading the counters needs the driver's permission
(ERR_NVGPUCTRPERM otherwise; `counters_locked_message` says how to get it). Class grading does not profile.
"""
from __future__ import annotations

import csv
import io
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader.config import LabConfig, ProfileHint
from grader.proc import run_process, scrubbed_env
from grader.run.runner import runner_of

NCU_NAMES = ("ncu", "nv-nsight-cu-cli")
NCU_FOLDERS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute")
LAUNCHES_SKIPPED = 2  # the first calls of a timing case are its warm-up
PROFILE_TIMEOUT_S = 600
COUNTERS_LOCKED = "ERR_NVGPUCTRPERM"


@dataclass(frozen=True)
class Metric:
    """One row of the table: what it is called, its unit, the ncu metrics it is made of and how."""

    key: str
    label: str
    unit: str
    sources: tuple[str, ...]
    combine: str = "first"  # "first": the one source; "sum": their sum; "ratio": the first over the second
    scale: float = 1.0  # applied to the combined base-unit value (ns to ms, say)


# The pinned set: enough to see why a kernel is slow in every lab, few enough to read at a glance. Each
# source is an ncu metric in its base unit (`--print-units base`).
METRICS = (
    Metric("duration_ms", "duration", "ms", ("gpu__time_duration.sum",), scale=1e-6),
    Metric("dram_pct", "DRAM throughput", "% of peak", ("dram__throughput.avg.pct_of_peak_sustained_elapsed",)),
    Metric("occupancy_pct", "achieved occupancy", "% of peak", ("sm__warps_active.avg.pct_of_peak_sustained_active",)),
    Metric("registers", "registers per thread", "", ("launch__registers_per_thread",)),
    Metric("shared_bytes", "shared memory per block", "bytes",
           ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"), "sum"),
    Metric("load_sectors", "global load sectors per request", "",
           ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
           "ratio"),
    Metric("store_sectors", "global store sectors per request", "",
           ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
           "ratio"),
    Metric("bank_conflicts", "shared-memory bank conflicts per request", "",
           ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "smsp__inst_executed_op_shared.sum"), "ratio"),
    Metric("l2_hit_pct", "L2 hit rate", "%", ("lts__t_sector_hit_rate.pct",)),
    Metric("active_threads", "active threads per warp instruction", "of 32",
           ("smsp__thread_inst_executed.sum", "smsp__inst_executed.sum"), "ratio"),
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
    names = [source for metric in METRICS for source in metric.sources] + list(FLOP_SOURCES)
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
    """What goes in front of the command of the process that runs `kernel` to measure its third launch into
    the CSV file `report`."""
    return [str(ncu), "--kernel-name", kernel, "--kernel-name-base", "function", "--launch-skip",
            str(LAUNCHES_SKIPPED), "--launch-count", "1", "--metrics", ",".join(ncu_metrics()), "--print-units",
            "base", "--csv", "--log-file", str(report)]


def command(binary: Path, case: str, ncu: list[str]) -> tuple[list[str], dict[str, str]]:
    """The test program's command line running `case` and what its environment adds: in a split lab, the judge
    starts its runner, where the kernels run, behind the words of KIT_RUNNER_PREFIX (README, "Profiling your
    kernels"); a program that holds the kernels itself runs under ncu whole."""
    run = [str(binary), f"--test-case={case}", "--no-colors"]
    if runner_of(binary) is not None:
        return run, {"KIT_RUNNER_PREFIX": "\n".join(ncu)}
    return ncu + run, {}


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


def parse_report(text: str) -> dict[str, dict[str, float]]:
    """Kernel name -> {ncu metric: value} from ncu's CSV (one row per launch and metric, after whatever lines
    ncu printed before its header); a kernel measured more than once keeps its first launch."""
    start = text.find('"ID"')
    if start < 0:
        return {}
    kernels: dict[str, dict[str, float]] = {}
    first_launch: dict[str, str] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        kernel, launch, name = row.get("Kernel Name", ""), row.get("ID", ""), row.get("Metric Name", "")
        if not kernel or not name or first_launch.setdefault(kernel, launch) != launch:
            continue
        value = _number(row.get("Metric Value", ""))
        if value is not None:
            kernels.setdefault(kernel, {})[name] = value
    return kernels


def derive(raw: dict[str, float]) -> dict[str, float | None]:
    """The table's metrics from one kernel's ncu metrics; None where a source is missing (or a ratio's
    denominator is zero: a kernel with no shared-memory instruction has no conflicts per request)."""
    values: dict[str, float | None] = {}
    for metric in METRICS:
        parts = [raw.get(source) for source in metric.sources]
        if any(part is None for part in parts):
            values[metric.key] = None
        elif metric.combine == "sum":
            values[metric.key] = sum(parts) * metric.scale
        elif metric.combine == "ratio":
            values[metric.key] = parts[0] / parts[1] * metric.scale if parts[1] else None
        else:
            values[metric.key] = parts[0] * metric.scale
    return values


@dataclass(frozen=True)
class RooflinePoint:
    label: str
    flops_per_byte: float
    gflops: float


def roofline_point(label: str, raw: dict[str, float]) -> RooflinePoint | None:
    """Where a kernel sits on the roofline: FP32 operations per DRAM byte, and GFLOP/s; None without both."""
    flops = sum(raw.get(name, 0.0) * weight for name, weight in FLOP_SOURCES.items())
    seconds = raw.get("gpu__time_duration.sum", 0.0) * 1e-9
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


def table(kernel: str, mine: dict[str, float | None], reference: dict[str, float | None] | None) -> str:
    """One kernel's metrics, beside the reference's where there is one."""
    heads = ["metric", "yours"] + (["reference"] if reference is not None else [])
    rows = [[f"{m.label}" + (f" ({m.unit})" if m.unit else ""), _shown(mine.get(m.key))]
            + ([_shown(reference.get(m.key))] if reference is not None else []) for m in METRICS]
    widths = [max(len(row[i]) for row in rows + [heads]) for i in range(len(heads))]
    lines = [f"{kernel}:", "  " + "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in
                                           enumerate(zip(heads, widths)))]
    lines += ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
              for row in rows]
    return "\n".join(lines)


def report(config: LabConfig, mine: dict[str, dict[str, float]], reference: dict[str, dict[str, float]] | None,
           missing: dict[str, str]) -> str:
    """The whole text: per kernel of the config, its table and hints, or why it has none."""
    parts = [f"Profile of {config.name}'s timed kernels (Nsight Compute, one launch each)."]
    for entry in config.profile:
        if entry.kernel in missing:
            parts.append(f"{entry.kernel}: not measured: {missing[entry.kernel]}")
            continue
        values = derive(mine.get(entry.kernel, {}))
        theirs = derive(reference[entry.kernel]) if reference and entry.kernel in reference else None
        parts.append(table(entry.kernel, values, theirs))
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


def profile_build(config: LabConfig, binary: Path, ncu: Path, workdir: Path) -> Profiled:
    """Each [[profile]] kernel of a built test program, measured in a run of its timing case under ncu."""
    workdir.mkdir(parents=True, exist_ok=True)
    profiled = Profiled({}, {})
    for entry in config.profile:
        csv_report = workdir / f"{entry.kernel}.csv"
        csv_report.unlink(missing_ok=True)
        results = workdir / f"{entry.kernel}.jsonl"
        run, extra = command(binary, entry.case, ncu_command(ncu, entry.kernel, csv_report))
        env = scrubbed_env(workdir, {"KIT_RESULTS": str(results), **extra})
        process = run_process(run, cwd=workdir, env=env, timeout_s=PROFILE_TIMEOUT_S)
        text = csv_report.read_text(errors="replace") if csv_report.is_file() else ""
        measured = parse_report(text)
        if entry.kernel in measured:
            profiled.kernels[entry.kernel] = measured[entry.kernel]
        elif COUNTERS_LOCKED in text + process.output:
            raise ProfileError(counters_locked_message())
        else:
            profiled.missing[entry.kernel] = (
                f"Nsight Compute saw no third launch of it while '{entry.case}' ran (the program "
                f"{process.describe_exit()}). Does that test pass (`make test`)? The end of the output:\n"
                + (text + process.output)[-1500:])
    return profiled


class ProfileError(Exception):
    """Profiling cannot run here: the message says why and what to do."""


def write_profile(config: LabConfig, mine: Profiled, reference: Profiled | None, out: Path) -> str:
    """report.txt and roofline.png in `out`; returns the report's text."""
    out.mkdir(parents=True, exist_ok=True)
    text = report(config, mine.kernels, reference.kernels if reference else None, mine.missing)
    points = [point for kernel, raw in mine.kernels.items() if (point := roofline_point(f"{kernel} (yours)", raw))]
    if reference:
        points += [point for kernel, raw in reference.kernels.items()
                   if (point := roofline_point(f"{kernel} (reference)", raw))]
    limits = next((found for raw in mine.kernels.values() if (found := roofs(raw))), None)
    picture = draw_roofline(out / "roofline.png", f"{config.name}: timed kernels", points, *(limits or (0.0, 0.0)))
    text += "\n" + picture + "\n"
    (out / "report.txt").write_text(text)
    return text
