"""A student's build folder that reuses a reference build: the tests and harness are compiled once per class.

The instructor's test sources and the harness are the same for every student;
compiling them is most of a build, the student's one or two files the rest.
A reference build of the lab exports its compiled objects
(<build>/<lab>/prebuilt.cmake, see harness/KitLab.cmake); a student's folder
is seeded with a CMake cache that points KIT_PREBUILT at that build, and, to
skip CMake's compiler checks too, with a copy of the reference's cache and
compiler-check results, its paths moved to the new folder. The build stage
then configures and builds the folder as usual.
"""
from __future__ import annotations

import shutil
from pathlib import Path

CACHE = "CMakeCache.txt"


def seed(build_dir: Path, reference_build: Path, copy_configuration: bool = True) -> None:
    """Prepare an empty `build_dir` to link the compiled tests and harness of `reference_build`."""
    build_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    source = reference_build / CACHE
    if copy_configuration and source.is_file():
        old, new = str(reference_build.resolve()), str(build_dir.resolve())
        for line in source.read_text().splitlines():
            if line.startswith("KIT_PREBUILT:"):
                # Its help text goes with it: CMake refuses a cache whose "//" help lines precede no entry, and
                # would then be configured afresh, compiler checks and all, for every student.
                while lines and lines[-1].startswith("//"):
                    lines.pop()
            elif not line.startswith("#"):
                lines.append(line.replace(old, new))  # entries that name the folder itself
        for checks in (reference_build / "CMakeFiles").glob("[0-9]*.[0-9]*"):  # CMakeFiles/<cmake version>/
            if checks.is_dir():
                shutil.copytree(checks, build_dir / "CMakeFiles" / checks.name)
    lines.append(f"KIT_PREBUILT:PATH={reference_build.resolve()}")
    (build_dir / CACHE).write_text("\n".join(lines) + "\n")
