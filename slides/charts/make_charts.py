#!/usr/bin/env python3
"""Draws the slide charts from the GPU run records: `make charts` after a new GPU run.

Input: docs/gpu-runs/*.json, one file per GPU run (written with its Markdown record):
    {"date": ..., "gpu": ..., "driver": ..., "commit": ...,
     "labs": {"<lab>": {"score": .., "max": .., "measurements": [
         {"case": .., "name": .., "median_s": .., "rate": .., "unit": .., "ceilings": {name: rate}}]}}}
Output: slides/charts/<lab>.png for every lab deck, slides/charts/<lab>-journey.png for every lab with an
optimization journey (solutions/<lab>/hidden.toml [journey], timed by `python3 -m grader journey`: each step's
rate and its fraction of the peer measured beside it), and slides/charts/sources.json saying which
record each chart was drawn from. A lab's chart shows its newest measurements (latest record
date, then file name); a lab with none yet gets a placeholder that says so, so a deck can always
link charts/<lab>.png.

The choice of record (`plan`, through grader.record.newest, which also picks the record the handouts'
and decks' measured figures come from) is plain Python, so the deck checks can tell, without
matplotlib, whether the committed charts are those of the newest records. Drawing needs matplotlib
(Debian: apt-get install python3-matplotlib).
"""
from __future__ import annotations

import json
import re
import sys
import textwrap
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SLIDES = HERE.parent
REPO = SLIDES.parent
sys.path.insert(0, str(REPO))
from grader.record import RecordError, load_records, newest, newest_journey  # noqa: E402  (the choice is shared)

RECORDS = REPO / "docs" / "gpu-runs"
MANIFEST = HERE / "sources.json"
DECK = re.compile(r"^(\d\d-[a-z0-9-]+)\.md$")
SIZED = re.compile(r"^(.*?)[_-](\d+)$")   # e.g. matmul_tiled_1024: a series over sizes


def chart_labs(slides: Path = SLIDES, repo: Path = REPO) -> list[str]:
    """Every lab that has a deck or a lab folder, but the course's deck (numbered 00) and the labs that time
    nothing for points (no [[perf]]: lab 00, the debugging lab), which have no chart."""
    decks = {m.group(1) for p in slides.glob("*.md") if (m := DECK.match(p.name))}
    labs = {p.parent.name for p in (repo / "labs").glob("*/lab.toml")}
    return sorted(name for name in decks | labs
                  if not name.startswith("00-") and (name not in labs or perf_order(name, repo)))


def plan(records: Path = RECORDS, slides: Path = SLIDES, repo: Path = REPO) -> dict[str, dict]:
    """For each chart file: the lab, and the record its data comes from (None: no data yet)."""
    chosen = newest(records)
    result = {f"{lab}.png": {"lab": lab, "source": _source(chosen.get(lab), repo)} for lab in chart_labs(slides, repo)}
    result.update(plan_journeys(records, repo))
    return result


def _source(chosen: tuple[Path, dict] | None, repo: Path) -> dict | None:
    """What a chart says of the record it is drawn from (None: no record holds its data yet)."""
    if chosen is None:
        return None
    path, data = chosen
    return {"record": path.relative_to(repo).as_posix(), "date": data.get("date", "?"), "gpu": data.get("gpu", "?"),
            "driver": data.get("driver", "?"), "commit": data.get("commit", "?")}


def journey_titles(records: Path = RECORDS, repo: Path = REPO) -> dict[str, str]:
    """Labs with an optimization journey (in their hidden.toml, or in a record), each with the journey's title."""
    titles = {lab: "the optimization journey" for lab in newest_journey(records)}
    for path in (repo / "solutions").glob("*/hidden.toml"):
        journey = tomllib.loads(path.read_text()).get("journey")
        if journey is not None:
            titles[path.parent.name] = journey.get("title") or "the optimization journey"
    return dict(sorted(titles.items()))


def plan_journeys(records: Path = RECORDS, repo: Path = REPO) -> dict[str, dict]:
    """For each journey chart: the lab, and the newest record holding its journey (None: not run yet)."""
    chosen = newest_journey(records)
    return {f"{lab}-journey.png": {"lab": lab, "journey": title, "source": _source(chosen.get(lab), repo)}
            for lab, title in journey_titles(records, repo).items()}


