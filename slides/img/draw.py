#!/usr/bin/env python3
"""Draws the slide diagrams: every slides/img/*.svg is written by one function below.

Edit a function and rerun `python3 slides/img/draw.py`; the deck checks (make slides-check)
fail when a committed SVG differs from what this script draws, so the two never drift.
Plain Python, no packages: an SVG is a list of shapes on a canvas.

Conventions, so the diagrams read alike across decks: one colour per thread block (BLOCK),
grey for threads or cells that do nothing, red for what goes wrong, text at least 20 units
high on canvases about 1200 wide (a 1280-pixel slide shows them near 1:1).
"""
from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
FONT = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"
MONO = "DejaVu Sans Mono, Liberation Mono, Consolas, monospace"
INK = "#1b1f24"
MUTED = "#6b7785"
RED = "#cc0000"
GREY = "#e6e6e6"
BLOCK = ["#cfe2f3", "#fce5cd", "#d9ead3", "#e6d6f0", "#fff2cc", "#d0e0e3"]   # fills, one per block
BLOCK_EDGE = ["#0b5394", "#b45f06", "#38761d", "#674ea7", "#bf9000", "#134f5c"]


class Svg:
    """A canvas: shapes are appended as SVG text, in drawing order."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.items: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str = "none", stroke: str = INK,
             width: float = 1.5, rx: float = 0, dash: str = "") -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.items.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="{rx:g}" '
                          f'fill="{fill}" stroke="{stroke}" stroke-width="{width:g}"{extra}/>')

    def text(self, x: float, y: float, s: str, size: float = 22, anchor: str = "middle",
             fill: str = INK, bold: bool = False, mono: bool = False, italic: bool = False) -> None:
        weight = ' font-weight="bold"' if bold else ""
        style = ' font-style="italic"' if italic else ""
        family = MONO if mono else FONT
        self.items.append(f'<text x="{x:g}" y="{y:g}" font-family="{family}" font-size="{size:g}" '
                          f'text-anchor="{anchor}" dominant-baseline="central" fill="{fill}"'
                          f'{weight}{style}>{escape(s)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = INK, width: float = 2,
             arrow: bool = False, dash: str = "") -> None:
        extra = ' marker-end="url(#arrow)"' if arrow else ""
        extra += f' stroke-dasharray="{dash}"' if dash else ""
        self.items.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{stroke}" '
                          f'stroke-width="{width:g}"{extra}/>')

    def arrow(self, x1: float, y1: float, x2: float, y2: float, stroke: str = INK, width: float = 2,
              dash: str = "") -> None:
        self.line(x1, y1, x2, y2, stroke, width, arrow=True, dash=dash)

    def path(self, d: str, stroke: str = INK, width: float = 2, fill: str = "none",
             arrow: bool = False, dash: str = "") -> None:
        extra = ' marker-end="url(#arrow)"' if arrow else ""
        extra += f' stroke-dasharray="{dash}"' if dash else ""
        self.items.append(f'<path d="{d}" stroke="{stroke}" stroke-width="{width:g}" fill="{fill}"{extra}/>')

    def cross(self, cx: float, cy: float, r: float, stroke: str = RED, width: float = 3) -> None:
        self.line(cx - r, cy - r, cx + r, cy + r, stroke, width)
        self.line(cx - r, cy + r, cx + r, cy - r, stroke, width)

    def cell(self, x: float, y: float, w: float, h: float, label: str = "", fill: str = "white",
             stroke: str = INK, size: float = 20, dash: str = "", text_fill: str = INK,
             bold: bool = False, mono: bool = False) -> None:
        self.rect(x, y, w, h, fill, stroke, 1.5, dash=dash)
        if label:
            self.text(x + w / 2, y + h / 2, label, size, fill=text_fill, bold=bold, mono=mono)

    def box(self, x: float, y: float, w: float, h: float, lines: list[str], fill: str = "white",
            stroke: str = INK, size: float = 22, bold_first: bool = True) -> None:
        """A rounded box with centred lines of text; the first line bold."""
        self.rect(x, y, w, h, fill, stroke, 2, rx=10)
        step = size * 1.25
        top = y + h / 2 - step * (len(lines) - 1) / 2
        for k, s in enumerate(lines):
            self.text(x + w / 2, top + k * step, s, size if k == 0 else size * 0.8,
                      bold=bold_first and k == 0, fill=INK if k == 0 else MUTED)

    def render(self) -> str:
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
                f'width="{self.width}" height="{self.height}">\n'
                '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
                f'fill="{INK}"/></marker></defs>\n'
                f'<rect width="{self.width}" height="{self.height}" fill="white"/>\n')
        return head + "\n".join(self.items) + "\n</svg>\n"


# --- 00: the course ---------------------------------------------------------------------------

def course_lab_cycle() -> Svg:
    s = Svg(1200, 360)
    steps = [("1. Read", "README.md", "the handout"), ("2. Write", "the TODOs", "in the skeleton"),
             ("3. Test", "make <lab>", "public tests"), ("4. Grade", "make grade", "your local score"),
             ("5. Submit", "your files", "TA grades them")]
    w, gap = 200, 40
    for k, (a, b, c) in enumerate(steps):
        x = 20 + k * (w + gap)
        s.box(x, 60, w, 130, [a, b, c], fill=BLOCK[k % len(BLOCK)], stroke=BLOCK_EDGE[k % len(BLOCK)])
        if k:
            s.arrow(x - gap + 4, 125, x - 4, 125)
    s.path("M 700,200 C 700,290 420,290 380,205", arrow=True, dash="8 6")
    s.text(540, 300, "fix and repeat: a failing test names the input, seed and first mismatches",
           20, fill=MUTED)
    s.text(1030, 230, "hidden tests", 20, fill=MUTED)
    s.text(1030, 258, "+ timing vs reference", 20, fill=MUTED)
    return s


def course_grader_pipeline() -> Svg:
    s = Svg(1200, 300)
    stages = [("intake", "your files only"), ("build", "+ the lab's tests"),
              ("run", "one process each"), ("score", "lab.toml points"), ("report", "table + JSON")]
    w, gap = 196, 50
    for k, (a, b) in enumerate(stages):
        x = 15 + k * (w + gap)
        s.box(x, 70, w, 110, [a, b], fill=BLOCK[0], stroke=BLOCK_EDGE[0], size=26)
        if k:
            s.arrow(x - gap + 4, 125, x - 4, 125)
    s.text(600, 230, "Each stage takes plain data and returns plain data: grader/<stage>.py", 22, fill=MUTED)
    s.text(600, 268, "python3 -m grader grade --lab <lab> [--submission <folder or .zip>]", 22, mono=True)
    return s


def course_gpu_overview() -> Svg:
    s = Svg(1200, 560)
    # host
    s.rect(20, 80, 250, 400, BLOCK[1], BLOCK_EDGE[1], 2, rx=12)
    s.text(145, 115, "Host", 28, bold=True)
    s.box(45, 150, 200, 90, ["CPU", "a few fast cores"], fill="white")
    s.box(45, 290, 200, 130, ["Host memory", "DDR, pageable", "or pinned"], fill="white")
    # link
    s.arrow(278, 280, 372, 280)
    s.arrow(372, 300, 278, 300)
    s.text(325, 245, "PCIe", 22, bold=True)
    s.text(325, 340, "~25-55", 20, fill=MUTED)
    s.text(325, 365, "GB/s", 20, fill=MUTED)
    # device
    s.rect(380, 30, 800, 500, BLOCK[0], BLOCK_EDGE[0], 2, rx=12)
    s.text(780, 62, "GPU (device)", 28, bold=True)
    for k in range(5):
        x = 405 + k * 152
        label = f"SM {k}" if k < 4 else "... SM 131"
        s.rect(x, 90, 138, 200, "white", BLOCK_EDGE[0], 2, rx=8)
        s.text(x + 69, 115, label, 22, bold=True)
        s.cell(x + 10, 140, 118, 40, "warps", BLOCK[2], size=18)
        s.cell(x + 10, 188, 118, 40, "registers", BLOCK[4], size=18)
        s.cell(x + 10, 236, 118, 40, "shared / L1", BLOCK[3], size=18)
    s.rect(405, 320, 750, 60, "white", BLOCK_EDGE[0], 2, rx=8)
    s.text(780, 350, "L2 cache (shared by all SMs; 50 MB on H100)", 22)
    s.rect(405, 410, 750, 90, "white", BLOCK_EDGE[0], 2, rx=8)
    s.text(780, 440, "Device memory (HBM): global memory", 24, bold=True)
    s.text(780, 474, "80 GB at about 3,350 GB/s on H100 SXM", 20, fill=MUTED)
    s.text(600, 548, "Source: NVIDIA H100 Tensor Core GPU datasheet (H100 SXM5: 132 SMs, HBM3)",
           16, fill=MUTED)
    return s


def course_thread_hierarchy() -> Svg:
    s = Svg(1200, 500)
    s.rect(20, 40, 430, 330, "white", INK, 2, rx=10)
    s.text(235, 70, "grid: gridDim = (3, 2)", 24, bold=True)
    for by in range(2):
        for bx in range(3):
            k = by * 3 + bx
            s.cell(45 + bx * 130, 100 + by * 130, 120, 115, f"block ({bx},{by})", BLOCK[k], BLOCK_EDGE[k], 19)
    # expanded block
    s.path("M 295,230 L 520,45", dash="6 5", width=1.5)
    s.path("M 295,345 L 520,435", dash="6 5", width=1.5)
    s.rect(520, 40, 660, 400, BLOCK[4], BLOCK_EDGE[4], 2, rx=10)
    s.text(850, 70, "block (1,1): blockDim = 128 threads", 24, bold=True)
    for w in range(4):
        y = 100 + w * 62
        s.text(580, y + 22, f"warp {w}", 20, bold=True)
        for t in range(12):
            s.cell(640 + t * 32, y, 30, 44, "", "white", INK)
        s.text(1100, y + 22, f"{32 * w} ... {32 * w + 31}", 18, fill=MUTED)
    s.text(850, 370, "threads of a block share shared memory, can __syncthreads(),", 20)
    s.text(850, 400, "and run on one SM; a warp's 32 threads issue together", 20)
    s.text(600, 470, "threadIdx: the thread within its block; blockIdx: the block within the grid", 22,
           mono=False, fill=MUTED)
    return s


# --- 01: vector add -------------------------------------------------------------------------

def vector_grid_over_data() -> Svg:
    n, bs, blocks = 10, 4, 3
    cw, gap, x0 = 82, 24, 84
    s = Svg(1200, 470)
    s.text(600, 28, f"n = {n}, blockDim.x = {bs}: blocks = ceil({n} / {bs}) = {blocks}", 24, bold=True)
    for b in range(blocks):
        bx = x0 + b * (bs * cw + gap)
        s.rect(bx - 6, 60, bs * cw + 12, 120, BLOCK[b], BLOCK_EDGE[b], 2, rx=8)
        s.text(bx + bs * cw / 2, 80, f"blockIdx.x = {b}", 20, bold=True)
        for t in range(bs):
            i = b * bs + t
            x = bx + t * cw
            dead = i >= n
            s.cell(x + 4, 100, cw - 8, 66, "", "white" if not dead else GREY, INK)
            s.text(x + cw / 2, 120, f"t = {t}", 19)
            s.text(x + cw / 2, 148, f"i = {i}", 19, bold=True, fill=RED if dead else INK)
            if dead:
                s.cross(x + cw / 2, 236, 14)
            else:
                s.arrow(x + cw / 2, 170, x + cw / 2, 268, stroke=BLOCK_EDGE[b])
    for b in range(blocks):
        bx = x0 + b * (bs * cw + gap)
        for t in range(bs):
            i = b * bs + t
            x = bx + t * cw
            if i < n:
                s.cell(x + 4, 272, cw - 8, 56, f"c[{i}]", "white", INK, 20)
            else:
                s.cell(x + 4, 272, cw - 8, 56, "none", GREY, MUTED, 18, dash="6 4", text_fill=MUTED)
    s.text(600, 370, "i = blockIdx.x × blockDim.x + threadIdx.x", 26, mono=True, bold=True)
    s.text(600, 415, "threads with i >= n exist (the grid is whole blocks) and must not write", 22,
           fill=RED)
    return s


def vector_host_device() -> Svg:
    s = Svg(1200, 470)
    s.rect(20, 20, 360, 430, BLOCK[1], BLOCK_EDGE[1], 2, rx=12)
    s.text(200, 52, "Host (CPU) memory", 26, bold=True)
    s.rect(820, 20, 360, 430, BLOCK[0], BLOCK_EDGE[0], 2, rx=12)
    s.text(1000, 52, "Device (GPU) memory", 26, bold=True)
    for k, name in enumerate(["x", "y", "out"]):
        s.cell(70, 90 + k * 70, 260, 50, f"h_{name}", "white", INK, 22, mono=True)
        s.cell(870, 90 + k * 70, 260, 50, f"d_{name}", "white", INK, 22, mono=True)
    s.arrow(335, 115, 865, 115, stroke=BLOCK_EDGE[1], width=3)
    s.arrow(335, 185, 865, 185, stroke=BLOCK_EDGE[1], width=3)
    s.text(600, 95, "1. cudaMemcpy(..., cudaMemcpyHostToDevice)", 19, mono=True)
    s.arrow(865, 255, 335, 255, stroke=BLOCK_EDGE[0], width=3)
    s.text(600, 280, "3. cudaMemcpy(..., cudaMemcpyDeviceToHost)", 19, mono=True)
    s.path("M 1140,115 C 1175,160 1175,210 1140,250", arrow=True, width=3, stroke=BLOCK_EDGE[2])
    s.text(1000, 300, "2. kernel<<<blocks, threads>>>", 19, mono=True)
    s.text(1000, 330, "reads d_x, d_y; writes d_out", 18, fill=MUTED)
    s.text(200, 330, "0. cudaMalloc the device", 19, fill=MUTED)
    s.text(200, 355, "buffers; 4. cudaFree them", 19, fill=MUTED)
    s.text(600, 380, "over PCIe: tens of GB/s", 22, bold=True, fill=BLOCK_EDGE[1])
    s.text(1000, 400, "HBM: thousands of GB/s", 22, bold=True, fill=BLOCK_EDGE[0])
    s.text(600, 430, "device pointers cannot be dereferenced on the host, nor host pointers in a kernel",
           17, fill=RED)
    return s


# --- 02: picture kernel ---------------------------------------------------------------------

def picture_grid_2d() -> Svg:
    width, height, bs = 10, 6, 4
    c, x0, y0 = 46, 40, 80
    s = Svg(1200, 520)
    s.text(330, 30, "a 10 x 6 picture, 4 x 4 blocks: grid = (3, 2)", 24, bold=True)
    for by in range(2):
        for bx in range(3):
            k = by * 3 + bx
            for ty in range(bs):
                for tx in range(bs):
                    x, y = bx * bs + tx, by * bs + ty
                    inside = x < width and y < height
                    s.rect(x0 + x * c, y0 + y * c, c, c, BLOCK[k] if inside else GREY,
                           INK if inside else MUTED, 1, dash="" if inside else "4 3")
            s.rect(x0 + bx * bs * c, y0 + by * bs * c, bs * c, bs * c, "none", BLOCK_EDGE[k], 4)
    # picture outline
    s.rect(x0, y0, width * c, height * c, "none", INK, 4)
    hx, hy = 6, 5
    s.rect(x0 + hx * c + 4, y0 + hy * c + 4, c - 8, c - 8, "none", RED, 4)
    s.text(x0 + width * c / 2, y0 + 8 * c + 30, "grey: threads outside the picture (they return)", 20,
           fill=MUTED)
    for x in range(12):
        s.text(x0 + x * c + c / 2, y0 - 14, str(x), 16, fill=MUTED)
    for y in range(8):
        s.text(x0 - 16, y0 + y * c + c / 2, str(y), 16, fill=MUTED)
    tx0 = 640
    s.text(tx0, 110, "the red thread: blockIdx = (1, 1), threadIdx = (2, 1)", 20, anchor="start")
    s.text(tx0, 160, "x = blockIdx.x × blockDim.x + threadIdx.x", 19, anchor="start", mono=True)
    s.text(tx0, 190, "  = 1 × 4 + 2 = 6   (column)", 19, anchor="start", mono=True)
    s.text(tx0, 235, "y = blockIdx.y × blockDim.y + threadIdx.y", 19, anchor="start", mono=True)
    s.text(tx0, 265, "  = 1 × 4 + 1 = 5   (row)", 19, anchor="start", mono=True)
    s.text(tx0, 315, "in memory (row-major): y × width + x", 19, anchor="start", mono=True)
    s.text(tx0, 345, "  = 5 × 10 + 6 = 56", 19, anchor="start", mono=True)
    s.text(tx0, 400, "grid.x = ceil(width / 4) = 3", 19, anchor="start", mono=True)
    s.text(tx0, 430, "grid.y = ceil(height / 4) = 2", 19, anchor="start", mono=True)
    s.text(tx0, 475, "round up in both directions, guard both", 20, anchor="start", fill=RED)
    return s


def picture_row_major() -> Svg:
    w, h, c = 4, 3, 70
    s = Svg(1200, 430)
    s.text(220, 30, "a 4 x 3 picture ...", 24, bold=True)
    for y in range(h):
        for x in range(w):
            s.cell(60 + x * c, 60 + y * c, c, c, f"{y},{x}", BLOCK[y], BLOCK_EDGE[y], 20)
    s.text(220, 290, "(row y, column x)", 20, fill=MUTED)
    s.text(760, 30, "... is one row after another in memory", 24, bold=True)
    cw = 62
    for k in range(w * h):
        y, x = divmod(k, w)
        s.cell(420 + k * cw, 110, cw, 60, f"{y},{x}", BLOCK[y], BLOCK_EDGE[y], 18)
        s.text(420 + k * cw + cw / 2, 190, str(k), 18, fill=MUTED)
    s.text(790, 235, "element (y, x) is at index  y × width + x", 24, mono=True, bold=True)
    s.text(790, 280, "neighbours in x are neighbours in memory;", 20)
    s.text(790, 310, "neighbours in y are a whole row (width elements) apart", 20)
    s.text(600, 370, "threadIdx.x should walk along x: a warp then reads one contiguous stretch", 22,
           fill=BLOCK_EDGE[0])
    return s


def picture_box_blur() -> Svg:
    w, h, c = 8, 6, 56
    s = Svg(1200, 460)
    x0, y0 = 100, 80
    for y in range(-1, h + 1):
        for x in range(-1, w + 1):
            inside = 0 <= x < w and 0 <= y < h
            if inside:
                s.rect(x0 + x * c, y0 + y * c, c, c, "white", INK, 1)
    s.rect(x0, y0, w * c, h * c, "none", INK, 4)

    def window(cx: int, cy: int, k: int) -> None:
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                x, y = cx + dx, cy + dy
                inside = 0 <= x < w and 0 <= y < h
                s.rect(x0 + x * c + 3, y0 + y * c + 3, c - 6, c - 6, BLOCK[k] if inside else GREY,
                       BLOCK_EDGE[k] if inside else MUTED, 2, dash="" if inside else "5 4")
        s.rect(x0 + cx * c + 3, y0 + cy * c + 3, c - 6, c - 6, "none", RED, 4)

    window(4, 3, 0)
    window(0, 0, 2)
    tx = 600
    s.text(tx, 80, "radius 1: a 3 x 3 window per output pixel", 22, anchor="start", bold=True)
    s.text(tx, 130, "blue: all 9 neighbours are in the picture", 20, anchor="start")
    s.text(tx, 165, "green (corner): 5 of the 9 do not exist;", 20, anchor="start")
    s.text(tx, 195, "the mean is over the 4 that do", 20, anchor="start")
    s.text(tx, 250, "each output pixel: one thread, 9 reads", 20, anchor="start")
    s.text(tx, 285, "each input pixel: read by 9 threads", 20, anchor="start")
    s.text(tx, 320, "(neighbouring threads share most reads:", 20, anchor="start", fill=MUTED)
    s.text(tx, 350, "caches, or shared memory, catch them)", 20, anchor="start", fill=MUTED)
    s.text(tx, 405, "read from the input, write to a separate output", 20, anchor="start", fill=RED)
    return s


# --- 03 and 04: matrix multiply -------------------------------------------------------------

def _matrix(s: Svg, x: float, y: float, rows: int, cols: int, c: float, name: str, fill: str = "white",
            edge: str = INK) -> None:
    for r in range(rows):
        for k in range(cols):
            s.rect(x + k * c, y + r * c, c, c, fill, MUTED, 0.8)
    s.rect(x, y, cols * c, rows * c, "none", edge, 3)
    s.text(x - 28, y + rows * c / 2, name, 28, bold=True)


def matmul_thread() -> Svg:
    c = 32
    m, k, n = 6, 8, 7
    s = Svg(1200, 560)
    ax, ay = 90, 310
    bx, by = 440, 30
    _matrix(s, ax, ay, m, k, c, "A")
    _matrix(s, bx, by, k, n, c, "B")
    _matrix(s, bx, ay, m, n, c, "C")
    r, col = 2, 4
    for t in range(k):
        s.rect(ax + t * c, ay + r * c, c, c, BLOCK[0], BLOCK_EDGE[0], 1.5)
        s.rect(bx + col * c, by + t * c, c, c, BLOCK[1], BLOCK_EDGE[1], 1.5)
    s.rect(bx + col * c, ay + r * c, c, c, RED, RED, 2)
    s.text(ax + k * c / 2, ay + m * c + 30, "M x K", 20, fill=MUTED)
    s.text(bx + n * c + 40, by + k * c / 2, "K x N", 20, fill=MUTED, anchor="start")
    s.text(bx + n * c / 2, ay + m * c + 30, "M x N", 20, fill=MUTED)
    tx = 790
    s.text(tx, 310, "one thread per element of C:", 22, anchor="start", bold=True)
    s.text(tx, 350, "C[row][col] =", 20, anchor="start", mono=True)
    s.text(tx, 378, " sum over k of", 20, anchor="start", mono=True)
    s.text(tx, 406, " A[row][k] * B[k][col]", 20, anchor="start", mono=True)
    s.text(tx, 450, "K multiply-adds, 2K loads", 20, anchor="start")
    s.text(tx, 480, "row: from the y index", 20, anchor="start", fill=MUTED)
    s.text(tx, 508, "col: from the x index", 20, anchor="start", fill=MUTED)
    return s


def matmul_coalescing() -> Svg:
    s = Svg(1200, 560)
    cw = 34
    s.text(600, 28, "one warp (8 lanes drawn of 32) loads one float each", 24, bold=True)

    def panel(y: float, title: str, addrs: list[int], note: str, good: bool) -> None:
        s.text(40, y, title, 22, anchor="start", bold=True)
        for lane in range(8):
            s.cell(60 + lane * 60, y + 25, 50, 40, f"{lane}", BLOCK[4], BLOCK_EDGE[4], 18)
        for a in range(32):
            s.rect(40 + a * cw, y + 150, cw, 34, "white", MUTED, 1)
            if a % 8 == 0:
                s.line(40 + a * cw, y + 140, 40 + a * cw, y + 194, INK, 3)
        s.line(40 + 32 * cw, y + 140, 40 + 32 * cw, y + 194, INK, 3)
        for lane, a in enumerate(addrs):
            s.rect(40 + a * cw, y + 150, cw, 34, BLOCK[2] if good else "#f4cccc", INK, 1.5)
            s.arrow(85 + lane * 60, y + 68, 40 + a * cw + cw / 2, y + 146,
                    stroke=BLOCK_EDGE[2] if good else RED, width=1.8)
        s.text(40 + 16 * cw, y + 212, note, 20, fill=BLOCK_EDGE[2] if good else RED)

    panel(75, "lane i reads B[k][col0 + i]: consecutive addresses", list(range(8)),
          "one 32-byte sector serves 8 lanes: coalesced", True)
    panel(320, "lane i reads A[row0 + i][k]: addresses K floats apart", [0, 4, 8, 12, 16, 20, 24, 28],
          "every lane needs its own sector: 8x (32x for a full warp) the traffic", False)
    s.text(1110, 370, "K = 4", 20, fill=MUTED)
    return s


def tiled_tiles_along_k() -> Svg:
    c, t = 26, 4
    s = Svg(1200, 600)
    ax, ay = 80, 370
    bx, by = 450, 30
    m, k, n = 8, 12, 8
    _matrix(s, ax, ay, m, k, c, "A")
    _matrix(s, bx, by, k, n, c, "B")
    _matrix(s, bx, ay, m, n, c, "C")
    br, bc = 1, 1  # the block's tile of C
    for p in range(k // t):
        s.rect(ax + p * t * c, ay + br * t * c, t * c, t * c, BLOCK[p], BLOCK_EDGE[p], 3)
        s.text(ax + p * t * c + t * c / 2, ay + br * t * c + t * c / 2, f"phase {p}", 18, bold=True)
        s.rect(bx + bc * t * c, by + p * t * c, t * c, t * c, BLOCK[p], BLOCK_EDGE[p], 3)
        s.text(bx + bc * t * c + t * c / 2, by + p * t * c + t * c / 2, f"phase {p}", 18, bold=True)
    s.rect(bx + bc * t * c, ay + br * t * c, t * c, t * c, "#f4cccc", RED, 4)
    s.text(bx + bc * t * c + t * c / 2, ay + br * t * c + t * c / 2, "block", 18, bold=True)
    tx = 720
    s.text(tx, 60, "one block computes one tile of C;", 22, anchor="start", bold=True)
    s.text(tx, 100, "per phase, all its threads:", 21, anchor="start")
    s.text(tx, 140, "1. load one A tile and one B tile", 20, anchor="start")
    s.text(tx, 168, "   into shared memory (1 value each)", 20, anchor="start", fill=MUTED)
    s.text(tx, 206, "2. barrier: tiles complete", 20, anchor="start")
    s.text(tx, 244, "3. multiply-add along the tiles", 20, anchor="start")
    s.text(tx, 282, "4. barrier: done reading them", 20, anchor="start")
    s.text(tx, 340, "each value of A and B is read from", 20, anchor="start", fill=BLOCK_EDGE[2])
    s.text(tx, 368, "global memory once per block, not", 20, anchor="start", fill=BLOCK_EDGE[2])
    s.text(tx, 396, "once per thread: TILE times fewer loads", 20, anchor="start", fill=BLOCK_EDGE[2])
    return s


def tiled_edge_tiles() -> Svg:
    c, t, size = 34, 4, 10
    s = Svg(1200, 500)
    x0, y0 = 60, 50
    for r in range(12):
        for k in range(12):
            inside = r < size and k < size
            s.cell(x0 + k * c, y0 + r * c, c, c, "" if inside else "0", "white" if inside else GREY,
                   MUTED if not inside else INK, 16, dash="" if inside else "3 3", text_fill=RED)
    for tr in range(3):
        for tk in range(3):
            s.rect(x0 + tk * t * c, y0 + tr * t * c, t * c, t * c, "none", BLOCK_EDGE[(tr + tk) % 3], 3.5)
    s.rect(x0, y0, size * c, size * c, "none", INK, 4)
    s.text(x0, y0 + 12 * c + 30, "10 x 10 matrix in 4 x 4 tiles: the last ones ragged", 19, anchor="start")
    tx = 540
    s.text(tx, 80, "loads past the edge: store 0 in the tile", 22, anchor="start", bold=True)
    s.text(tx, 115, "a zero adds nothing to the dot product,", 20, anchor="start")
    s.text(tx, 145, "so the inner loop needs no special case", 20, anchor="start")
    s.text(tx, 200, "stores past the edge: skip them", 22, anchor="start", bold=True)
    s.text(tx, 235, "threads whose C element does not exist", 20, anchor="start")
    s.text(tx, 265, "still load and still reach every barrier", 20, anchor="start")
    s.text(tx, 320, "never return early from a tiled kernel:", 22, anchor="start", bold=True, fill=RED)
    s.text(tx, 355, "a thread that skips __syncthreads()", 20, anchor="start", fill=RED)
    s.text(tx, 385, "while others wait is undefined behaviour", 20, anchor="start", fill=RED)
    s.text(tx, 440, "test sizes like 1023, 1025, 17 x 33 find these", 20, anchor="start", fill=MUTED)
    return s


def tiled_register_tile() -> Svg:
    c = 34
    s = Svg(1200, 500)
    s.text(300, 28, "more than one result per thread", 23, bold=True)
    x0, y0 = 60, 70
    rows_of_threads = 2   # thread row ty owns rows ty, ty + 2, ty + 4, ty + 6
    for r in range(8):
        for k in range(8):
            ty = r % rows_of_threads
            s.rect(x0 + k * c, y0 + r * c, c, c, BLOCK[(k + 3 * ty) % 6], MUTED, 0.8)
    for r in range(1, 8, 2):
        s.rect(x0 + 2 * c + 3, y0 + r * c + 3, c - 6, c - 6, "none", RED, 3)
    s.rect(x0, y0, 8 * c, 8 * c, "none", INK, 3)
    s.text(x0 + 4 * c, y0 + 8 * c + 28, "8 x 8 tile of C, 8 x 2 threads:", 19)
    s.text(x0 + 4 * c, y0 + 8 * c + 54, "4 results each, 2 rows apart", 19)
    tx = 400
    s.text(tx, 90, "per step k, the red thread reads from shared memory", 20, anchor="start")
    s.text(tx, 120, "4 values of A (its 4 rows) and 1 of B (its column),", 20, anchor="start")
    s.text(tx, 150, "and does 4 multiply-adds into 4 registers:", 20, anchor="start")
    s.text(tx, 185, "1.25 shared reads per multiply-add instead of 2", 21, anchor="start", bold=True,
           fill=BLOCK_EDGE[2])
    # extra credit: a thread owns a square of C
    x1, y1, c1 = 400, 240, 20
    for r in range(8):
        for k in range(8):
            s.rect(x1 + k * c1, y1 + r * c1, c1, c1, BLOCK[3], MUTED, 0.6)
    s.rect(x1, y1, 8 * c1, 8 * c1, "none", RED, 3)
    s.text(x1 + 4 * c1, y1 + 8 * c1 + 24, "one thread: 8 x 8 sums", 18)
    tx2 = x1 + 8 * c1 + 30
    s.text(tx2, 260, "register tiling (lab 04 extra credit):", 20, anchor="start", bold=True)
    s.text(tx2, 292, "per k: 8 values of A + 8 of B,", 20, anchor="start")
    s.text(tx2, 322, "64 multiply-adds: 4 per shared read", 20, anchor="start")
    s.text(tx2, 358, "costs registers (64 sums + operands)", 20, anchor="start", fill=MUTED)
    s.text(tx2, 388, "and fewer threads per block", 20, anchor="start", fill=MUTED)
    s.text(600, 480, "Volkov and Demmel, 'Benchmarking GPUs to tune dense linear algebra', SC 2008: "
           "fewer threads, more work each", 16, fill=MUTED)
    return s


# --- 05: reduction ---------------------------------------------------------------------------

VALUES = [3, 1, 4, 1, 5, 9, 2, 6]


def _tree(s: Svg, title: str, steps: list[tuple[str, list[tuple[int, int]]]], note: str,
          active_note: list[str]) -> None:
    """A reduction drawn as rows of the shared array: each step adds x[src] into x[dst]."""
    c, x0, y0, dy = 78, 60, 70, 96
    s.text(x0 + 4 * c, 28, title, 24, bold=True)
    vals = list(VALUES)
    for i, v in enumerate(vals):
        s.cell(x0 + i * c, y0, c - 10, 50, str(v), "white", INK, 22)
        s.text(x0 + i * c + (c - 10) / 2, y0 - 14, f"[{i}]", 16, fill=MUTED)
    for row, (label, pairs) in enumerate(steps, start=1):
        new = list(vals)
        for dst, src in pairs:
            new[dst] = vals[dst] + vals[src]
        y = y0 + row * dy
        touched = {d for d, _ in pairs}
        for i, v in enumerate(new):
            s.cell(x0 + i * c, y, c - 10, 50, str(v), BLOCK[0] if i in touched else "white",
                   BLOCK_EDGE[0] if i in touched else MUTED, 22, text_fill=INK if i in touched else MUTED)
        for dst, src in pairs:
            s.arrow(x0 + src * c + (c - 10) / 2, y - dy + 52, x0 + dst * c + (c - 10) / 2 + 4, y - 3,
                    stroke=BLOCK_EDGE[1], width=2)
            s.line(x0 + dst * c + (c - 10) / 2, y - dy + 52, x0 + dst * c + (c - 10) / 2, y - 3, MUTED, 1.5)
        s.text(x0 + 8 * c + 10, y + 14, label, 20, anchor="start", bold=True)
        s.text(x0 + 8 * c + 10, y + 40, active_note[row - 1], 18, anchor="start", fill=MUTED)
        vals = new
    s.text(x0 + 4 * c + 200, y0 + len(steps) * dy + 90, note, 20, fill=RED if "diverge" in note else BLOCK_EDGE[2])


def reduction_interleaved() -> Svg:
    s = Svg(1200, 520)
    _tree(s, "interleaved addressing: stride 1, 2, 4",
          [("stride 1", [(0, 1), (2, 3), (4, 5), (6, 7)]),
           ("stride 2", [(0, 2), (4, 6)]),
           ("stride 4", [(0, 4)])],
          "active threads are scattered: every warp keeps diverging until the end",
          ["threads 0, 2, 4, 6 add", "threads 0, 4 add", "thread 0 adds"])
    return s


def reduction_sequential() -> Svg:
    s = Svg(1200, 520)
    _tree(s, "sequential addressing: stride 4, 2, 1",
          [("stride 4", [(0, 4), (1, 5), (2, 6), (3, 7)]),
           ("stride 2", [(0, 2), (1, 3)]),
           ("stride 1", [(0, 1)])],
          "active threads are the first ones: whole warps retire together",
          ["threads 0-3 add", "threads 0-1 add", "thread 0 adds"])
    return s


def reduction_shuffle() -> Svg:
    s = Svg(1200, 580)
    c, x0, y0, dy = 78, 60, 80, 110
    s.text(600, 28, "inside a warp: __shfl_down_sync, registers only (8 of 32 lanes drawn)", 23, bold=True)
    vals = list(VALUES)
    for lane, v in enumerate(vals):
        s.text(x0 + lane * c + 34, y0 - 22, f"lane {lane}", 16, fill=MUTED)
        s.cell(x0 + lane * c, y0, c - 10, 50, str(v), BLOCK[4], BLOCK_EDGE[4], 22)
    for row, off in enumerate([4, 2, 1], start=1):
        y = y0 + row * dy
        new = [vals[i] + (vals[i + off] if i + off < 8 else 0) for i in range(8)]
        for i in range(8):
            useful = i < 8 // (2 ** row)
            s.cell(x0 + i * c, y, c - 10, 50, str(new[i]) if useful else "-", BLOCK[4] if useful else GREY,
                   BLOCK_EDGE[4] if useful else MUTED, 22, text_fill=INK if useful else MUTED)
            if i + off < 8:
                s.arrow(x0 + (i + off) * c + 34, y - dy + 52, x0 + i * c + 38, y - 3,
                        stroke=BLOCK_EDGE[4] if useful else "#b7b7b7", width=2 if useful else 1.2)
        s.text(x0 + 8 * c + 10, y + 14, f"offset {off}", 20, anchor="start", bold=True)
        s.text(x0 + 8 * c + 10, y + 40, f"v += shfl_down(v, {off})", 18, anchor="start", mono=True, fill=MUTED)
        vals = new
    s.text(600, y0 + 3 * dy + 88, "lane 0 ends with the warp's sum; no shared memory, no __syncthreads()",
           20, fill=BLOCK_EDGE[2])
    s.text(600, y0 + 3 * dy + 120, "grey: lanes still compute, but their results are not needed", 18, fill=MUTED)
    return s


# --- 06: scan --------------------------------------------------------------------------------

def _rows(s: Svg, x0: float, y0: float, c: float, rows: list[tuple[str, list[int], list[tuple[int, int]],
          set[int]]], dy: float, label_x: float) -> None:
    """Rows of an 8-element array; each row lists (src, dst) arrows from the row above."""
    for r, (label, vals, arrows, hl) in enumerate(rows):
        y = y0 + r * dy
        for i, v in enumerate(vals):
            s.cell(x0 + i * c, y, c - 12, 46, str(v), BLOCK[0] if i in hl else "white",
                   BLOCK_EDGE[0] if i in hl else MUTED, 21)
        for src, dst in arrows:
            s.arrow(x0 + src * c + (c - 12) / 2, y - dy + 48, x0 + dst * c + (c - 12) / 2 + 3, y - 3,
                    stroke=BLOCK_EDGE[1], width=2)
        s.text(label_x, y + 23, label, 19, anchor="start", bold=r == 0)


def scan_kogge_stone() -> Svg:
    s = Svg(1200, 500)
    s.text(600, 26, "Kogge-Stone: at step d, element i adds element i - d", 24, bold=True)
    v0 = VALUES
    v1 = [v0[i] + (v0[i - 1] if i >= 1 else 0) for i in range(8)]
    v2 = [v1[i] + (v1[i - 2] if i >= 2 else 0) for i in range(8)]
    v3 = [v2[i] + (v2[i - 4] if i >= 4 else 0) for i in range(8)]
    _rows(s, 50, 60, 88, [
        ("input", v0, [], set()),
        ("d = 1", v1, [(i - 1, i) for i in range(1, 8)], set(range(1, 8))),
        ("d = 2", v2, [(i - 2, i) for i in range(2, 8)], set(range(2, 8))),
        ("d = 4: inclusive scan", v3, [(i - 4, i) for i in range(4, 8)], set(range(4, 8))),
    ], 105, 760)
    s.text(600, 470, "log2(n) steps, about n log2(n) additions: short, but does more work than needed",
           20, fill=MUTED)
    return s


def scan_work_efficient() -> Svg:
    s = Svg(1200, 760)
    s.text(600, 24, "work-efficient (exclusive) scan: up-sweep, clear the root, down-sweep", 23, bold=True)
    c, x0, y0, dy, label_x = 88, 50, 60, 82, 760
    rows: list[tuple[str, list[int], set[int]]] = []
    x = list(VALUES)
    rows.append(("input", list(x), set()))
    ups = []
    for stride in (1, 2, 4):
        pairs = [(i - stride, i) for i in range(2 * stride - 1, 8, 2 * stride)]
        for left, right in pairs:
            x[right] += x[left]
        ups.append(pairs)
        rows.append((f"up, stride {stride}", list(x), {r for _, r in pairs}))
    x[7] = 0
    rows.append(("clear the root", list(x), {7}))
    downs = []
    for stride in (4, 2, 1):
        pairs = [(i - stride, i) for i in range(2 * stride - 1, 8, 2 * stride)]
        for left, right in pairs:
            x[left], x[right] = x[right], x[right] + x[left]
        downs.append(pairs)
        rows.append((f"down, stride {stride}", list(x), {i for p in pairs for i in p}))
    for r, (label, vals, hl) in enumerate(rows):
        y = y0 + r * dy
        for i, v in enumerate(vals):
            s.cell(x0 + i * c, y, c - 12, 46, str(v), BLOCK[0] if i in hl else "white",
                   BLOCK_EDGE[0] if i in hl else MUTED, 21)
        s.text(label_x, y + 23, label, 19, anchor="start", bold=label in ("input", "clear the root"))

    def centre(i: int) -> float:
        return x0 + i * c + (c - 12) / 2

    for step, pairs in enumerate(ups, start=1):
        y = y0 + step * dy
        for left, right in pairs:
            s.arrow(centre(left), y - dy + 48, centre(right) - 3, y - 3, stroke=BLOCK_EDGE[1])
    for step, pairs in enumerate(downs, start=5):
        y = y0 + step * dy
        for left, right in pairs:
            s.arrow(centre(left) + 4, y - dy + 48, centre(right) - 3, y - 3, stroke=BLOCK_EDGE[1])
            s.arrow(centre(right) - 4, y - dy + 48, centre(left) + 3, y - 3, stroke=BLOCK_EDGE[3], dash="5 4")
    s.text(600, 712, "down-sweep: the left child gets the parent (dashed), the right one parent + old left",
           19, fill=MUTED)
    s.text(600, 742, "2 log2(n) steps, about 2n additions; threads sit out as the stride grows", 19, fill=MUTED)
    return s


class TileRows:
    """Twelve values in three tiles of four, drawn as rows of cells (the multi-block scan figures)."""

    DATA = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    CELL, X0, NOTE_X = 62, 100, 900

    def __init__(self, title: str):
        self.s = Svg(1200, 470)
        self.s.text(600, 26, title, 23, bold=True)
        self.width = self.CELL - 8

    def left(self, i: int) -> float:
        return self.X0 + i * self.CELL + (i // 4) * 14

    def centre(self, i: int) -> float:
        return self.left(i) + self.width / 2

    def under_tile(self, b: int) -> float:
        """The x of a cell centred under tile b."""
        return (self.left(b * 4) + self.left(b * 4 + 3) + self.width) / 2 - self.width / 2

    def row(self, y: float, vals: list[int], label: str, hl: bool = False) -> None:
        for i, v in enumerate(vals):
            b = i // 4
            self.s.cell(self.left(i), y, self.width, 44, str(v), BLOCK[b] if hl else "white", BLOCK_EDGE[b], 20)
        self.label(y + 22, label)

    def label(self, y: float, text: str) -> None:
        self.s.text(self.X0 - 12, y, text, 18, anchor="end", bold=True)

    def note(self, y: float, lines: list[str]) -> None:
        for k, line in enumerate(lines):
            self.s.text(self.NOTE_X, y + k * 26, line, 18, anchor="start", fill=MUTED)

    def offsets_spread(self, b: int, x: float, y_from: float, y_to: float) -> None:
        """Dashed lines from a tile's offset at x down to each of its elements."""
        for i in range(b * 4, b * 4 + 4):
            self.s.line(x + self.width / 2, y_from, self.centre(i), y_to, BLOCK_EDGE[b], 1.2, dash="4 3")


