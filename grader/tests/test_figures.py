"""Measured figures in handouts and decks come from the newest GPU run records (grader/figures.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader import figures, handouts
from grader.tests.conftest import REPO, write

COPY = "device-to-device copy"
RATIO = f'rate(toy_kernel) / rate(toy_kernel, "{COPY}")'


def _record(root: Path, name: str, date: str, kernel_s: float, host_s: float, copy_rate: float = 3000.0) -> None:
    measurements = [
        {"case": "toy timing", "name": "toy_kernel", "median_s": kernel_s, "rate": 1.2e-3 / kernel_s, "unit": "GB/s",
         "ceilings": {COPY: copy_rate}},
        {"case": "toy timing", "name": "toy_host", "median_s": host_s, "rate": 1.2e-3 / host_s, "unit": "GB/s",
         "ceilings": {}},
    ]
    write(root / "docs/gpu-runs" / name, json.dumps({"date": date, "gpu": "G", "driver": "D", "commit": "C",
                                                      "labs": {"50-toy": {"score": 100, "max": 100,
                                                                          "measurements": measurements}}}))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one lab, 50-toy, its handout, its deck and the course deck, and two GPU run records:
    the newer one has toy_kernel at 1 ms (1.2 GB/s, 0.0004 of a 3000 GB/s copy) and toy_host at 4 ms."""
    write(tmp_path / "labs/50-toy/lab.toml", "")
    write(tmp_path / "labs/50-toy/README.md", "# Lab 50\n")
    write(tmp_path / "slides/50-toy.md", "---\nmarp: true\n---\n\n# Toy\n")
    write(tmp_path / "slides/00-course.md", "---\nmarp: true\n---\n\n# Course\n")
    _record(tmp_path, "2026-01-01-old.json", "2026-01-01", kernel_s=0.002, host_s=0.002)
    _record(tmp_path, "2026-02-01-new.json", "2026-02-01", kernel_s=0.001, host_s=0.004)
    return tmp_path


def _run(root: Path, text: str, where: str = "labs/50-toy/README.md", write_back: bool = False):
    (root / where).write_text(text)
    return figures.run(root, write=write_back)


def _only(result: figures.Result) -> str:
    """The one problem or stale figure found."""
    found = result.problems + result.stale
    assert len(found) == 1, found
    return found[0]


# --- figures are written from the newest record ----------------------------------------------------

def test_a_marked_figure_is_written_from_the_newest_record_with_the_decimals_it_has(repo: Path):
    text = (f"The host takes 9.9<!-- measured: time(toy_host) / time(toy_kernel) --> times as long, "
            f"and 1,000<!-- measured: 1000000 * time(toy_kernel) --> µs.\n")
    result = _run(repo, text, write_back=True)
    assert result.problems == [] and result.changed == ["labs/50-toy/README.md"]
    assert (repo / "labs/50-toy/README.md").read_text() == text.replace("9.9<", "4.0<")
    assert figures.run(repo).stale == [], "a written figure is still stale"


def _named_gpu(root: Path, gpu: str) -> None:
    """The newest record, as the fixture's newer one but run on `gpu`."""
    newest = root / "docs/gpu-runs/2026-02-01-new.json"
    newest.write_text(json.dumps(dict(json.loads(newest.read_text()), gpu=gpu)))


def test_the_gpu_named_beside_the_figures_is_the_one_of_their_record(repo: Path):
    _named_gpu(repo, "NVIDIA H200")
    text = "What the reference printed on the kit's last GPU run, an H100<!-- measured: gpu -->:\n"
    found = _only(_run(repo, text))
    assert found.startswith("labs/50-toy/README.md:1: H100 should be H200 (the GPU of docs/gpu-runs/2026-02-01-new.json")
    result = _run(repo, text, write_back=True)
    assert (repo / "labs/50-toy/README.md").read_text() == text.replace("H100<", "H200<")
    assert figures.run(repo).stale == [] and figures.run(repo).problems == []


