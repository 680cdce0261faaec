"""GPU run records: what the suite measured on a GPU, for docs/gpu-runs/ and the slides' charts.

The self-check writes the reference's graded results per lab into the build
folder (<build>/<lab>/selfcheck-reference.json); `python3 -m grader record`
gathers them into one JSON file:

    {"date": ..., "gpu": ..., "driver": ..., "commit": ...,
     "labs": {"01-vector-add": {"score": ..., "max": ..., "measurements": [
         {"case": ..., "name": ..., "median_s": ..., "rate": ..., "unit": ..., "ceilings": {name: rate}}],
         "journey": [...]}}}

A lab with an optimization journey (hidden.toml [journey]) that `python3 -m grader journey` timed also gets
"journey": its steps, in order, each a measurement as above plus its "title", "build" and "status"
(<build>/<lab>/journey.json). A record may hold a lab's journey alone ("measurements" empty): the lab's own
chart and figures then still come from the newest record that measured the lab.
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

RESULTS_NAME = "selfcheck-reference.json"
JOURNEY_NAME = "journey.json"  # grader/journey.py writes it beside RESULTS_NAME


def _measurements(timings: dict[str, list[dict]]) -> list[dict]:
    rows = []
    for case, records in timings.items():
        for t in records:
            rows.append({"case": case, "name": t["name"], "median_s": t["median_s"], "rate": t.get("rate"),
                         "unit": t.get("unit", ""),
                         "ceilings": dict(zip(t.get("ceiling_names", []), t.get("ceiling_rates", [])))})
    return rows


def gather(build_dir: Path, commit: str, date: str | None = None) -> dict:
    record: dict = {"date": date or datetime.date.today().isoformat(), "gpu": "", "driver": "", "commit": commit,
                    "labs": {}}
    for path in sorted(build_dir.glob(f"*/{RESULTS_NAME}")):
        results = json.loads(path.read_text())
        extra = results.get("extra_data", {})
        record["gpu"] = record["gpu"] or extra.get("gpu", "")
        record["driver"] = record["driver"] or extra.get("driver", "")
        record["labs"][path.parent.name] = {
            "score": results["score"],
            # A question graded by hand has no score in results.json, and no place in what the reference earned.
            "max": sum(t["max_score"] for t in results["tests"] if "score" in t),
            "measurements": _measurements(extra.get("timings", {})),
        }
    # A journey's steps, timed in one run beside their peer (grader/journey.py): kept beside the lab's measurements,
    # so that they never take the place of the lab's own chart.
    for path in sorted(build_dir.glob(f"*/{JOURNEY_NAME}")):
        rows = json.loads(path.read_text())
        if rows:
            record["labs"].setdefault(path.parent.name, {"measurements": []})["journey"] = rows
            # A record of journeys alone names the GPU its steps ran on.
            record["gpu"] = record["gpu"] or rows[0].get("gpu", "")
            record["driver"] = record["driver"] or rows[0].get("driver", "")
    return record


RECORDS_DIR = Path(__file__).resolve().parent.parent / "docs" / "gpu-runs"


class RecordError(Exception):
    """A GPU run record cannot be read; the message names the file."""


def load_records(records: Path = RECORDS_DIR) -> list[tuple[Path, dict]]:
    """Every GPU run record (docs/gpu-runs/*.json), in file name order."""
    out = []
    for path in sorted(records.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise RecordError(f"{path}: not a readable JSON record ({err})") from err
        if not isinstance(data, dict) or not isinstance(data.get("labs"), dict):
            raise RecordError(f"{path}: no 'labs' object")
        out.append((path, data))
    return out


def newest_journey(records: Path = RECORDS_DIR) -> dict[str, tuple[Path, dict]]:
    """For each lab, the newest record that holds its journey (latest date, then file name): the journey chart's
    and the journey figures' source."""
    return _newest_holding("journey", records)


def newest(records: Path = RECORDS_DIR) -> dict[str, tuple[Path, dict]]:
    """For each lab, the newest record that measured it (latest date, then file name): its path and contents.

    The slides' charts and the measured figures of handouts and decks both come from this choice."""
    return _newest_holding("measurements", records)


def _newest_holding(key: str, records: Path) -> dict[str, tuple[Path, dict]]:
    """For each lab, the newest record (latest date, then file name) whose entry for it has a non-empty `key`."""
    found: dict[str, tuple[tuple[str, str], Path, dict]] = {}
    for path, data in load_records(records):
        for lab, entry in data["labs"].items():
            if not isinstance(entry, dict) or not entry.get(key):
                continue
            order = (str(data.get("date", "")), path.name)
            if lab not in found or order > found[lab][0]:
                found[lab] = (order, path, data)
    return {lab: (path, data) for lab, (_, path, data) in found.items()}
