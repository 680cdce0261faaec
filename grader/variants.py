"""Wrong, right and slow variants: each made from the reference by one text replacement (hidden.toml), or from a
whole file kept beside it (`source`, e.g. solutions/04-tiled-matmul/journey/: a different kernel, not an edit).

A variant's `replace` text is looked for in the reference exactly first. Where it no longer
occurs as written, because the instructor has since reflowed a line or added a `//` comment
between its lines, it is looked for again ignoring whitespace and `//` comments between its
code tokens, and the span it covers in the reference is replaced. Either way it must be found
exactly once: a real code change that removes the text is an error naming the lab, the variant
and the text, which `grader configure`, `grader skeleton --check` and `grader release` report.
"""
from __future__ import annotations

import re
from pathlib import Path

from grader.config import ConfigError, LabConfig, VariantSpec

# Whitespace, or a // comment to the end of its line: what may differ between a replace text's tokens.
_FILLER = r"(?:\s|//[^\n]*+)"
# Before a comment of the replace text's own: whitespace, and whole comment lines the reference added.
_FILLER_BEFORE_COMMENT = r"(?:\s|//[^\n]*\n)*?"
# Characters that make one operator when written together (`++`, `<<`, `->`): no space may come between
# two of them where the replace text has none, or `a+ +b` would stand for `a++b`.
_OPERATOR = set("+-*/%<>=!&|^:.~?")
# A // comment (kept: a replace text often names its line by the comment on it), a word, or one character.
_TOKEN = re.compile(r"//[^\n]*|\w+|\S")
# hidden.toml's tables of variants: wrong on purpose, correct alternatives, and slow on purpose (profile --check).
VARIANT_TABLES = ("wrong", "right", "slow")


def _token_pattern(token: str) -> str:
    if token.startswith("//"):
        words = token[2:].split()
        return "//[ \t]*" + "[ \t]+".join(map(re.escape, words))
    return re.escape(token)


def _loose_pattern(replace: str) -> re.Pattern[str] | None:
    """A pattern for `replace` that allows other whitespace, and other // comments, between its tokens."""
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(replace)]
    if not tokens:
        return None
    parts = []
    leading = replace[:tokens[0][1]]
    if "\n" in leading:
        parts.append(r"\n[ \t]*")  # it started on a line of its own: take the indentation with it
    elif leading:
        parts.append(r"[ \t]*")
    elif _is_word(tokens[0][0][0]):
        parts.append(r"(?<!\w)")
    for k, (token, start, _) in enumerate(tokens):
        if k:
            before, gap = tokens[k - 1][0], replace[tokens[k - 1][2]:start]
            words = _is_word(before[-1]) and _is_word(token[0])
            operators = before[-1] in _OPERATOR and token[0] in _OPERATOR
            if token.startswith("//"):
                parts.append(_FILLER_BEFORE_COMMENT if "\n" in gap else r"[ \t]*")
            elif gap:
                parts.append(_FILLER + ("++" if words or operators else "*+"))
            elif not operators:
                parts.append(_FILLER + "*+")
        parts.append(_token_pattern(token))
    trailing = replace[tokens[-1][2]:]
    if "\n" in trailing:
        parts.append(r"[ \t]*(?://[^\n]*)?\n")
    elif trailing:
        parts.append(r"[ \t]*")
    elif _is_word(tokens[-1][0][-1]):
        parts.append(r"(?!\w)")
    return re.compile("".join(parts))


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def spans(text: str, replace: str) -> tuple[list[tuple[int, int]], bool]:
    """Where `replace` occurs in `text`: its spans, and whether they were found only loosely."""
    exact, start = [], text.find(replace) if replace else -1
    while start >= 0:
        exact.append((start, start + len(replace)))
        start = text.find(replace, start + len(replace))
    if exact:
        return exact, False
    pattern = _loose_pattern(replace)
    if pattern is None:
        return [], True
    return [m.span() for m in pattern.finditer(text)], True


