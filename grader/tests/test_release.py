import shutil
import subprocess
from pathlib import Path

import pytest

from grader.release import LeakError, find_leaks, make_release
from grader.tests.conftest import REPO

def _in_git_checkout() -> bool:
    """True where git knows this repository's files (not in a plain copy of the tree)."""
    if shutil.which("git") is None:
        return False
    listing = subprocess.run(["git", "ls-files", "grader/release.py"], cwd=REPO, capture_output=True, text=True)
    return listing.returncode == 0 and listing.stdout.strip() == "grader/release.py"


pytestmark = pytest.mark.skipif(not (REPO / "solutions").is_dir() or not _in_git_checkout(),
                                reason="the release is made from the instructor's git checkout")


def test_release_has_no_private_material(tmp_path: Path):
    count = make_release(tmp_path / "release")
    assert count > 10
    release = tmp_path / "release"
    assert not (release / "solutions").exists()
    assert (release / "labs/01-vector-add/vector_add.cu").is_file()
    assert (release / "grader/__main__.py").is_file()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert (release / "grader/COMMIT").read_text().startswith(head)  # the grader's commit, for results.json


def test_leaks_are_found(tmp_path: Path, lab01):
    hidden_name = next(t.name for t in lab01.tests if t.hidden)
    release = tmp_path / "release"
    make_release(release)
    handout = release / "labs/01-vector-add/README.md"
    handout.write_text(handout.read_text() + "\n    CUDA_CHECK(cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice));"
                                             "\n    CUDA_CHECK(cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice));\n")
    tests = release / "labs/01-vector-add/tests/public_tests.cu"
    tests.write_text(tests.read_text() + "\n// one generic line alone is no leak\nCUDA_CHECK(cudaMalloc(&d_a, bytes));\n")
    (release / "solutions").mkdir()
    (release / "solutions/x.txt").write_text("private")
    (release / "notes.txt").write_text(f"the hidden test '{hidden_name}' and seed {lab01.grading_seed}")
    leaks = "\n".join(find_leaks(release))
    assert "labs/01-vector-add/README.md" in leaks and "reference code from solutions/01-vector-add" in leaks
    assert "public_tests.cu" not in leaks
    assert "solutions/x.txt: a private file" in leaks
    assert "hidden test of 01-vector-add" in leaks and "grading seed of 01-vector-add" in leaks


def test_release_refuses_a_folder_in_use(tmp_path: Path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy/file").write_text("x")
    with pytest.raises(LeakError, match="not empty"):
        make_release(tmp_path / "busy")


def test_release_configures_without_solutions(tmp_path: Path, lab01):
    if shutil.which("nvcc") is None or shutil.which("cmake") is None:
        pytest.skip("needs nvcc and cmake")
    release = tmp_path / "release"
    make_release(release)
    done = subprocess.run(["cmake", "-S", str(release), "-B", str(tmp_path / "build"), "-DKIT_LABS=01-vector-add"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    cmake = (tmp_path / "build/01-vector-add/lab.cmake").read_text()
    assert "KIT_LAB_CASE_COUNT" in cmake
    assert not [t.name for t in lab01.tests if t.hidden and t.name in cmake]
