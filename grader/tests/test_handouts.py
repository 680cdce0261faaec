"""The handouts' grading sections follow the labs' configs, and give away nothing of hidden.toml but its points."""
from __future__ import annotations

import functools
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader import cli, handouts
from grader.config import list_labs, load_lab
from grader.tests.conftest import REPO, TOY_CONFIG_HEAD, write

# A lab of 100 points whose hidden parts are easy to spot if they leak: names and numbers found nowhere else.
PUBLIC = TOY_CONFIG_HEAD + """timing_n = 67108864
timing_size = [4099, 3001]

[[tests]]
name = "toy: adds"
points = 40

[[tests]]
name = "toy reference: worked out by hand"
points = 0
gpu = false

[[perf]]
case = "toy timing: fast"
measurement = "toy_kernel"
points = 30
requires = ["toy:*"]

[[perf]]
case = "toy timing: fast"
measurement = "toy_host"
points = 0

[[perf]]
case = "toy timing: faster"
measurement = "toy_kernel_bonus"
points = 5
extra_credit = true
"""

HIDDEN = """
[grading]
seed = 99

[params]
secret_sizes = [777013, 9999991]
secret_tolerance = 0.000123457

[[tests]]
name = "toy (hidden): quokka sized inputs"
points = 20

[[tests]]
name = "toy (hidden): platypus under memcheck"
points = 10
sanitizer = "memcheck"

[[tests]]
name = "toy (hidden): wombat extra credit"
points = 3
extra_credit = true
"""

README = f"""# Lab 50: Toy

Some prose before.

## Grading

{handouts.BEGIN}
{handouts.END}

Prose after the table stays.
"""


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """A repository with one lab of 100 points, 50-toy, its handout generated."""
    write(tmp_path / "labs/50-toy/lab.toml", PUBLIC)
    write(tmp_path / "labs/50-toy/README.md", README)
    write(tmp_path / "solutions/50-toy/hidden.toml", HIDDEN)
    assert handouts.write(load_lab("50-toy", tmp_path))
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _problems(root: Path) -> list[str]:
    return [str(p) for p in handouts.problems(load_lab("50-toy", root))]


