"""How long grading a class takes: a generated class of N submissions of one lab, graded by grade-class.

The class is graded in the OS sandbox, as grade-class grades a TA's: where none can run, the bench
refuses as grade-class does, and --no-sandbox measures without it (the report's "sandboxed" says which).

    python3 -m grader.bench.class_bench --lab 01-vector-add --n 200 [--out DIR]
    make bench-class LAB=01-vector-add N=200

The class is made from the lab's own material: copies of the reference (most
of the class), its wrong-on-purpose variants ([[wrong]] in hidden.toml), a
slow one (every kernel launch done twice), the untouched skeleton, and broken
ones: a compile error, a kernel that never ends, a kernel that faults, and a
forbidden identifier (refused at intake). It prints, and writes to
OUT/bench.json, the total time, where the students' time went (build,
correctness, serial tests and timing, lock waits), the outcome per kind,
whether every copy of the reference scored full marks, each GPU's share of the
students and its reference timing, any program that ran beside a timing on its GPU, and how
busy the cores and GPUs were (to tell which one limits). Stopped by SIGTERM or
Ctrl-C, it lets the running programs finish and reports what was graded.

--repeat K grades the same class K times (everything regraded) and reports
how far each student's performance score moved between runs; --rival runs a
second grader on a copy of the class at the same time, on the same GPU, as
another TA would.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from grader import buildinfo, classroom, sandbox, summary
from grader.config import REPO_ROOT, LabConfig, load_lab
from grader.errors import GraderError, NoGpu
from grader.gpulock import choose_gpus, host_gpus
from grader.grade import fresh_workroot, remove_workroot
from grader.proc import cores, interrupt_on_sigterm, run_process

KERNEL_START = re.compile(r"__global__\s+void\s+\w+\s*\([^)]*\)\s*\{")
LAUNCH_LINE = re.compile(r"^\s*[\w:<>]+<<<.*>>>\(.*\);\s*$", re.M)
RIVAL_TIMEOUT_S = 6 * 3600
# What a TA needs of every lab: its class of CLASS_SIZE graded within CLASS_TARGET_S on one GPU. A smaller
# run is held to it at its pace: its time a student, reference build and timing included, times CLASS_SIZE.
CLASS_SIZE = 200
CLASS_TARGET_S = 600.0
# The fewest students a stopped run must have graded for its pace to stand for the class's (issue 19 counts a run
# of 20).
SAMPLE_MIN = 20


def _into_first_kernel(text: str, code: str) -> str:
    match = KERNEL_START.search(text)
    if match is None:
        raise ValueError("no __global__ function found to break")
    return text[:match.end()] + "\n" + code + text[match.end():]


def broken(kind: str, text: str) -> str:
    """The reference's main file made wrong in one of the ways students' submissions break."""
    if kind == "compile-error":
        return text + "\nint this_line_does_not_compile = ;\n"
    if kind == "never-ends":
        # The clock is never negative, but the compiler cannot know it: a loop on a constant it could
        # drop (a `volatile` local becomes a register, and ptxas then removes the loop).
        return _into_first_kernel(text, "  while (clock64() >= 0) {\n  }\n")
    if kind == "faults":
        return _into_first_kernel(text, "  *static_cast<volatile int*>(nullptr) = 0;\n")
    if kind == "forbidden":
        return text + "\nstatic int (*peek)(const char*) = system;\n"
    if kind == "slow":
        return LAUNCH_LINE.sub(lambda m: m.group(0) + "\n" + m.group(0), text)
    raise ValueError(kind)


def class_pace(total_s: float, students: int, graded: int, fixed_s: float = 0.0) -> dict:
    """A run's time per student, what a class of CLASS_SIZE would take at that pace, and whether that is within
    CLASS_TARGET_S. A run that graded every student counts them all; one stopped part-way (a deadline, Ctrl-C)
    counts the students it finished, if at least SAMPLE_MIN: the roster spreads each kind evenly (spread), so they
    are a sample of the class, and its time also paid for the students still in flight, so its pace errs slow. A run
    with fewer, or none (no GPU), says nothing: per_student_s None. The pace spreads `fixed_s` (the reference's build
    and timing) over the students graded; a class pays it once, which class_of_200_paid_once_s counts. Past the
    target even so, how many GPUs a Slurm array (`grader slurm --shards K`) needs for it: each task pays `fixed_s` and
    grades its share of the class at the run's pace without it."""
    counted = graded if graded == students or graded >= SAMPLE_MIN else 0
    if counted == 0:
        return {"per_student_s": None, "class_of_200_s": None, "class_of_200_paid_once_s": None,
                "within_class_target": False}
    per_student = total_s / counted
    projected = per_student * CLASS_SIZE
    without_fixed = max(0.0, total_s - fixed_s) / counted
    paid_once = fixed_s + without_fixed * CLASS_SIZE
    pace = {"per_student_s": round(per_student, 2), "class_of_200_s": round(projected, 1),
            "class_of_200_paid_once_s": round(paid_once, 1), "within_class_target": projected <= CLASS_TARGET_S}
    if projected > CLASS_TARGET_S and paid_once > CLASS_TARGET_S:
        pace["slurm"] = slurm_shards(without_fixed, fixed_s)
    return pace