def scan_block_sums() -> Svg:
    t = TileRows("a scan longer than one tile: sum the tiles, scan the sums, scan the tiles")
    s, data, w = t.s, t.DATA, t.width
    t.row(60, data, "in")
    sums = [sum(data[b * 4:(b + 1) * 4]) for b in range(3)]
    offs = [0, sums[0], sums[0] + sums[1]]
    for b in range(3):
        x = t.under_tile(b)
        s.cell(x, 160, w, 44, str(sums[b]), BLOCK[b], BLOCK_EDGE[b], 20)
        for i in range(b * 4, b * 4 + 4):
            s.line(t.centre(i), 106, x + w / 2, 156, BLOCK_EDGE[b], 1.2)
        s.cell(x, 250, w, 44, "+" + str(offs[b]), "white", BLOCK_EDGE[b], 20)
        s.arrow(x + w / 2, 206, x + w / 2, 246, stroke=MUTED, width=1.5)
        t.offsets_spread(b, x, 296, 356)
    t.label(182, "1.")
    t.label(272, "2.")
    t.note(170, ["1. each tile's sum", "(a reduction per block)"])
    t.note(260, ["2. exclusive scan of the sums:", "what comes before each tile"])
    final = []
    for b in range(3):
        acc = offs[b]
        for v in data[b * 4:(b + 1) * 4]:
            acc += v
            final.append(acc)
    t.row(360, final, "3.", hl=True)
    t.note(370, ["3. each tile scans itself,", "starting from its offset"])
    s.text(600, 445, "the input is read twice (steps 1 and 3), the output written once", 19, fill=MUTED)
    return s