def test_every_committed_handout_follows_its_config():
    done = subprocess.run([sys.executable, "-m", "grader", "handouts", "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in list_labs():
        assert handouts.problems(load_lab(name)) == [], f"{name}: run `make handouts`"


DEBUGGING = "## My answer is wrong but nothing crashes"


@pytest.mark.parametrize("lab", list_labs())
def test_every_handout_says_what_to_try_when_an_answer_is_wrong_and_nothing_crashes(lab: str):
    # Written by hand for the lab's own typical bugs, outside the generated section (make handouts rewrites
    # that); every lab's points at the debugging lab, which practises the same steps at length.
    text = handouts.handout_path(load_lab(lab)).read_text()
    assert text.count(DEBUGGING) == 1, f"labs/{lab}/README.md: no section headed '{DEBUGGING}'"
    place = text.index(DEBUGGING)
    assert not text.index(handouts.BEGIN) < place < text.index(handouts.END)
    section = text[place:].split("\n## ", 1)[0]
    for step in ("--test-case=", "printf", "compute-sanitizer"):
        assert step in section, f"labs/{lab}/README.md: the section says nothing of {step}"
    if lab != "13-debugging":
        assert "(../13-debugging/README.md)" in section


def test_every_lab_totals_100_without_extra_credit():
    totals = {name: load_lab(name).max_points for name in list_labs()}
    assert len(totals) == 14
    assert {name: total for name, total in totals.items() if total != handouts.EXPECTED_TOTAL} == {}


def test_generated_section_states_points_thresholds_sizes_and_total(lab: Path):
    text = (lab / "labs/50-toy/README.md").read_text()
    assert text.startswith("# Lab 50: Toy\n\nSome prose before.\n\n## Grading\n\n" + handouts.BEGIN)
    assert text.endswith(handouts.END + "\n\nProse after the table stays.\n")
    assert "| toy: adds | 40 |" in text
    assert "| toy reference: worked out by hand | 0 |" in text
    assert "| hidden tests, run by your TA | 30 |" in text
    assert "| performance: `toy_kernel` (toy timing: fast) | 30 |" in text
    assert "`toy_host` (toy timing: fast), reported for comparison, no points | 0 |" in text
    assert "| **total** | **100** |" in text
    assert "| *extra credit:* hidden tests, run by your TA | 3 |" in text
    assert "| *extra credit:* performance: `toy_kernel_bonus` (toy timing: faster) | 5 |" in text
    assert "| **with extra credit** | **108** |" in text
    flat = " ".join(text.split())
    assert "full points at ≤ 1.2× the reference's time" in flat and "none past 10×" in flat
    assert "- `toy_kernel`: every test named `toy:…`" in text
    assert "`timing_n` = 2^26 (67108864)" in flat and "`timing_size` = 4099 × 3001" in flat
    assert "median of 3 timed calls after 1 warm-up call," in flat
    assert _problems(lab) == []


@pytest.mark.parametrize("where, old, new, handout_says, config_says", [
    ("labs/50-toy/lab.toml", "points = 40", "points = 42", "| toy: adds | 40 |", "| toy: adds | 42 |"),
    ("labs/50-toy/lab.toml", "full_at = 1.2", "full_at = 1.5", "≤ 1.2×", "≤ 1.5×"),
    ("labs/50-toy/lab.toml", "zero_at = 10.0", "zero_at = 4.0", "none past 10×", "none past 4×"),
    ("labs/50-toy/lab.toml", "timing_n = 67108864", "timing_n = 134217728", "2^26", "2^27"),
    ("labs/50-toy/lab.toml", "timing_repeats = 3", "timing_repeats = 5", "median of 3", "median of 5"),
    ("solutions/50-toy/hidden.toml", "points = 20", "points = 25", "run by your TA | 30", "run by your TA | 35"),
])
def test_a_config_change_the_handout_misses_fails_the_check(lab: Path, where, old, new, handout_says, config_says):
    _edit(lab / where, old, new)
    found = _problems(lab)
    assert found and all(p.startswith("50-toy: ") for p in found)
    difference = found[-1]
    assert "labs/50-toy/README.md" in difference and "make handouts" in difference
    handout_line, config_line = difference.splitlines()[1:3]
    assert handout_says in handout_line and config_says in config_line
    assert handouts.write(load_lab("50-toy", lab))
    assert [p for p in _problems(lab) if "differs" in p] == []


def test_measurements_timed_on_counts_of_their_own_are_named_with_them(lab: Path):
    _edit(lab / "labs/50-toy/lab.toml", "timing_repeats = 3", "timing_repeats = 3\nhost_timing_repeats = 7")
    [difference] = _problems(lab)
    assert "make handouts" in difference
    assert handouts.write(load_lab("50-toy", lab))
    flat = " ".join((lab / "labs/50-toy/README.md").read_text().split())
    assert "median of 3 timed calls after 1 warm-up call (`toy_host`: of 7 after 1), each call on new inputs" in flat
    _edit(lab / "labs/50-toy/lab.toml", "host_timing_repeats = 7", "host_timing_repeats = 7\nhost_timing_warmup = 2")
    assert handouts.write(load_lab("50-toy", lab))
    assert "(`toy_host`: of 7 after 2)" in " ".join((lab / "labs/50-toy/README.md").read_text().split())
    _edit(lab / "labs/50-toy/lab.toml", "host_timing_repeats = 7", "hots_timing_repeats = 7")
    with pytest.raises(handouts.HandoutError, match="hots_timing_repeats names no measurement"):
        handouts.write(load_lab("50-toy", lab))


def test_an_item_scored_over_its_stages_states_its_own_rule_beside_the_labs(lab: Path):
    _edit(lab / "labs/50-toy/lab.toml", 'requires = ["toy:*"]\n',
          'requires = ["toy:*"]\nover_slowest_of = ["toy_host"]\nfull_at = 1.1\nzero_at = 1.5\nfalloff = "linear"\n')
    assert handouts.write(load_lab("50-toy", lab))
    flat = " ".join((lab / "labs/50-toy/README.md").read_text().split())
    assert ("Performance points for `toy_kernel` score the median time of `toy_kernel` over that of the slowest of "
            "`toy_host` alone, timed in the same run") in flat
    assert ("full points at ≤ 1.1× the reference's ratio, then fewer in a straight line (at 1.3× half of them), "
            "none from 1.5×.") in flat
    assert ("Performance points for `toy_kernel_bonus` compare your median time with the reference solution's, "
            "timed on the same GPU in the same grading run: full points at ≤ 1.2× the reference's time, then the "
            "points × 1.2 / your ratio (at 2.4× half of them), none past 10×.") in flat
    _edit(lab / "labs/50-toy/lab.toml", "zero_at = 1.5", "zero_at = 1.6")
    [difference] = _problems(lab)  # the item's own threshold moved: its sentence is stale
    assert "make handouts" in difference and "1.35×" in difference.splitlines()[2]


def test_a_lab_whose_items_share_a_rule_of_their_own_states_it_once(lab: Path):
    text = (lab / "labs/50-toy/lab.toml").read_text()
    text = text.replace("extra_credit = true\n", "extra_credit = true\nfull_at = 1.1\nzero_at = 2.0\n"
                                                  "falloff = \"linear\"\n")
    text = text.replace('requires = ["toy:*"]\n', 'requires = ["toy:*"]\nfull_at = 1.1\nzero_at = 2.0\n'
                                                   'falloff = "linear"\n')
    (lab / "labs/50-toy/lab.toml").write_text(text)
    assert handouts.write(load_lab("50-toy", lab))
    flat = " ".join((lab / "labs/50-toy/README.md").read_text().split())
    assert ("Performance points compare your median time with the reference solution's, timed on the same GPU in "
            "the same grading run: full points at ≤ 1.1× the reference's time, then fewer in a straight line (at "
            "1.55× half of them), none from 2×. A measurement earns points") in flat


def test_a_total_other_than_100_fails_even_with_the_handout_regenerated(lab: Path):
    _edit(lab / "labs/50-toy/lab.toml", "points = 40", "points = 42")
    handouts.write(load_lab("50-toy", lab))
    assert _problems(lab) == ["50-toy: its points sum to 102 without extra credit, not 100 (lab.toml and hidden.toml)"]


def test_an_edit_inside_the_generated_section_fails_the_check(lab: Path):
    _edit(lab / "labs/50-toy/README.md", "| **total** | **100** |", "| **total** | **101** |")
    (found,) = _problems(lab)
    assert "handout: | **total** | **101** |" in found and "config:  | **total** | **100** |" in found


@pytest.mark.parametrize("readme", ["# no markers\n", f"{handouts.BEGIN}\n{handouts.END}\n{handouts.END}\n",
                                    f"{handouts.END}\n{handouts.BEGIN}\n"])
def test_markers_missing_doubled_or_reversed_are_named(lab: Path, readme: str):
    (lab / "labs/50-toy/README.md").write_text(readme)
    (found,) = _problems(lab)
    assert "labs/50-toy/README.md" in found and "grading" in found
    with pytest.raises(handouts.HandoutError):
        handouts.write(load_lab("50-toy", lab))


def test_the_command_exits_non_zero_naming_the_lab_and_the_first_difference(lab: Path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_lab", functools.partial(load_lab, root=lab))
    monkeypatch.setattr(cli, "list_labs", functools.partial(list_labs, lab))
    assert cli.main(["handouts", "--check"]) == 0
    _edit(lab / "labs/50-toy/lab.toml", "full_at = 1.2", "full_at = 1.3")
    assert cli.main(["handouts", "--check"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("50-toy: labs/50-toy/README.md") and "1.2×" in out and "1.3×" in out
    assert cli.main(["handouts"]) == 0
    assert capsys.readouterr().out == "wrote labs/50-toy/README.md\n"
    assert cli.main(["handouts", "--check", "--lab", "50-toy"]) == 0


def _hidden_parts(root: Path, name: str) -> tuple[list[str], list[str]]:
    """A lab's hidden test names, and its hidden parameter values that lab.toml does not also hold."""
    path = root / "solutions" / name / "hidden.toml"
    if not path.is_file():
        return [], []
    with path.open("rb") as f:
        hidden = tomllib.load(f)
    public_text = (root / "labs" / name / "lab.toml").read_text()
    values = []
    for value in hidden.get("params", {}).values():
        for item in value if isinstance(value, list) else [value]:
            text = str(item)
            # Small numbers (1, 33, 0.5) appear in any table; a value the public config also holds is no secret.
            if len(text.replace(".", "")) >= 4 and not re.search(rf"(?<![\w.]){re.escape(text)}(?![\w.])", public_text):
                values.append(text)
    return [t["name"] for t in hidden.get("tests", [])], values


def _leaks(text: str, names: list[str], values: list[str]) -> list[str]:
    found = [name for name in names if name in text]
    found += [value for value in values if re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", text)]
    return found


def test_nothing_of_hidden_toml_but_its_points_reaches_the_toy_handout(lab: Path):
    names, values = _hidden_parts(lab, "50-toy")
    assert len(names) == 3 and {"777013", "9999991", "0.000123457"} <= set(values)
    text = (lab / "labs/50-toy/README.md").read_text()
    assert _leaks(text, names + ["quokka", "platypus", "wombat", "memcheck", "hidden)"], values) == []
    assert "99" not in re.findall(r"\d+", text)  # the secret seed


@pytest.mark.parametrize("name", list_labs())
def test_nothing_of_hidden_toml_but_its_points_reaches_a_generated_section(name: str):
    config = load_lab(name)
    names, values = _hidden_parts(REPO, name)
    generated = handouts.generate(config)
    assert _leaks(generated, names, values) == []
    assert str(config.grading_seed) not in re.findall(r"\d+", generated)


def test_a_timing_case_name_stating_an_old_size_fails_the_check(lab: Path):
    toml = lab / "labs/50-toy/lab.toml"
    toml.write_text(toml.read_text().replace('"toy timing: fast"', '"toy timing: 2^26 floats on 4099x3001"'))
    handouts.write(load_lab("50-toy", lab))
    assert _problems(lab) == []
    _edit(toml, "timing_n = 67108864", "timing_n = 134217728")
    handouts.write(load_lab("50-toy", lab))
    assert _problems(lab) == ["50-toy: the timing case 'toy timing: 2^26 floats on 4099x3001' states 67108864, which "
                              "no timing size in lab.toml's [params] holds (timing_n = 2^27 (134217728), "
                              "timing_size = 4099 × 3001)"]