def slurm_shards(per_student_s: float, fixed_s: float) -> dict | None:
    """The fewest shards whose tasks each grade their share of CLASS_SIZE within CLASS_TARGET_S, and how long a task
    takes then; None when even one student a task would not fit."""
    for shards in range(1, CLASS_SIZE + 1):
        task_s = fixed_s + per_student_s * math.ceil(CLASS_SIZE / shards)
        if task_s <= CLASS_TARGET_S:
            return {"shards": shards, "task_s": round(task_s, 1)}
    return None


def pace_line(lab: str, entry: dict, students: int, left_out: tuple[str, ...] = ()) -> str:
    """The run's pace against the class target, in a sentence; past it, the Slurm array that would meet it. A class
    generated without some kinds (`left_out`) says so first: it is not the class the target counts."""
    if entry["per_student_s"] is None:
        return (f"{lab}: {entry['graded']} of {students} students graded, fewer than the {SAMPLE_MIN} a stopped run "
                f"needs, so the run says nothing of the class target")
    verdict = "within" if entry["within_class_target"] else "OVER"
    stopped = (f" (stopped after {entry['graded']} of {students}, an even sample; the students still in flight are "
               f"not counted, so this errs slow)" if entry["graded"] != students else "")
    line = (f"{lab}: {entry['per_student_s']} s a student{stopped}, so {entry['class_of_200_s']:.0f} s for a class "
            f"of {CLASS_SIZE} on this machine: {verdict} the {CLASS_TARGET_S:.0f} s target")
    if left_out:
        line += (f" (a class without its {', '.join(left_out)} submissions, each replaced by a copy of the "
                 f"reference: not the class the target counts)")
    paid_once = entry.get("class_of_200_paid_once_s")
    if not entry["within_class_target"] and paid_once is not None and paid_once <= CLASS_TARGET_S:
        line += (f"; with the reference's build and timing paid once rather than in each student's pace, one GPU "
                 f"grades the class in about {paid_once:.0f} s")
    elif entry.get("slurm"):
        line += (f"; a Slurm array of {entry['slurm']['shards']} GPUs (grader slurm --shards "
                 f"{entry['slurm']['shards']}) takes about {entry['slurm']['task_s']:.0f} s")
    alone = entry.get("phases_s", {}).get("serial_and_timing_s", {}).get("mean")
    if alone:
        # Nothing runs beside a student's serial tests and timing, so this much of the class is one GPU's alone.
        line += (f". Its students held the GPU alone {alone:.2f} s each (serial tests and timing), "
                 f"{alone * CLASS_SIZE:.0f} s of any class of {CLASS_SIZE} on one GPU")
    others = entry.get("machine", {}).get("other_gpus_in_use")
    if others:
        busy = ", ".join(f"GPU {gpu} in {share:.0%} of its seconds" for gpu, share in sorted(others.items()))
        line += (f". Other GPUs of this host ran kernels meanwhile ({busy}): beside busy GPUs of their host, "
                 f"students have held the GPU alone up to 4x as long as on a host to themselves "
                 f"(docs/gpu-runs/2026-11-27-h200x4-all-labs-cross-gpu.md), so this is not one GPU's pace")
    if students < CLASS_SIZE and not entry["within_class_target"]:
        # Measured 2026-11-27: at N = 20, lab 01's last program ended 82 s in, with the cores 10 % busy.
        line += (f". A class of {students} also pays the reference's build and one student's whole grading, start "
                 f"to finish, before its pace settles, so it overstates a class of {CLASS_SIZE}: run N={CLASS_SIZE} "
                 f"to know")
    return line


# The broken, slow and untouched kinds of a generated class, each as one in how many students (composition).
ONE_IN = {"compile-error": 100, "forbidden": 100, "skeleton": 50, "faults": 100, "never-ends": 200, "slow": 20}
# Every kind besides the reference; --leave-out takes any of them out.
KINDS = (*ONE_IN, "wrong")