def scan_then_add() -> Svg:
    t = TileRows("part 3: scan the tiles, scan their sums, add the offsets")
    s, data, w = t.s, t.DATA, t.width
    t.row(60, data, "in")
    local = []
    for b in range(3):
        acc = 0
        for v in data[b * 4:(b + 1) * 4]:
            acc += v
            local.append(acc)
    t.row(130, local, "1.")
    t.note(140, ["1. each tile scans itself", "and writes its sum"])
    sums = [local[b * 4 + 3] for b in range(3)]
    offs = [0, sums[0], sums[0] + sums[1]]
    for b in range(3):
        x = t.under_tile(b)
        s.arrow(t.centre(b * 4 + 3), 176, x + w / 2, 216, stroke=BLOCK_EDGE[b], width=1.2)
        s.cell(x, 220, w, 44, "+" + str(offs[b]), "white", BLOCK_EDGE[b], 20)
        t.offsets_spread(b, x, 266, 326)
    t.label(242, "2.")
    t.note(230, ["2. exclusive scan of the sums:", "what comes before each tile"])
    final = [local[i] + offs[i // 4] for i in range(len(data))]
    t.row(330, final, "3.", hl=True)
    t.note(340, ["3. each tile adds its offset", "to every element"])
    s.text(600, 445, "the output is written twice (steps 1 and 3) and read once more: 4 passes", 19, fill=MUTED)
    return s


# --- 07: transpose ---------------------------------------------------------------------------

def transpose_naive() -> Svg:
    c = 40
    s = Svg(1200, 500)
    s.text(600, 26, "naive transpose: out[x][y] = in[y][x]", 24, bold=True)
    x0, y0 = 80, 110
    for r in range(4):
        for k in range(8):
            s.cell(x0 + k * c, y0 + r * c, c, c, "", BLOCK[0] if r == 1 else "white", MUTED)
    s.rect(x0, y0, 8 * c, 4 * c, "none", INK, 3)
    s.text(x0 + 4 * c, y0 + 4 * c + 30, "in: 4 rows x 8 columns", 20)
    s.text(x0 + 4 * c, y0 + 4 * c + 62, "a warp reads along a row: coalesced", 20, fill=BLOCK_EDGE[2])
    x1 = 700
    for r in range(8):
        for k in range(4):
            s.cell(x1 + k * c, y0 - 40 + r * c, c, c, "", "#f4cccc" if k == 1 else "white", MUTED)
    s.rect(x1, y0 - 40, 4 * c, 8 * c, "none", INK, 3)
    s.text(x1 + 2 * c, y0 - 40 + 8 * c + 30, "out: 8 rows x 4 columns", 20)
    s.arrow(x0 + 8 * c + 20, y0 + 1.5 * c, x1 - 20, y0 + 60, width=3)
    s.text(990, 150, "the same warp writes", 20, anchor="middle", fill=RED)
    s.text(990, 180, "down a column: each", 20, anchor="middle", fill=RED)
    s.text(990, 210, "write lands in another", 20, anchor="middle", fill=RED)
    s.text(990, 240, "row, far apart in memory", 20, anchor="middle", fill=RED)
    s.text(600, 475, "one of the two sides is always strided: reads or writes, pick one to suffer", 20,
           fill=MUTED)
    return s


def transpose_tiled() -> Svg:
    c = 34
    s = Svg(1200, 460)
    s.text(600, 26, "tiled transpose: turn the tile around in shared memory", 24, bold=True)
    xs = [60, 470, 860]
    titles = ["in: tile at (bx, by)", "shared tile", "out: tile at (by, bx)"]
    for p, x in enumerate(xs):
        for r in range(8):
            for k in range(8):
                hl = (r == 2) if p == 0 else (k == 2) if p == 1 else (r == 2)
                s.rect(x + k * c, 70 + r * c, c, c, BLOCK[1] if hl else (BLOCK[3] if p == 1 else "white"),
                       MUTED, 0.8)
        s.rect(x, 70, 8 * c, 8 * c, "none", INK, 3)
        s.text(x + 4 * c, 70 + 8 * c + 28, titles[p], 20, bold=True)
    s.arrow(xs[0] + 8 * c + 10, 70 + 2.5 * c, xs[1] - 10, 70 + 2.5 * c, width=3)
    s.arrow(xs[1] + 8 * c + 10, 70 + 4 * c, xs[2] - 10, 70 + 2.5 * c, width=3)
    s.text(xs[0] + 4 * c, 390, "1. read rows: coalesced", 20, fill=BLOCK_EDGE[2])
    s.text(xs[1] + 4 * c, 390, "2. barrier, then read a column", 20)
    s.text(xs[1] + 4 * c, 420, "(shared memory: no coalescing rules)", 18, fill=MUTED)
    s.text(xs[2] + 4 * c, 390, "3. write rows: coalesced", 20, fill=BLOCK_EDGE[2])
    return s


def transpose_banks() -> Svg:
    c = 44
    s = Svg(1200, 540)
    s.text(600, 26, "shared memory banks (8 drawn; the hardware has 32): bank = word index mod 32", 22,
           bold=True)

    def tile(x0: float, width: int, title: str, note: str, good: bool) -> None:
        for r in range(8):
            for k in range(width):
                bank = (r * width + k) % 8
                pad = k >= 8
                s.cell(x0 + k * c, 70 + r * c, c, c, "" if pad else str(bank), GREY if pad else BLOCK[bank % 6],
                       MUTED, 17, text_fill=MUTED if pad else INK)
        for r in range(8):
            s.rect(x0 + 3 * c + 3, 70 + r * c + 3, c - 6, c - 6, "none", RED, 3)
        s.text(x0 + width * c / 2, 70 + 8 * c + 30, title, 21, bold=True)
        s.text(x0 + width * c / 2, 70 + 8 * c + 62, note, 19, fill=BLOCK_EDGE[2] if good else RED)

    tile(60, 8, "tile[8][8]", "column 3: bank 3 eight times: 8-way conflict", False)
    tile(640, 9, "tile[8][8 + 1]", "column 3: eight different banks", True)
    s.text(600, 520, "numbers: the bank of each word; the red column is what one warp reads at once", 18,
           fill=MUTED)
    return s


# --- 08: streams -----------------------------------------------------------------------------

def streams_timeline() -> Svg:
    s = Svg(1200, 500)
    unit = 62
    x0 = 250
    lanes = ["H2D copy engine", "SMs (window + FFT)", "D2H copy engine"]
    copy, compute, chunks = 6.0, 1.0, 4   # whole-dataset times, arbitrary units: copies dominate

    def lane_labels(y0: float) -> None:
        for k, name in enumerate(lanes):
            s.text(x0 - 15, y0 + k * 46 + 18, name, 18, anchor="end")

    def bar(y0: float, lane: int, start: float, length: float, label: str, k: int) -> None:
        s.cell(x0 + start * unit, y0 + lane * 46, length * unit, 36, label, BLOCK[k], BLOCK_EDGE[k], 15)

    def finish(y0: float, t: float, colour: str) -> None:
        s.line(x0 + t * unit, y0 - 10, x0 + t * unit, y0 + 140, colour, 2, dash="6 4")
        s.text(x0 + t * unit + 8, y0 + 150, f"{t:g}", 18, anchor="start", fill=colour)

    s.text(40, 40, "one chunk after another (or one stream): one worker busy at a time", 21,
           anchor="start", bold=True)
    y = 60
    lane_labels(y)
    bar(y, 0, 0, copy, "copy in", 0)
    bar(y, 1, copy, compute, "w+fft", 0)
    bar(y, 2, copy + compute, copy, "copy out", 0)
    finish(y, 2 * copy + compute, RED)
    s.text(40, 250, f"{chunks} chunks spread over streams: the three workers overlap", 21, anchor="start",
           bold=True)
    y = 270
    lane_labels(y)
    cin, ccomp = copy / chunks, compute / chunks * 2   # a chunk's kernels start later than its copy ends
    out_free = 0.0
    for k in range(chunks):
        in_end = (k + 1) * cin
        bar(y, 0, k * cin, cin, f"in {k}", k)
        bar(y, 1, in_end, ccomp, f"f{k}", k)
        start = max(in_end + ccomp, out_free)
        bar(y, 2, start, cin, f"out {k}", k)
        out_free = start + cin
    finish(y, out_free, BLOCK_EDGE[2])
    s.text(600, 450, "the total approaches the slowest worker alone (a PCIe copy of everything),",
           19, fill=MUTED)
    s.text(600, 478, "plus one chunk to fill the pipe and one to drain it (times in arbitrary units)", 19,
           fill=MUTED)
    return s


def streams_pinned() -> Svg:
    s = Svg(1200, 420)
    s.text(40, 40, "pageable host memory (malloc, new, std::vector)", 22, anchor="start", bold=True)
    s.box(40, 70, 260, 90, ["your buffer", "pageable"], fill=BLOCK[1], stroke=BLOCK_EDGE[1])
    s.box(420, 70, 260, 90, ["staging buffer", "pinned, by the driver"], fill=BLOCK[3], stroke=BLOCK_EDGE[3])
    s.box(860, 70, 280, 90, ["device memory"], fill=BLOCK[0], stroke=BLOCK_EDGE[0])
    s.arrow(305, 115, 415, 115, width=3)
    s.text(360, 180, "CPU copy", 18, fill=MUTED)
    s.arrow(685, 115, 855, 115, width=3)
    s.text(770, 180, "DMA", 18, fill=MUTED)
    s.text(40, 240, "pinned host memory (cudaMallocHost / cudaHostAlloc)", 22, anchor="start", bold=True)
    s.box(40, 270, 260, 90, ["your buffer", "pinned (page-locked)"], fill=BLOCK[3], stroke=BLOCK_EDGE[3])
    s.box(860, 270, 280, 90, ["device memory"], fill=BLOCK[0], stroke=BLOCK_EDGE[0])
    s.arrow(305, 315, 855, 315, width=3)
    s.text(580, 340, "DMA straight from your buffer: can be asynchronous", 18, fill=BLOCK_EDGE[2])
    s.text(600, 400, "cudaMemcpyAsync from pageable memory is staged, and does not overlap as you expect", 18,
           fill=RED)
    return s


# --- 09: n-body ------------------------------------------------------------------------------

def nbody_tiles() -> Svg:
    c, n, p = 30, 12, 4
    s = Svg(1200, 520)
    x0, y0 = 100, 80
    s.text(40, 40, "all pairs: row i sums the pull of every body j", 22, bold=True, anchor="start")
    for i in range(n):
        for j in range(n):
            tile = j // p
            row_block = i // p
            fill = BLOCK[tile] if row_block == 1 else "white"
            s.rect(x0 + j * c, y0 + i * c, c, c, fill, MUTED, 0.7)
    s.rect(x0, y0 + p * c, n * c, p * c, "none", RED, 4)
    s.rect(x0, y0, n * c, n * c, "none", INK, 3)
    s.text(x0 - 40, y0 + n * c / 2, "body i", 20, bold=True)
    s.text(x0 + n * c / 2, y0 + n * c + 30, "body j", 20, bold=True)
    for t in range(3):
        s.text(x0 + t * p * c + p * c / 2, y0 + n * c + 62, f"tile {t}", 18, fill=BLOCK_EDGE[t])
    tx = 560
    s.text(tx, 90, "one block = p threads = p bodies i (red rows)", 21, anchor="start", bold=True)
    s.text(tx, 140, "for each tile of p bodies j:", 20, anchor="start")
    s.text(tx, 175, "1. each thread loads one body j into shared memory", 20, anchor="start")
    s.text(tx, 210, "2. barrier", 20, anchor="start")
    s.text(tx, 245, "3. each thread adds the pull of all p of them", 20, anchor="start")
    s.text(tx, 280, "4. barrier, next tile", 20, anchor="start")
    s.text(tx, 340, "global reads per body j: once per block, not once per thread", 20, anchor="start",
           fill=BLOCK_EDGE[2])
    s.text(tx, 375, "about 20 flops per pair, 16 bytes per body:", 20, anchor="start")
    s.text(tx, 405, "compute-bound", 20, anchor="start")
    s.text(tx, 455, "Nyland, Harris and Prins, 'Fast N-Body Simulation", 17, anchor="start", fill=MUTED)
    s.text(tx, 479, "with CUDA', GPU Gems 3, ch. 31 (2007)", 17, anchor="start", fill=MUTED)
    return s


def nbody_leapfrog() -> Svg:
    s = Svg(1200, 430)
    s.text(600, 28, "one kick-drift-kick leapfrog step of length dt", 24, bold=True)
    steps = [("half kick", "v += (dt/2) a", "a at the current x"),
             ("drift", "x += dt v", "with the kicked v"),
             ("forces", "a = a(x)", "at the new x"),
             ("half kick", "v += (dt/2) a", "with the NEW a")]
    w, gap, y = 250, 40, 80
    for k, (title, formula, note) in enumerate(steps):
        x = 20 + k * (w + gap)
        s.rect(x, y, w, 130, BLOCK[k], BLOCK_EDGE[k], 2, rx=10)
        s.text(x + w / 2, y + 30, title, 24, bold=True)
        s.text(x + w / 2, y + 70, formula, 21, mono=True)
        s.text(x + w / 2, y + 105, note, 18, fill=MUTED)
        if k:
            s.arrow(x - gap + 4, y + 65, x - 4, y + 65)
    kernels = [(0, 2, "leapfrog_kick_drift_kernel"), (2, 3, "launch_nbody_tiled"), (3, 4, "leapfrog_kick_kernel")]
    for first, last, name in kernels:
        x1 = 20 + first * (w + gap)
        x2 = 20 + last * (w + gap) - gap
        s.line(x1 + 5, 235, x2 - 5, 235, INK, 2)
        s.line(x1 + 5, 228, x1 + 5, 242, INK, 2)
        s.line(x2 - 5, 228, x2 - 5, 242, INK, 2)
        s.text((x1 + x2) / 2, 262, name, 19, mono=True)
    s.text(600, 320, "one force evaluation per step, as for Euler; the new a is kept for the next step", 20)
    s.text(600, 355, "second order, time-reversible, symplectic: the energy error stays bounded", 20,
           fill=BLOCK_EDGE[2])
    s.text(600, 400, "Source: Hairer, Lubich and Wanner, Geometric Numerical Integration, 2nd ed., Springer 2006",
           16, fill=MUTED)
    return s



# --- 10: convolution -------------------------------------------------------------------------

def convolution_halo_tile() -> Svg:
    w, h, c, t, r = 12, 9, 38, 4, 1
    s = Svg(1200, 480)
    x0, y0 = 80, 60
    for y in range(-r, h + r):
        for x in range(-r, w + r):
            if 0 <= x < w and 0 <= y < h:
                s.rect(x0 + x * c, y0 + y * c, c, c, "white", "#b7b7b7", 1)
    for ty in range(0, h, t):
        for tx in range(0, w, t):
            s.rect(x0 + tx * c, y0 + ty * c, min(t, w - tx) * c, min(t, h - ty) * c, "none", "#9aa5b1", 1.5)
    s.rect(x0, y0, w * c, h * c, "none", INK, 4)

    def tile(tx: int, ty: int, k: int) -> None:
        for y in range(ty - r, ty + t + r):
            for x in range(tx - r, tx + t + r):
                inside = 0 <= x < w and 0 <= y < h
                own = tx <= x < tx + t and ty <= y < ty + t
                if own and inside:
                    s.cell(x0 + x * c + 3, y0 + y * c + 3, c - 6, c - 6, "", BLOCK[k], BLOCK_EDGE[k])
                elif inside:
                    s.cell(x0 + x * c + 3, y0 + y * c + 3, c - 6, c - 6, "h", "white", BLOCK_EDGE[k], 16,
                           dash="5 4", text_fill=BLOCK_EDGE[k])
                else:
                    s.cell(x0 + x * c + 3, y0 + y * c + 3, c - 6, c - 6, "0", GREY, MUTED, 16, dash="5 4",
                           text_fill=RED)
        s.rect(x0 + (tx - r) * c, y0 + (ty - r) * c, (t + 2 * r) * c, (t + 2 * r) * c, "none", BLOCK_EDGE[k], 3)

    tile(4, 4, 0)
    tile(8, 0, 2)
    tx = 620
    s.text(tx, 70, "a block's input: its tile and a halo of r", 22, anchor="start", bold=True)
    s.text(tx, 110, "drawn: 4 x 4 outputs per block, radius 1", 20, anchor="start")
    s.text(tx, 140, "input tile (4 + 2) x (4 + 2) = 36 pixels", 20, anchor="start")
    s.text(tx, 180, "h: halo, outputs of the neighbouring tiles,", 20, anchor="start", fill=BLOCK_EDGE[0])
    s.text(tx, 208, "loaded again (mostly from the L2 cache)", 20, anchor="start", fill=BLOCK_EDGE[0])
    s.text(tx, 248, "0: outside the picture, stored as 0", 20, anchor="start", fill=RED)
    s.text(tx, 276, "(the rule of zero padding)", 20, anchor="start", fill=RED)
    s.text(tx, 330, "the lab: tiles of 32 x 32 outputs,", 20, anchor="start")
    s.text(tx, 358, "(32 + 2r) x (32 + 2r) pixels in shared memory:", 20, anchor="start")
    s.text(tx, 386, "36 x 36 = 1296 loads for 1024 outputs at r = 2", 20, anchor="start")
    s.text(tx, 430, "load, __syncthreads(), then compute", 20, anchor="start", bold=True)
    return s


def convolution_register_rows() -> Svg:
    outputs, r, c = 4, 1, 46
    s = Svg(1200, 470)
    x0, y0 = 90, 70
    rows = outputs + 2 * r
    s.text(x0 + 1.5 * c, 30, "tile rows", 20, fill=MUTED)
    for row in range(rows):
        for dx in range(2 * r + 1):
            s.cell(x0 + dx * c, y0 + row * 60, c - 4, 44, "", BLOCK[1] if dx == r else "white", BLOCK_EDGE[1])
        s.text(x0 - 40, y0 + row * 60 + 22, str(row), 20, fill=MUTED)
    ox = 560
    s.text(ox + 60, 30, "one thread's outputs", 20, fill=MUTED)
    for k in range(outputs):
        y = y0 + (k + r) * 60
        s.cell(ox, y, 120, 44, f"sum[{k}]", BLOCK[0], BLOCK_EDGE[0], 20, mono=True)
        for fy in range(2 * r + 1):
            row = k + fy
            s.line(x0 + (2 * r + 1) * c, y0 + row * 60 + 22, ox - 4, y + 22, stroke=BLOCK_EDGE[k % 6], width=1.6)
    tx = 760
    s.text(tx, 90, "tile row i meets filter row i - s", 20, anchor="start", bold=True)
    s.text(tx, 120, "for output s (when 0 <= i - s <= 2r)", 20, anchor="start")
    s.text(tx, 170, "load the row's 2r + 1 pixels into", 20, anchor="start")
    s.text(tx, 200, "registers once; apply them to every", 20, anchor="start")
    s.text(tx, 230, "output that needs them", 20, anchor="start")
    s.text(tx, 280, "drawn: 4 outputs, r = 1: 18 loads, not 36", 20, anchor="start", fill=BLOCK_EDGE[2])
    s.text(tx, 310, "the lab: 8 outputs, r = 2: 60 loads, not 200", 20, anchor="start", fill=BLOCK_EDGE[2])
    s.text(tx, 360, "sum[] must stay in registers: index it", 20, anchor="start", fill=MUTED)
    s.text(tx, 388, "only with constants (unrolled loops)", 20, anchor="start", fill=MUTED)
    return s


# --- 11: histogram ---------------------------------------------------------------------------

def histogram_privatized() -> Svg:
    s = Svg(1200, 500)
    data = [[2, 0, 2, 3, 2, 1, 2, 2], [1, 1, 3, 0, 1, 2, 1, 3], [0, 2, 0, 0, 3, 0, 2, 0]]
    c, bw = 40, 52
    for k, values in enumerate(data):
        y = 40 + k * 150
        s.text(30, y + 20, f"block {k}", 20, anchor="start", bold=True, fill=BLOCK_EDGE[k])
        for i, v in enumerate(values):
            s.cell(130 + i * c, y, c - 4, 40, str(v), BLOCK[k], BLOCK_EDGE[k], 20)
        counts = [values.count(b) for b in range(4)]
        for b, n in enumerate(counts):
            s.cell(520 + b * bw, y, bw - 6, 40, str(n), "white", BLOCK_EDGE[k], 20, bold=True)
            s.text(520 + b * bw + 23, y + 58, f"bin {b}", 15, fill=MUTED)
        s.arrow(130 + 8 * c + 4, y + 20, 516, y + 20, stroke=BLOCK_EDGE[k])
        s.text(440, y - 10, "shared atomics", 15, fill=MUTED)
        s.arrow(520 + 4 * bw, y + 20, 890, 230, stroke=BLOCK_EDGE[k], dash="6 4")
    totals = [sum(v.count(b) for v in data) for b in range(4)]
    for b, n in enumerate(totals):
        s.cell(900 + b * 62, 210, 56, 44, str(n), GREY, INK, 22, bold=True)
        s.text(900 + b * 62 + 28, 272, f"bin {b}", 16, fill=MUTED)
    s.text(1020, 180, "d_bins (global)", 20, bold=True)
    s.text(1020, 320, "one global atomic per", 18)
    s.text(1020, 346, "counter and block", 18)
    s.text(600, 480, "zero the block's counters, __syncthreads(), count, __syncthreads(), add up", 20, bold=True)
    return s


def histogram_warp_aggregation() -> Svg:
    s = Svg(1200, 420)
    values = [9, 4, 9, 9, 4, 7, 9, 4]
    colours = {9: 0, 4: 1, 7: 2}
    c, x0, y0 = 110, 90, 90
    s.text(600, 30, "one warp, 8 of its 32 lanes drawn: each lane holds a byte", 22, bold=True)
    leaders = {}
    for lane, v in enumerate(values):
        k = colours[v]
        leaders.setdefault(v, lane)
        s.text(x0 + lane * c + 45, y0 - 20, f"lane {lane}", 17, fill=MUTED)
        s.cell(x0 + lane * c, y0, 90, 50, str(v), BLOCK[k], BLOCK_EDGE[k], 24, bold=leaders[v] == lane)
        mask = "".join("1" if values[j] == v else "0" for j in range(8))[::-1]
        s.text(x0 + lane * c + 45, y0 + 80, mask, 16, mono=True, fill=BLOCK_EDGE[k])
    s.text(x0 - 10, y0 + 80, "peers", 16, anchor="end", fill=MUTED)
    for v, lane in leaders.items():
        k = colours[v]
        n = values.count(v)
        s.arrow(x0 + lane * c + 45, y0 + 100, x0 + lane * c + 45, y0 + 190, stroke=BLOCK_EDGE[k])
        s.cell(x0 + lane * c - 10, y0 + 195, 110, 46, f"+{n} to {v}", "white", BLOCK_EDGE[k], 20, bold=True)
    s.text(600, y0 + 285, "peers = __match_any_sync(mask, byte): the lanes holding the same byte", 19, mono=False)
    s.text(600, y0 + 315, "the lowest of them (__ffs(peers) - 1) adds __popc(peers): 3 atomics, not 8", 19)
    return s

# --- 12: libraries ---------------------------------------------------------------------------

def libraries_batch_steps() -> Svg:
    s = Svg(1200, 430)
    steps = [("copy in", "copy engine", 3), ("R2C", "cuFFT", 0), ("filter", "your kernel", 1),
             ("C2R", "cuFFT", 0), ("mix", "cuBLAS", 2), ("RMS", "CUB", 4), ("divide", "Thrust", 4),
             ("copy out", "copy engine", 3)]
    w, gap, y = 128, 18, 70
    s.text(40, 30, "one batch, every step queued on its stream: each starts when the one before ends", 21,
           anchor="start", bold=True)
    for k, (what, who, colour) in enumerate(steps):
        x = 24 + k * (w + gap)
        s.box(x, y, w, 90, [what, who], fill=BLOCK[colour], stroke=BLOCK_EDGE[colour], size=21)
        if k:
            s.arrow(x - gap + 2, y + 45, x - 2, y + 45)
    # Each of the stream's buffers, from the step that first writes it to the last that reads it.
    buffers = [("frames: batch x C x n floats", 0, 4), ("spectra: batch x C x (n/2 + 1) complex", 1, 3),
               ("beams: batch x M x n floats", 4, 7), ("RMS: batch x M floats", 5, 7)]
    for row, (name, first, last) in enumerate(buffers):
        x = 24 + first * (w + gap)
        s.cell(x, 195 + row * 48, (last - first) * (w + gap) + w, 36, name, GREY, MUTED, 18)
    s.text(600, 410, "a stream owns its buffers, plans, handle and scratch: the next batch on it waits by itself",
           19, fill=MUTED)
    return s


def libraries_column_major() -> Svg:
    s = Svg(1200, 400)
    c = 64
    s.text(40, 34, "a row-major 2 x 3 matrix P", 21, anchor="start", bold=True)
    for r in range(2):
        for k in range(3):
            s.cell(40 + k * c, 60 + r * c, c, c, str(1 + 3 * r + k), BLOCK[r], BLOCK_EDGE[r], 24)
    s.text(532, 34, "the same memory", 21, bold=True)
    for i in range(6):
        s.cell(340 + i * c, 92, c, c, str(1 + i), BLOCK[i // 3], BLOCK_EDGE[i // 3], 24)
    s.text(532, 190, "row after row: rows of length 3", 18, fill=MUTED)
    s.text(914, 34, "read column-major", 21, bold=True)
    for k in range(2):
        for r in range(3):
            s.cell(850 + k * c, 60 + r * c, c, c, str(1 + 3 * k + r), BLOCK[k], BLOCK_EDGE[k], 24)
    s.text(914, 275, "leading dimension 3: P transposed", 18, fill=MUTED)
    s.arrow(245, 124, 330, 124)
    s.arrow(740, 124, 840, 124)
    s.text(600, 330, "nothing moves: to cuBLAS every row-major matrix is its transpose,", 20)
    s.text(600, 362, "so a row-major C = A B is asked for as the column-major product of the transposes, B^T A^T",
           20, fill=MUTED)
    return s


DIAGRAMS = {
    "00-lab-cycle": course_lab_cycle,
    "00-grader-pipeline": course_grader_pipeline,
    "00-gpu-overview": course_gpu_overview,
    "00-thread-hierarchy": course_thread_hierarchy,
    "01-grid-over-data": vector_grid_over_data,
    "01-host-device": vector_host_device,
    "02-grid-2d": picture_grid_2d,
    "02-row-major": picture_row_major,
    "02-box-blur": picture_box_blur,
    "03-matmul-thread": matmul_thread,
    "03-coalescing": matmul_coalescing,
    "04-tiles-along-k": tiled_tiles_along_k,
    "04-edge-tiles": tiled_edge_tiles,
    "04-register-tile": tiled_register_tile,
    "05-interleaved": reduction_interleaved,
    "05-sequential": reduction_sequential,
    "05-shuffle": reduction_shuffle,
    "06-kogge-stone": scan_kogge_stone,
    "06-work-efficient": scan_work_efficient,
    "06-block-sums": scan_block_sums,
    "06-scan-then-add": scan_then_add,
    "07-naive": transpose_naive,
    "07-tiled": transpose_tiled,
    "07-banks": transpose_banks,
    "08-timeline": streams_timeline,
    "08-pinned": streams_pinned,
    "09-tiles": nbody_tiles,
    "09-leapfrog": nbody_leapfrog,
    "10-halo-tile": convolution_halo_tile,
    "10-register-rows": convolution_register_rows,
    "11-privatized": histogram_privatized,
    "11-warp-aggregation": histogram_warp_aggregation,
    "12-batch-steps": libraries_batch_steps,
    "12-column-major": libraries_column_major,
}


def rendered() -> dict[str, str]:
    """Every diagram's file name and SVG text."""
    return {f"{name}.svg": draw().render() for name, draw in DIAGRAMS.items()}


def main(argv: list[str]) -> int:
    for name, text in rendered().items():
        path = HERE / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote slides/img/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
