"""What CMake needs from a lab's config, written when CMake configures the lab.

- params.txt: the [params] tables flattened to key=value lines, read by the tests;
- calls/judge_calls.cpp and calls/runner_calls.cpp: the two sides of the judge/runner
  split, generated from the lab's public header and lab.toml's call tables (grader/calls.py);
- lab.cmake: the student files, libraries, wrong variants and test cases, for
  the build targets and their ctest registration (with the compute-sanitizer
  options of the cases that run under it, the same the grader uses);
- wrong/<name>/ and right/<name>/: each deliberately wrong submission and each
  correct alternative (another block or tile size), made from the reference by
  the one text replacement hidden.toml gives, or from a whole file of solutions/<lab>/
  that it names (`source`), so it follows every edit of the reference (found
  ignoring whitespace and // comments where it no longer occurs as written:
  grader/variants.py).

Before writing anything it checks that every parameter the lab's tests read by name
is declared in its config (grader/paramcheck.py), which otherwise shows only when a
GPU runs the test.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from grader import calls, paramcheck, sanitizer, variants
from grader.config import KNOWN_LIBRARIES, LabConfig


def _param_line(key: str, value: object) -> str:
    text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
    return f"{key}={text}"


def _bracket(text: str) -> str:
    """A CMake bracket argument, which takes the text literally."""
    return f"[==[{text}]==]"


def _on(flag: bool) -> str:
    return "ON" if flag else "OFF"


def variant_sources(config: LabConfig, table: str) -> dict[str, dict[str, str]]:
    """The files of each variant in hidden.toml's [[wrong]] or [[right]] (`table`): name -> {file name: text}."""
    return variants.sources(config, table)


def lab_cmake(config: LabConfig, plan: calls.Plan) -> str:
    lines = [
        f"# Generated from labs/{config.name}/lab.toml by `python3 -m grader configure`; do not edit.",
        f"set(KIT_LAB_STUDENT_FILES {_bracket(';'.join(config.student_files))})",
        f"set(KIT_LAB_LIBRARIES {_bracket(';'.join(KNOWN_LIBRARIES[lib] for lib in config.libraries))})",
        f"set(KIT_LAB_LIBRARY_NAMES {_bracket(';'.join(config.libraries))})",
        # What the student's own code may link: the lab's libraries that it does not forbid (the tests may
        # use a forbidden one as a yardstick; the runner, which holds the student's code, never has it).
        f"set(KIT_LAB_STUDENT_LIBRARIES {_bracket(';'.join(KNOWN_LIBRARIES[lib] for lib in config.libraries if lib not in config.forbidden))})",
        f"set(KIT_LAB_STUDENT_LIBRARY_NAMES {_bracket(';'.join(lib for lib in config.libraries if lib not in config.forbidden))})",
        f"set(KIT_LAB_FORBIDDEN {_bracket(';'.join(config.forbidden))})",
        f"set(KIT_LAB_ALLOWED_CALLS {_bracket(';'.join(config.allowed_calls))})",
        f"set(KIT_LAB_WRONG {_bracket(';'.join(w.name for w in config.wrong))})",
        f"set(KIT_LAB_RIGHT {_bracket(';'.join(r.name for r in config.right))})",
        # Whole files that variants are made from (`source`): editing one makes CMake write the variants again.
        f"set(KIT_LAB_VARIANT_SOURCES {_bracket(';'.join(p.as_posix() for p in variants.source_files(config)))})",
        # The variants made from whole files, as <table>-<name>: kernels written anew rather than edits of the
        # reference, so every build compiles them (for each GPU generation it targets), not only a self-check.
        f"set(KIT_LAB_WHOLE_FILE_VARIANTS {_bracket(';'.join(variants.whole_file_variants(config)))})",
        # The judge/runner split (grader/calls.py): OFF for a lab graded in one process, with the reason.
        f"set(KIT_LAB_SPLIT {_on(plan.split)})",
        f"set(KIT_LAB_UNSPLIT_WHY {_bracket(plan.unsplit_because)})",
    ]
    timing = set(config.timing_cases)
    cases = [(t.name, t.gpu, t.hidden, t.timeout_s, t.serial, t.sanitizer) for t in config.tests]
    cases += [(name, True, False, config.timeout_s, True, None) for name in config.timing_cases]
    lines.append(f"set(KIT_LAB_CASE_COUNT {len(cases)})")
    for i, (name, gpu, hidden, timeout, serial, tool) in enumerate(cases):
        tool_args = ";".join(sanitizer.arguments(tool)) if tool else ""
        lines += [f"set(KIT_LAB_CASE_{i}_NAME {_bracket(name)})",
                  f"set(KIT_LAB_CASE_{i}_GPU {_on(gpu)})",
                  f"set(KIT_LAB_CASE_{i}_HIDDEN {_on(hidden)})",
                  f"set(KIT_LAB_CASE_{i}_TIMING {_on(name in timing)})",
                  f"set(KIT_LAB_CASE_{i}_SERIAL {_on(serial)})",
                  f"set(KIT_LAB_CASE_{i}_TIMEOUT {int(timeout)})",
                  f"set(KIT_LAB_CASE_{i}_SANITIZER {_bracket(tool or '')})",
                  f"set(KIT_LAB_CASE_{i}_SANITIZER_ARGS {_bracket(tool_args)})"]
    # The self-check grades the reference, the skeleton and each wrong and right variant.
    total = sum(t.timeout_s for t in config.tests) + config.timeout_s * len(config.timing_cases)
    lines.append(f"set(KIT_LAB_SELFCHECK_TIMEOUT {int(total * (3 + len(config.wrong) + len(config.right)))})")
    return "\n".join(lines) + "\n"


# Why a lab that can be split is built in one process: a build configured with -DKIT_ONE_PROCESS=ON, which only
# measures what the split costs (grader/bench/split_cost.py) and which nothing that grades will use.
ONE_PROCESS_WHY = "this build folder was configured with -DKIT_ONE_PROCESS=ON, to measure what the split costs"


def write(config: LabConfig, out: Path, one_process: bool = False) -> None:
    paramcheck.require_declared(config)
    out.mkdir(parents=True, exist_ok=True)
    params = [_param_line(k, v) for k, v in sorted(config.params.items())]
    _write_if_changed(out / "params.txt", "\n".join(params) + "\n")
    plan = calls.lab_plan(config)
    if one_process and plan.split:
        plan = dataclasses.replace(plan, unsplit_because=ONE_PROCESS_WHY)
    _write_if_changed(out / "lab.cmake", lab_cmake(config, plan))
    if plan.split:
        _write_if_changed(out / "calls" / "judge_calls.cpp", calls.judge_source(plan))
        _write_if_changed(out / "calls" / "runner_calls.cpp", calls.runner_source(plan))
    if config.solution_dir is not None:
        for table in ("wrong", "right"):
            for name, files in variant_sources(config, table).items():
                for file_name, text in files.items():
                    _write_if_changed(out / table / name / file_name, text)


def _write_if_changed(path: Path, text: str) -> None:
    """Leave unchanged files alone, so the build does not recompile what did not change."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
