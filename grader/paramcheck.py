"""Every parameter a lab's tests read by name is declared in its config, checked without a GPU.

Tests read sizes and tolerances with `kit::param_int("name")` and its kin (kit/params.hpp), or
through a helper that passes its key on (`kit::picture_sizes("line_sizes")`, a lab's own
`shapes("square_shapes")`). A misspelt name compiles, configures and passes every CPU test, and
fails only when a GPU runs the test. So `grader configure` scans the lab's test sources
(labs/<lab>/tests/, solutions/<lab>/tests/) for such reads with a string literal for the name,
and stops with file:line and the name when neither lab.toml nor hidden.toml declares it.

The student release has no hidden.toml, so a parameter that only hidden.toml declares may be
read in a public source (labs/<lab>/tests/) only where no public test can run the read: under
`#ifdef KIT_HIDDEN_TESTS`, or in a helper that only such code and hidden tests call (lab 07's
check_barrier); a public test reaching it is an error. A name that a file also tests with
`kit::has_param("name")` is optional.
"""
from __future__ import annotations

import bisect
import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from grader.config import ConfigError, LabConfig

# kit/params.hpp's readers: function name -> which arguments are parameter names.
READERS = {name: (0,) for name in ("param_int", "param_double", "param_string", "param_ints", "param_int_list")}
SOURCE_SUFFIXES = {".cu", ".cpp", ".cc", ".cuh", ".hpp", ".h"}
# A comment, or a string or character literal (kept, so that a // inside one is no comment).
_LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.DOTALL)
_DEFINITION = re.compile(r"\b(\w+)\s*\(([^()]*)\)\s*(?:const\s*)?(?:noexcept\s*)?\{")
_STRING_PARAMETER = re.compile(r"^\s*(?:const\s+)?std::string\s*(?:const\s*)?&?\s*(\w+)\s*(?:=.*)?$", re.DOTALL)
_LITERAL = re.compile(r'^\s*"((?:\\.|[^"\\])*)"\s*$')
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)(.*)$")
_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"}
_HIDDEN_MACRO = re.compile(r"^\s*(?:defined\s*\(?\s*)?KIT_HIDDEN_TESTS\s*\)?\s*$")


@dataclass(frozen=True)
class ParamRead:
    source: str  # relative to the repository
    line: int  # 1-based
    call: str  # e.g. kit::param_int("small_n")
    name: str
    hidden_only_block: bool  # inside #ifdef KIT_HIDDEN_TESTS
    public_reach: bool  # in a public source, where a public test can run it (not a helper only hidden tests call)


def _without_comments(text: str) -> str:
    """`text` with every comment blanked out (line breaks kept, so line numbers stay right)."""
    def blank(match: re.Match[str]) -> str:
        lexeme = match.group()
        return lexeme if lexeme[0] in "\"'" else re.sub(r"[^\n]", " ", lexeme)
    return _LEXEME.sub(blank, text)


def _closing(text: str, start: int, open_char: str, close_char: str) -> int:
    """The index of the bracket that closes the one at `start` (-1 if none), skipping literals."""
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char in "\"'":
            literal = _LEXEME.match(text, i)
            i = literal.end() if literal else i + 1
            continue
        if char == open_char:
            depth += 1
        elif char == close_char:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _split_arguments(text: str) -> list[str]:
    """A call's argument text split at its top-level commas."""
    arguments, depth, current, i = [], 0, [], 0
    while i < len(text):
        char = text[i]
        if char in "\"'":
            literal = _LEXEME.match(text, i)
            end = literal.end() if literal else i + 1
            current.append(text[i:end])
            i = end
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            arguments.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    arguments.append("".join(current))
    return arguments