def test_the_gpu_of_the_figures_needs_its_mark_and_a_record_that_names_one(repo: Path):
    found = _only(_run(repo, "The reference, on the kit's last GPU run, an H100; each report is one line.\n"))
    assert "the GPU the figures came from, with no <!-- measured: gpu -->" in found
    found = _only(_run(repo, "On the kit's last GPU run, an H100<!-- measured: gpu -->.\n"))
    assert "names no GPU that a text could ('G')" in found  # the fixture's records say only "G"
    _named_gpu(repo, "NVIDIA H100 80GB HBM3")
    found = _only(_run(repo, "On the kit's last GPU run, the H100 <!-- measured: gpu -->.\n"))
    assert "must stand right before <!-- measured: gpu -->" in found


@pytest.mark.parametrize("recorded, shown", [("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H200", "H200"),
                                             ("Tesla T4", "T4"), ("NVIDIA A100-SXM4-80GB", "A100"),
                                             ("NVIDIA L4", "L4"), ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("?", "")])
def test_a_records_gpu_is_named_as_a_text_names_it(recorded: str, shown: str):
    assert figures.short_gpu_name(recorded) == shown


def test_a_journey_step_is_read_from_the_record_of_the_journey_and_its_listing_names_that_record(repo: Path):
    step = {"name": "toy-step", "title": "a step", "build": "right-faster", "case": "toy timing",
            "measurement": "toy_kernel", "status": "passed", "median_s": 0.0005, "rate": 2.4, "unit": "GB/s",
            "ceilings": {COPY: 3000.0}}
    write(repo / "docs/gpu-runs/2026-01-15-journey.json", json.dumps(
        {"date": "2026-01-15", "gpu": "G", "driver": "D", "commit": "C",
         "labs": {"50-toy": {"measurements": [], "journey": [step]}}}))
    result = _run(repo, f'The step reaches 0.9<!-- measured: rate("toy-step") / rate("toy-step", "{COPY}") -->; the '
                        f'reference 0.9<!-- measured: {RATIO} -->.\n', write_back=True)
    assert result.problems == []
    [step_mark] = [mark.text for mark in result.marks if "toy-step" in mark.text]
    [reference_mark] = [mark.text for mark in result.marks if "toy_kernel" in mark.text]
    assert step_mark.endswith("in docs/gpu-runs/2026-01-15-journey.json")
    assert reference_mark.endswith("in docs/gpu-runs/2026-02-01-new.json")


def test_a_stale_figure_fails_the_check_naming_where_it_stands_and_what_the_record_says(repo: Path):
    found = _only(_run(repo, "Intro.\n\nIt reaches 0.91<!-- measured: 1000 * " + RATIO + " --> of it.\n"))
    assert found.startswith("labs/50-toy/README.md:3: 0.91 should be 0.40 (")
    assert "docs/gpu-runs/2026-02-01-new.json" in found, "the figure must come from the newest record"


def test_a_figure_must_stand_right_before_its_mark(repo: Path):
    result = _run(repo, f"It reaches 0.9 <!-- measured: {RATIO} --> of it.\n")
    assert any("must stand right before it" in problem for problem in result.problems), result.problems


def test_an_unknown_measurement_or_yardstick_names_what_the_record_has(repo: Path):
    found = _only(_run(repo, "It takes 1.0<!-- measured: time(toy_kernal) --> s.\n"))
    assert "no measurement 'toy_kernal'" in found and "toy_kernel, toy_host" in found
    found = _only(_run(repo, '1.0<!-- measured: rate(toy_kernel, "copy") --> of it.\n'))
    assert "no yardstick 'copy'" in found and repr(COPY) in found


@pytest.mark.parametrize("expression", ['__import__("os").system("true")', "toy_kernel.median_s",
                                        "time(toy_kernel) ** 2", "open('x')", "[1][0]"])
def test_an_expression_is_arithmetic_on_time_and_rate_and_nothing_else(repo: Path, expression: str):
    found = _only(_run(repo, f"It is 1.0<!-- measured: {expression} -->.\n"))
    assert "is not" in found


def test_a_deck_of_no_lab_names_the_lab_of_its_figures(repo: Path):
    assert "belongs to no lab" in _only(_run(repo, "0.1<!-- measured: time(toy_kernel) -->\n", "slides/00-course.md"))
    result = _run(repo, "0.1<!-- measured 50-toy: 100 * time(toy_kernel) -->\n", "slides/00-course.md")
    assert result.problems == [] and result.stale == []


