"""Variants taken whole from a file (`source`), a lab's journey (hidden.toml [journey]), and how its timings reach
the run record, the figures and the charts: all on the CPU, with real config files and no GPU."""
from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from grader import figures, journey, record, variants
from grader.buildinfo import write
from grader.config import ConfigError, JourneyStep, list_labs, load_lab
from grader.tests.conftest import REPO, copy_lab

LAB = "01-vector-add"
REFERENCE = f"solutions/{LAB}/vector_add.cu"
HIDDEN = f"solutions/{LAB}/hidden.toml"
# A line of lab 01's reference, after which a whole other file takes its place.
FROM = "void launch_vector_add"
OTHER = "// another launcher, whole\nvoid launch_vector_add(const float* a, const float* b, float* c, int n) {}\n"


def _without_journey(text: str) -> str:
    """hidden.toml's text without its [journey] and [[journey.steps]] tables: lab 01 has a journey of its own, and
    these tests add the journeys they need."""
    kept, inside = [], False
    for line in text.splitlines(keepends=True):
        if header := re.match(r"\[\[?([\w.]+)\]\]?\s*(?:#.*)?$", line.strip()):
            inside = header.group(1).split(".")[0] == "journey"
        if not inside:
            kept.append(line)
    return "".join(kept)


@pytest.fixture
def lab_copy(tmp_path: Path) -> Path:
    copy_lab(tmp_path, LAB)
    assert (tmp_path / REFERENCE).read_text().count(FROM) == 1, "lab 01's reference changed: update FROM"
    hidden = tmp_path / HIDDEN
    hidden.write_text(_without_journey(hidden.read_text()))
    assert "journey" not in tomllib.loads(hidden.read_text())
    (tmp_path / f"solutions/{LAB}/journey").mkdir(exist_ok=True)
    (tmp_path / f"solutions/{LAB}/journey/02-other.cu").write_text(OTHER)
    return tmp_path


def _add(root: Path, text: str) -> None:
    path = root / HIDDEN
    path.write_text(path.read_text() + "\n" + text)


RIGHT = f'''
[[right]]
name = "whole-other-launcher"
why = "a whole other launcher"
file = "vector_add.cu"
source = "journey/02-other.cu"
from = "{FROM}"
'''


def test_a_source_variant_keeps_the_reference_up_to_the_line_of_from_and_takes_the_file_after(lab_copy: Path,
                                                                                              tmp_path: Path):
    _add(lab_copy, RIGHT)
    config = load_lab(LAB, lab_copy)
    made = variants.sources(config, "right")["whole-other-launcher"]["vector_add.cu"]
    reference = (lab_copy / REFERENCE).read_text()
    line_start = reference.rfind("\n", 0, reference.index(FROM)) + 1
    assert made == reference[:line_start] + OTHER
    assert variants.problems(config) == []
    write(config, tmp_path / "out")
    assert (tmp_path / "out/right/whole-other-launcher/vector_add.cu").read_text() == made
    assert "journey/02-other.cu" in (tmp_path / "out/lab.cmake").read_text(), "CMake must watch the source file"


def test_a_source_variant_without_from_is_the_file_alone_and_replace_edits_it_after(lab_copy: Path):
    _add(lab_copy, '[[right]]\nname = "whole"\nwhy = "w"\nfile = "vector_add.cu"\nsource = "journey/02-other.cu"\n'
                   'replace = "another launcher"\nby = "a second launcher"\n')
    made = variants.sources(load_lab(LAB, lab_copy), "right")["whole"]["vector_add.cu"]
    assert made == OTHER.replace("another launcher", "a second launcher")


def test_a_missing_source_or_a_from_not_found_is_reported_with_the_variants_name(lab_copy: Path):
    _add(lab_copy, RIGHT.replace(FROM, "no such text anywhere"))
    (found,) = variants.problems(load_lab(LAB, lab_copy))
    assert "'whole-other-launcher'" in found and "'from' text occurs 0 times" in found
    (lab_copy / f"solutions/{LAB}/journey/02-other.cu").unlink()
    (found,) = variants.problems(load_lab(LAB, lab_copy))
    assert "journey/02-other.cu, is missing" in found


@pytest.mark.parametrize("entry, message", [
    ('source = "../../labs/x.cu"', "a path inside solutions/<lab>/"),
    ('source = "/etc/passwd"', "a path inside solutions/<lab>/"),
    ('from = "x"', "there is no 'source'"),
    ('source = "journey/02-other.cu"\nreplace = "x"', "'replace' and 'by' go together"),
    ('', "'replace' is required (or 'source'"),
])
def test_source_entries_that_cannot_work_are_config_errors(lab_copy: Path, entry: str, message: str):
    _add(lab_copy, f'[[right]]\nname = "bad"\nwhy = "w"\nfile = "vector_add.cu"\n{entry}\n')
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("/", "/")):
        load_lab(LAB, lab_copy)


