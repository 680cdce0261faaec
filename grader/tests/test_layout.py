"""The grader's modules import each other in one direction: no cycle, and none dodged by an import placed
inside a function, so that a reader can follow a submission through the stages without going round in circles.
Read from the source, so that an import made late (inside a function) counts as much as one at the top."""
from __future__ import annotations

import ast
from pathlib import Path

from grader.tests.conftest import REPO

GRADER = REPO / "grader"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def grader_modules() -> dict[str, Path]:
    """The grader's own modules (its tests aside), by dotted name."""
    return {module_name(path): path for path in GRADER.rglob("*.py") if "tests" not in path.relative_to(GRADER).parts}


def imported(path: Path, modules: dict[str, Path]) -> set[str]:
    """The grader modules that `path` imports, wherever in the file the import stands."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from grader.run import judge` imports the module grader.run.judge; `from grader.run.judge import
            # run_case` imports grader.run.judge.
            found |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
    return {name for name in found if name in modules and name != "grader"} - {module_name(path)}


def a_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph` (its modules in order, the first again at the end), or [] when there is none."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str]:
        if name in path:
            return path[path.index(name):] + [name]
        if name in done:
            return []
        for neighbour in sorted(graph[name]):
            if cycle := visit(neighbour, path + [name]):
                return cycle
        done.add(name)
        return []

    return next((cycle for name in sorted(graph) if (cycle := visit(name, []))), [])


def test_no_grader_module_imports_itself_back_however_late():
    modules = grader_modules()
    graph = {name: imported(path, modules) for name, path in modules.items()}
    assert a_cycle(graph) == []


def test_the_sandbox_builds_commands_and_proc_starts_them_knowing_nothing_of_the_sandbox():
    modules = grader_modules()
    assert imported(modules["grader.proc"], modules) == set()
    assert "grader.proc" in imported(modules["grader.sandbox"], modules)


def test_a_cycle_is_found_where_there_is_one():
    assert a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert a_cycle({"a": {"b"}, "b": set()}) == []