def test_a_lab_without_a_record_is_named(repo: Path):
    found = _only(_run(repo, "0.1<!-- measured 51-other: time(x) -->\n", "slides/00-course.md"))
    assert "no GPU run record in docs/gpu-runs/ has measurements of 51-other" in found


# --- claims are checked -----------------------------------------------------------------------------

def test_a_claim_the_record_bears_out_passes_and_one_it_contradicts_fails_with_the_values(repo: Path):
    assert _run(repo, "The kernel is faster than the host<!-- measured: time(toy_kernel) < time(toy_host) -->.\n"
                ).problems == []
    found = _only(_run(repo, "Intro.\n\nThe host is faster<!-- measured: time(toy_host) < time(toy_kernel) -->.\n"))
    assert found.startswith("labs/50-toy/README.md:3: the claim time(toy_host) < time(toy_kernel) is false in "
                            "docs/gpu-runs/2026-02-01-new.json (time(toy_host) = 0.004, time(toy_kernel) = 0.001)")


def test_a_chained_claim_holds_only_when_every_link_does(repo: Path):
    assert _run(repo, "In between<!-- measured: 0.001 <= time(toy_kernel) < time(toy_host) -->.\n").problems == []
    assert "is false" in _only(_run(repo, "In between<!-- measured: 0.002 <= time(toy_kernel) < time(toy_host) -->.\n"))


# --- program output ---------------------------------------------------------------------------------

BLOCK = """What the reference printed:

<!-- measured: [ratio] time(toy_host) / time(toy_kernel), 1000 * time(toy_kernel) -->
```
[timing] toy_kernel       9.999 ms    9999.9 GB/s  (0.99 of device-to-device copy at 2990.0)
[timing] toy_host         9.999 ms       9.9 GB/s
[timing] toy_kernel       9.999 ms       9.9 GB/s
           (0.99 of device-to-device copy at 2990.0)
[timing] toy_host         T ms       R GB/s      placeholders stay
[ratio] the host takes 9.99x as long, 9.9 ms for the kernel (1.00: no difference)
```
"""


def test_timing_lines_take_the_harness_format_from_the_record_and_keep_their_columns(repo: Path):
    result = _run(repo, BLOCK, write_back=True)
    assert result.problems == [], result.problems
    lines = (repo / "labs/50-toy/README.md").read_text().splitlines()
    assert lines[4] == "[timing] toy_kernel       1.000 ms       1.2 GB/s  (0.00 of device-to-device copy at 3000.0)"
    assert lines[5] == "[timing] toy_host         4.000 ms       0.3 GB/s"
    assert lines[7] == "           (0.00 of device-to-device copy at 3000.0)", "a continuation line was not written"
    assert lines[8] == "[timing] toy_host         T ms       R GB/s      placeholders stay"
    assert lines[9] == "[ratio] the host takes 4.00x as long, 1.0 ms for the kernel (1.00: no difference)"


@pytest.mark.parametrize("line, why", [
    ("[timing] toy_kernel  1.000 ms  1.2 GFLOP/s", "is in 'GB/s' in docs/gpu-runs/2026-02-01-new.json, not 'GFLOP/s'"),
    ("[timing] toy_kernel  1.000 ms  1.2 GB/s  (0.00 of device-to-device ... at 3000.0)", "write its whole name"),
    ("[timing] toy_kernel  1.0 ms  fast", "not as the harness prints one"),
    ("[speedup] 2.0x as fast", "gives no expressions for [speedup]"),
])
def test_an_output_line_the_record_cannot_fill_is_named(repo: Path, line: str, why: str):
    found = _only(_run(repo, f"<!-- measured -->\n```\n{line}\n```\n"))
    assert found.startswith("labs/50-toy/README.md:3: ") and why in found


def test_a_mark_for_output_stands_right_before_its_block(repo: Path):
    assert "right before its fenced block" in _only(_run(repo, "<!-- measured -->\n\n```\n[x] 1\n```\n"))