def _journey(case: str, variant: str = "whole-other-launcher", peer: str = "copy") -> str:
    return (f'[journey]\ntitle = "the test journey"\npeer = "{peer}"\n\n[[journey.steps]]\nname = "journey-01-ref"\ntitle = "1. the reference"\n'
            f'case = "{case}"\n\n[[journey.steps]]\nname = "journey-02-other"\ntitle = "2. other"\n'
            f'variant = "{variant}"\ncase = "{case}"\n')


def test_a_journey_names_timing_cases_and_right_variants(lab_copy: Path):
    config = load_lab(LAB, lab_copy)
    case = config.perf[0].case
    _add(lab_copy, RIGHT + _journey(case))
    steps = load_lab(LAB, lab_copy).journey.steps
    assert [(s.name, s.variant, s.measurement) for s in steps] == [
        ("journey-01-ref", "", config.perf[0].measurement),
        ("journey-02-other", "whole-other-launcher", config.perf[0].measurement)]
    assert [journey.build_name(s) for s in steps] == ["reference", "right-whole-other-launcher"]


@pytest.mark.parametrize("bad, message", [("case", "one of the lab's timing cases"),
                                          ("variant", "names no \\[\\[right\\]\\] variant")])
def test_a_journey_step_naming_no_case_or_no_variant_is_a_config_error(lab_copy: Path, bad: str, message: str):
    case = load_lab(LAB, lab_copy).perf[0].case
    _add(lab_copy, RIGHT + (_journey("no such case") if bad == "case" else _journey(case, variant="nope")))
    with pytest.raises(ConfigError, match=message):
        load_lab(LAB, lab_copy)


def test_a_journey_step_on_a_case_of_several_measurements_names_which(lab_copy: Path):
    config = load_lab(LAB, lab_copy)
    case, measurement = config.perf[0].case, config.perf[0].measurement
    second = f'\n[[perf]]\ncase = "{case}"\nmeasurement = "{measurement}_again"\npoints = 0\n'
    lab_toml = lab_copy / f"labs/{LAB}/lab.toml"
    lab_toml.write_text(lab_toml.read_text() + second)
    _add(lab_copy, RIGHT + _journey(case))
    with pytest.raises(ConfigError, match=f"'measurement' must name one of its case's measurements \\({measurement}, "
                                          f"{measurement}_again\\)"):
        load_lab(LAB, lab_copy)
    hidden = lab_copy / HIDDEN
    hidden.write_text(hidden.read_text().replace(f'case = "{case}"\n',
                                                 f'case = "{case}"\nmeasurement = "{measurement}_again"\n'))
    assert {s.measurement for s in load_lab(LAB, lab_copy).journey.steps} == {f"{measurement}_again"}


def test_a_journey_step_named_as_its_variant_is_a_config_error(lab_copy: Path):
    case = load_lab(LAB, lab_copy).perf[0].case
    _add(lab_copy, RIGHT + _journey(case).replace('name = "journey-02-other"', 'name = "whole-other-launcher"'))
    with pytest.raises(ConfigError, match="must not be a variant's"):
        load_lab(LAB, lab_copy)


def test_a_journey_without_a_title_is_a_config_error(lab_copy: Path):
    case = load_lab(LAB, lab_copy).perf[0].case
    _add(lab_copy, RIGHT + _journey(case).replace('title = "the test journey"\n', ""))
    with pytest.raises(ConfigError, match="'title' must name the journey"):
        load_lab(LAB, lab_copy)


@pytest.mark.parametrize("lab, peer, file, core, extra", [
    ("01-vector-add", "device-to-device copy", "vector_add.cu", "constexpr int kBlockSize =",
     "void launch_vector_add("),
    ("04-tiled-matmul", "cuBLAS SGEMM (FP32)", "tiled_matmul.cu", "launch_tiled_matmul(",
     "void launch_register_tiled_matmul("),
    ("06-scan", "thrust::inclusive_scan", "scan.cu", "void launch_tile_scan(",
     "void launch_register_tiled_inclusive_scan(const float*"),
])
def test_journey_steps_are_right_variants_from_whole_files_that_apply(lab: str, peer: str, file: str, core: str,
                                                                      extra: str):
    config = load_lab(lab)
    assert config.journey is not None and config.journey.peer == peer
    from_files = {v.name for v in config.right if v.source}
    assert {s.variant for s in config.journey.steps if s.variant} <= from_files
    assert all((config.solution_dir / v.source).is_file() for v in config.right if v.source)
    assert variants.problems(config) == []
    made = variants.sources(config, "right")
    for name in from_files:  # the core part stays the reference's; the extra credit is the journey file's
        text = made[name][file]
        assert core in text and text.count(extra) == 1