def apply(text: str, replace: str, by: str, where: str, file: str) -> str:
    """`text` (of `file`) with its one occurrence of `replace` replaced by `by`; ConfigError naming `where`
    and `file` otherwise."""
    found, loose = spans(text, replace)
    if len(found) != 1:
        how = ", even ignoring whitespace and // comments," if loose else ""
        raise ConfigError(f"{where}: the text to replace occurs {len(found)} times in {file}{how} (it must "
                          f"occur exactly once): {replace!r}")
    start, end = found[0]
    return text[:start] + by + text[end:]


def with_source(text: str, source: str, start: str, where: str, file: str) -> str:
    """`text` (of `file`) with a whole other file's text (`source`) in place of its end, from the start of the
    line that holds its one occurrence of `start`, or in place of all of it where `start` is empty."""
    if not start:
        return source
    found, loose = spans(text, start)
    if len(found) != 1:
        how = ", even ignoring whitespace and // comments," if loose else ""
        raise ConfigError(f"{where}: the 'from' text occurs {len(found)} times in {file}{how} (it must occur "
                          f"exactly once): {start!r}")
    line_start = text.rfind("\n", 0, found[0][0]) + 1
    return text[:line_start] + source


def variant_text(config: LabConfig, variant: VariantSpec, reference: str, where: str) -> str:
    """The text of `variant`'s file, made from the reference's text of it."""
    file = f"solutions/{config.name}/{variant.file}"
    if variant.source:
        path = config.solution_dir / variant.source
        if not path.is_file():
            raise ConfigError(f"{where}: its source, solutions/{config.name}/{variant.source}, is missing")
        reference = with_source(reference, path.read_text(), variant.source_from, where, file)
        file = f"{file} (with solutions/{config.name}/{variant.source})"
        if not variant.replace:
            return reference
    return apply(reference, variant.replace, variant.by, where, file)


def sources(config: LabConfig, table: str) -> dict[str, dict[str, str]]:
    """The files of each variant in hidden.toml's [[wrong]], [[right]] or [[slow]] (`table`): name -> {file name:
    text}."""
    made = {}
    for variant in getattr(config, table):
        files = {name: (config.solution_dir / name).read_text() for name in config.student_files}
        where = f"solutions/{config.name}/hidden.toml [[{table}]] '{variant.name}'"
        files[variant.file] = variant_text(config, variant, files[variant.file], where)
        made[variant.name] = files
    return made


def source_files(config: LabConfig) -> list[Path]:
    """The files of solutions/<lab>/ that variants take whole (`source`): CMake configures again when one changes."""
    if config.solution_dir is None:
        return []
    named = {variant.source for table in VARIANT_TABLES for variant in getattr(config, table) if variant.source}
    return [config.solution_dir / name for name in sorted(named)]


def whole_file_variants(config: LabConfig) -> list[str]:
    """The wrong and right variants made from a whole file (`source`), each as "<table>-<name>", the middle of
    its build targets' names (<lab>-<table>-<name>-tests)."""
    return [f"{table}-{variant.name}" for table in ("wrong", "right") for variant in getattr(config, table)
            if variant.source]


def problems(config: LabConfig) -> list[str]:
    """One line for each wrong, right or slow variant of the lab that no longer applies exactly once."""
    if config.solution_dir is None:
        return []
    found = []
    for table in VARIANT_TABLES:
        for variant in getattr(config, table):
            path = config.solution_dir / variant.file
            where = f"{config.name}: solutions/{config.name}/hidden.toml [[{table}]] '{variant.name}'"
            if not path.is_file():
                found.append(f"{where}: solutions/{config.name}/{variant.file} is missing")
                continue
            try:
                variant_text(config, variant, path.read_text(), where)
            except ConfigError as error:
                found.append(str(error))
    return found


def broken_message(broken: list[str]) -> str:
    """What `skeleton --check` and the release say about variants that no longer apply."""
    return (f"{len(broken)} wrong, right or slow variant(s) no longer apply to their reference; change their `replace` "
            f"text in hidden.toml:\n  " + "\n  ".join(broken))