def perf_order(lab: str, repo: Path = REPO) -> list[str]:
    """The lab's measurement names in lab.toml order: the order its optimisation steps are taught."""
    path = repo / "labs" / lab / "lab.toml"
    if not path.is_file():
        return []
    config = tomllib.loads(path.read_text())
    return list(dict.fromkeys(p["measurement"] for p in config.get("perf", []) if "measurement" in p))


def lab_title(lab: str, repo: Path = REPO) -> str:
    path = repo / "labs" / lab / "lab.toml"
    number = lab.split("-", 1)[0]
    if path.is_file():
        title = tomllib.loads(path.read_text()).get("lab", {}).get("title")
        if title:   # the part before any colon: "Streams: a dataset larger than ..." -> "Streams"
            return f"Lab {number}: {title.split(':', 1)[0].strip()}"
    return f"Lab {number}: {lab.split('-', 1)[1].replace('-', ' ')}"


# --- drawing (matplotlib from here on) ---------------------------------------------------------

def _figure(plt, title: str, source: dict | None):
    fig = plt.figure(figsize=(12, 6), dpi=100)
    fig.suptitle(title, fontsize=20, fontweight="bold", x=0.02, ha="left")
    if source:
        fig.text(0.02, 0.015, f"Measured on {source['gpu']}, {source['date']} (driver {source['driver']}, "
                 f"commit {source['commit'][:12]}); data: {source['record']}", fontsize=11, color="#444444")
    return fig


def _draw_placeholder(plt, path: Path, lab: str) -> None:
    fig = _figure(plt, lab_title(lab), None)
    fig.text(0.5, 0.55, "No GPU measurement of this lab has been recorded yet.", ha="center", fontsize=22)
    fig.text(0.5, 0.42, "After a GPU run is recorded in docs/gpu-runs/, `make charts` draws it here.",
             ha="center", fontsize=16, color="#444444")
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def _ordered(lab: str, measurements: list[dict]) -> list[dict]:
    order = {name: k for k, name in enumerate(perf_order(lab))}
    return sorted(measurements, key=lambda m: (order.get(m["name"], len(order)), measurements.index(m)))


def _series(measurements: list[dict]) -> dict[str, list[tuple[int, dict]]] | None:
    """Measurements named <kernel>_<size> for two or more sizes: one line per kernel."""
    groups: dict[str, list[tuple[int, dict]]] = {}
    for m in measurements:
        match = SIZED.match(m["name"])
        if not match:
            return None
        groups.setdefault(match.group(1), []).append((int(match.group(2)), m))
    sizes = {size for points in groups.values() for size, _ in points}
    return groups if len(sizes) >= 2 else None


