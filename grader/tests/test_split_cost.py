"""Measuring what the judge/runner split costs: the one-process build (KIT_ONE_PROCESS), which nothing that grades
accepts, and the bench that times both builds (grader/bench/split_cost.py), here with a stand-in for ctest."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from grader import build, buildinfo, cli
from grader.bench import split_cost
from grader.config import ConfigError, load_lab

CTEST_OUTPUT = """UpdateCTestConfiguration  from :/b/DartConfiguration.tcl
462: [timing] stage_copy_in                        19.628 ms        54.7 GB/s
462: [timing] pipelined                            22.715 ms        47.3 GB/s  (path 0.353 ms a call taken off)
[timing] reduce_grid_stride                    0.371 ms      2894.6 GB/s  (1.07 of thrust::reduce at 2716.9)
[timing] transpose_naive                  not measured: a guard failed (see the failure message)
100% tests passed, 0 tests failed out of 1
"""


def test_the_timing_lines_give_each_measurements_median_in_seconds():
    assert split_cost.parse_timings(CTEST_OUTPUT) == pytest.approx(
        {"stage_copy_in": 0.019628, "pipelined": 0.022715, "reduce_grid_stride": 0.000371})


def test_the_ratio_is_split_over_one_process_by_the_means_and_the_report_counts_those_within_three_per_cent():
    runs = [{"05-reduction": {split_cost.SPLIT: split_cost.LabRun({"a": 1.02e-3, "b": 2.2e-3}),
                              split_cost.ONE_PROCESS: split_cost.LabRun({"a": 1.00e-3, "b": 2.0e-3})}},
            {"05-reduction": {split_cost.SPLIT: split_cost.LabRun({"a": 1.00e-3, "b": 2.2e-3}),
                              split_cost.ONE_PROCESS: split_cost.LabRun({"a": 1.00e-3})}}]
    table = {row["measurement"]: row for row in split_cost.compare(runs)}
    assert table["a"]["ratio"] == pytest.approx(1.01)
    assert table["a"]["split_s"] == [1.02e-3, 1.00e-3]
    assert table["b"]["ratio"] == pytest.approx(1.1)
    text = split_cost.report(list(table.values()), ["run 2, 05-reduction, one process: a timing case failed"])
    assert "1 of 2 measurements within 3% of one process" in text
    assert "run 2, 05-reduction, one process: a timing case failed" in text


def _cache(folder: Path, one_process: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["CMAKE_BUILD_TYPE:STRING=Release"]
    if one_process is not None:
        lines.append(f"KIT_ONE_PROCESS:BOOL={one_process}")
    (folder / "CMakeCache.txt").write_text("\n".join(lines) + "\n")
    return folder


def test_a_one_process_build_is_told_apart_by_its_cmake_cache(tmp_path: Path):
    assert build.built_in_one_process(_cache(tmp_path / "on", "ON"))
    assert build.built_in_one_process(_cache(tmp_path / "true", "TRUE"))
    assert not build.built_in_one_process(_cache(tmp_path / "off", "OFF"))
    assert not build.built_in_one_process(_cache(tmp_path / "unset", None))
    assert not build.built_in_one_process(tmp_path / "no-build-here")


def test_the_self_check_and_the_journey_refuse_a_one_process_build(tmp_path: Path, capsys):
    folder = _cache(tmp_path / "build-one", "ON")
    with pytest.raises(ConfigError, match="KIT_ONE_PROCESS=ON"):
        build.require_graded_build(folder)
    for command in (["selfcheck", "--build-dir", str(folder), "--lab", "01-vector-add", "--no-sandbox"],
                    ["journey", "--build-dir", str(folder), "--lab", "04-tiled-matmul", "--no-sandbox"]):
        assert cli.main(command) == 2
        assert "grading never does" in capsys.readouterr().err


def test_a_one_process_configure_writes_the_lab_unsplit_and_no_call_glue(tmp_path: Path):
    config = load_lab("05-reduction")
    buildinfo.write(config, tmp_path / "graded")
    graded = (tmp_path / "graded" / "lab.cmake").read_text()
    assert "set(KIT_LAB_SPLIT ON)" in graded
    assert (tmp_path / "graded" / "calls" / "runner_calls.cpp").is_file()

    buildinfo.write(config, tmp_path / "one", one_process=True)
    alone = (tmp_path / "one" / "lab.cmake").read_text()
    assert "set(KIT_LAB_SPLIT OFF)" in alone
    assert "-DKIT_ONE_PROCESS=ON" in alone  # the reason CMake prints for the lab
    assert not (tmp_path / "one" / "calls").exists()


def test_the_bench_refuses_builds_that_are_not_what_it_was_told(tmp_path: Path, capsys):
    split, one = tmp_path / "build", tmp_path / "build-one"
    assert split_cost.main(["--split", str(split), "--one-process", str(one)]) == 2
    assert "build both folders first" in capsys.readouterr().err
    _cache(split, "OFF")
    _cache(one, "OFF")
    assert split_cost.main(["--split", str(split), "--one-process", str(one)]) == 2
    assert "was not configured with -DKIT_ONE_PROCESS=ON" in capsys.readouterr().err
    _cache(one, "ON")
    assert split_cost.main(["--split", str(split), "--one-process", str(one), "--lab", "05-reduction"]) == 2
    assert "has its reference test program built in both" in capsys.readouterr().err


FAKE_CTEST = """#!/bin/sh
# Stands in for ctest: the split build is 2 % slower; says which build ran with which work queues.
echo "$(basename "$PWD") $4 queues=${CUDA_DEVICE_MAX_CONNECTIONS:-default}" >> "$CTEST_LOG"
case "$(basename "$PWD")" in
  build) echo "7: [timing] measured   1.020 ms   1.0 GB/s" ;;
  *) echo "7: [timing] measured   1.000 ms   1.0 GB/s" ;;
esac
"""


def test_the_bench_times_both_builds_alternately_with_gradings_work_queues_in_the_split(tmp_path: Path,
                                                                                      monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ctest = bin_dir / "ctest"
    ctest.write_text(FAKE_CTEST)
    ctest.chmod(ctest.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "ctest.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CTEST_LOG", str(log))
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4")  # the caller's own setting reaches neither build
    split, one = _cache(tmp_path / "build", "OFF"), _cache(tmp_path / "build-one", "ON")
    labs = ["05-reduction", "08-streams"]  # 08 keeps eight queues (concurrent_streams)
    for folder in (split, one):
        for lab in labs:
            binary = build.binary_path(folder, lab, "reference")
            binary.parent.mkdir(parents=True)
            binary.write_text("")
    out = tmp_path / "split-cost.json"

    assert split_cost.main(["--split", str(split), "--one-process", str(one), "--lab", labs[0], "--lab", labs[1],
                            "--runs", "2", "--out", str(out)]) == 0
    assert "2 of 2 measurements within 3% of one process" in capsys.readouterr().out
    assert log.read_text().splitlines() == [
        "build-one ^05-reduction/reference: queues=default", "build ^05-reduction/reference: queues=1",
        "build-one ^08-streams/reference: queues=default", "build ^08-streams/reference: queues=default",
        "build ^05-reduction/reference: queues=1", "build-one ^05-reduction/reference: queues=default",
        "build ^08-streams/reference: queues=default", "build-one ^08-streams/reference: queues=default"]
    written = json.loads(out.read_text())
    assert [row["ratio"] for row in written["table"]] == pytest.approx([1.02, 1.02])
    assert written["table"][0]["one_process_s"] == [0.001, 0.001] and written["failures"] == []
