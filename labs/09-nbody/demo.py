#!/usr/bin/env python3
"""Draw the 09-nbody demo's CSV files as PNG pictures.

usage: python3 demo.py <folder>

<folder> is where the demo program wrote snapshots.csv, tracks.csv and
energy.csv (`make 09-nbody-demo` uses build/09-nbody/demo); the pictures go
there too: snapshots.png, tracks.png and energy.png.
"""
from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

try:
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

VIEW = 4.0  # half-width of the square shown, in length units (the spheres start 3 apart)


def read_rows(path: Path) -> list[dict[str, float]]:
    with path.open(newline="") as f:
        return [{key: float(value) for key, value in row.items()} for row in csv.DictReader(f)]


def finite(values: list[float]) -> bool:
    return all(math.isfinite(v) for v in values)


def draw_snapshots(rows: list[dict[str, float]], out: Path) -> None:
    frames: dict[float, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    times: dict[float, float] = {}
    for row in rows:
        xs, ys = frames[row["frame"]]
        xs.append(row["x"])
        ys.append(row["y"])
        times[row["frame"]] = row["time"]
    keys = sorted(frames)
    columns = 3
    lines = math.ceil(len(keys) / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4 * columns, 4 * lines), squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, keys):
        xs, ys = frames[key]
        ax.set_visible(True)
        ax.scatter(xs, ys, s=0.3, alpha=0.5, color="navy", linewidths=0)
        ax.set_xlim(-VIEW, VIEW)
        ax.set_ylim(-VIEW, VIEW)
        ax.set_aspect("equal")
        ax.set_title(f"t = {times[key]:g}")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    fig.suptitle(f"Two Plummer spheres merging ({len(frames[keys[0]][0])} bodies, seen from above)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def draw_tracks(rows: list[dict[str, float]], out: Path) -> None:
    paths: dict[int, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for row in rows:
        xs, ys = paths[int(row["body"])]
        xs.append(row["x"])
        ys.append(row["y"])
    fig, ax = plt.subplots(figsize=(7, 7))
    for body, (xs, ys) in sorted(paths.items()):
        line, = ax.plot(xs, ys, linewidth=0.8)
        ax.plot(xs[:1], ys[:1], "o", color=line.get_color(), markersize=4)  # where it started
    ax.set_xlim(-VIEW, VIEW)
    ax.set_ylim(-VIEW, VIEW)
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(f"Paths of {len(paths)} bodies (dots: where they start)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def draw_energy(rows: list[dict[str, float]], out: Path) -> None:
    t = [row["time"] for row in rows]
    total = [row["total"] for row in rows]
    e0 = total[0]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    top.plot(t, [row["kinetic"] for row in rows], label="kinetic")
    top.plot(t, [row["potential"] for row in rows], label="potential")
    top.plot(t, total, label="total", color="black")
    top.set_ylabel("energy")
    top.legend(loc="upper right")
    top.set_title("Energy: kinetic and potential trade places; the total stays put")
    bottom.plot(t, [(e - e0) / abs(e0) for e in total], color="black")
    bottom.axhline(0.0, color="grey", linewidth=0.5)
    bottom.set_xlabel("time")
    bottom.set_ylabel("(E - E(0)) / |E(0)|")
    bottom.set_title("Relative energy error: leapfrog keeps it small and bounded")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    folder = Path(argv[1])
    if plt is None:
        print(f"matplotlib is not installed (pip install matplotlib, or apt-get install python3-matplotlib); "
              f"the demo's CSV files are in {folder}.")
        return 1
    files = {name: folder / f"{name}.csv" for name in ("snapshots", "tracks", "energy")}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        print(f"Missing {', '.join(missing)}: run the demo program first (make 09-nbody-demo).")
        return 1
    snapshots = read_rows(files["snapshots"])
    tracks = read_rows(files["tracks"])
    energy = read_rows(files["energy"])
    if not snapshots or not tracks or not energy:
        print("The demo's CSV files are empty: did the demo program stop early?")
        return 1
    if not finite([row[k] for row in snapshots for k in ("x", "y", "z")]):
        print("Some positions are NaN or infinite: the simulation is not working yet "
              "(the tests say where to look). Drawing what there is.")
    first_frame, last_frame = snapshots[0]["frame"], snapshots[-1]["frame"]
    start = [(r["x"], r["y"], r["z"]) for r in snapshots if r["frame"] == first_frame]
    end = [(r["x"], r["y"], r["z"]) for r in snapshots if r["frame"] == last_frame]
    if start == end:
        print("The bodies did not move: nbody_simulate does not step yet (the tests say where to look).")
    draw_snapshots(snapshots, folder / "snapshots.png")
    draw_tracks(tracks, folder / "tracks.png")
    draw_energy(energy, folder / "energy.png")
    drift = max(abs(row["total"] - energy[0]["total"]) for row in energy) / abs(energy[0]["total"])
    print(f"Wrote snapshots.png, tracks.png and energy.png in {folder}; "
          f"largest relative energy error {drift:.2g}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