def _draw_lines(ax, groups: dict[str, list[tuple[int, dict]]], unit: str) -> None:
    ceilings: dict[str, dict[int, float]] = {}
    for name, points in groups.items():
        points.sort(key=lambda p: p[0])
        ax.plot([s for s, _ in points], [m["rate"] for _, m in points], marker="o", linewidth=2.5,
                label=name)
        for size, m in points:
            for cname, rate in (m.get("ceilings") or {}).items():
                ceilings.setdefault(cname, {})[size] = rate
    for cname, by_size in ceilings.items():
        sizes = sorted(by_size)
        ax.plot(sizes, [by_size[s] for s in sizes], linestyle="--", color="#555555", linewidth=2,
                label=f"{cname} (measured alongside)")
    ax.set_xscale("log", base=2)
    all_sizes = sorted({s for pts in groups.values() for s, _ in pts})
    ax.set_xticks(all_sizes, [str(s) for s in all_sizes])
    ax.set_xlabel("size", fontsize=14)
    ax.set_ylabel(unit, fontsize=14)
    ax.legend(fontsize=12, frameon=False)
    ax.grid(axis="y", alpha=0.3)


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _draw_bars(ax, measurements: list[dict], unit: str, layout_rect: tuple | None = None) -> None:
    """One bar per measurement, then one grey bar per yardstick measured alongside (its median). With layout_rect,
    the figure is laid out before the notes are placed: long labels narrow the axis the notes must fit."""
    labels, values, colors, notes = [], [], [], []
    yardsticks: dict[str, list[float]] = {}
    for m in measurements:
        ceilings = m.get("ceilings") or {}
        labels.append(m["name"])
        values.append(m["rate"])
        colors.append("#0b5394")
        ratios = [f"{m['rate'] / rate:.2f} of {name}" for name, rate in ceilings.items() if rate]
        notes.append(f"{_number(m['rate'])} {unit}" + (f"  ({', '.join(ratios)})" if ratios else ""))
        for name, rate in ceilings.items():
            yardsticks.setdefault(name, []).append(rate)
    for name, rates in sorted(yardsticks.items(), key=lambda item: sorted(item[1])[len(item[1]) // 2]):
        rate = sorted(rates)[len(rates) // 2]
        labels.append(name)
        values.append(rate)
        colors.append("#9aa5b1")
        notes.append(f"{_number(rate)} {unit}  (yardstick, measured alongside)")
    y = list(range(len(labels)))[::-1]
    ax.barh(y, values, color=colors, height=0.6)
    ax.set_yticks(y, labels, fontsize=13)
    ax.set_xlabel(unit, fontsize=14)
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    if layout_rect is not None:
        ax.figure.tight_layout(rect=layout_rect)
    _place_notes(ax, y, values, notes)


def _place_notes(ax, y: list[int], values: list[float], notes: list[str]) -> None:
    """Each bar's note inside its bar where it fits there, else after it, with the x axis long enough for
    every note after its bar (the widths are measured, so no note runs into the labels or off the chart)."""
    renderer = ax.figure.canvas.get_renderer()
    axis_px = ax.get_window_extent(renderer).width
    pad_px = 0.015 * axis_px
    texts = [ax.text(0, yy, note, va="center", fontsize=12) for yy, note in zip(y, notes)]
    for text in texts:  # a long note puts its ratios on a line of their own, or each on its own
        for long, short in (("  (", "\n("), ("), ", "),\n")):
            if text.get_window_extent(renderer).width > 0.55 * axis_px:
                text.set_text(text.get_text().replace(long, short))
                text.set_fontsize(11)
    widths = [text.get_window_extent(renderer).width for text in texts]
    right = 1.05 * max(values, default=1.0)
    for _ in range(2):  # a longer axis shortens every bar, which may push another note out of its bar
        inside = [v / right * axis_px >= w + 2 * pad_px for v, w in zip(values, widths)]
        needed = [v * axis_px / (axis_px - w - 2 * pad_px) for v, w, ins in zip(values, widths, inside)
                  if not ins and axis_px > w + 2 * pad_px]
        right = max([right] + needed)
    inside = [v / right * axis_px >= w + 2 * pad_px for v, w in zip(values, widths)]
    for text, v, ins in zip(texts, values, inside):
        offset = pad_px / axis_px * right
        text.set_x(v - offset if ins else v + offset)
        text.set_horizontalalignment("right" if ins else "left")
        text.set_color("white" if ins else "#1b1f24")
    ax.set_xlim(0, right)


STREAM_STAGES = ("stage_copy_in", "stage_compute", "stage_copy_out")
STREAM_RUNS = (("sequential_pageable", "one chunk at a time, pageable memory"),
               ("sequential_pinned", "one chunk at a time, pinned memory"),
               ("pipelined", "chunks spread over streams"))


def _draw_streams(plt, path: Path, lab: str, source: dict, entry: dict) -> bool:
    """Lab 08: the stages' times alone, end to end, against the measured whole runs.

    Returns False when the record lacks the stage times, so the generic chart is drawn instead."""
    times = {m["name"]: m["median_s"] * 1e3 for m in entry["measurements"] if m.get("median_s")}
    if not all(name in times for name in STREAM_STAGES):
        return False
    fig = _figure(plt, f"{lab_title(lab)}: where the time goes", source)
    ax = fig.subplots()
    colors = {"stage_copy_in": "#b45f06", "stage_compute": "#38761d", "stage_copy_out": "#0b5394"}
    rows = [("the three stages, each alone,\nend to end", None)] + [
        (f"{name}\n({what})", name) for name, what in STREAM_RUNS if name in times]
    y = list(range(len(rows)))[::-1]
    left = 0.0
    for stage in STREAM_STAGES:
        ax.barh(y[0], times[stage], left=left, color=colors[stage], height=0.6,
                label=f"{stage}: {times[stage]:,.1f} ms")
        left += times[stage]
    ax.text(left * 1.01, y[0], f"{left:,.1f} ms", va="center", fontsize=12)
    for yy, (_, name) in zip(y[1:], rows[1:]):
        ax.barh(yy, times[name], color="#0b5394" if name == "pipelined" else "#9aa5b1", height=0.6)
        ax.text(times[name] * 1.01, yy, f"{times[name]:,.1f} ms", va="center", fontsize=12)
    slowest = max(STREAM_STAGES, key=lambda stage: times[stage])
    ax.axvline(times[slowest], color="#cc0000", linestyle="--", linewidth=2,
               label=f"slowest stage alone ({slowest}): {times[slowest]:,.1f} ms")
    ax.set_yticks(y, [label for label, _ in rows], fontsize=12)
    ax.set_xlabel("ms for the whole dataset (median)", fontsize=14)
    ax.set_xlim(0, max([left] + [times[n] for _, n in rows[1:]]) * 1.15)
    ax.legend(fontsize=11, frameon=False, loc="lower right")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout(rect=(0, 0.04, 1, 0.93))
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return True


def _draw_journey(plt, path: Path, lab: str, title: str, source: dict | None, entry: dict | None) -> None:
    """A journey: one bar per step, in order, each with its rate and its fraction of the peer timed beside it."""
    if source is None or entry is None:
        fig = _figure(plt, f"{lab_title(lab)}: {title}", None)
        fig.text(0.5, 0.58, "No run of this journey has been recorded yet.", ha="center", fontsize=22)
        fig.text(0.5, 0.45, f"On a GPU: python3 -m grader journey --lab {lab}, then python3 -m grader record;",
                 ha="center", fontsize=15, color="#444444")
        fig.text(0.5, 0.38, "with the record in docs/gpu-runs/, `make charts` draws each step here.",
                 ha="center", fontsize=15, color="#444444")
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        return
    # Step titles are sentences: two lines of at most 36 characters leave the bars and their notes room.
    steps = [dict(m, name=textwrap.fill(m.get("title") or m["name"], 36)) for m in entry["journey"]
             if m.get("rate") is not None]
    fig = _figure(plt, f"{lab_title(lab)}: {title}, step by step", source)
    ax = fig.subplots()
    _draw_bars(ax, steps, steps[0]["unit"] if steps else "", layout_rect=(0, 0.04, 1, 0.93))
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


SPECIAL = {"08-streams": _draw_streams}   # labs whose chart is more than bars of rates


def _draw_data(plt, path: Path, lab: str, source: dict, entry: dict) -> None:
    if lab in SPECIAL and SPECIAL[lab](plt, path, lab, source, entry):
        return
    measurements = _ordered(lab, [m for m in entry["measurements"] if m.get("rate") is not None])
    units = list(dict.fromkeys(m["unit"] for m in measurements))
    fig = _figure(plt, f"{lab_title(lab)}: measured rates", source)
    axes = fig.subplots(len(units), 1, squeeze=False)[:, 0]
    for ax, unit in zip(axes, units):
        group = [m for m in measurements if m["unit"] == unit]
        series = _series(group)
        if series:
            _draw_lines(ax, series, unit)
        else:
            _draw_bars(ax, group, unit)
    fig.tight_layout(rect=(0, 0.04, 1, 0.93))
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str]) -> int:
    try:
        import matplotlib
    except ImportError:
        print("make_charts: needs matplotlib (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        return 1
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        charts = plan()
        records = dict(load_records())
    except RecordError as err:
        print(f"make_charts: {err}", file=sys.stderr)
        return 1
    for name, item in charts.items():
        path = HERE / name
        source = item["source"]
        if item.get("journey"):
            entry = records[REPO / source["record"]]["labs"][item["lab"]] if source else None
            _draw_journey(plt, path, item["lab"], item["journey"], source, entry)
            print(f"slides/charts/{name}: " + (f"{source['gpu']}, {source['date']} ({source['record']})" if source
                                               else "the journey has not been run yet (placeholder)"))
        elif source is None:
            _draw_placeholder(plt, path, item["lab"])
            print(f"slides/charts/{name}: no data yet (placeholder)")
        else:
            entry = records[REPO / source["record"]]["labs"][item["lab"]]
            _draw_data(plt, path, item["lab"], source, entry)
            print(f"slides/charts/{name}: {source['gpu']}, {source['date']} ({source['record']})")
    for stale in sorted(set(p.name for p in HERE.glob("*.png")) - set(charts)):
        (HERE / stale).unlink()
        print(f"slides/charts/{stale}: removed (no such lab)")
    MANIFEST.write_text(json.dumps(charts, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
