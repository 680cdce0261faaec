import os
import stat
import time
import zipfile
from pathlib import Path

import pytest

from grader import audit
from grader.config import load_lab
from grader.intake import IntakeError, stage


def make_zip(path: Path, entries: dict[str, str], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in entries.items():
            z.writestr(name, text)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, target)
    return path


GOOD = "__global__ void k() {}\n"


def test_folder_gives_only_the_declared_files(lab01, tmp_path: Path):
    submission = tmp_path / "sub"
    (submission / "nested").mkdir(parents=True)
    (submission / "nested/vector_add.cu").write_text(GOOD)
    (submission / "vector_add.cuh").write_text("// a header of their own: ignored")
    (submission / "public_tests.cu").write_text("// tests of their own: ignored")
    (submission / "CMakeLists.txt").write_text("# build files of their own: ignored")
    staged = stage(submission, lab01, tmp_path / "staged")
    assert staged.files == ("vector_add.cu",)
    assert sorted(p.name for p in (tmp_path / "staged").iterdir()) == ["vector_add.cu"]


def test_zip_gives_only_the_declared_files(lab01, tmp_path: Path):
    archive = make_zip(tmp_path / "s.zip", {"lab01/vector_add.cu": GOOD, "lab01/notes.txt": "hi"})
    staged = stage(archive, lab01, tmp_path / "staged")
    assert (tmp_path / "staged/vector_add.cu").read_text() == GOOD
    assert staged.files == ("vector_add.cu",)


@pytest.mark.parametrize("entries, message", [
    ({"../vector_add.cu": GOOD}, "points outside the archive"),
    ({"/abs/vector_add.cu": GOOD}, "points outside the archive"),
    ({"a/../../x.txt": "x", "vector_add.cu": GOOD}, "points outside the archive"),
    ({"a/vector_add.cu": GOOD, "b/vector_add.cu": GOOD}, "appears more than once"),
    ({"readme.txt": "no code"}, "has no vector_add.cu"),
])
def test_bad_zips_are_refused_with_a_reason(lab01, tmp_path: Path, entries, message):
    archive = make_zip(tmp_path / "s.zip", entries)
    with pytest.raises(IntakeError, match=message):
        stage(archive, lab01, tmp_path / "staged")
    assert not (tmp_path / "staged/vector_add.cu").exists()


def test_binary_file_is_refused(lab01, tmp_path: Path):
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("vector_add.cu", b"\xff\xfe\x00 not text")
    with pytest.raises(IntakeError, match="not a UTF-8 text file"):
        stage(archive, lab01, tmp_path / "staged")


def test_symlink_in_zip_is_refused(lab01, tmp_path: Path):
    archive = make_zip(tmp_path / "s.zip", {}, links={"vector_add.cu": "/etc/passwd"})
    with pytest.raises(IntakeError, match="symbolic link"):
        stage(archive, lab01, tmp_path / "staged")


def test_symlink_in_folder_is_refused(lab01, tmp_path: Path):
    (tmp_path / "sub").mkdir()
    os.symlink("/etc/hostname", tmp_path / "sub/vector_add.cu")
    with pytest.raises(IntakeError, match="link"):
        stage(tmp_path / "sub", lab01, tmp_path / "staged")


def test_neither_folder_nor_zip(lab01, tmp_path: Path):
    (tmp_path / "vector_add.cu").write_text(GOOD)
    with pytest.raises(IntakeError, match="neither a folder nor a .zip"):
        stage(tmp_path / "vector_add.cu", lab01, tmp_path / "staged")


@pytest.mark.parametrize("code, word", [
    ('void f() { std::getenv("KIT_RESULTS"); }\n', "getenv"),
    ("void f() { exit(0); }\n", "exit"),
    ('void f() { FILE* x = fopen("r.jsonl", "w"); }\n', "fopen"),
])
def test_tampering_is_refused_with_file_and_line(lab01, tmp_path: Path, code, word):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/vector_add.cu").write_text("// fine\n" + code)
    with pytest.raises(IntakeError, match=f"vector_add.cu:2: uses '{word}'"):
        stage(tmp_path / "sub", lab01, tmp_path / "staged")


