"""Intake: from a submission (a folder or a .zip) take the lab's declared student files, and nothing else.

Files are found by name anywhere in the submission (students zip folders in
many ways); a name found twice (the message says where), a missing file (with
the submitted name it was probably meant to be: vectoradd.cu for
vector_add.cu), a link, a path that leaves the archive, a file that is not a
valid zip, or a file too large is refused with a message that says so.
Student code is also scanned for what the lab forbids (e.g. calling cuBLAS in
the matmul lab, or reading the grader's environment).
"""
from __future__ import annotations

import difflib
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.config import LabConfig

MAX_FILE_BYTES = 1_000_000
MAX_ZIP_ENTRIES = 10_000
# How alike a submitted file name must be to a declared one to be named as what the student meant
# (difflib's ratio, in lower case): vectoradd.cu, Vector_Add.cu and vector_add.cu.txt are, for vector_add.cu,
# while reduction.cu (0.56) and main.cu (0.4) are not.
NEAR_MISS_CUTOFF = 0.6
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
    # Declared name -> where the student's file was, as the student knows it (labs/01-vector-add/vector_add.cu,
    # alice.zip:src/vector_add.cu): compiler messages about the staged copy name this instead.
    origins: dict[str, str] = field(default_factory=dict)


@dataclass
class _Contents:
    files: dict[str, str] = field(default_factory=dict)  # declared name -> its text
    names: list[str] = field(default_factory=list)  # the name of every file submitted, for a near miss
    places: dict[str, str] = field(default_factory=dict)  # declared name -> its path inside the submission


def stage(submission: Path, config: LabConfig, destination: Path) -> Staged:
    """Copy the declared student files of `submission` into `destination`."""
    contents = _read(submission, config)
    destination.mkdir(parents=True, exist_ok=True)
    for name, text in contents.files.items():
        _check_forbidden(name, text, config)
        (destination / name).write_text(text)
    return Staged(folder=destination, files=tuple(sorted(contents.files)),
                  origins={name: origin(submission, place) for name, place in contents.places.items()})


def check(submission: Path, config: LabConfig) -> list[str]:
    """Every reason intake would refuse `submission`, one line each, each forbidden use on its own line with
    the student's path and line number (what `make <lab>` and `python3 -m grader check` print before a build);
    none when intake would take it."""
    try:
        contents = _read(submission, config)
    except IntakeError as error:
        return [str(error)]
    return [problem for name, text in sorted(contents.files.items())
            for problem in forbidden_uses(origin(submission, contents.places[name], whole_path=True), text, config)]


def origin(submission: Path, place: str, whole_path: bool = False) -> str:
    """A file of the submission as its owner names it: its path relative to the current folder when it lies below
    it (labs/01-vector-add/vector_add.cu, one's own checkout), else its path inside the submission folder (or, with
    whole_path, its whole path; a grader's folders are no business of a student's results), or zip:entry."""
    if not submission.is_dir():
        return f"{submission if whole_path else submission.name}:{place}"
    path = (submission / place).absolute()
    if path.is_relative_to(Path.cwd()):
        return str(path.relative_to(Path.cwd()))
    return str(path) if whole_path else place


def _read(submission: Path, config: LabConfig) -> _Contents:
    """The declared files of `submission`, read and checked for all but forbidden uses."""
    if not submission.exists():
        raise IntakeError(f"the submission {submission} does not exist")
    if submission.is_dir():
        contents = _from_folder(submission, config)
    else:
        with _open_zip(submission) as archive:
            try:
                contents = _from_zip(archive, config)
            # A damaged zip (a size or checksum that does not match its data, a cut-off file, a password, an
            # unknown compression) is the student's to fix, not a grader problem to retry on every run.
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
                raise IntakeError(f"the zip {submission.name} cannot be unpacked ({error}); "
                                  f"zip the files again") from None
    missing = [name for name in config.student_files if name not in contents.files]
    if missing:
        raise IntakeError(_missing(missing, contents.names, config))
    return contents


def _open_zip(submission: Path) -> zipfile.ZipFile:
    """The submission file opened as a zip; a file named .zip that is none is refused with zipfile's reason."""
    try:
        return zipfile.ZipFile(submission)
    except (zipfile.BadZipFile, EOFError) as error:
        if submission.suffix.lower() == ".zip":
            raise IntakeError(f"{submission.name} is not a valid zip archive ({error}); "
                              f"zip the files again") from None
        raise IntakeError(f"the submission {submission.name} is neither a folder nor a .zip file") from None


def near_miss(expected: str, names: list[str]) -> str | None:
    """The submitted file name that `expected` was probably meant to be (vectoradd.cu, Vector_Add.cu,
    vector_add.cu.txt for vector_add.cu), if one is close enough; compared in lower case, as a student reads."""
    by_lower: dict[str, str] = {}
    for name in sorted(names):
        by_lower.setdefault(name.lower(), name)
    match = difflib.get_close_matches(expected.lower(), list(by_lower), n=1, cutoff=NEAR_MISS_CUTOFF)
    return by_lower[match[0]] if match else None


