"""Intake: from a submission (a folder or a .zip) take the lab's declared student files, and nothing else.

Files are found by name anywhere in the submission (students zip folders in
many ways); a name found twice, a missing file, a link, a path that leaves
the archive, or a file too large is refused with a message that says so.
Student code is also scanned for what the lab forbids (e.g. calling cuBLAS in
the matmul lab, or reading the grader's environment).
"""
from __future__ import annotations

import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.config import LabConfig

MAX_FILE_BYTES = 1_000_000
MAX_ZIP_ENTRIES = 10_000
# Student code has no business with these: they would let it read or write the
# grader's files, leave the process, or start others. Matched as whole words
# in the code with comments and strings removed.
FORBIDDEN_EVERYWHERE = ("getenv", "secure_getenv", "setenv", "putenv", "environ", "system", "popen", "fork",
                        "execv", "execve", "execvp", "execl", "exit", "_exit", "_Exit", "quick_exit", "abort",
                        "fopen", "freopen", "open", "ofstream", "ifstream", "fstream", "remove", "rename",
                        "unlink", "dlopen", "KIT_RESULTS", "doctest")


class IntakeError(Exception):
    """The submission cannot be graded as given; the message tells the student why."""


@dataclass(frozen=True)
class Staged:
    folder: Path
    files: tuple[str, ...]


def stage(submission: Path, config: LabConfig, destination: Path) -> Staged:
    """Copy the declared student files of `submission` into `destination`."""
    if not submission.exists():
        raise IntakeError(f"the submission {submission} does not exist")
    destination.mkdir(parents=True, exist_ok=True)
    if submission.is_dir():
        found = _from_folder(submission, config)
    elif zipfile.is_zipfile(submission):
        found = _from_zip(submission, config)
    else:
        raise IntakeError(f"the submission {submission.name} is neither a folder nor a .zip file")
    missing = [name for name in config.student_files if name not in found]
    if missing:
        raise IntakeError(f"the submission has no {', '.join(missing)} (lab {config.name} needs "
                          f"{', '.join(config.student_files)})")
    for name, text in found.items():
        _check_forbidden(name, text, config)
        (destination / name).write_text(text)
    return Staged(folder=destination, files=tuple(sorted(found)))


def _decode(name: str, data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise IntakeError(f"{name} is {len(data)} bytes, over the {MAX_FILE_BYTES}-byte limit for a source file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise IntakeError(f"{name} is not a UTF-8 text file") from None


def _from_folder(folder: Path, config: LabConfig) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.name not in config.student_files:
            continue
        if path.is_symlink() or not stat.S_ISREG(path.lstat().st_mode):
            raise IntakeError(f"{path.relative_to(folder)} is a link or not a plain file; submit the file itself")
        if path.name in found:
            raise IntakeError(f"{path.name} appears more than once in the submission; keep one copy")
        found[path.name] = _decode(path.name, path.read_bytes())
    return found


def _from_zip(archive: Path, config: LabConfig) -> dict[str, str]:
    found: dict[str, str] = {}
    with zipfile.ZipFile(archive) as z:
        entries = z.infolist()
        if len(entries) > MAX_ZIP_ENTRIES:
            raise IntakeError(f"the zip holds {len(entries)} entries, over the limit of {MAX_ZIP_ENTRIES}")
        for entry in entries:
            path = PurePosixPath(entry.filename.replace("\\", "/"))
            if path.is_absolute() or ".." in path.parts:
                raise IntakeError(f"the zip entry '{entry.filename}' points outside the archive; "
                                  f"zip the files without absolute paths or '..'")
            if stat.S_ISLNK(entry.external_attr >> 16):
                raise IntakeError(f"the zip entry '{entry.filename}' is a symbolic link; zip the file itself")
            if entry.is_dir() or path.name not in config.student_files:
                continue
            if path.name in found:
                raise IntakeError(f"{path.name} appears more than once in the zip; keep one copy")
            if entry.file_size > MAX_FILE_BYTES:
                raise IntakeError(f"{path.name} is {entry.file_size} bytes, over the {MAX_FILE_BYTES}-byte limit")
            found[path.name] = _decode(path.name, z.read(entry))
    return found


def code_without_comments_and_strings(text: str) -> str:
    """C++ source with comments, string and character literals blanked (newlines kept, so lines still count)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _check_forbidden(name: str, text: str, config: LabConfig) -> None:
    code = code_without_comments_and_strings(text)
    for line_number, line in enumerate(code.splitlines(), start=1):
        if re.match(r"\s*#\s*include\s*<\s*(cublas|cufft|thrust|cub)", line) and _library_forbidden(line, config):
            raise IntakeError(f"{name}:{line_number}: this lab does not allow {line.strip()}")
        for word in re.findall(r"[A-Za-z_]\w*", line):
            lab_rule = next((f for f in config.forbidden if word.lower().startswith(f.lower())), None)
            if word in FORBIDDEN_EVERYWHERE or lab_rule:
                why = (f"lab {config.name} does not allow {lab_rule} in student code" if lab_rule else
                       "student code may not use it (it could read or change the grader's files or process)")
                raise IntakeError(f"{name}:{line_number}: uses '{word}': {why}")


def _library_forbidden(include_line: str, config: LabConfig) -> bool:
    return any(f.lower() in include_line.lower() for f in config.forbidden)
