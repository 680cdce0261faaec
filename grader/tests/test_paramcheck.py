"""Every parameter a lab's tests read by name is declared in its config: checked by `grader configure`, no GPU."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader import paramcheck
from grader.buildinfo import write as configure
from grader.config import ConfigError, list_labs, load_lab
from grader.tests.conftest import write

HIDDEN_PARAMS = "\n[params]\nhuge_n = 1000000\n"

CHECKS = """\
#pragma once
#include <string>
#include <vector>
#include "kit/params.hpp"

// Sizes from a list parameter: its key is passed on, so a literal given here is a parameter name.
inline std::vector<int> sizes_of(const std::string& what, const std::string& key) {
  std::vector<int> sizes;
  for (auto n : kit::param_ints(key)) sizes.push_back(static_cast<int>(n));
  return sizes;
}

// Only the hidden tests call this one.
inline int huge() { return static_cast<int>(kit::param_int("huge_n")); }
"""

PUBLIC = """\
#include "checks.cuh"

TEST_CASE("toy: adds") {
  const double tol = kit::param_double("rel_tol");
  // kit::param_int("commented_out") is no read
  for (int n : sizes_of("sizes", "sizes")) {}
}

TEST_CASE("toy: runs on the CPU" * KIT_CPU_ONLY) {
  if (kit::has_param("optional_n")) kit::param_int("optional_n");
#ifdef KIT_HIDDEN_TESTS
  kit::param_int("huge_n");
#endif
}
"""

HIDDEN = """\
#include "checks.cuh"

TEST_CASE("toy (hidden): awkward sizes") {
  const int n = huge() + static_cast<int>(kit::param_int("huge_n"));
}
"""


@pytest.fixture
def lab(toy_repo: Path) -> Path:
    (toy_repo / "labs/50-toy/lab.toml").write_text((toy_repo / "labs/50-toy/lab.toml").read_text()
                                                   .replace("sizes = [1, 2, 3]", "sizes = [1, 2, 3]\nrel_tol = 1e-6"))
    hidden = toy_repo / "solutions/50-toy/hidden.toml"
    hidden.write_text(hidden.read_text() + HIDDEN_PARAMS)
    write(toy_repo / "labs/50-toy/tests/checks.cuh", CHECKS)
    write(toy_repo / "labs/50-toy/tests/public_tests.cu", PUBLIC)
    write(toy_repo / "solutions/50-toy/tests/hidden_tests.cu", HIDDEN)
    return toy_repo


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def test_a_lab_whose_tests_read_only_declared_parameters_configures(lab: Path, tmp_path: Path):
    config = load_lab("50-toy", lab)
    assert paramcheck.problems(config) == []
    names = {read.name for read in paramcheck.reads(config)}
    assert names == {"rel_tol", "sizes", "huge_n"}  # not the comment's, not the has_param-guarded one
    configure(config, tmp_path / "out")


def test_a_misspelt_name_fails_configure_with_file_line_and_name(lab: Path, tmp_path: Path):
    public = lab / "labs/50-toy/tests/public_tests.cu"
    _edit(public, 'kit::param_double("rel_tol")', 'kit::param_double("rel_tl")')
    with pytest.raises(ConfigError) as error:
        configure(load_lab("50-toy", lab), tmp_path / "out")
    message = str(error.value)
    assert f"labs/50-toy/tests/public_tests.cu:{_line(public, 'rel_tl')}: " in message
    assert "reads 'rel_tl', which neither labs/50-toy/lab.toml [params] nor solutions/50-toy/hidden.toml" in message
    assert "did you mean 'rel_tol'?" in message
    assert not (tmp_path / "out/lab.cmake").exists()


def test_a_name_passed_through_a_helper_is_checked(lab: Path):
    public = lab / "labs/50-toy/tests/public_tests.cu"
    _edit(public, 'sizes_of("sizes", "sizes")', 'sizes_of("sizes", "size")')
    problems = paramcheck.problems(load_lab("50-toy", lab))
    assert len(problems) == 1 and "sizes_of(\"sizes\", \"size\") reads 'size'" in problems[0]


def test_a_hidden_test_reading_an_undeclared_name_is_caught(lab: Path):
    _edit(lab / "solutions/50-toy/tests/hidden_tests.cu", '"huge_n"', '"huge"')
    problems = paramcheck.problems(load_lab("50-toy", lab))
    assert len(problems) == 1 and problems[0].startswith("solutions/50-toy/tests/hidden_tests.cu:4: ")


def test_a_public_test_may_not_read_a_hidden_only_parameter(lab: Path):
    """The student release has no hidden.toml: the read would fail there, on a GPU, in every student's hands."""
    public = lab / "labs/50-toy/tests/public_tests.cu"
    _edit(public, "#ifdef KIT_HIDDEN_TESTS\n", "")
    _edit(public, "#endif\n", "")
    problems = paramcheck.problems(load_lab("50-toy", lab))
    assert len(problems) == 1
    assert f"public_tests.cu:{_line(public, 'huge_n')}: " in problems[0]
    assert "only solutions/50-toy/hidden.toml [params] declares, in a public test" in problems[0]


def test_a_public_helper_that_a_public_test_calls_may_not_read_a_hidden_only_parameter(lab: Path):
    public = lab / "labs/50-toy/tests/public_tests.cu"
    _edit(public, "for (int n : sizes_of", "huge();\n  for (int n : sizes_of")
    problems = paramcheck.problems(load_lab("50-toy", lab))
    assert len(problems) == 1 and "checks.cuh:14: kit::param_int(\"huge_n\")" in problems[0]


def test_the_student_release_checks_its_public_tests_alone(lab: Path):
    shutil.rmtree(lab / "solutions")
    config = load_lab("50-toy", lab)
    assert paramcheck.problems(config) == []  # the hidden-only read is under #ifdef KIT_HIDDEN_TESTS
    _edit(lab / "labs/50-toy/tests/public_tests.cu", '"rel_tol"', '"tol"')
    assert "which neither" in paramcheck.problems(config)[0]


def test_every_labs_tests_read_only_declared_parameters():
    for name in list_labs():
        assert paramcheck.problems(load_lab(name)) == [], name
