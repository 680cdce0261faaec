"""Submissions as a learning management system exports them, read as they come (no renaming by hand).

- Gradescope's export of an assignment's submissions: a folder `submission_<id>/` per submission, as
  the student uploaded it, and `submission_metadata.yml`, which maps each folder to its submitters:

      submission_1234:
        :submitters:
        - :name: Jane Doe
          :sid: '1001'
          :email: jane@example.edu
        :created_at: 2026-09-14 21:02:11.000000000 -07:00
        :score: 0.0

  (Ruby symbols, hence the colons.) A student is named as Gradescope names them; each member of a group
  submission is a student of their own, graded from the group's folder. Reading it needs python3-yaml.
- Canvas's "Download Submissions": every file of every student flat in one folder, named
  `<lastfirst>_[LATE_]<user id>_<submission id>_<the file's own name>` (e.g.
  `doejane_12345_67890_vector_add.cu`); a file submitted again may carry `-1`, `-2` before its
  extension. A student is named as Canvas names them (`doejane`), and their files are read under the
  names they gave them.

Each student keeps the LMS's identity (results.json's extra_data.lms), from which upload_rows makes the
file to upload the scores back: Canvas's gradebook import columns, or Gradescope's score import columns.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

GRADESCOPE_METADATA = "submission_metadata.yml"
# <lastfirst>_[LATE_]<user id>_<submission id>_<file>: Canvas's name of each file in its download.
CANVAS_FILE = re.compile(r"^(?P<login>[^_/]+)_(?:late_)?(?P<user_id>\d+)_(?P<submission_id>\d+)_(?P<file>.+)$",
                         re.IGNORECASE)
RESUBMITTED = re.compile(r"-\d+(?=\.[^.]+$)")  # the -1 Canvas adds before the extension of a file sent again


class ExportError(Exception):
    """An export that cannot be read as a whole; the message says what was expected and what to do."""


@dataclass(frozen=True)
class ExportedStudent:
    name: str  # as the LMS names the student: the gradebook's name, and their folder in the output
    path: Path | None  # their folder (Gradescope) or the export's folder (Canvas, with files)
    identity: dict[str, str]  # what the LMS's upload matches on: system, and its ids
    files: tuple[tuple[str, Path], ...] = ()  # Canvas: (the name the student gave, the file in the export)
    problem: str = ""


@dataclass
class Export:
    system: str
    students: list[ExportedStudent]
    skipped: list[str] = field(default_factory=list)  # entries of the folder that are no student's


def read_export(folder: Path) -> Export | None:
    """The students of a Gradescope or Canvas export in `folder`; None when it is neither (a plain class
    folder: one folder or .zip per student)."""
    if (folder / GRADESCOPE_METADATA).is_file():
        return read_gradescope(folder)
    children = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    if len(children) == 1 and (children[0] / GRADESCOPE_METADATA).is_file():
        return read_gradescope(children[0])  # the folder the export's zip unpacked into, assignment_<id>_export/
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if entries and not any(p.is_dir() for p in entries if p.name != "__MACOSX") and any(
            CANVAS_FILE.match(p.name) for p in entries):
        return read_canvas(folder)
    return None


# -- Gradescope --------------------------------------------------------------------------------------------


def _load_yaml(path: Path) -> object:
    try:
        import yaml
    except ImportError:
        raise ExportError(f"{path.name} is Gradescope's metadata, and reading it needs PyYAML: "
                          f"apt-get install python3-yaml (or pip install pyyaml)") from None

    class Loader(yaml.SafeLoader):
        """Safe, and a Ruby-tagged value (`!ruby/object:...`, in some exports' history) is read as plain data."""

    def plain(loader, suffix, node):
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("!", plain)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
    except yaml.YAMLError as error:
        raise ExportError(f"{path} is not valid YAML ({error}); download the export from Gradescope again") from None


def _submitters(folder_name: str, record: object, where: Path) -> list[dict[str, str]]:
    submitters = record.get(":submitters") if isinstance(record, dict) else None
    if not isinstance(submitters, list) or not submitters or not all(isinstance(s, dict) for s in submitters):
        raise ExportError(f"{where}: {folder_name} has no ':submitters:' list (expected, for each submission "
                          f"folder, ':submitters:' with each student's ':name:', ':sid:' and ':email:')")
    return [{"name": str(s.get(":name") or "").strip(), "sid": str(s.get(":sid") or ""),
             "email": str(s.get(":email") or "")} for s in submitters]


def _unique_names(people: list[dict[str, str]]) -> list[str]:
    """Each person's name as the LMS gives it; two people of one name are told apart by their id."""
    names = [p["name"] or p["sid"] or p["email"] for p in people]
    return [f"{name} ({p['sid'] or p['email']})" if names.count(name) > 1 else name
            for name, p in zip(names, people)]


def _safe(name: str) -> str:
    """A name that is one folder of the output (a / in a name would make two)."""
    return name.replace("/", "-").strip(". ") or "unnamed"


def read_gradescope(folder: Path) -> Export:
    metadata_path = folder / GRADESCOPE_METADATA
    metadata = _load_yaml(metadata_path)
    if not isinstance(metadata, dict):
        raise ExportError(f"{metadata_path} does not map submission folders to their submitters (expected "
                          f"'submission_<id>:' entries); download the export from Gradescope again")
    people = []  # (folder name, submitter)
    for folder_name, record in metadata.items():
        for submitter in _submitters(str(folder_name), record, metadata_path):
            people.append((str(folder_name), submitter))
    names = _unique_names([p for _, p in people])
    students = []
    for name, (folder_name, person) in zip(names, people):
        path = folder / folder_name
        problem = "" if path.is_dir() else (f"Gradescope's {GRADESCOPE_METADATA} lists {folder_name} for {name}, "
                                            f"but the export has no such folder; download the export again")
        students.append(ExportedStudent(_safe(name), path if path.is_dir() else None,
                                        {"system": "gradescope", **person}, problem=problem))
    listed = {str(k) for k in metadata}
    skipped = sorted(p.name for p in folder.iterdir() if p.name not in listed and p.name != GRADESCOPE_METADATA)
    return Export("gradescope", sorted(students, key=lambda s: s.name), skipped)


# -- Canvas ------------------------------------------------------------------------------------------------


def read_canvas(folder: Path) -> Export:
    by_user: dict[str, list[tuple[re.Match, Path]]] = {}
    skipped = []
    for path in sorted(folder.iterdir()):
        found = CANVAS_FILE.match(path.name) if path.is_file() else None
        if found is None:
            skipped.append(path.name)
            continue
        by_user.setdefault(found["user_id"], []).append((found, path))
    people = [{"login": files[0][0]["login"], "user_id": user_id} for user_id, files in by_user.items()]
    names = [f"{p['login']}_{p['user_id']}" if [q["login"] for q in people].count(p["login"]) > 1 else p["login"]
             for p in people]
    students = []
    for name, person in zip(names, people):
        files, problem = _canvas_files(by_user[person["user_id"]])
        students.append(ExportedStudent(_safe(name), folder, {"system": "canvas", "name": person["login"],
                                                               "id": person["user_id"]}, files, problem))
    return Export("canvas", sorted(students, key=lambda s: s.name), skipped)


def _canvas_files(found: list[tuple[re.Match, Path]]) -> tuple[tuple[tuple[str, Path], ...], str]:
    """A Canvas student's files under the names they gave them, and a problem where two come to one name."""
    files: dict[str, list[Path]] = {}
    for match, path in sorted(found, key=lambda f: f[1].name):
        files.setdefault(RESUBMITTED.sub("", match["file"]), []).append(path)  # vector_add-1.cu: sent again
    for name, paths in files.items():
        if len(paths) > 1:
            return (), (f"Canvas's download holds {' and '.join(p.name for p in paths)}, which are both {name}; "
                        f"keep the one to grade (named as the student named it) and grade again")
    return tuple((name, paths[0]) for name, paths in sorted(files.items())), ""


# -- the scores, back to the LMS ---------------------------------------------------------------------------

CANVAS_UPLOAD = "canvas-upload.csv"
GRADESCOPE_UPLOAD = "gradescope-upload.csv"


def upload_rows(lab: str, results: dict[str, dict]) -> dict[str, list[list[str]]]:
    """The file name and rows (header first) of each LMS's upload, from the identities in the results:
    Canvas's gradebook import (Student, ID, SIS User ID, SIS Login ID, Section, then the assignment; Canvas
    matches a row by ID, its user id), Gradescope's score import (Name, SID, Email, Total Score)."""
    canvas = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", lab]]
    gradescope = [["Name", "SID", "Email", "Total Score"]]
    for student, result in sorted(results.items()):
        who = result.get("extra_data", {}).get("lms") or {}
        score = f"{float(result['score']):g}"
        if who.get("system") == "canvas":
            canvas.append([who["name"], who["id"], "", "", "", score])
        elif who.get("system") == "gradescope":
            gradescope.append([who["name"], who["sid"], who["email"], score])
    return {name: rows for name, rows in ((CANVAS_UPLOAD, canvas), (GRADESCOPE_UPLOAD, gradescope)) if len(rows) > 1}