def _wrappers(texts: list[str], readers: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """`readers` and every function in `texts` that passes one of its std::string parameters on to a reader."""
    readers = dict(readers)
    changed = True
    while changed:
        changed = False
        for text in texts:
            for match in _DEFINITION.finditer(text):
                name = match.group(1)
                if name in readers or name in _KEYWORDS:
                    continue
                keys = {}
                for index, parameter in enumerate(_split_arguments(match.group(2))):
                    if found := _STRING_PARAMETER.match(parameter):
                        keys[found.group(1)] = index
                if not keys:
                    continue
                end = _closing(text, match.end() - 1, "{", "}")
                body = text[match.end():end if end >= 0 else len(text)]
                passed = set()
                for _, _, argument, _, _ in _calls(body, readers):
                    if argument.strip() in keys:
                        passed.add(keys[argument.strip()])
                if passed:
                    readers[name] = tuple(sorted(passed))
                    changed = True
    return readers


def _calls(text: str, readers: dict[str, tuple[int, ...]]):
    """(reader, argument index, argument text, call start, call end) for each name argument of each reader
    call in `text`."""
    pattern = re.compile(r"(?<![\w.])(?:kit::|\w+::)?(" + "|".join(map(re.escape, readers)) + r")\s*\(")
    for match in pattern.finditer(text):
        end = _closing(text, match.end() - 1, "(", ")")
        if end < 0:
            continue
        arguments = _split_arguments(text[match.end():end])
        for index in readers[match.group(1)]:
            if index < len(arguments):
                yield match.group(1), index, arguments[index], match.start(), end + 1


def _hidden_lines(text: str) -> list[bool]:
    """For each line of `text`, whether it is compiled only where KIT_HIDDEN_TESTS is defined."""
    flags, stack = [], []  # stack: per open #if, True (hidden only), False (public only) or None
    for line in text.split("\n"):
        directive = _DIRECTIVE.match(line)
        if directive:
            word, rest = directive.group(1), directive.group(2)
            if word in ("ifdef", "if"):
                stack.append(True if _HIDDEN_MACRO.match(rest) else None)
            elif word == "ifndef":
                stack.append(False if _HIDDEN_MACRO.match(rest) else None)
            elif word == "else" and stack and stack[-1] is not None:
                stack[-1] = not stack[-1]
            elif word == "elif" and stack:
                stack[-1] = None
            elif word == "endif" and stack:
                stack.pop()
        flags.append(any(flag is True for flag in stack))
    return flags


def _helpers(text: str) -> list[tuple[str, int, int, int]]:
    """(name, body start, body end, where its name starts) of each function defined in `text`; a macro's body
    (TEST_CASE) is no helper."""
    found = []
    for match in _DEFINITION.finditer(text):
        name = match.group(1)
        if name in _KEYWORDS or name.isupper():
            continue
        end = _closing(text, match.end() - 1, "{", "}")
        found.append((name, match.end(), end if end >= 0 else len(text), match.start(1)))
    return found


def _public_reach(texts: list[str]) -> list[list[bool]]:
    """For each public source, for each character, whether a public test can run the code there.

    The roots are the code outside every function (the TEST_CASE bodies among it) that is not under
    #ifdef KIT_HIDDEN_TESTS; a function is reachable when a reachable stretch calls it by name. A
    helper in a public header that only hidden tests call (a hidden test's own check) is not.
    """
    helpers = [_helpers(text) for text in texts]
    hidden = [_hidden_lines(text) for text in texts]
    line_starts = [[0] + [m.end() for m in re.finditer("\n", text)] for text in texts]

    def is_hidden(k: int, position: int) -> bool:
        return hidden[k][bisect.bisect_right(line_starts[k], position) - 1] if hidden[k] else False

    def calls_in(k: int, start: int, end: int, skip: list[tuple[int, int]]) -> set[str]:
        names = set()
        for match in re.finditer(r"\b(\w+)\s*\(", texts[k][start:end]):
            position = start + match.start()
            if not is_hidden(k, position) and not any(a <= position < b for a, b in skip):
                names.add(match.group(1))
        return names

    reachable: set[str] = set()
    for k, text in enumerate(texts):
        # Outside every helper: its name where it is defined is no call, and its body is reached only through it.
        outermost = [(n, b) for _, a, b, n in helpers[k] if not any(a2 < a and b <= b2 for _, a2, b2, _ in helpers[k])]
        reachable |= calls_in(k, 0, len(text), outermost)
    changed = True
    while changed:
        changed = False
        for k in range(len(texts)):
            for name, start, end, _ in helpers[k]:
                if name in reachable:
                    new = calls_in(k, start, end, []) - reachable
                    if new:
                        reachable |= new
                        changed = True
    result = []
    for k, text in enumerate(texts):
        reach = [True] * (len(text) + 1)
        # Innermost last: a helper's body takes the reach of the helper itself.
        for name, start, end, _ in sorted(helpers[k], key=lambda h: h[2] - h[1], reverse=True):
            flag = name in reachable
            reach[start:end] = [flag] * (end - start)
        result.append(reach)
    return result


def _sources(config: LabConfig) -> list[Path]:
    folders = [config.lab_dir / "tests"]
    if config.solution_dir is not None:
        folders.append(config.solution_dir / "tests")
    return sorted(p for folder in folders if folder.is_dir() for p in folder.iterdir()
                  if p.is_file() and p.suffix in SOURCE_SUFFIXES)


def _root(config: LabConfig) -> Path:
    return config.lab_dir.parent.parent


def reads(config: LabConfig) -> list[ParamRead]:
    """Every read of a parameter named by a string literal in the lab's test sources."""
    root = _root(config)
    sources = {path: _without_comments(path.read_text(errors="replace")) for path in _sources(config)}
    harness = [_without_comments(p.read_text(errors="replace")) for p in sorted((root / "harness/include").rglob("*"))
               if p.is_file() and p.suffix in SOURCE_SUFFIXES]
    readers = _wrappers(harness + list(sources.values()), READERS)
    public = [path for path in sources if path.is_relative_to(config.lab_dir)]
    reach = dict(zip(public, _public_reach([sources[path] for path in public])))
    found = []
    for path, text in sources.items():
        hidden = _hidden_lines(text)
        optional = set(re.findall(r'\bhas_param\s*\(\s*"([^"\\]*)"\s*\)', text))
        for reader, _, argument, start, end in _calls(text, readers):
            literal = _LITERAL.match(argument)
            if not literal or literal.group(1) in optional:
                continue
            line = text.count("\n", 0, start) + 1
            call = " ".join(text[start:end].split())
            reached = path in reach and reach[path][start] and not hidden[line - 1]
            found.append(ParamRead(str(path.relative_to(root)), line, call, literal.group(1), hidden[line - 1], reached))
    return found


def _public_params(config: LabConfig) -> set[str]:
    with open(config.lab_dir / "lab.toml", "rb") as file:
        return set(tomllib.load(file).get("params", {}))


def problems(config: LabConfig) -> list[str]:
    """One line per read of a parameter the config does not declare (or that the student release lacks)."""
    root = _root(config)
    public = _public_params(config)
    declared = set(config.params)
    lab_toml = str((config.lab_dir / "lab.toml").relative_to(root))
    hidden_toml = f"solutions/{config.name}/hidden.toml"
    found = []
    for read in reads(config):
        if config.solution_dir is None and not read.public_reach:
            continue  # the student release: only hidden tests, which it has not, could run this read
        if read.name not in declared:
            close = difflib.get_close_matches(read.name, sorted(declared), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            found.append(f"{read.source}:{read.line}: {read.call} reads '{read.name}', which neither {lab_toml} "
                         f"[params] nor {hidden_toml} [params] declares{hint}")
        elif read.name not in public and read.public_reach:
            found.append(f"{read.source}:{read.line}: {read.call} reads '{read.name}', which only {hidden_toml} "
                         f"[params] declares, in a public test outside #ifdef KIT_HIDDEN_TESTS: the student "
                         f"release has no hidden.toml, so this read fails there (declare it in {lab_toml}, or "
                         f"read it only under #ifdef KIT_HIDDEN_TESTS)")
    return found


def require_declared(config: LabConfig) -> None:
    """ConfigError listing every read of an undeclared parameter in the lab's tests."""
    if found := problems(config):
        raise ConfigError(f"{config.name}: the tests read parameters the config does not declare:\n  "
                          + "\n  ".join(found))
