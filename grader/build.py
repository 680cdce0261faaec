"""Build: compile one lab's test program against a set of student files, in a fresh folder.

The instructor's tree supplies everything but the student files: tests,
headers, harness and build files. CMake is configured for this one lab with
KIT_STUDENT_DIR pointing at the staged submission. When this grader run
sandboxes, each compile of a student file runs in the OS sandbox, and before
the link `grader link-check` refuses object files that would replace harness or
library functions (see harness/KitLab.cmake and grader/linkcheck.py).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from grader import sandbox
from grader.config import REPO_ROOT, ConfigError, LabConfig
from grader.proc import ProcessResult, cores, run_process, scrubbed_env

ERROR_LINES_SHOWN = 40
# Builds run at the lowest CPU priority there is: a class's builds share the cores with test programs, and a
# timing must never wait behind a compiler. At equal priority, on a busy 32-core host, copies of the reference
# timed beside 25 builds came out up to 1.6x slower than the reference timed before them (2026-11-26). Nice 19
# was not enough on one H100 with 16 cores: a woken task may still wait for a niced compiler to finish its
# time slice, and lab 02's 0.1 ms kernel, timed through judge/runner round trips that each wake a process,
# came out up to 2.2x slow in 4 of 18 copies (2026-11-27). A SCHED_IDLE task gives up its core the moment a
# normal one wakes; nice 19 is the fallback where the scheduler refuses it.
BUILD_NICENESS = 19
IDLE_PRIORITY = ["chrt", "--idle", "0"]


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    binary: Path | None
    log: str  # the tail of the configure and build output
    # Why a build that was to reuse the reference's configuration configured afresh (CMake's first error line);
    # empty when it did not need to. Each such build pays CMake's compiler checks again.
    configured_afresh: str = ""

    def errors(self) -> str:
        """The compiler's error lines, for the student; the whole tail if none is recognised."""
        lines = self.log.splitlines()
        wanted = [i for i, line in enumerate(lines) if re.search(r"\berror\b|undefined reference", line)]
        if not wanted:
            return "\n".join(lines[-ERROR_LINES_SHOWN:])
        shown: list[str] = []
        blocks: set[tuple[str, ...]] = set()
        for i, next_error in zip(wanted, wanted[1:] + [len(lines)]):
            # The error, and the source line and caret nvcc prints under it; a block said before is not repeated
            # (two errors on one source line keep their own lines, so each caret points under its line).
            block = tuple(lines[i:min(i + 3, next_error)])
            if block not in blocks:
                blocks.add(block)
                shown += block
        return "\n".join(shown[:ERROR_LINES_SHOWN])


def target_name(lab: str, variant: str) -> str:
    """CMake target of a lab's test program: "student" (the student files), "reference", "wrong-<name>"
    or "right-<name>"."""
    return f"{lab}-tests" if variant == "student" else f"{lab}-{variant}-tests"


def built_in_one_process(build_dir: Path) -> bool:
    """Whether `build_dir` was configured with -DKIT_ONE_PROCESS=ON (student code in the tests' own process)."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return False
    setting = re.search(r"^KIT_ONE_PROCESS:BOOL=(.*)$", cache.read_text(errors="replace"), re.MULTILINE)
    return setting is not None and setting.group(1).strip().upper() in ("ON", "1", "TRUE", "YES", "Y")


def require_graded_build(build_dir: Path) -> None:
    """Refuses a one-process build: what it measures and passes is not what grading runs."""
    if built_in_one_process(build_dir):
        raise ConfigError(
            f"{build_dir} was configured with -DKIT_ONE_PROCESS=ON: its labs run student code in the tests' own "
            "process, which grading never does, so a self-check or journey there would check something else. Use "
            f"a build folder configured without it, or turn it off: cmake -B {build_dir} -DKIT_ONE_PROCESS=OFF")


def _build_first(build_dir: Path) -> str:
    return f"Build the labs first (make build, or cmake -S . -B {build_dir} && cmake --build {build_dir}), then run " \
           "this again."


def require_configured(build_dir: Path) -> None:
    """Refuses a folder CMake never configured: the self-check and the journey build their variants in it."""
    if not (build_dir / "CMakeCache.txt").is_file():
        raise ConfigError(f"{build_dir} is not a build folder (no CMakeCache.txt). {_build_first(build_dir)}")


def require_built(build_dir: Path, labs: list[str]) -> None:
    """Refuses a build folder where a lab's reference test program was never built: the self-check grades it."""
    require_configured(build_dir)
    unbuilt = [lab for lab in labs if not binary_path(build_dir, lab, "reference").is_file()]
    if unbuilt:
        raise ConfigError(f"{build_dir} holds no built test program for {', '.join(unbuilt)}: the self-check grades "
                          f"the reference builds there. {_build_first(build_dir)}")


