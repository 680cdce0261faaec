"""Wrong and right variants follow comment and whitespace edits of the reference, and a real code change
that removes their text is reported by configure, `skeleton --check` and the release, naming the variant."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader import cli, release, variants
from grader.buildinfo import variant_sources, write
from grader.config import ConfigError, load_lab
from grader.tests.conftest import copy_lab

LAB = "01-vector-add"
REFERENCE = f"solutions/{LAB}/vector_add.cu"
# The two lines [[wrong]] 'pair-loads-past-the-end' replaces, one after the other.
FIRST = "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
SECOND = "  if (i < n) c[i] = a[i] + b[i];\n"


@pytest.fixture
def lab_copy(tmp_path: Path) -> Path:
    copy_lab(tmp_path, LAB)
    text = (tmp_path / REFERENCE).read_text()
    assert FIRST + SECOND in text, "lab 01's reference changed: update this test's two lines"
    return tmp_path


def _edit_reference(root: Path, old: str, new: str) -> None:
    path = root / REFERENCE
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def test_a_comment_line_added_between_replaced_lines_still_yields_the_variant(lab_copy: Path, tmp_path: Path):
    _edit_reference(lab_copy, FIRST + SECOND, FIRST + "  // one thread per element\n" + SECOND)
    config = load_lab(LAB, lab_copy)
    variant = variant_sources(config, "wrong")["pair-loads-past-the-end"]["vector_add.cu"]
    by = next(w.by for w in config.wrong if w.name == "pair-loads-past-the-end")
    assert by in variant
    assert "const int i = blockIdx.x" not in variant and "one thread per element" not in variant
    # The rest of the reference is untouched, and the whole lab configures.
    before, after = (lab_copy / REFERENCE).read_text().split(FIRST)
    assert variant.startswith(before.rstrip("\n")) and variant.endswith(after.split(SECOND)[1])
    write(config, tmp_path / "out")
    assert by in (tmp_path / "out/wrong/pair-loads-past-the-end/vector_add.cu").read_text()
    assert variants.problems(config) == []


def test_whitespace_edits_and_trailing_comments_are_followed(lab_copy: Path):
    _edit_reference(lab_copy, SECOND, "  if (i<n)   c[i] = a[i]+b[i];  // the guard\n")
    config = load_lab(LAB, lab_copy)
    made = variant_sources(config, "wrong")
    assert "  c[i] = a[i] + b[i];" in made["no-bounds-check"]["vector_add.cu"]
    assert "if (i <= n) c[i] = a[i] + b[i];" in made["bounds-check-off-by-one"]["vector_add.cu"]
    assert "if (i<n)" not in made["bounds-check-off-by-one"]["vector_add.cu"]


def test_a_real_code_change_is_reported_with_the_variants_name(lab_copy: Path, tmp_path: Path, monkeypatch, capsys):
    _edit_reference(lab_copy, SECOND, "  if (i < n) c[i] = b[i] + a[i];\n")
    config = load_lab(LAB, lab_copy)
    problems = "\n".join(variants.problems(config))
    for name in ("no-bounds-check", "bounds-check-off-by-one", "pair-loads-past-the-end"):
        assert f"{LAB}: solutions/{LAB}/hidden.toml [[wrong]] '{name}'" in problems
    assert "'too-few-blocks'" not in problems and "'block-of-96'" not in problems  # still apply
    assert "occurs 0 times in solutions/01-vector-add/vector_add.cu, even ignoring whitespace" in problems
    assert repr("if (i < n) c[i] = a[i] + b[i];") in problems  # what it looked for
    with pytest.raises(ConfigError, match="'no-bounds-check'"):
        write(config, tmp_path / "out")

    # `python3 -m grader skeleton --check` (make skeleton-check) fails, naming them.
    monkeypatch.setattr(cli, "load_lab", lambda lab: load_lab(lab, lab_copy))
    assert cli.main(["skeleton", "--check", "--lab", LAB]) == 1
    err = capsys.readouterr().err
    assert "3 wrong, right or slow variant(s) no longer apply" in err and "'pair-loads-past-the-end'" in err

    # The release refuses before copying anything.
    with pytest.raises(ConfigError, match="'bounds-check-off-by-one'"):
        release.make_release(tmp_path / "release", lab_copy)
    assert not (tmp_path / "release").exists()


def test_skeleton_check_passes_when_every_variant_applies(lab_copy: Path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_lab", lambda lab: load_lab(lab, lab_copy))
    assert cli.main(["skeleton", "--check", "--lab", LAB]) == 0


@pytest.mark.parametrize("reference, replace, found", [
    ("x = a + b;\n", "x = a + b;", 1),
    ("x = a+b;\n", "x = a + b;", 1),
    ("x = a\n    // why\n    + b;\n", "x = a + b;", 1),
    ("x = a ++b;\n", "x = a + +b;", 0),            # `++` is not `+ +`
    ("y = i <= n;\n", "y = i < = n;", 0),
    ("int ab = 1;\n", "int a b = 1;", 0),          # words stay apart
    ("intab = 1;\n", "int ab = 1;", 0),
    ("xi<n;\n", "i < n;", 0),                      # a whole word, not the end of one
    ("f(); // one\nf(); // two\n", "f(); // two", 1),  # a comment of the replace text picks its line
    ("f();\n// added\nf();\n", "f();\nf();", 1),
])
def test_loose_matching(reference: str, replace: str, found: int):
    spans, _ = variants.spans(reference, replace)
    assert len(spans) == found


def test_text_found_twice_is_an_error_even_loosely():
    with pytest.raises(ConfigError, match="occurs 2 times in k.cu, even ignoring"):
        variants.apply("a  = 1;\na =1;\n", "a = 1;", "a = 2;", "lab: [[wrong]] 'x'", "k.cu")
    with pytest.raises(ConfigError, match="occurs 2 times in k.cu \\(it must"):
        variants.apply("a = 1;\na = 1;\n", "a = 1;", "a = 2;", "lab: [[wrong]] 'x'", "k.cu")


def test_every_variant_of_every_lab_applies_as_written():
    from grader.config import list_labs
    for lab in list_labs():
        config = load_lab(lab)
        assert variants.problems(config) == [], lab
        for table in ("wrong", "right"):
            for variant in getattr(config, table):
                # A variant taken from a whole file (`source`) is found by its `from` text; its `replace`, if any,
                # edits that file, not the reference.
                text = variant.source_from if variant.source else variant.replace
                if not text:
                    continue
                found, loose = variants.spans((config.solution_dir / variant.file).read_text(), text)
                assert len(found) == 1 and not loose, f"{lab} [[{table}]] {variant.name}"
