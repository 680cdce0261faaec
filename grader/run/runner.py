"""The side of the run that runs beside student code: the commands that start it, in the OS sandbox.

In a split lab the student's object is linked into the runner, `<program>-runner`
(harness/runner/), the only program that runs student code. The judge (judge.py)
is handed the command built here and starts the runner with it: inside
bubblewrap, under compute-sanitizer when a case asks for it. A lab whose header
cannot be split (grader/calls.py; none of the twelve) has no runner: its whole
test program holds student code, and so runs whole in a sandbox of its own. Whatever runs here can be tampered with by student
code, so nothing here reads a result or decides a score.
"""
from __future__ import annotations

import re
from pathlib import Path

from grader import sandbox, sanitizer
from grader.proc import tool_output


def runner_of(binary: Path) -> Path | None:
    """The runner that holds the student's code when the lab is split into judge and runner (harness/runner/)."""
    runner = binary.with_name(binary.name + "-runner")
    return runner if runner.is_file() else None


def runner_confinement(runner: Path, limits: sandbox.Limits | None, gpus: str | None = None) -> sandbox.Spec:
    """The runner sees its own file and its GPU (those `gpus` names, as sandbox.Spec says), and writes nothing but
    its private /tmp: not the results file, not the lab's parameters, not the judge's folder. Of the CUDA math
    libraries it sees only those it was linked with, which are those the lab lets students use: neither a look-up
    by name nor dlopen finds the others (the tests' yardstick, say)."""
    return sandbox.Spec(writable=(), readable=(runner,), gpu=True, gpus=gpus, limits=limits, chdir=Path("/tmp"),
                        hidden=sandbox.library_files_to_hide(linked_libraries(runner)))


def linked_libraries(program: Path) -> set[str]:
    """The CUDA math libraries (by the config's names) that `program` needs, from its dynamic section."""
    _, output, _ = tool_output(["readelf", "-d", str(program)])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[lib(\w+?)(?:\.so[^\]]*)?\]", output)
    return {name for name in sandbox.CUDA_MATH_LIBRARIES if name in needed}


def unsplit_confinement(binary: Path, workdir: Path, limits: sandbox.Limits | None,
                        gpus: str | None = None) -> sandbox.Spec:
    """A test program that holds student code sees its own file and its lab's parameters, writes only its
    folder (where its results file is), and uses its GPU (those `gpus` names)."""
    params = binary.parent / "params.txt"  # read from beside the program (harness/src/params.cpp)
    readable = (binary, params) if params.is_file() else (binary,)
    return sandbox.Spec(writable=(workdir,), readable=readable, gpu=True, gpus=gpus, limits=limits)


def _sanitized(command: list[str], wrapper: sanitizer.Wrapper | None) -> list[str]:
    return (wrapper.prefix() if wrapper is not None else []) + command


def runner_command(runner: Path, limits: sandbox.Limits | None, wrapper: sanitizer.Wrapper | None,
                   gpus: str | None = None) -> list[str]:
    """The command the judge starts its runner with: in the runner's sandbox with the GPUs `gpus` names, under
    compute-sanitizer when `wrapper` says so (memcheck then sees the buffers the runner maps, with their exact
    sizes)."""
    return sandbox.confine(_sanitized([str(runner)], wrapper), runner_confinement(runner, limits, gpus))


def unsplit_command(binary: Path, args: list[str], workdir: Path, limits: sandbox.Limits | None,
                    wrapper: sanitizer.Wrapper | None, gpus: str | None = None) -> list[str]:
    """The command of a test program that holds student code: whole in the sandbox with the GPUs `gpus` names,
    under compute-sanitizer when `wrapper` says so."""
    return sandbox.confine(_sanitized([str(binary), *args], wrapper),
                           unsplit_confinement(binary, workdir, limits, gpus))
