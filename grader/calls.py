"""The judge/runner split's glue for one lab, generated from its public header.

When graded, a student's functions run in a process of their own (the runner), and the
test program (the judge) calls them through proxies with the same signatures. Both sides
are generated here from the one declaration a student already reads, the lab's public
header, plus lab.toml's [host_buffers] table, which gives each host-memory parameter its
element count (a C++ expression in the function's parameters):

    [host_buffers]
    vector_add = { h_a = "n", h_b = "n", h_c = "n" }

Every other pointer parameter is device memory, passed as a CUDA IPC handle; numbers pass
by value; a const host buffer is copied to the runner, any other is copied both ways. A
header that passes what cannot cross a process boundary this way (a stream, a library
handle, a struct by reference, an object the student allocates) is not split: `plan`
says why, and the lab is graded in one process.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.config import ConfigError, LabConfig
from grader.intake import code_without_comments_and_strings

# Types that are handles to objects living in one process: they mean nothing in another.
PROCESS_BOUND_TYPES = ("cudaStream_t", "cudaEvent_t", "cublasHandle_t", "cufftHandle", "cudaGraph_t")

_DECLARATION = re.compile(r"\s*((?:[\w:]+[\s*&]+)+?)([A-Za-z_]\w*)\s*\(([^()]*)\)\s*", re.S)


@dataclass(frozen=True)
class Parameter:
    type: str  # as written, e.g. "const float*"
    name: str
    host_count: str | None  # the element count of a host buffer; None for device memory or a value

    @property
    def pointer(self) -> bool:
        return self.type.endswith("*")

    @property
    def read_only(self) -> bool:
        return self.type.startswith("const ") or " const" in self.type.split("*")[0]

    @property
    def pointee(self) -> str:
        return self.type[:-1].strip()


@dataclass(frozen=True)
class Function:
    returns: str
    name: str
    parameters: tuple[Parameter, ...]


@dataclass(frozen=True)
class Plan:
    header: Path
    functions: tuple[Function, ...]
    unsplit_because: str = ""  # why the lab runs in one process ("" when it is split)

    @property
    def split(self) -> bool:
        return not self.unsplit_because


def public_header(config: LabConfig) -> Path:
    headers = sorted(p for p in config.lab_dir.iterdir()
                     if p.suffix in (".cuh", ".h", ".hpp") and p.name not in config.student_files)
    if len(headers) != 1:
        raise ConfigError(f"labs/{config.name}: expected one public header (.cuh) beside the student files, "
                          f"found {[p.name for p in headers]}")
    return headers[0]


def _declarations(text: str) -> list[tuple[str, str, str]]:
    """(return type, name, parameter list) of each function declared (not defined) at the header's top level."""
    code = code_without_comments_and_strings(text)
    code = re.sub(r"^\s*#.*$", "", code, flags=re.M)
    code = _without_bodies(code)
    found = []
    for statement in code.split(";"):
        match = _DECLARATION.fullmatch(statement)
        if match and not {"inline", "constexpr", "static", "typedef"} & set(match.group(1).split()):
            found.append((match.group(1).strip(), match.group(2), match.group(3).strip()))
    return found


def _without_bodies(code: str) -> str:
    """The code with every brace-enclosed body (inline functions, structs) replaced by ';', so that what is left
    at the top level splits into statements at each ';'."""
    out, depth = [], 0
    for char in code:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                out.append(";")
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _parameter(text: str) -> tuple[str, str]:
    match = re.fullmatch(r"(.*?[\s*&])([A-Za-z_]\w*)", text.strip(), re.S)
    if match is None:
        raise ConfigError(f"cannot read the parameter '{text.strip()}' (each needs a type and a name)")
    kind = re.sub(r"\s+", " ", match.group(1)).strip()
    return re.sub(r"\s*\*", "*", kind), match.group(2)


