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
import zlib
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
        try:
            found = _from_zip(submission, config)
        # A damaged zip (a size or checksum that does not match its data, a cut-off file, a password, an
        # unknown compression) is the student's to fix, not a grader problem to retry on every run.
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
            raise IntakeError(f"the zip {submission.name} cannot be unpacked ({error}); zip the files again") from None
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


def _too_large(name: str, size: int) -> str:
    return f"{name} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit for a source file"


def _decode(name: str, data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise IntakeError(f"{name} is over the {MAX_FILE_BYTES}-byte limit for a source file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise IntakeError(f"{name} is not a UTF-8 text file") from None


def _from_folder(folder: Path, config: LabConfig) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.name not in config.student_files:
            continue
        status = path.lstat()
        if not stat.S_ISREG(status.st_mode):
            raise IntakeError(f"{path.relative_to(folder)} is a link or not a plain file; submit the file itself")
        if path.name in found:
            raise IntakeError(f"{path.name} appears more than once in the submission; keep one copy")
        # The size from the file system first: a 2 GiB file (sparse, it costs its owner nothing) is refused
        # without being read, and the read stops past the limit should the file grow in between.
        if status.st_size > MAX_FILE_BYTES:
            raise IntakeError(_too_large(path.name, status.st_size))
        with path.open("rb") as source:
            found[path.name] = _decode(path.name, source.read(MAX_FILE_BYTES + 1))
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
                raise IntakeError(_too_large(path.name, entry.file_size))
            # The size in the zip is the student's word: the read stops past the limit whatever it says.
            with z.open(entry) as source:
                found[path.name] = _decode(path.name, source.read(MAX_FILE_BYTES + 1))
    return found


# Comments, and string and character literals: scanned together, so that "//" in a string is no comment.
COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# An #include of a header by name, either form: <cub/cub.cuh> or "cub/cub.cuh".
INCLUDE = re.compile(r'\s*#\s*include\s*(?:<([^>\n]*)>|"([^"\n]*)")')


def code_without_comments_and_strings(text: str, keep_strings: bool = False) -> str:
    """C++ source with comments, string and character literals blanked (newlines kept, so lines still count);
    keep_strings=True blanks the comments only (an #include's quoted name is a string to this pattern)."""
    def blank(match: re.Match) -> str:
        kept = keep_strings and not match.group(0).startswith("/")
        return match.group(0) if kept else re.sub(r"[^\n]", " ", match.group(0))
    return COMMENT_OR_LITERAL.sub(blank, _spliced(text))


def _spliced(text: str) -> str:
    """The source with each backslash-newline removed, as the compiler does before it reads a single token
    (so `c\\<newline>ub` is `cub`); the removed newlines follow the joined line, so later lines keep their
    numbers. GCC also joins a backslash followed by spaces and a newline, so those are joined too."""
    lines, out, joined, removed = text.split("\n"), [], "", 0
    for number, line in enumerate(lines, start=1):
        stripped = line.rstrip(" \t\r\f\v")
        if stripped.endswith("\\") and number < len(lines):
            joined, removed = joined + stripped[:-1], removed + 1
            continue
        out.extend([joined + line] + [""] * removed)
        joined, removed = "", 0
    return "\n".join(out)


def _check_forbidden(name: str, text: str, config: LabConfig) -> None:
    # Lines end at "\n" only, as they do for the compiler (splitlines would also break at a form feed
    # inside a string literal, and the two versions of the file would no longer line up).
    with_strings = code_without_comments_and_strings(text, keep_strings=True).split("\n")
    code = code_without_comments_and_strings(text)
    for line_number, line in enumerate(code.split("\n"), start=1):
        included = INCLUDE.match(with_strings[line_number - 1])
        if included and (banned := _forbidden_header(included.group(1) or included.group(2), config)):
            raise IntakeError(f"{name}:{line_number}: this lab does not allow {with_strings[line_number - 1].strip()} "
                              f"(lab {config.name} does not allow {banned} in student code)")
        for word in re.findall(r"[A-Za-z_]\w*", line):
            lab_rule = next((f for f in config.forbidden if word.lower().startswith(f.lower())), None)
            if word in FORBIDDEN_EVERYWHERE or lab_rule:
                why = (f"lab {config.name} does not allow {lab_rule} in student code" if lab_rule else
                       "student code may not use it (it could read or change the grader's files or process)")
                raise IntakeError(f"{name}:{line_number}: uses '{word}': {why}")


def _forbidden_header(header: str, config: LabConfig) -> str | None:
    """The forbidden word that a part of the header's path starts with (cub/cub.cuh, cublas_v2.h), if any:
    a path through the toolkit (/usr/local/cuda/include/cub/cub.cuh) names the library as well."""
    parts = [part.strip().lower() for part in re.split(r"[/\\]", header)]
    return next((f for f in config.forbidden for part in parts if part.startswith(f.lower())), None)
