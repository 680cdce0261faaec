from pathlib import Path

import pytest

from grader.buildinfo import write
from grader.sanitizer import arguments
from grader.config import ConfigError, load_lab


def test_build_files_for_the_toy_lab(toy_repo: Path, tmp_path: Path):
    config = load_lab("50-toy", toy_repo)
    out = tmp_path / "out"
    write(config, out)
    params = (out / "params.txt").read_text().splitlines()
    assert "sizes=1,2,3" in params and "seed=1" in params
    cmake = (out / "lab.cmake").read_text()
    assert "set(KIT_LAB_STUDENT_FILES [==[toy.cu]==])" in cmake
    assert "set(KIT_LAB_CASE_COUNT 4)" in cmake
    assert "set(KIT_LAB_CASE_1_GPU OFF)" in cmake and "set(KIT_LAB_CASE_3_TIMING ON)" in cmake
    assert "set(KIT_LAB_CASE_0_SERIAL OFF)" in cmake and "set(KIT_LAB_CASE_3_SERIAL ON)" in cmake
    assert "set(KIT_LAB_CASE_0_SANITIZER [==[]==])" in cmake
    wrong = (out / "wrong/off-by-one/toy.cu").read_text()
    assert "if (i < n - 1) out[i] = i;" in wrong
    # The judge/runner split, made from the toy's header (grader/calls.py).
    assert "set(KIT_LAB_SPLIT ON)" in cmake and "set(KIT_LAB_UNSPLIT_WHY [==[]==])" in cmake
    assert "int count(int n) {" in (out / "calls/judge_calls.cpp").read_text()
    assert "kit_out.set(count(n));" in (out / "calls/runner_calls.cpp").read_text()


def test_a_lab_that_cannot_be_split_says_why_in_its_build_files(toy_repo: Path, tmp_path: Path):
    (toy_repo / "labs/50-toy/toy.cuh").write_text("#pragma once\nstruct Toy;\nToy* make_toy(int n);\n")
    write(load_lab("50-toy", toy_repo), tmp_path / "out")
    cmake = (tmp_path / "out/lab.cmake").read_text()
    assert "set(KIT_LAB_SPLIT OFF)" in cmake
    assert "set(KIT_LAB_UNSPLIT_WHY [==[make_toy returns a pointer or reference (Toy*) that no table explains " \
           "([host_allocators] for host memory, [objects] for an object the student's code makes)]==])" in cmake
    assert not (tmp_path / "out/calls").exists()


def test_a_sanitized_case_carries_the_graders_sanitizer_options(toy_repo: Path, tmp_path: Path):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text().replace("points = 5\n", 'points = 5\nsanitizer = "memcheck"\n', 1))
    write(load_lab("50-toy", toy_repo), tmp_path / "out")
    cmake = (tmp_path / "out/lab.cmake").read_text()
    assert "set(KIT_LAB_CASE_2_SANITIZER [==[memcheck]==])" in cmake  # the hidden test, after the two public ones
    assert f"set(KIT_LAB_CASE_2_SANITIZER_ARGS [==[{';'.join(arguments('memcheck'))}]==])" in cmake


def test_a_wrong_variant_whose_text_is_gone_is_an_error(toy_repo: Path, tmp_path: Path):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text().replace('replace = "i < n"', 'replace = "i <= n"'))
    with pytest.raises(ConfigError, match="occurs 0 times in solutions/50-toy/toy.cu"):
        write(load_lab("50-toy", toy_repo), tmp_path / "out")


def test_a_correct_alternative_is_written_beside_the_wrong_variants(toy_repo: Path, tmp_path: Path):
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + '\n[[right]]\nname = "bigger-blocks"\nwhy = "w"\nfile = "toy.cu"\n'
                      'replace = "blockIdx.x * blockDim.x"\nby = "blockDim.x * blockIdx.x"\n')
    write(load_lab("50-toy", toy_repo), tmp_path / "out")
    assert "int i = blockDim.x * blockIdx.x + threadIdx.x;" in (tmp_path / "out/right/bigger-blocks/toy.cu").read_text()
    cmake = (tmp_path / "out/lab.cmake").read_text()
    assert "set(KIT_LAB_RIGHT [==[bigger-blocks]==])" in cmake and "set(KIT_LAB_WRONG [==[off-by-one]==])" in cmake


def test_variants_made_from_whole_files_are_listed_for_every_build(toy_repo: Path, tmp_path: Path):
    # KitLab.cmake keeps these variants' student files in `all`, so that CI compiles each new kernel for every
    # GPU generation; an edit of the reference is left to the self-check.
    (toy_repo / "solutions/50-toy/journey").mkdir()
    (toy_repo / "solutions/50-toy/journey/faster.cu").write_text("// another kernel\n")
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + '\n[[right]]\nname = "faster"\nwhy = "w"\nfile = "toy.cu"\n'
                      'source = "journey/faster.cu"\n\n[[right]]\nname = "bigger-blocks"\nwhy = "w"\n'
                      'file = "toy.cu"\nreplace = "blockIdx.x * blockDim.x"\nby = "blockDim.x * blockIdx.x"\n')
    write(load_lab("50-toy", toy_repo), tmp_path / "out")
    cmake = (tmp_path / "out/lab.cmake").read_text()
    assert "set(KIT_LAB_WHOLE_FILE_VARIANTS [==[right-faster]==])" in cmake
