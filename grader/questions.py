"""The written analysis: labs/<lab>/QUESTIONS.md, its points in lab.toml, its rubric in solutions/<lab>/RUBRIC.md.

A question is a level-two heading that ends in its points, in both files:

    ## Q1: Swap the thread mapping (8 points)

lab.toml's [[questions]] gives each one's name (the heading without its points) and points: the grader scores
from lab.toml, students read QUESTIONS.md and TAs the rubric, so the three must agree, and problems() says
where they do not. The rubric is instructor material: it lives in solutions/, which no release ships.
"""
from __future__ import annotations

import re
from pathlib import Path

from grader.config import LabConfig

QUESTIONS_NAME = "QUESTIONS.md"
RUBRIC_NAME = "RUBRIC.md"
ANSWERS_NAME = "ANSWERS.md"  # where a student writes the answers, beside their code
HEADING = re.compile(r"^## (?P<name>.+?) \((?P<points>\d+(?:\.\d+)?) points?\)\s*$", re.MULTILINE)


def questions_path(config: LabConfig) -> Path:
    return config.lab_dir / QUESTIONS_NAME


def rubric_path(config: LabConfig) -> Path | None:
    """Where the rubric is; None where this checkout has no solutions/ (a student's)."""
    return config.solution_dir / RUBRIC_NAME if config.solution_dir else None


def headings(text: str) -> dict[str, float]:
    """Each question's name -> its points, in the order the file gives them."""
    return {match["name"]: float(match["points"]) for match in HEADING.finditer(text)}


def _against_config(config: LabConfig, path: Path, shown: str) -> list[str]:
    """How a file's questions differ from lab.toml's [[questions]], one line each."""
    if not path.is_file():
        return [f"{shown} is missing: lab.toml's [[questions]] gives its questions "
                f"{[q.name for q in config.questions]}"]
    stated = headings(path.read_text())
    wanted = {q.name: q.points for q in config.questions}
    found = [f"{shown}: '{name}' is not in lab.toml's [[questions]]" for name in stated if name not in wanted]
    found += [f"{shown}: lab.toml's question '{name}' has no heading '## {name} ({points:g} points)'"
              for name, points in wanted.items() if name not in stated]
    found += [f"{shown}: '{name}' says {stated[name]:g} points, lab.toml {points:g}"
              for name, points in wanted.items() if name in stated and stated[name] != points]
    if not found and list(stated) != list(wanted):
        found.append(f"{shown}: the questions stand in another order than in lab.toml ({list(wanted)})")
    return found


def problems(config: LabConfig) -> list[str]:
    """Where QUESTIONS.md or the rubric disagrees with lab.toml's [[questions]]; [] for a lab without questions."""
    if not config.questions:
        return []
    found = _against_config(config, questions_path(config), f"labs/{config.name}/{QUESTIONS_NAME}")
    rubric = rubric_path(config)
    if rubric is not None:
        found += _against_config(config, rubric, f"solutions/{config.name}/{RUBRIC_NAME}")
    return found