# --- unmarked figures and claims --------------------------------------------------------------------

@pytest.mark.parametrize("sentence", [
    "The reference reaches about 0.9 of the copy.",
    "Expect about 1.05 on a good machine.",
    "expect 3 on a good machine.",
    "It is 1.9x as fast as the sequential one.",
    "A 3× speedup over lab 03.",
    "The copies take 100 times longer.",
    "It comes within 10 % of thrust.",
    "The tiled kernel is faster than the naive one.",
    "Pageable memory is slower still.",
    "The kernel gets several times faster.",
    "The tiled kernel is faster.",
    "Warp aggregation wins by far on one value.",
    "Part 3 should beat it by far.",
    "Expect around a tenth of cuBLAS.",
])
def test_an_unmarked_measured_figure_or_comparison_fails(repo: Path, sentence: str):
    found = _only(_run(repo, f"# Lab 50\n\nSome words.\n{sentence}\n"))
    assert found.startswith("labs/50-toy/README.md:4: ") and ("a measured figure" in found or "a comparison" in found)


@pytest.mark.parametrize("text", [
    "The reference reaches 0.4<!-- measured: 1000 * " + RATIO + " --> of the copy.\n",
    "It takes 4.0<!-- measured: time(toy_host) / time(toy_kernel) -->× the kernel's time.\n",
    "It is 4×<!-- measured: time(toy_host) / time(toy_kernel) > 3 --> slower than the kernel.\n",
    "The host is far slower than the kernel, on\nits own line<!-- measured: time(toy_host) > time(toy_kernel) -->.\n",
    "At most 0.5<!-- unmeasured: the byte-count model --> of the copy.\n",
    "Powf is far slower<!-- unmeasured: no timing case times it -->.\n",
    "This design can reach at most 8/12 ≈ 0.67 of the copy.\n",
    "## Q1: Why step 4 is no faster than step 3 (6 points)\n",
    "How many times slower is the host than the kernel? Measure it.\n",
    "Does warp aggregation win on one value on your GPU?\n",
    "Code such as `0.5 of x` or `a faster than b` is not prose.\n",
    "```\nexpect about 1.05 in a code block that is not program output\n```\n",
    f"{handouts.BEGIN}\nfull points at ≤ 1.2× the reference's time, 0.5 of them\n{handouts.END}\n",
    "A block of 32 × 8 threads, 4 values per thread.\n",
])
def test_marked_unmeasured_and_non_measured_text_passes(repo: Path, text: str):
    result = _run(repo, text)
    assert result.problems == [] and result.stale == [], result.problems + result.stale


def test_a_decks_figures_are_checked_like_a_handouts(repo: Path):
    found = _only(_run(repo, "---\nmarp: true\n---\n\n- The reference reaches about 0.9 of the copy\n",
                       "slides/50-toy.md"))
    assert found.startswith("slides/50-toy.md:5: ")


def test_a_question_sheet_is_checked_too(repo: Path):
    found = _only(_run(repo, "Expect about 2.0 here.\n", "labs/50-toy/QUESTIONS.md"))
    assert found.startswith("labs/50-toy/QUESTIONS.md:1: ")


# --- this repository --------------------------------------------------------------------------------

def test_every_handout_and_deck_figure_follows_the_newest_gpu_run_records():
    if not any((REPO / "docs/gpu-runs").glob("*.json")):
        pytest.skip("no GPU run records here (student release): nothing to check the figures against")
    done = subprocess.run([sys.executable, "-m", "grader", "figures", "--check"], cwd=REPO, capture_output=True,
                          text=True)
    assert done.returncode == 0, "run `make figures`, or mark the figure:\n" + done.stdout + done.stderr


def test_the_figures_and_the_charts_come_from_the_same_record():
    if not any((REPO / "docs/gpu-runs").glob("*.json")):
        pytest.skip("no GPU run records here (student release)")
    charts = json.loads((REPO / "slides/charts/sources.json").read_text())
    for lab, source in figures.sources().items():
        chart = charts.get(f"{lab}.png")
        if chart:
            assert chart["source"]["record"] == source.record, f"{lab}: its chart and figures name other records"
