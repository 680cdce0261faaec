"""Checks of the lecture decks: `make slides-check`, part of `make test`; no GPU needed.

A deck is slides/<lab>.md for every lab in labs/, plus slides/00-course.md. The checks: every lab
has its deck; every deck builds with Marp, without the marks of its measured figures; every image
it links exists; the diagrams are what slides/img/draw.py draws and the charts come from the newest
GPU run records; and no deck or diagram shows code from a reference solution region (students get
the slides). The measured figures themselves are checked by grader/tests/test_figures.py.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grader.config import list_labs, load_lab
from grader.skeleton import solution_code

REPO = Path(__file__).resolve().parents[2]
SLIDES = REPO / "slides"
DECK_NAME = re.compile(r"^\d\d-[a-z0-9-]+\.md$")
FENCE = re.compile(r"^\s*(```|~~~)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
MIN_SLIDES, MAX_SLIDES = 15, 30
# The deck of the course and the kit: no lab's, though it shares its number with lab 00's.
COURSE_DECK = "00-course.md"


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def labs() -> list[str]:
    return sorted(p.parent.name for p in (REPO / "labs").glob("*/lab.toml"))


def decks() -> list[Path]:
    return sorted(p for p in SLIDES.glob("*.md") if DECK_NAME.match(p.name))


def body(deck: Path) -> str:
    """The deck without its front matter."""
    text = deck.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5:]
    return text


def slide_count(deck: Path) -> int:
    """Slides are separated by a line of exactly '---' outside code blocks."""
    count, in_code = 1, False
    for line in body(deck).splitlines():
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code and line.strip() == "---":
            count += 1
    return count


def code_of(text: str) -> list[str]:
    """The code a deck shows: lines of fenced blocks and inline code spans."""
    code, in_code = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            in_code = not in_code
        elif in_code:
            code.append(line)
        else:
            code.extend(INLINE_CODE.findall(line))
    return code


def svg_text(path: Path) -> list[str]:
    return ["".join(t.itertext()) for t in ET.parse(path).iter("{http://www.w3.org/2000/svg}text")]


# --- one deck per lab ---------------------------------------------------------------------

def test_the_course_deck_exists() -> None:
    assert (SLIDES / COURSE_DECK).is_file(), f"slides/{COURSE_DECK} (the course and the kit) is missing"


@pytest.mark.parametrize("lab", labs())
def test_every_lab_has_a_deck(lab: str) -> None:
    assert (SLIDES / f"{lab}.md").is_file(), (
        f"labs/{lab}/ has no deck: write slides/{lab}.md (a lab's name is its deck's name)")


@pytest.mark.parametrize("deck", [d for d in decks() if d.name != COURSE_DECK], ids=lambda p: p.name)
def test_a_deck_is_named_like_its_lab(deck: Path) -> None:
    number, name = deck.name[:2], deck.stem
    same_number = [lab for lab in labs() if lab.startswith(number + "-")]
    assert not same_number or name in same_number, (
        f"slides/{deck.name}: lab {number} is called {same_number[0]}; rename the deck to {same_number[0]}.md")


@pytest.mark.parametrize("deck", [d for d in decks() if d.name != COURSE_DECK], ids=lambda p: p.name)
def test_a_lab_deck_has_15_to_30_slides(deck: Path) -> None:
    count = slide_count(deck)
    assert MIN_SLIDES <= count <= MAX_SLIDES, f"slides/{deck.name}: {count} slides, expected {MIN_SLIDES}-{MAX_SLIDES}"


@pytest.mark.parametrize("deck", decks(), ids=lambda p: p.name)
def test_every_deck_is_a_marp_deck_in_the_course_theme(deck: Path) -> None:
    text = deck.read_text(encoding="utf-8")
    front = text[4:text.find("\n---\n", 4)] if text.startswith("---\n") else ""
    assert re.search(r"^marp:\s*true\s*$", front, re.M) and re.search(r"^theme:\s*kit\s*$", front, re.M), (
        f"slides/{deck.name}: the front matter must say 'marp: true' and 'theme: kit'")


# --- every deck builds and every image resolves ---------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    marp = SLIDES / "node_modules" / ".bin" / "marp"
    if not marp.exists():
        pytest.fail("Marp is not installed: run 'npm ci --prefix slides' once (Node 18 or later), "
                    "then make slides-check", pytrace=False)
    out = tmp_path_factory.mktemp("slides")
    env = dict(os.environ, SLIDES_PDF="0")
    run = subprocess.run([str(SLIDES / "build.sh"), str(out)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0, f"slides/build.sh failed:\n{run.stdout}\n{run.stderr}"
    return out


@pytest.mark.parametrize("deck", decks(), ids=lambda p: p.name)
def test_every_deck_builds_to_html(deck: Path, built: Path) -> None:
    html = built / f"{deck.stem}.html"
    assert html.is_file() and html.stat().st_size > 0, f"slides/{deck.name} produced no HTML"
    sections = html.read_text().count("<section")
    assert sections >= slide_count(deck), f"slides/{deck.name}: {sections} slides in the HTML, " \
                                          f"{slide_count(deck)} in the Markdown"


@pytest.mark.parametrize("deck", decks(), ids=lambda p: p.name)
def test_no_deck_shows_the_marks_of_its_measured_figures(deck: Path, built: Path) -> None:
    html = (built / f"{deck.stem}.html").read_text()
    shown = re.findall(r"(?:un)?measured(?: \d\d-[a-z0-9-]+)?:[^<]{0,60}", html)
    assert not shown, f"slides/{deck.name}: marks of measured figures reach the HTML (presenter notes?): {shown[:3]}"


@pytest.mark.parametrize("deck", decks(), ids=lambda p: p.name)
def test_every_image_link_resolves(deck: Path) -> None:
    problems = []
    for target in IMAGE.findall(deck.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("/"):
            problems.append(f"{target}: link images inside slides/ by relative path (decks are shown offline)")
        elif not (SLIDES / target).is_file():
            problems.append(f"{target}: no such file under slides/")
    assert not problems, f"slides/{deck.name}:\n  " + "\n  ".join(problems)


def test_every_diagram_is_valid_svg() -> None:
    for path in sorted((SLIDES / "img").glob("*.svg")):
        try:
            ET.parse(path)
        except ET.ParseError as err:
            pytest.fail(f"slides/img/{path.name}: not valid SVG ({err})")


def test_the_diagrams_are_what_draw_py_draws() -> None:
    draw = _module(SLIDES / "img" / "draw.py")
    stale = [name for name, text in draw.rendered().items()
             if not (SLIDES / "img" / name).is_file()
             or (SLIDES / "img" / name).read_text(encoding="utf-8") != text]
    assert not stale, f"run 'python3 slides/img/draw.py': these differ from what it draws: {', '.join(stale)}"


# --- charts come from the newest GPU run records ----------------------------------------------

def test_the_charts_are_drawn_from_the_newest_records() -> None:
    charts = _module(SLIDES / "charts" / "make_charts.py")
    manifest = SLIDES / "charts" / "sources.json"
    assert manifest.is_file(), "slides/charts/sources.json is missing: run 'make charts'"
    committed = json.loads(manifest.read_text())
    expected = charts.plan()
    assert committed == expected, (
        "the charts are not those of the newest GPU run records in docs/gpu-runs/ (or a lab was added): "
        "run 'make charts' and commit slides/charts/")
    for name, item in committed.items():
        assert (SLIDES / "charts" / name).is_file(), f"slides/charts/{name} is missing: run 'make charts'"
        if item["source"]:
            assert (REPO / item["source"]["record"]).is_file(), f"{name}: its record {item['source']['record']} is gone"


def test_a_chart_comes_from_the_newest_record_that_has_its_lab(tmp_path: Path) -> None:
    charts = _module(SLIDES / "charts" / "make_charts.py")
    repo = tmp_path
    (repo / "labs" / "01-a").mkdir(parents=True)
    (repo / "labs" / "01-a" / "lab.toml").write_text('[[perf]]\ncase = "a timing"\nmeasurement = "k"\npoints = 10\n')
    (repo / "labs" / "03-c").mkdir(parents=True)
    (repo / "labs" / "03-c" / "lab.toml").write_text("")  # times nothing for points, as the debugging lab
    (repo / "slides").mkdir()
    (repo / "slides" / "02-b.md").write_text("")
    records = repo / "docs" / "gpu-runs"
    records.mkdir(parents=True)

    def record(name: str, date: str, labs: dict) -> None:
        (records / name).write_text(json.dumps({"date": date, "gpu": "G", "driver": "D", "commit": "C",
                                                "labs": labs}))

    one = {"measurements": [{"name": "k", "median_s": 1.0, "rate": 1.0, "unit": "GB/s", "ceilings": {}}]}
    record("2026-01-01-old.json", "2026-01-01", {"01-a": one})
    record("2026-02-01-new.json", "2026-02-01", {"01-a": one})
    record("2026-03-01-newest.json", "2026-03-01", {"01-a": {"measurements": []}})
    planned = charts.plan(records, repo / "slides", repo)
    assert planned["01-a.png"]["source"]["record"] == "docs/gpu-runs/2026-02-01-new.json", \
        "the newest record with measurements of the lab was not chosen"
    assert planned["02-b.png"]["source"] is None, "a lab without measurements must get a placeholder"
    assert "03-c.png" not in planned, "a lab with no [[perf]] times nothing for points, so it has no chart"


# --- no reference code in the slides -------------------------------------------------------

def normalize(line: str) -> str:
    """A code line without comments and whitespace, so spacing and comments cannot hide a copy."""
    return re.sub(r"\s+", "", re.sub(r"//.*$", "", line))


# Words every CUDA line may contain: they do not make a line anybody's solution.
IDIOM_WORDS = {"blockIdx", "blockDim", "threadIdx", "gridDim", "x", "y", "z", "const", "int", "unsigned",
               "float", "double", "auto", "size_t", "return", "if", "for", "else"}


def distinctive(code: str) -> bool:
    """Long enough, and with enough names of its own, to be somebody's solution rather than an
    idiom every CUDA program has (`blockIdx.x * blockDim.x + threadIdx.x`, `__syncthreads();`)."""
    words = [w for w in re.findall(r"[A-Za-z_]\w*|\d+", code) if w not in IDIOM_WORDS]
    return len(code) >= 20 and len(words) >= 3


def solution_lines(root: Path = REPO) -> dict[str, str]:
    """Normalized distinctive code lines of every solution region: line -> where it comes from."""
    return {normalize(line.text): f"{line.source}:{line.number}"
            for lab in list_labs(root) for line in solution_code(load_lab(lab, root))
            if distinctive(normalize(line.text))}


def leaks(shown: list[str], reference: dict[str, str]) -> list[str]:
    """Shown code lines that are, or contain, or are a distinctive part of, a reference line."""
    found = []
    for line in shown:
        code = normalize(line)
        if not code:
            continue
        for ref, where in reference.items():
            if code == ref or ref in code or (distinctive(code) and code in ref):
                found.append(f"'{line.strip()}' is reference code from {where}")
                break
    return found


def test_the_leak_check_catches_a_copied_line() -> None:
    reference = {normalize("const float dist2 = dx * dx + dy * dy + softening2;"): "solutions/x/y.cu:1"}
    deck = "# t\n\n```cuda\n  const float dist2 = dx*dx + dy*dy + softening2;  // mine\n```\n"
    assert leaks(code_of(deck), reference), "a copied line in a code block went unnoticed"
    assert leaks(code_of("say `dx * dx + dy * dy + softening2` here"), reference), \
        "the distinctive part of a reference line in inline code went unnoticed"
    assert not leaks(code_of("```\nfloat r2 = ddx * ddx + ddy * ddy + eps2;\n```"), reference), \
        "a line of one's own was taken for a copy"
    assert not leaks(code_of("`blockIdx.x * blockDim.x + threadIdx.x`"),
                     {normalize("const int i = blockIdx.x * blockDim.x + threadIdx.x;"): "solutions/x/y.cu:2"}), \
        "the global-index idiom was taken for a copy"


def test_no_deck_or_diagram_shows_reference_code() -> None:
    if not (REPO / "solutions").is_dir():
        pytest.skip("no solutions/ here (student release): nothing to compare the decks with")
    reference = solution_lines()
    problems = []
    for deck in decks():
        problems += [f"slides/{deck.name}: {p}" for p in leaks(code_of(deck.read_text(encoding="utf-8")), reference)]
    for svg in sorted((SLIDES / "img").glob("*.svg")):
        problems += [f"slides/img/{svg.name}: {p}" for p in leaks(svg_text(svg), reference)]
    assert not problems, "decks teach with their own examples:\n  " + "\n  ".join(problems)
