"""A student's build that links the reference build's compiled tests and harness (real CMake and nvcc)."""
from pathlib import Path

import pytest

from grader import build, prebuilt
from grader.classroom import build_reference_tree
from grader.grade import build_submission
from grader.run.judge import list_cases
from grader.tests.conftest import REPO, needs_cuda_toolchain

pytestmark = [needs_cuda_toolchain(),
              pytest.mark.skipif(not (REPO / "solutions").is_dir(), reason="needs the reference of lab 01")]


@pytest.fixture(scope="module")
def reference_build(tmp_path_factory):
    from grader.config import load_lab
    return build_reference_tree(load_lab("01-vector-add"), tmp_path_factory.mktemp("reference") / "build")


def compiled_objects(folder: Path) -> list[str]:
    """The objects the build compiled (CMake keeps them in <target>.dir folders; its compiler checks' own
    objects lie elsewhere)."""
    return sorted(p.name for p in folder.rglob("*.o") if any(part.endswith(".dir") for part in p.parts))


def test_a_student_build_compiles_only_the_student_files(lab01, reference_build: Path, tmp_path: Path):
    assert (reference_build / "01-vector-add" / "prebuilt.cmake").is_file()
    student = tmp_path / "student"
    student.mkdir()
    (student / "vector_add.cu").write_text((REPO / "solutions/01-vector-add/vector_add.cu").read_text())
    built = build_submission(lab01, student, tmp_path / "build", reference_build)
    assert built.ok, built.log
    assert built.configured_afresh == ""  # the reference's configuration was taken as it was
    assert compiled_objects(tmp_path / "build") == ["vector_add.cu.o"]
    (tmp_path / "run").mkdir()
    listing = list_cases(built.binary, tmp_path / "run")  # needs no GPU: the tests were linked in
    assert set(lab01.all_case_names) <= set(listing.cases)


def test_cmake_takes_the_copied_configuration_as_it_is(lab01, reference_build: Path, tmp_path: Path):
    # Refused, it would cost every student a fresh configure with CMake's compiler checks (3 s of a 6 s build
    # on two cores), hidden by the fallback below.
    student = tmp_path / "student"
    student.mkdir()
    (student / "vector_add.cu").write_text((REPO / "labs/01-vector-add/vector_add.cu").read_text())
    prebuilt.seed(tmp_path / "build", reference_build)
    configured = build.configure(lab01, tmp_path / "build", student)
    assert configured.ok, configured.log


def test_a_copied_configuration_that_cmake_rejects_falls_back_to_a_fresh_one(lab01, reference_build: Path,
                                                                              tmp_path: Path, monkeypatch):
    real_seed = prebuilt.seed

    def broken_copy(build_dir, reference, copy_configuration=True):
        real_seed(build_dir, reference, copy_configuration)
        if copy_configuration:  # a cache that names another source tree: CMake refuses it
            cache = build_dir / prebuilt.CACHE
            cache.write_text(cache.read_text() + "CMAKE_HOME_DIRECTORY:INTERNAL=/nowhere\n")

    monkeypatch.setattr(prebuilt, "seed", broken_copy)
    student = tmp_path / "student"
    student.mkdir()
    (student / "vector_add.cu").write_text((REPO / "labs/01-vector-add/vector_add.cu").read_text())
    built = build_submission(lab01, student, tmp_path / "build", reference_build)
    assert built.ok, built.log
    assert "CMake Error" in built.configured_afresh  # why, for the TA's note
    assert compiled_objects(tmp_path / "build") == ["vector_add.cu.o"]
    assert build.binary_path(tmp_path / "build", "01-vector-add", "student") == built.binary
