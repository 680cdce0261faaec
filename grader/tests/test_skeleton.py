from pathlib import Path

import pytest

from grader.tests.conftest import TOY_REFERENCE
from grader.config import list_labs, load_lab
from grader.skeleton import MarkerError, differences, solution_code, strip_solution, write


def test_skeleton_keeps_todos_and_skeleton_lines_and_drops_the_solution():
    skeleton, regions = strip_solution(TOY_REFERENCE, "toy.cu")
    assert [(r.begin, r.end) for r in regions] == [(2, 7), (11, 15)]
    assert "// TODO: write out[i] = i for every i below n." in skeleton
    assert "//       Guard the index." in skeleton
    assert "  return 0;" in skeleton
    assert "if (i < n)" not in skeleton and "return n;" not in skeleton
    assert "BEGIN SOLUTION" not in skeleton and "SKELETON:" not in skeleton
    assert skeleton.startswith("__global__ void toy_kernel(int* out, int n) {\n  // TODO")


@pytest.mark.parametrize("text, message", [
    ("// BEGIN SOLUTION\n// TODO: x\n", "toy.cu:1: BEGIN SOLUTION is never closed"),
    ("// END SOLUTION\n", "toy.cu:1: END SOLUTION without a BEGIN"),
    ("// BEGIN SOLUTION\n// TODO: x\n// BEGIN SOLUTION\n", "toy.cu:3: BEGIN SOLUTION inside the region opened at line 1"),
    ("// BEGIN SOLUTON\n", "toy.cu:1: unknown marker"),
    ("int x;\n// END ANSWER\n", "toy.cu:2: unknown marker"),
    ("// BEGIN SOLUTION\nint x;\n// END SOLUTION\n", "toy.cu:1: the region has no '// TODO'"),
    ("// SKELETON: return 0;\n", "toy.cu:1: '// SKELETON:' outside"),
    ("int main() {}\n", "no '// BEGIN SOLUTION' region"),
    ("// BEGIN FIX\nint x;\n// END SOLUTION\n", "toy.cu:3: END SOLUTION closes the BEGIN FIX of line 1"),
    ("// BEGIN FIX\n// TODO: the bug is here\nint x;\n// END FIX\n", "toy.cu:2: a TODO inside a FIX region"),
    ("// BEGIN FIX\nint x;\n", "toy.cu:1: BEGIN FIX is never closed by END FIX"),
])
def test_marker_mistakes_name_file_and_line(text, message):
    with pytest.raises(MarkerError, match=message):
        strip_solution(text, "toy.cu")


# A debugging lab's reference: the fixes of two bugs, one a wrong line and one a missing line.
BUGGY_REFERENCE = """\
__global__ void copy_kernel(const float* a, float* c, int n) {
  __shared__ float staged[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  // BEGIN FIX
  // the guard lets no thread at n or past it through
  if (i < n) staged[threadIdx.x] = a[i];
  // SKELETON: if (i <= n) staged[threadIdx.x] = a[i];
  // END FIX
  // BEGIN FIX
  __syncthreads();  // every element is staged before any is read
  // END FIX
  if (i < n) c[i] = staged[blockDim.x - 1 - threadIdx.x];
}
"""


def test_a_fix_region_leaves_the_bug_in_place_and_nothing_that_marks_it():
    skeleton, regions = strip_solution(BUGGY_REFERENCE, "copy.cu")
    assert [(r.begin, r.end, r.kind) for r in regions] == [(4, 8, "FIX"), (9, 11, "FIX")]
    assert skeleton.splitlines() == [
        "__global__ void copy_kernel(const float* a, float* c, int n) {",
        "  __shared__ float staged[256];",
        "  const int i = blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (i <= n) staged[threadIdx.x] = a[i];",
        "  if (i < n) c[i] = staged[blockDim.x - 1 - threadIdx.x];",
        "}",
    ]


def test_the_fixed_lines_are_solution_code_to_the_leak_checks(toy_repo: Path):
    (toy_repo / "solutions/50-toy/toy.cu").write_text(BUGGY_REFERENCE)
    config = load_lab("50-toy", toy_repo)
    assert [line.text.strip() for line in solution_code(config)] == [
        "if (i < n) staged[threadIdx.x] = a[i];", "__syncthreads();  // every element is staged before any is read"]
    write(config)
    generated = (toy_repo / "labs/50-toy/toy.cu").read_text()
    assert generated.startswith("// Your file for lab 50-toy: find and fix the bugs below (the handout: ")
    assert "__syncthreads" not in generated and "FIX" not in generated


def test_generate_then_check_round_trip(toy_repo: Path):
    config = load_lab("50-toy", toy_repo)
    assert differences(config)  # nothing generated yet
    assert write(config) == [toy_repo / "labs/50-toy/toy.cu"]
    assert differences(config) == []
    assert write(config) == []  # unchanged files are left alone
    generated = (toy_repo / "labs/50-toy/toy.cu").read_text()
    # The header names only what a student's repository holds: no solutions/, no command to regenerate it.
    assert generated.startswith("// Your file for lab 50-toy: fill in every TODO below (the handout: "
                                "labs/50-toy/README.md).\n// Only toy.cu is taken when you are graded")
    assert "solutions/" not in generated and "grader skeleton" not in generated

    reference = toy_repo / "solutions/50-toy/toy.cu"
    reference.write_text(reference.read_text().replace("return n;", "return n + 0;").replace(
        "// TODO: return n.", "// TODO: return n, the count."))
    diff = differences(config)
    assert len(diff) == 1 and "+  // TODO: return n, the count." in diff[0]


def test_committed_skeletons_match_their_references():
    for lab in list_labs():
        config = load_lab(lab)
        if config.solution_dir is not None:
            assert differences(config) == [], f"{lab}: run python3 -m grader skeleton"