def binary_path(build_dir: Path, lab: str, variant: str) -> Path:
    return build_dir / lab / target_name(lab, variant)


def configure(config: LabConfig, build_dir: Path, student_dir: Path | None) -> BuildResult:
    command = ["cmake", "-S", str(REPO_ROOT), "-B", str(build_dir), f"-DKIT_LABS={config.name}",
               "-DCMAKE_BUILD_TYPE=Release", "-DKIT_ONE_PROCESS=OFF"]
    if student_dir is not None:
        command.append(f"-DKIT_STUDENT_DIR={student_dir}")
    # Student files compile in the sandbox whenever this grader run sandboxes (CMake's compiler launcher).
    command.append(f"-DKIT_SANDBOX_COMPILE={'ON' if sandbox.current().enabled else 'OFF'}")
    if "CUDA_ARCH" in os.environ:
        command.append(f"-DCUDA_ARCH={os.environ['CUDA_ARCH']}")
    if shutil.which("ninja"):
        command += ["-G", "Ninja"]
    build_dir.mkdir(parents=True, exist_ok=True)
    result = _run_build(command, config, build_dir)
    return BuildResult(ok=result.ok, binary=None, log=result.output)


def _build_target(config: LabConfig, build_dir: Path, target: str) -> ProcessResult:
    command = ["cmake", "--build", str(build_dir), "--target", target, "--parallel", str(cores())]
    return _run_build(command, config, build_dir)


@functools.lru_cache(maxsize=1)
def lowest_priority() -> list[str]:
    """What a build command is run under to take the CPU only when nothing else wants it: SCHED_IDLE where this
    machine lets a process take it (a container's seccomp policy may not), else nice 19, else nothing."""
    if shutil.which("chrt"):
        try:
            if subprocess.run([*IDLE_PRIORITY, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10).returncode == 0:
                return list(IDLE_PRIORITY)
        except (OSError, subprocess.TimeoutExpired):
            pass
    return ["nice", "-n", str(BUILD_NICENESS)] if shutil.which("nice") else []


def _run_build(command: list[str], config: LabConfig, build_dir: Path) -> ProcessResult:
    """A configure or build step, at the lowest CPU priority (the compilers it starts inherit it)."""
    return run_process([*lowest_priority(), *command], cwd=build_dir, env=_build_env(build_dir),
                       timeout_s=config.build_timeout_s)


def build(config: LabConfig, build_dir: Path, variant: str) -> BuildResult:
    result = _build_target(config, build_dir, target_name(config.name, variant))
    log = result.output
    if result.timed_out:
        log += f"\nThe build did not finish within {config.build_timeout_s:.0f} s and was stopped."
    binary = binary_path(build_dir, config.name, variant)
    ok = result.ok and binary.is_file()
    return BuildResult(ok=ok, binary=binary if ok else None, log=log)


def build_variants(build_dir: Path, config: LabConfig) -> BuildResult:
    """The self-check's wrong and right variants of a lab (`<lab>-variants`; not part of `all`)."""
    result = _build_target(config, build_dir, f"{config.name}-variants")
    return BuildResult(ok=result.ok, binary=None, log=result.output)


def _build_env(build_dir: Path) -> dict[str, str]:
    env = scrubbed_env(build_dir)
    for key in ("CUDA_ARCH", "CUDACXX", "CXX", "CC"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env