def test_every_journeys_peer_is_a_yardstick_named_in_its_labs_tests_or_the_harness():
    """A step's fraction of the peer is found by the yardstick's name (journey.peer_fraction): a library timed by the
    lab's tests (Thrust's scan), or the harness (cuBLAS, lab 01's device-to-device copy, kit::copy_ceiling)."""
    harness = [p.read_text() for p in sorted((REPO / "harness").rglob("*")) if p.suffix in (".cu", ".cuh", ".cpp")]
    journeys = {lab: config.journey for lab in list_labs() if (config := load_lab(lab)).journey is not None}
    assert {"01-vector-add", "04-tiled-matmul", "06-scan"} <= set(journeys)
    for lab, trip in journeys.items():
        tests = [p.read_text() for folder in (REPO / "labs" / lab / "tests", REPO / "solutions" / lab / "tests")
                 for p in sorted(folder.glob("*")) if p.suffix in (".cu", ".cuh", ".cpp")]
        assert any(f'"{trip.peer}"' in text for text in harness + tests), f"{lab}: no yardstick named {trip.peer!r}"


STEP = JourneyStep(name="journey-02-other", title="2. other", case="c", measurement="k", variant="v")
TIMING = {"name": "k", "median_s": 0.002, "rate": 40000.0, "unit": "GFLOP/s",
          "ceiling_names": ["cuBLAS SGEMM (FP32)"], "ceiling_rates": [50000.0]}


def test_journey_rows_go_into_the_record_beside_the_labs_measurements(tmp_path: Path):
    rows = [journey.row(STEP, "passed", TIMING, "NVIDIA H100 80GB HBM3", "580.159.04")]
    assert journey.peer_fraction(rows[0], "cuBLAS SGEMM (FP32)") == pytest.approx(0.8)
    journey.write(tmp_path, "04-tiled-matmul", rows)
    data = record.gather(tmp_path, "abc", "2026-12-01")
    assert data["labs"]["04-tiled-matmul"] == {"measurements": [], "journey": rows}
    assert (data["gpu"], data["driver"]) == ("NVIDIA H100 80GB HBM3", "580.159.04")  # no results.json names them


def _records(tmp_path: Path, entries: dict[str, dict]) -> Path:
    folder = tmp_path / "docs" / "gpu-runs"
    folder.mkdir(parents=True)
    for name, labs in entries.items():
        (folder / name).write_text(json.dumps({"date": name[:10], "gpu": "G", "driver": "D", "commit": "C",
                                               "labs": labs}))
    return folder


def test_a_journey_only_record_leaves_the_labs_chart_and_figures_to_the_newest_measurement(tmp_path: Path):
    row = journey.row(STEP, "passed", TIMING)
    main = {"measurements": [{"name": "register_tiled_matmul_kernel", "median_s": 0.003, "rate": 41000.0,
                              "unit": "GFLOP/s", "ceilings": {"cuBLAS SGEMM (FP32)": 51000.0}}]}
    folder = _records(tmp_path, {"2026-11-24-main.json": {"04-tiled-matmul": main},
                                 "2026-12-01-journey.json": {"04-tiled-matmul": {"measurements": [], "journey": [row]}}})
    assert record.newest(folder)["04-tiled-matmul"][0].name == "2026-11-24-main.json"
    assert record.newest_journey(folder)["04-tiled-matmul"][0].name == "2026-12-01-journey.json"
    source = figures.sources(folder, tmp_path)["04-tiled-matmul"]
    assert source.record.endswith("2026-11-24-main.json")
    fraction = 'rate("journey-02-other") / rate("journey-02-other", "cuBLAS SGEMM (FP32)")'
    assert figures.evaluate(fraction, source) == pytest.approx(0.8)
    assert figures.evaluate("rate(register_tiled_matmul_kernel)", source) == 41000.0


def test_the_journey_chart_waits_for_a_record_then_comes_from_the_newest_one(tmp_path: Path):
    sys.path.insert(0, str(REPO / "slides" / "charts"))
    import make_charts
    (tmp_path / "solutions" / "04-tiled-matmul").mkdir(parents=True)
    (tmp_path / "solutions" / "04-tiled-matmul" / "hidden.toml").write_text(
        '[journey]\ntitle = "the GEMM journey"\npeer = "p"\n')
    (tmp_path / "slides").mkdir()
    (tmp_path / "labs").mkdir()
    empty = tmp_path / "none"
    empty.mkdir()
    assert make_charts.plan_journeys(empty, tmp_path) == {
        "04-tiled-matmul-journey.png": {"lab": "04-tiled-matmul", "journey": "the GEMM journey", "source": None}}
    row = journey.row(STEP, "passed", TIMING)
    folder = _records(tmp_path, {"2026-12-01-journey.json": {"04-tiled-matmul": {"measurements": [],
                                                                                  "journey": [row]}}})
    planned = make_charts.plan(folder, tmp_path / "slides", tmp_path)
    assert planned["04-tiled-matmul-journey.png"]["source"]["record"] == "docs/gpu-runs/2026-12-01-journey.json"