def test_forbidden_words_in_comments_and_strings_are_fine(lab01, tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/vector_add.cu").write_text('// do not exit here\nconst char* s = "getenv";\n/* fopen */\n')
    stage(tmp_path / "sub", lab01, tmp_path / "staged")


def test_lab_forbidden_library(lab01, tmp_path: Path):
    from dataclasses import replace
    config = replace(lab01, forbidden=("cublas",))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/vector_add.cu").write_text("#include <cublas_v2.h>\nvoid f() { cublasSgemm(0); }\n")
    with pytest.raises(IntakeError, match="vector_add.cu:1: this lab does not allow"):
        stage(tmp_path / "sub", config, tmp_path / "staged")


@pytest.mark.parametrize("code", [
    '#include "cub/cub.cuh"\n',
    '#include "thrust/reduce.h"\n',
    '  #  include </usr/local/cuda/include/cub/device/device_reduce.cuh>\n',
    '#include "cu\\\nb/cub.cuh"\n',  # a backslash-newline joins the lines before the compiler reads the name
], ids=["quoted cub", "quoted thrust", "toolkit path", "spliced name"])
def test_an_include_of_a_forbidden_library_is_refused_in_either_form(tmp_path: Path, code):
    config = load_lab("05-reduction")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/reduction.cu").write_text('#include "reduction.cuh"\n' + code)
    with pytest.raises(IntakeError, match=r"reduction.cu:2: this lab does not allow #\s*include .* \(lab 05-reduction "
                                          r"does not allow (cub|thrust) in student code\)"):
        stage(tmp_path / "sub", config, tmp_path / "staged")


def test_a_name_split_by_a_backslash_newline_is_read_as_the_compiler_reads_it(tmp_path: Path):
    config = load_lab("05-reduction")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/reduction.cu").write_text("// one\nvoid f() {\n  c\\\nub::DeviceReduce::Sum();\n}\n")
    with pytest.raises(IntakeError, match="reduction.cu:3: uses 'cub'"):
        stage(tmp_path / "sub", config, tmp_path / "staged")


def test_the_lab_header_and_a_commented_out_library_include_are_fine(tmp_path: Path):
    config = load_lab("05-reduction")
    (tmp_path / "sub").mkdir()
    source = '#include "reduction.cuh"\n// #include "cub/cub.cuh" is not allowed here\n#include <cuda/std/cmath>\n'
    (tmp_path / "sub/reduction.cu").write_text(source)
    assert stage(tmp_path / "sub", config, tmp_path / "staged").files == ("reduction.cu",)


def _never_read(monkeypatch, big: Path) -> None:
    """Make any read of `big` fail the test: its size alone must refuse it."""
    for method in ("open", "read_bytes", "read_text"):
        original = getattr(Path, method)

        def guarded(self, *args, _original=original, **kwargs):
            assert Path(self) != big, f"{big.name} was read; its size should have refused it unread"
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(Path, method, guarded)


def test_a_huge_sparse_file_is_refused_by_its_size_without_being_read(lab01, tmp_path: Path, monkeypatch):
    submission = tmp_path / "sub"
    submission.mkdir()
    big = submission / "vector_add.cu"
    with big.open("wb") as f:
        f.truncate(2 * 1024 ** 3)  # 2 GiB that take no disk space: reading them would take seconds and 2 GiB
    (submission / "notes.txt").write_text("small")
    _never_read(monkeypatch, big)
    started = time.monotonic()
    with pytest.raises(IntakeError, match=r"vector_add.cu is 2147483648 bytes, over the 1000000-byte limit"):
        stage(submission, lab01, tmp_path / "staged")
    # The refused folder's fingerprint (audit.py): the small file by its bytes, the huge one by its size.
    files = audit.submission_files(submission)
    assert time.monotonic() - started < 0.5
    assert files["notes.txt"] == b"small"
    assert b"2147483648 bytes" in files["vector_add.cu"]
    os.utime(big, ns=(0, 1))  # a new copy of the submission: the fingerprint must change
    assert audit.submission_files(submission)["vector_add.cu"] != files["vector_add.cu"]


def test_a_zip_that_lies_about_a_file_size_is_refused_with_a_reason(lab01, tmp_path: Path):
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("vector_add.cu", b"/" * 5_000_000)  # 5 MB of source in a few kilobytes
    # The central directory, which zipfile trusts, says the file holds 10 bytes.
    data = bytearray(archive.read_bytes())
    entry = data.rindex(b"PK\x01\x02")
    data[entry + 24:entry + 28] = (10).to_bytes(4, "little")
    archive.write_bytes(bytes(data))
    with pytest.raises(IntakeError, match="the zip s.zip cannot be unpacked"):
        stage(archive, lab01, tmp_path / "staged")


@pytest.mark.parametrize("submitted", ["vectoradd.cu", "Vector_Add.cu", "vector_add.cu.txt"])
@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
def test_a_near_miss_file_name_is_named_with_the_name_expected(lab01, tmp_path: Path, submitted, as_zip):
    if as_zip:
        submission = make_zip(tmp_path / "s.zip", {f"lab01/{submitted}": GOOD, "lab01/notes.txt": "hi"})
    else:
        submission = tmp_path / "sub"
        (submission / "lab01").mkdir(parents=True)
        (submission / "lab01" / submitted).write_text(GOOD)
        (submission / "lab01/notes.txt").write_text("hi")
    with pytest.raises(IntakeError) as refused:
        stage(submission, lab01, tmp_path / "staged")
    message = str(refused.value)
    assert message.startswith(f"found {submitted}; expected vector_add.cu (")
    assert message.count(f"found {submitted}") == 1 and "notes.txt" not in message  # said once, of that file


def test_a_missing_file_with_no_near_miss_says_what_the_lab_needs(lab01, tmp_path: Path):
    archive = make_zip(tmp_path / "s.zip", {"reduction.cu": GOOD, "main.cu": GOOD, "README.md": "hi"})
    with pytest.raises(IntakeError, match=r"^the submission has no vector_add.cu \(lab 01-vector-add needs "
                                          r"vector_add.cu\)$"):
        stage(archive, lab01, tmp_path / "staged")


def test_a_near_miss_is_never_another_declared_file(lab01, tmp_path: Path):
    from dataclasses import replace
    config = replace(lab01, student_files=("vector_add.cu", "vector_add2.cu"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/vector_add.cu").write_text(GOOD)
    with pytest.raises(IntakeError, match="^the submission has no vector_add2.cu"):
        stage(tmp_path / "sub", config, tmp_path / "staged")


def test_a_file_found_twice_in_a_folder_is_refused_naming_both_copies(lab01, tmp_path: Path):
    for folder in ("sub/old", "sub/new/src"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "vector_add.cu").write_text(GOOD)
    with pytest.raises(IntakeError, match=r"^vector_add.cu appears more than once in the submission "
                                          r"\(new/src/vector_add.cu, old/vector_add.cu\); keep one copy$"):
        stage(tmp_path / "sub", lab01, tmp_path / "staged")


def test_a_file_found_twice_in_a_zip_is_refused_naming_both_copies(lab01, tmp_path: Path):
    archive = make_zip(tmp_path / "s.zip", {"lab01/vector_add.cu": GOOD, "backup/vector_add.cu": GOOD})
    with pytest.raises(IntakeError, match=r"\(lab01/vector_add.cu, backup/vector_add.cu\); keep one copy"):
        stage(archive, lab01, tmp_path / "staged")


@pytest.mark.parametrize("data, why", [
    (b"", "File is not a zip file"),
    (b"Rar!\x1a\x07\x00 a RAR archive renamed", "File is not a zip file"),
], ids=["empty", "rar"])
def test_a_zip_that_is_no_zip_says_so_with_zipfiles_reason(lab01, tmp_path: Path, data, why):
    (tmp_path / "carol.zip").write_bytes(data)
    with pytest.raises(IntakeError, match=rf"^carol.zip is not a valid zip archive \({why}\); zip the files again$"):
        stage(tmp_path / "carol.zip", lab01, tmp_path / "staged")