def _missing(missing: list[str], names: list[str], config: LabConfig) -> str:
    """One message for the declared files not found: for each, the submitted name it was probably meant to be."""
    # A declared file that was found is no near miss of another (a lab of two files, one of them missing).
    others = [name for name in names if name not in config.student_files]
    near = {name: match for name in missing if (match := near_miss(name, others))}
    parts = [f"found {near[name]}; expected {name}" if name in near else f"the submission has no {name}"
             for name in missing]
    why = ("takes its files by their exact names: rename the file and submit again" if near
           else f"needs {', '.join(config.student_files)}")
    return f"{'; '.join(parts)} (lab {config.name} {why})"


def _refuse_copies(copies: dict[str, list[str]], where: str) -> None:
    """A declared file found in more than one place: which one to grade is the student's to say."""
    for name, places in copies.items():
        if len(places) > 1:
            raise IntakeError(f"{name} appears more than once in the {where} ({', '.join(places)}); "
                              f"keep one copy")


def _too_large(name: str, size: int) -> str:
    return f"{name} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit for a source file"


def _decode(name: str, data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise IntakeError(f"{name} is over the {MAX_FILE_BYTES}-byte limit for a source file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise IntakeError(f"{name} is not a UTF-8 text file") from None


def _from_folder(folder: Path, config: LabConfig) -> _Contents:
    contents, copies = _Contents(), {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_dir():
            contents.names.append(path.name)
        if path.name in config.student_files:
            copies.setdefault(path.name, []).append(path.relative_to(folder).as_posix())
    _refuse_copies(copies, "submission")
    for name, [where] in copies.items():
        contents.places[name] = where
        path = folder / where
        status = path.lstat()
        if not stat.S_ISREG(status.st_mode):
            raise IntakeError(f"{where} is a link or not a plain file; submit the file itself")
        # The size from the file system first: a 2 GiB file (sparse, it costs its owner nothing) is refused
        # without being read, and the read stops past the limit should the file grow in between.
        if status.st_size > MAX_FILE_BYTES:
            raise IntakeError(_too_large(name, status.st_size))
        with path.open("rb") as source:
            contents.files[name] = _decode(name, source.read(MAX_FILE_BYTES + 1))
    return contents


def _from_zip(z: zipfile.ZipFile, config: LabConfig) -> _Contents:
    contents, copies = _Contents(), {}
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
        if entry.is_dir():
            continue
        contents.names.append(path.name)
        if path.name in config.student_files:
            copies.setdefault(path.name, []).append(entry)
    _refuse_copies({name: [e.filename for e in found] for name, found in copies.items()}, "zip")
    for name, [entry] in copies.items():
        contents.places[name] = entry.filename
        if entry.file_size > MAX_FILE_BYTES:
            raise IntakeError(_too_large(name, entry.file_size))
        # The size in the zip is the student's word: the read stops past the limit whatever it says.
        with z.open(entry) as source:
            contents.files[name] = _decode(name, source.read(MAX_FILE_BYTES + 1))
    return contents


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
    """Refuse the file at its first forbidden use (grading says one reason)."""
    for problem in forbidden_uses(name, text, config):
        raise IntakeError(problem)


def forbidden_uses(name: str, text: str, config: LabConfig) -> list[str]:
    """Each forbidden #include and identifier of a student file, one message each, in the order of the file
    (`name` starts each message: the file's name, or its path for a student reading it locally)."""
    # Lines end at "\n" only, as they do for the compiler (splitlines would also break at a form feed
    # inside a string literal, and the two versions of the file would no longer line up).
    with_strings = code_without_comments_and_strings(text, keep_strings=True).split("\n")
    code = code_without_comments_and_strings(text)
    found = []
    for line_number, line in enumerate(code.split("\n"), start=1):
        included = INCLUDE.match(with_strings[line_number - 1])
        if included and (banned := _forbidden_header(included.group(1) or included.group(2), config)):
            found.append(f"{name}:{line_number}: this lab does not allow {with_strings[line_number - 1].strip()} "
                         f"(lab {config.name} does not allow {banned} in student code)")
            continue  # the header's name is the use: not once more as an identifier
        for word in re.findall(r"[A-Za-z_]\w*", line):
            lab_rule = next((f for f in config.forbidden if word.lower().startswith(f.lower())), None)
            if word in FORBIDDEN_EVERYWHERE or lab_rule:
                why = (f"lab {config.name} does not allow {lab_rule} in student code" if lab_rule else
                       "student code may not use it (it could read or change the grader's files or process)")
                found.append(f"{name}:{line_number}: uses '{word}': {why}")
    return found


def _forbidden_header(header: str, config: LabConfig) -> str | None:
    """The forbidden word that a part of the header's path starts with (cub/cub.cuh, cublas_v2.h), if any:
    a path through the toolkit (/usr/local/cuda/include/cub/cub.cuh) names the library as well."""
    parts = [part.strip().lower() for part in re.split(r"[/\\]", header)]
    return next((f for f in config.forbidden for part in parts if part.startswith(f.lower())), None)