def composition(n: int, wrong: int, leave_out: frozenset[str] = frozenset()) -> list[str]:
    """The kinds of N submissions, in roster order. A class of CLASS_SIZE or more: about 1 in 5 wrong, 1 in 20
    slow, 1 in 50 the skeleton, 1 in 100 each broken way (1 in 200 never ends: each costs its time limits in GPU
    time), the rest the reference; each kind, and each wrong variant, at least once. A smaller class is an even
    sample of the class of CLASS_SIZE, so that its time a student, times CLASS_SIZE, estimates that class's (issue
    19 counts a run of 20 so): a class of 20 made of one of each kind would be two thirds wrong or broken, and
    cheaper or dearer a student than a real class. Either way each kind is spread evenly through the roster
    (spread), as the alphabet spreads a real class's mistakes. A kind in `leave_out` (KINDS) becomes copies of the
    reference instead, so that a run can be seen apart from it (the never-ending kernel, which holds a GPU for its
    time limits); such a class is not the one the target counts."""
    whole = _whole_class(max(n, CLASS_SIZE), wrong)
    kinds = spread(whole if n >= CLASS_SIZE else [whole[i * CLASS_SIZE // n] for i in range(n)])
    return ["reference" if family(kind) in leave_out else kind for kind in kinds]


def family(kind: str) -> str:
    """A submission's kind, its wrong variants ("wrong-3") counted as one ("wrong")."""
    return "wrong" if kind.startswith("wrong-") else kind


def spread(kinds: list[str]) -> list[str]:
    """`kinds` reordered so that each kind's members lie at even steps through the list (the wrong variants
    counted as one kind, taken in their order). A class is graded in roster order, so a run stopped part-way has
    graded an even sample of it: with each kind in a block, lab 05's first 71 students were 61 wrong, slow or
    broken ones and 10 references, whose costs differ, and the run's pace said little of the class's."""
    members: dict[str, list[str]] = {}
    for kind in kinds:
        members.setdefault(family(kind), []).append(kind)
    slots = sorted(((j + 0.5) / len(group), order, kind)
                   for order, group in enumerate(members.values()) for j, kind in enumerate(group))
    return [kind for _, _, kind in slots]


def _whole_class(n: int, wrong: int) -> list[str]:
    shares = [(kind, n // one_in) for kind, one_in in ONE_IN.items()] + [(f"wrong-{i}", 0) for i in range(wrong)]
    kinds = ["reference"]
    for kind, count in shares:
        kinds += [kind] * max(1 if len(kinds) < n else 0, count)
    wrong_total = max(0, n // 5 - wrong)
    kinds += [f"wrong-{i % wrong}" for i in range(wrong_total)] if wrong else []
    kinds = kinds[:n]
    return kinds + ["reference"] * (n - len(kinds))


def make_class(config: LabConfig, n: int, folder: Path, leave_out: frozenset[str] = frozenset()) -> dict[str, str]:
    """Write N submissions into `folder` (without the kinds in `leave_out`: composition); returns student -> kind."""
    if config.solution_dir is None:
        raise SystemExit(f"{config.name} has no solutions/ folder: the benchmark needs the reference")
    reference = {name: (config.solution_dir / name).read_text() for name in config.student_files}
    skeleton = {name: (config.lab_dir / name).read_text() for name in config.student_files}
    wrong = list(buildinfo.variant_sources(config, "wrong").items())
    main = config.student_files[0]
    kinds = {}
    for i, kind in enumerate(composition(n, len(wrong), leave_out)):
        student = f"student-{i:03d}-{kind}"
        if kind == "reference":
            files = reference
        elif kind == "skeleton":
            files = skeleton
        elif kind.startswith("wrong-"):
            name, files = wrong[int(kind.removeprefix("wrong-"))]
            kind = f"wrong {name}"
        else:
            files = dict(reference, **{main: broken(kind, reference[main])})
        for name, text in files.items():
            (folder / student / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / student / name).write_text(text)
        kinds[student] = kind
    return kinds


def _stats(values: list[float]) -> dict:
    if not values:
        return {}
    return {"sum": round(sum(values), 1), "mean": round(statistics.mean(values), 2),
            "median": round(statistics.median(values), 2), "max": round(max(values), 2)}


def public_name(config: LabConfig) -> dict[str, str]:
    """Case name -> the name the report gives it: a hidden test is "hidden test k of <lab>", so that a report
    committed to the repository (docs/gpu-runs/) does not publish hidden tests (the release's leak check)."""
    hidden = [t.name for t in config.tests if t.hidden]
    return {name: f"hidden test {k} of {config.name} (named in solutions/)" for k, name in enumerate(hidden, 1)}


def scored_on(result: dict) -> str:
    """The key of the GPU a student was scored on: the one that timed them (or ran their tests, if none did)."""
    return result["extra_data"].get("scored_on_gpu", {}).get("key", "?")


def _programs_by_gpu(results: dict[str, dict]) -> dict[str, list[dict]]:
    """Every test program the class ran, by the GPU it ran on (its own record's, else the student's): each
    student's, and each GPU's reference timing once."""
    by_gpu: dict[str, dict[tuple, dict]] = {}
    for student, result in results.items():
        extra = result["extra_data"]
        for who, key in ((student, "programs"), ("reference", "reference_programs")):
            for program in extra.get(key, []):
                gpu = program.get("gpu", scored_on(result))
                by_gpu.setdefault(gpu, {})[(who, tuple(program["at"]), program["hold"])] = dict(program, who=who)
    return {gpu: sorted(programs.values(), key=lambda p: p["at"][0]) for gpu, programs in by_gpu.items()}


def gpu_exclusivity(results: dict[str, dict]) -> dict:
    """Per GPU: the programs that needed it alone (timing, serial tests), and every other program whose run
    overlapped one of them in time (none, when the GPU lock held); wall-clock times, so all GPUs' line up."""
    report = {}
    for gpu, programs in _programs_by_gpu(results).items():
        alone = [p for p in programs if p["hold"] == "alone"]
        beside = [f"{a['who']} (alone, {a['at']}) and {p['who']} ({p['hold']}, {p['at']})" for a in alone
                  for p in programs if p is not a and p["at"][0] < a["at"][1] and a["at"][0] < p["at"][1]]
        report[gpu] = {"programs": len(programs), "alone": len(alone), "overlapping_an_alone_one": beside}
    return report


def _program_kind(program: dict) -> str:
    if program["hold"] == "alone":
        return "alone"
    return "shared, several cases" if len(program["cases"]) > 1 else "shared, one case"


def _company(program: dict, programs: list[dict]) -> float:
    """How many other programs ran on its GPU while `program` ran, on average over its run."""
    start, end = program["at"]
    overlap = sum(max(0.0, min(end, other["at"][1]) - max(start, other["at"][0]))
                  for other in programs if other is not program)
    return overlap / (end - start) if end > start else 0.0


COMPANY_BUCKETS = ((0.0, "under 1"), (1.0, "1 to 3"), (3.0, "3 to 5"), (5.0, "5 or more"))


def program_durations(results: dict[str, dict]) -> dict:
    """Per GPU and kind of program (alone, or shared with one case or several): how long its runs took, by how
    many other programs ran beside them. Whether a program slows down as others join it tells a GPU or driver
    that serializes them (time-slicing between processes, CUDA starts) from a pipeline that leaves the GPU idle."""
    report: dict[str, dict] = {}
    for gpu, programs in _programs_by_gpu(results).items():
        table: dict[str, dict[str, list[float]]] = {}
        for program in programs:
            company = _company(program, programs)
            bucket = next(label for low, label in reversed(COMPANY_BUCKETS) if company >= low)
            table.setdefault(_program_kind(program), {}).setdefault(bucket, []).append(
                program["at"][1] - program["at"][0])
        report[gpu] = {kind: {label: {"count": len(by[label]), **_stats(by[label])} for _, label in COMPANY_BUCKETS
                              if label in by}
                       for kind, by in sorted(table.items())}
    return report


def program_starts(results: dict[str, dict]) -> dict:
    """Per GPU: the test programs the class started there, a student scored there and a second (from the first
    start to the last end). Each program starts two or three CUDA contexts (the judge's, the runner's, a timing's twin), and the driver
    starts and ends contexts one at a time for the whole host, about 6 a second on an H200 host
    (docs/gpu-runs/2026-11-27-h200x2-pool-all-selfchecks.md): a class that starts programs near that rate is paced
    by its program starts, not by its GPU work, and only fewer programs a student make it faster."""
    students = Counter(scored_on(result) for result in results.values())
    report = {}
    for gpu, programs in _programs_by_gpu(results).items():
        if not programs:
            continue
        span = max(p["at"][1] for p in programs) - min(p["at"][0] for p in programs)
        report[gpu] = {"programs": len(programs),
                       "per_student": round(len(programs) / students[gpu], 2) if students[gpu] else None,
                       "per_second": round(len(programs) / span, 2) if span > 0 else None}
    return report


def gpu_busy_levels(results: dict[str, dict]) -> dict:
    """Per GPU: the share of the run (first program's start to last one's end) during which 0, 1, 2, ... test
    programs ran on it at once. Time with none is time the pipeline left the GPU waiting."""
    report: dict[str, dict[str, float]] = {}
    for gpu, programs in _programs_by_gpu(results).items():
        events = sorted([(p["at"][0], 1) for p in programs] + [(p["at"][1], -1) for p in programs])
        if not events or events[-1][0] <= events[0][0]:
            continue
        spans: dict[int, float] = {}
        running, last = 0, events[0][0]
        for at, change in events:
            spans[running] = spans.get(running, 0.0) + at - last
            running, last = running + change, at
        total = events[-1][0] - events[0][0]
        report[gpu] = {str(level): round(span / total, 3) for level, span in sorted(spans.items()) if span > 0}
    return report


def gpus(config: LabConfig, kinds: dict[str, str], results: dict[str, dict]) -> dict:
    """Per GPU: the students scored there (timed there, or, untimed, tested there; not those that ran nothing), the
    reference copies among them at full marks, when its last program ended, and the reference timing its students were scored against:
    one per GPU, taken on that GPU."""
    report: dict[str, dict] = {}
    by_gpu = _programs_by_gpu(results)
    first = min((p["at"][0] for programs in by_gpu.values() for p in programs), default=0.0)
    shown = public_name(config)
    for student, result in sorted(results.items()):
        extra = result["extra_data"]
        gpu = extra.get("scored_on_gpu")
        if gpu is None:  # refused, or not compiled: it ran on no GPU
            continue
        entry = report.setdefault(scored_on(result), {
            "name": gpu.get("name", ""), "cuda_visible_devices": gpu.get("cuda_visible_devices", ""),
            "students": 0, "references": 0, "references_full_marks": 0, "reference_timings": [],
            "reference_timed_at": [], "reference_timed_elsewhere": False})
        entry["students"] += 1
        if kinds.get(student) == "reference":
            entry["references"] += 1
            entry["references_full_marks"] += result["score"] >= config.autograded_points
        medians = {shown.get(case, case): [t.get("median_s") for t in timings] for case, timings in
                   extra.get("reference_timings", {}).items()}
        if medians and medians not in entry["reference_timings"]:
            entry["reference_timings"].append(medians)
        timing = [p for p in extra.get("reference_programs", []) if p["hold"] == "alone"]
        timed_at = [p["at"] for p in timing]
        if timed_at and timed_at not in entry["reference_timed_at"]:
            entry["reference_timed_at"].append(timed_at)
        entry["reference_timed_elsewhere"] |= any(p.get("gpu", scored_on(result)) != scored_on(result)
                                                  for p in timing)
    every_timing = [json.dumps(t) for entry in report.values() for t in entry["reference_timed_at"]]
    for gpu, entry in report.items():
        ends = [p["at"][1] for p in by_gpu.get(gpu, [])]
        entry["last_program_ended_s"] = round(max(ends) - first, 1) if ends else 0.0
        # Its own: one reference timing for all its students, taken on this GPU, and no other GPU's.
        entry["timed_against_its_own_reference"] = (len(entry["reference_timings"]) <= 1
                                                    and len(entry["reference_timed_at"]) <= 1
                                                    and not entry.pop("reference_timed_elsewhere")
                                                    and all(every_timing.count(json.dumps(t)) == 1
                                                            for t in entry["reference_timed_at"]))
    return report


def _thirds(values: list[float]) -> list[float]:
    """The medians of the first, middle and last third of `values` (in the order given)."""
    cut = [values[len(values) * k // 3:len(values) * (k + 1) // 3] for k in range(3)]
    return [round(statistics.median(part), 3) for part in cut if part]


def reference_copies_losing_points(config: LabConfig, kinds: dict[str, str], results: dict[str, dict]) -> dict:
    """Each test on which a reference copy lost points: how many copies did, which (their results and report.txt
    say why) and, for a public test or a performance item, the first line of what the first one was told (a
    hidden test's text stays in solutions/, as its name does). Empty when every copy had full marks."""
    shown = public_name(config)
    losses: dict[str, dict] = {}
    for student in sorted(s for s, k in kinds.items() if k == "reference" and s in results):
        for test in results[student]["tests"]:
            if "score" not in test or test["score"] >= test["max_score"]:  # no score: a TA grades it by hand
                continue
            name = shown.get(test["name"], test["name"])
            entry = losses.setdefault(name, {"copies": 0, "students": []})
            entry["copies"] += 1
            entry["students"].append(student)
            if name == test["name"] and "told" not in entry:
                lines = (test.get("output") or "").strip().splitlines()
                entry["told"] = lines[0][:300] if lines else ""
    return losses


def reference_copies_timed(config: LabConfig, kinds: dict[str, str], results: dict[str, dict]) -> dict:
    """How the copies of the reference timed against the reference timing they were scored on, per measurement
    that earns points: their ratios (1 is the reference's own time), how many were past full_at, and the median
    ratio of the first, middle and last third of them in the order they were timed. A drift between the thirds
    says the machine changed over the run; a spread without one, that single timings are noisy."""
    report = {}
    for spec in (p for p in config.perf if p.points > 0):
        timed = []
        for student, result in results.items():
            extra = result["extra_data"]
            mine = next((t for t in extra.get("timings", {}).get(spec.case, []) if t.get("name") == spec.measurement),
                        None)
            theirs = next((t for t in extra.get("reference_timings", {}).get(spec.case, [])
                           if t.get("name") == spec.measurement), None)
            when = [p["at"][0] for p in extra.get("programs", []) if spec.case in p["cases"]]
            if kinds.get(student) == "reference" and mine and theirs and theirs.get("median_s") and when:
                timed.append((when[-1], mine["median_s"] / theirs["median_s"]))
        ratios = [r for _, r in sorted(timed)]
        if ratios:
            report[spec.measurement] = {
                "copies": len(ratios), "ratio_min": round(min(ratios), 3),
                "ratio_median": round(statistics.median(ratios), 3), "ratio_max": round(max(ratios), 3),
                "past_full_at": sum(r > spec.full_at for r in ratios), "full_at": spec.full_at,
                "ratio_median_by_third": _thirds(ratios)}
    return report


def took_parts(record: dict) -> dict[str, float]:
    """A timing record's took_s by part (its took_<part>_s fields: inputs, checks, the clocked requests, ...),
    with what they leave of it as "rest"; {} for a record without them (an older harness, a ceiling)."""
    parts = {key.removeprefix("took_").removesuffix("_s"): float(value) for key, value in record.items()
             if key.startswith("took_") and key.endswith("_s") and key != "took_s"}
    if parts:
        parts["rest"] = float(record["took_s"]) - sum(parts.values())
    return parts


def timing_program(config: LabConfig, kinds: dict[str, str], results: dict[str, dict]) -> dict:
    """Where a reference copy's timing program, which holds the GPU alone, spends its seconds (the mean over the
    copies whose every timing case ran in it): its processes' start and exit (the program's run less its cases'
    own seconds), each case's set-up outside its measurements (inputs, references, checks of the case), and the
    measurements (warm-up, samples, the twin's path, checks of timed outputs). {} without such a copy."""
    parts: dict[str, list[float]] = {}
    for student, kind in kinds.items():
        extra = results.get(student, {}).get("extra_data", {})
        seconds = [extra.get("case_s", {}).get(case) for case in config.timing_cases]
        if kind != "reference" or not config.timing_cases or None in seconds:
            continue
        run, tests = sum(s["run"] for s in seconds), sum(s["test"] for s in seconds)
        measuring = sum(record.get("took_s", 0.0) for case in config.timing_cases
                        for record in extra.get("timings", {}).get(case, []))
        for part, value in (("program", run), ("start_and_exit", run - tests), ("set_up_in_cases", tests - measuring),
                            ("measurements", measuring)):
            parts.setdefault(part, []).append(value)
    return {part: round(statistics.mean(values), 2) for part, values in parts.items()}


def analyse(config: LabConfig, kinds: dict[str, str], out: Path) -> dict:
    results = summary.read_results(out, sorted(kinds))
    shown = public_name(config)
    phases: dict[str, list[float]] = {}
    cases: dict[str, dict[str, list[float]]] = {}
    measurements: dict[str, dict[str, list[float]]] = {}
    measurement_parts: dict[str, dict[str, dict[str, list[float]]]] = {}
    by_kind: dict[str, list[float]] = {}
    phases_by_kind: dict[str, dict[str, list[float]]] = {}
    perf: dict[str, float] = {}
    busy: Counter[str] = Counter()
    for student, result in results.items():
        extra = result["extra_data"]
        kind = kinds[student].split(" ")[0]
        for phase, seconds in extra.get("phases_s", {}).items():
            phases.setdefault(phase, []).append(seconds)
            phases_by_kind.setdefault(kind, {}).setdefault(phase, []).append(seconds)
        for key, seconds in extra.get("lock_wait_by_kind_s", {}).items():
            phases.setdefault(f"lock_wait_{key}", []).append(seconds)
        for case, seconds in extra.get("case_s", {}).items():
            for part, value in seconds.items():
                cases.setdefault(shown.get(case, case), {}).setdefault(part, []).append(value)
        for case, records in extra.get("timings", {}).items():
            for record in records:
                if "took_s" in record:
                    measurements.setdefault(shown.get(case, case), {}).setdefault(record["name"], []).append(
                        record["took_s"])
                    for part, seconds in took_parts(record).items():
                        measurement_parts.setdefault(shown.get(case, case), {}).setdefault(
                            record["name"], {}).setdefault(part, []).append(seconds)
        busy.update(shown.get(case, case) for case in extra.get("found_busy_beside_others", []))
        by_kind.setdefault(kind, []).append(result["score"])
        perf[student] = sum(t["score"] for t in result["tests"] if t["name"].startswith("performance"))
    references = [results[s]["score"] for s, k in kinds.items() if k == "reference" and s in results]
    return {
        "graded": len(results),
        "phases_s": {phase: _stats(values) for phase, values in sorted(phases.items())},
        # Where the GPU-side time goes, the costliest case first: "run" is the whole program, "test" the case.
        "cases_s": dict(sorted(((case, {part: _stats(v) for part, v in parts.items()}) for case, parts in cases.items()),
                               key=lambda item: -item[1]["run"]["sum"])),
        # Inside each timing case, what each measurement took in all (warm-up, samples, inputs, checks), the
        # costliest first: the rest of the case's "test" time is its set-up, and ceilings it does not report.
        "measurements_s": {case: dict(sorted(((name, _stats(v)) for name, v in took.items()),
                                             key=lambda item: -item[1]["sum"]))
                           for case, took in measurements.items()},
        # ... and where each one's time went (kit::Timing::Cost), the mean per student, the costliest part first
        "measurement_parts_s": {case: {name: dict(sorted(((part, round(statistics.mean(v), 3))
                                                         for part, v in split.items()), key=lambda item: -item[1]))
                                       for name, split in names.items()}
                                for case, names in measurement_parts.items()},
        # A reference copy's timing program, which holds the GPU alone, from its start to its exit
        "timing_program_s": timing_program(config, kinds, results),
        "scores_by_kind": {kind: _stats(scores) for kind, scores in sorted(by_kind.items())},
        # What a student of each kind cost, phase by phase (the mean): a reference copy, whose failures are none,
        # against a wrong one, each of whose failed cases runs again in a program of its own
        "phases_by_kind_s": {kind: {phase: round(statistics.mean(v), 2) for phase, v in sorted(split.items())}
                             for kind, split in sorted(phases_by_kind.items())},
        # Cases whose check found the GPU busy beside other programs, and so ran again alone: how many students'
        # (what that costs is in serial_and_timing_s)
        "found_busy_beside_others": dict(busy.most_common()),
        "references_full_marks": f"{sum(s >= config.autograded_points for s in references)}/{len(references)}",
        "needs_a_look": sum(bool(r["extra_data"].get("attention")) for r in results.values()),
        "reference_copies_losing_points": reference_copies_losing_points(config, kinds, results),
        "reference_copies_timed": reference_copies_timed(config, kinds, results),
        # each GPU's reference, timed at the start and again at the end (summary.reference_timings_text)
        "reference_timed_again": [json.loads(p.read_text()) for p in
                                  sorted(out.glob(summary.REFERENCE_TIMINGS.format(gpu="*")))],
        "gpus": gpus(config, kinds, results),
        "gpu_exclusivity": gpu_exclusivity(results),
        "program_durations_by_company": program_durations(results),
        "gpu_busy_levels": gpu_busy_levels(results),
        "program_starts": program_starts(results),
        "performance_scores": perf,
    }


def cpu_times() -> list[int] | None:
    """The machine's CPU time counters (/proc/stat's "cpu" line, in ticks), or None where there is none."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    return [int(field) for field in first[1:9]] if first and first[0] == "cpu" else None


def cpu_busy_share(before: list[int] | None, after: list[int] | None) -> float | None:
    """The share of all cores' time spent busy between two cpu_times() (idle and waiting on I/O are not)."""
    if before is None or after is None:
        return None
    spent = [b - a for a, b in zip(before, after)]
    total = sum(spent)
    return round(1 - (spent[3] + spent[4]) / total, 3) if total > 0 else None


def children_cpu_s() -> float:
    """CPU seconds (user and system) of this process's children that have ended: the grader, every build and
    test program of the run, once reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def gpu_utilization(samples: str) -> dict[str, dict]:
    """Per GPU index, from nvidia-smi's "index, utilization.gpu" lines (one a second): the mean share of time a
    kernel was running, the share of seconds in which one ran at all, and how many samples they rest on."""
    by_gpu: dict[str, list[float]] = {}
    for line in samples.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 2 and parts[1].replace(".", "", 1).isdigit():
            by_gpu.setdefault(parts[0], []).append(float(parts[1]))
    return {gpu: {"mean_percent": round(statistics.mean(values), 1),
                  "busy_share": round(sum(1 for v in values if v > 0) / len(values), 3), "samples": len(values)}
            for gpu, values in sorted(by_gpu.items())}


def other_gpus_in_use(utilization: dict[str, dict], graded_on: set[str]) -> dict[str, float]:
    """The GPUs of this host that the run did not grade on but that ran kernels in some of its seconds (another
    grader, say): index -> that share of seconds."""
    return {gpu: use["busy_share"] for gpu, use in utilization.items()
            if gpu not in graded_on and use.get("busy_share", 0) > 0}


class MachineUse:
    """How busy the machine was while a class was graded, to tell where the bottleneck lies: the cores (all of
    them, from /proc/stat, and the CPU seconds of the run's own processes) and each GPU (nvidia-smi, once a
    second)."""

    def __enter__(self) -> "MachineUse":
        host = host_gpus()
        mine = {gpu.key for gpu in choose_gpus(host, os.environ.get("CUDA_VISIBLE_DEVICES"))}
        self.graded_on = {str(index) for index, gpu in enumerate(host) if gpu.key in mine}
        self.cpu = cpu_times()
        self.children = children_cpu_s()
        self.samples = tempfile.TemporaryFile(mode="w+")
        smi = shutil.which("nvidia-smi")
        self.sampler = None if smi is None else subprocess.Popen(
            [smi, "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits", "-l", "1"],
            stdout=self.samples, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc) -> None:
        if self.sampler is not None:
            self.sampler.terminate()
            self.sampler.wait()
        utilization = gpu_utilization(self._samples())
        self.report = {
            "cores": cores(),
            "cpu_busy_share": cpu_busy_share(self.cpu, cpu_times()),
            "grading_cpu_s": round(children_cpu_s() - self.children, 1),
            "gpu_utilization": utilization,
            "other_gpus_in_use": other_gpus_in_use(utilization, self.graded_on),
        }

    def _samples(self) -> str:
        self.samples.seek(0)
        text = self.samples.read()
        self.samples.close()
        return text


def _rival(config: LabConfig, submissions: Path, out: Path, stop: threading.Event, report: dict) -> None:
    """Another TA's grader on the same GPU: grade-class, over and over, until told to stop."""
    rounds = 0
    while not stop.is_set():
        done = run_process([sys.executable, "-m", "grader", "grade-class", "--lab", config.name, "--submissions",
                            str(submissions), "--out", str(out), "--regrade"], cwd=REPO_ROOT,
                           env=dict(os.environ), timeout_s=RIVAL_TIMEOUT_S)
        rounds += 1
        if not done.ok:
            report["rival_problem"] = done.output[-2000:]
            return
    report["rival_rounds"] = rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.bench.class_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", required=True)
    parser.add_argument("--n", type=int, default=200, help="submissions in the generated class (default 200)")
    parser.add_argument("--submissions", help="grade this class instead of generating one")
    parser.add_argument("--out", help="where the class, the results and bench.json go (default: a temporary folder)")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--gpu-jobs", type=int, default=classroom.DEFAULT_GPU_JOBS)
    parser.add_argument("--repeat", type=int, default=1, help="grade the class this many times (all regraded)")
    parser.add_argument("--rival", action="store_true", help="a second grader grades a copy of the class meanwhile")
    parser.add_argument("--judge-per-program", action="store_true",
                        help="start a judge for each test program, as grading did before serving judges")
    parser.add_argument("--leave-out", action="append", default=[], choices=KINDS, metavar="KIND",
                        help=f"generate the class without this kind of submission, a copy of the reference in its "
                             f"place (any of {', '.join(KINDS)}; repeatable): to see a run apart from, say, the "
                             f"never-ending kernel; not the class the target counts")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="grade outside the OS sandbox, where none can run: grade-class would refuse, so the "
                             "figures are not a TA's (the report says so)")
    args = parser.parse_args(argv)
    if args.submissions and args.leave_out:
        parser.error("--leave-out shapes a generated class; a class given by --submissions is graded as it is")
    interrupt_on_sigterm()  # a bench that `timeout` ends reports what was graded, as after Ctrl-C

    config = load_lab(args.lab)
    try:  # the class graded as grade-class grades it: generated submissions count as a class's, untrusted
        sandbox.apply_policy(untrusted=True, opted_out=args.no_sandbox)
    except sandbox.SandboxUnavailable as error:
        print(f"class_bench: the OS sandbox cannot run here ({error}), and grade-class would refuse to grade a class "
              f"without it; --no-sandbox measures without it.", file=sys.stderr)
        return sandbox.UNAVAILABLE_EXIT
    out = Path(args.out or tempfile.mkdtemp(prefix="kit-bench-")).resolve()
    if args.submissions:
        submissions = Path(args.submissions).resolve()
        kinds = {s.name: "given" for s in classroom.roster(submissions)}
    else:
        submissions = out / "class"
        shutil.rmtree(submissions, ignore_errors=True)
        kinds = make_class(config, args.n, submissions, frozenset(args.leave_out))
    left_out = sorted(set(args.leave_out))
    report: dict = {"lab": args.lab, "n": len(kinds), "cores": cores(), "runs": [], "left_out": left_out,
                    "judges": "one per program" if args.judge_per_program else "serving",
                    "sandboxed": sandbox.current().enabled}
    stop = threading.Event()
    rival = None
    if args.rival:
        copy = out / "rival-class"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(submissions, copy)
        rival = threading.Thread(target=_rival, args=(config, copy, out / "rival-graded", stop, report))
        rival.start()
    try:
        for run in range(args.repeat):
            graded = out / "graded"
            options = classroom.ClassOptions(jobs=args.jobs, gpu_jobs=args.gpu_jobs, regrade_all=True,
                                             judge_per_program=args.judge_per_program)
            started = time.monotonic()
            entry: dict = {}
            work = fresh_workroot()
            try:
                with MachineUse() as use:
                    try:
                        result = classroom.grade_class(config, submissions, graded, work, options)
                        entry["reference_s"] = {k: round(v, 1) for k, v in result.phases_s.items()}
                        entry["stopped"] = result.stopped
                    except NoGpu as error:
                        entry["stopped_for_want_of_a_gpu"] = str(error)
                    except GraderError as error:  # it cannot grade on this machine (a tool missing, say)
                        entry["grader_problem"] = str(error)
                    except KeyboardInterrupt:  # before the grading could stop in order (its reference build, say)
                        entry["stopped"] = True
            finally:
                # As grade-class does: a program still writing here after a stop must not cost the run its report
                # (on 2026-11-28 a class of 200's was lost to rmtree's "Directory not empty").
                remove_workroot(work, keep=False)
            entry["total_s"] = round(time.monotonic() - started, 1)
            entry["machine"] = use.report
            entry.update(analyse(config, kinds, graded))
            entry.update(class_pace(entry["total_s"], len(kinds), entry["graded"],
                                    sum(entry.get("reference_s", {}).values())))
            report["runs"].append(entry)
            print(json.dumps({k: v for k, v in entry.items() if k != "performance_scores"}, indent=2))
            print(pace_line(config.name, entry, len(kinds), tuple(left_out)))
            if {"stopped_for_want_of_a_gpu", "grader_problem"} & entry.keys() or entry.get("stopped"):
                break
    finally:
        stop.set()
        if rival is not None:
            rival.join()
    if len(report["runs"]) > 1:
        spreads = {}
        for student in kinds:
            scores = [r["performance_scores"].get(student) for r in report["runs"]]
            if all(s is not None for s in scores):
                spreads[student] = round(max(scores) - min(scores), 2)
        perf_max = sum(p.points for p in config.perf if not p.extra_credit)
        report["performance_spread"] = {"points_max": perf_max, "largest": max(spreads.values(), default=0.0),
                                        "largest_share_of_max": round(max(spreads.values(), default=0.0)
                                                                      / perf_max, 4) if perf_max else None,
                                        "by_student": spreads}
        print(json.dumps({k: v for k, v in report["performance_spread"].items() if k != "by_student"}, indent=2))
    (out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"(written to {out / 'bench.json'})")
    return 1 if any("grader_problem" in run for run in report["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