def plan(config: LabConfig, host_buffers: dict[str, dict[str, str]]) -> Plan:
    header = public_header(config)
    functions: list[Function] = []
    problems: list[str] = []
    for returns, name, params_text in _declarations(header.read_text()):
        counts = host_buffers.get(name, {})
        parameters = []
        for piece in [p for p in params_text.split(",") if p.strip() and p.strip() != "void"]:
            kind, param = _parameter(piece)
            parameters.append(Parameter(kind, param, counts.get(param)))
        if unknown := set(counts) - {p.name for p in parameters}:
            raise ConfigError(f"labs/{config.name}/lab.toml [host_buffers] {name}: no parameter named "
                              f"{sorted(unknown)} in {header.name}")
        function = Function(re.sub(r"\s+", " ", returns), name, tuple(parameters))
        problems += _why_not_portable(function)
        functions.append(function)
    if unknown := set(host_buffers) - {f.name for f in functions}:
        raise ConfigError(f"labs/{config.name}/lab.toml [host_buffers]: {header.name} declares no function "
                          f"{sorted(unknown)}")
    return Plan(header, tuple(functions), "; ".join(problems))


def _why_not_portable(function: Function) -> list[str]:
    problems = []
    if "*" in function.returns or "&" in function.returns:
        problems.append(f"{function.name} returns a pointer or reference ({function.returns})")
    for p in function.parameters:
        if "&" in p.type:
            problems.append(f"{function.name} takes {p.name} by reference ({p.type})")
        elif any(re.search(rf"\b{t}\b", p.type) for t in PROCESS_BOUND_TYPES):
            problems.append(f"{function.name} takes {p.name}, a {p.type} (a handle valid in one process only)")
        elif p.host_count is not None and not p.pointer:
            problems.append(f"{function.name}: [host_buffers] gives {p.name} a count, but it is not a pointer")
    return problems


def judge_source(config: LabConfig, plan_: Plan) -> str:
    """The judge's proxies: each public function, forwarding its call to the runner."""
    lines = [f"// Generated from labs/{config.name}/{plan_.header.name} and lab.toml by grader/calls.py; do not edit.",
             "// The judge's side: each function of the lab's header calls the student's in the runner.",
             '#include "kit/remote.hpp"', f'#include "{plan_.header.name}"', ""]
    for index, f in enumerate(plan_.functions):
        params = ", ".join(f"{p.type} {p.name}" for p in f.parameters)
        lines.append(f"{f.returns} {f.name}({params}) {{")
        lines.append(f'  kit::remote::Call call({index}, "{f.name}");')
        for p in f.parameters:
            if p.host_count is not None:
                read_only = "true" if p.read_only else "false"
                lines.append(f'  call.host({p.name}, sizeof(*{p.name}) * static_cast<std::size_t>({p.host_count}), '
                             f'{read_only}, "{p.name}");')
            elif p.pointer:
                lines.append(f'  call.device({p.name}, "{p.name}");')
            else:
                lines.append(f"  call.value({p.name});")
        lines.append("  call.run();" if f.returns == "void" else f"  return call.run_returning<{f.returns}>();")
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def runner_source(config: LabConfig, plan_: Plan) -> str:
    """The runner's table: each public function, reading its arguments and calling the student's."""
    lines = [f"// Generated from labs/{config.name}/{plan_.header.name} and lab.toml by grader/calls.py; do not edit.",
             "// The runner's side: reads each call's arguments and calls the student's function.",
             '#include "kit/runner.hpp"', f'#include "{plan_.header.name}"', "", "namespace {", ""]
    for index, f in enumerate(plan_.functions):  # numbered: a header may overload a name
        lines.append(f"void call_{index}_{f.name}(kit::runner::Arguments& in, kit::runner::Result& out) {{")
        for p in f.parameters:
            if p.pointer:
                lines.append(f"  {p.type} {p.name} = in.pointer<{p.pointee}>();")
            else:
                lines.append(f"  const auto {p.name} = in.value<{p.type}>();")
        args = ", ".join(p.name for p in f.parameters)
        lines.append(f"  {f.name}({args});" if f.returns == "void" else f"  out.set({f.name}({args}));")
        if f.returns == "void":
            lines.append("  (void)out;")
        lines.append("}")
        lines.append("")
    lines.append("}  // namespace")
    lines.append("")
    entries = ", ".join(f'{{"{f.name}", call_{i}_{f.name}}}' for i, f in enumerate(plan_.functions))
    lines.append(f"const kit::runner::Function kit::runner::kFunctions[] = {{{entries}}};")
    lines.append(f"const std::size_t kit::runner::kFunctionCount = {len(plan_.functions)};")
    return "\n".join(lines) + "\n"
