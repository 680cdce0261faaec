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
handle, a struct by reference, an object the student allocates, a kernel the tests launch)
is not split: `plan` says why, and the lab is graded in one process.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.config import ConfigError, LabConfig
from grader.intake import code_without_comments_and_strings

# Types that are handles to objects living in one process: they mean nothing in another.
PROCESS_BOUND_TYPES = ("cudaStream_t", "cudaEvent_t", "cublasHandle_t", "cufftHandle", "cudaGraph_t")
# Declarations of GPU code: only the process that holds the code can launch or call it.
GPU_ONLY_QUALIFIERS = ("__global__", "__device__")
# A host pointer's name starts so (STYLE.md: d_ and h_ prefixes by role).
HOST_PREFIX = "h_"

_DECLARATION = re.compile(r"\s*((?:[\w:]+[\s*&]+)+?)([A-Za-z_]\w*)\s*\(([^()]*)\)\s*", re.S)
# Where _without_bodies put a body: a statement ending in it is a definition, not a declaration.
_BODY = "@"


@dataclass(frozen=True)
class Parameter:
    type: str  # as written, without top-level const (which is the callee's own business), e.g. "const float*"
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
    where: str = ""  # the [host_buffers] table's place (labs/<lab>/lab.toml), for messages and generated files

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


def lab_plan(config: LabConfig) -> Plan:
    """The plan of a lab in labs/: its public header and lab.toml's [host_buffers]."""
    return plan(public_header(config), config.host_buffers, f"labs/{config.name}/lab.toml")


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
    """The code with every brace-enclosed body (a function's, a struct's) replaced by a mark and ';', so that what
    is left at the top level splits into statements at each ';' and a definition (which ends in the mark) never
    reads as a declaration, inline or not."""
    out, depth = [], 0
    for char in code:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                out.append(_BODY + ";")
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _parameter(text: str) -> tuple[str, str]:
    match = re.fullmatch(r"(.*?[\s*&])([A-Za-z_]\w*)", text.strip(), re.S)
    if match is None:
        raise ConfigError(f"cannot read the parameter '{text.strip()}' (each needs a type and a name)")
    kind = re.sub(r"\s+", " ", match.group(1)).strip()
    kind = re.sub(r"\s*\*", "*", kind)
    # Top-level const (`float* const p`, `const int n`) binds only the callee's copy: the call is the same
    # without it, and the runner's reader needs a type it can assign.
    kind = re.sub(r"\*\s*const$", "*", kind)
    if not kind.endswith(("*", "&")):
        kind = re.sub(r"^const |\sconst$", "", kind).strip()
    return kind, match.group(2)


def plan(header: Path, host_buffers: dict[str, dict[str, str]], where: str) -> Plan:
    """What `header` declares, each host buffer with its count from `host_buffers` (the [host_buffers] table
    written at `where`), and whether it can be split. A table that names what the header does not declare, or
    gives a count to a value, is a ConfigError."""
    functions: list[Function] = []
    problems: list[str] = []
    for returns, name, params_text in _declarations(header.read_text()):
        counts = host_buffers.get(name, {})
        parameters = []
        for piece in [p for p in params_text.split(",") if p.strip() and p.strip() != "void"]:
            kind, param = _parameter(piece)
            parameters.append(Parameter(kind, param, counts.get(param)))
        if unknown := set(counts) - {p.name for p in parameters}:
            raise ConfigError(f"{where} [host_buffers] {name}: no parameter named {sorted(unknown)} in {header.name}")
        if values := [p.name for p in parameters if p.host_count is not None and not p.pointer]:
            raise ConfigError(f"{where} [host_buffers] {name}: {values} in {header.name} is not a pointer, so it "
                              f"has no elements to count (only host-memory pointers take a count)")
        returns = re.sub(r"\s+", " ", re.sub(r"\bextern\b", "", returns)).strip()  # a linkage, not a type
        function = Function(returns, name, tuple(parameters))
        problems += _why_not_portable(function)
        functions.append(function)
    if unknown := set(host_buffers) - {f.name for f in functions}:
        raise ConfigError(f"{where} [host_buffers]: {header.name} declares no function {sorted(unknown)}")
    if not functions:
        problems.append(f"{header.name} declares no function for the tests to call")
    result = Plan(header, tuple(functions), "; ".join(problems), where)
    if result.split:
        _check_host_pointers_counted(result)
    return result


def _why_not_portable(function: Function) -> list[str]:
    problems = []
    if qualifiers := [q for q in GPU_ONLY_QUALIFIERS if q in function.returns.split()]:
        problems.append(f"{function.name} is GPU code ({qualifiers[0]}), which the tests would launch themselves")
    elif "*" in function.returns or "&" in function.returns:
        problems.append(f"{function.name} returns a pointer or reference ({function.returns})")
    for p in function.parameters:
        if "&" in p.type:
            problems.append(f"{function.name} takes {p.name} by reference ({p.type})")
        elif any(re.search(rf"\b{t}\b", p.type) for t in PROCESS_BOUND_TYPES):
            problems.append(f"{function.name} takes {p.name}, a {p.type} (a handle valid in one process only)")
    return problems


def _check_host_pointers_counted(plan_: Plan) -> None:
    """A pointer named as host memory but given no count would be sent as device memory, and every call of it
    would fail on the GPU: say so when the lab is configured instead."""
    for f in plan_.functions:
        for p in f.parameters:
            if p.pointer and p.host_count is None and p.name.startswith(HOST_PREFIX):
                raise ConfigError(f"{plan_.where} [host_buffers] {f.name}: {p.name} in {plan_.header.name} is host "
                                  f"memory by its name; give it an element count, e.g. "
                                  f"{f.name} = {{ {p.name} = \"n\" }}")


def _generated_from(plan_: Plan) -> str:
    return f"// Generated from {plan_.header.name} and {plan_.where}'s [host_buffers] by grader/calls.py; do not edit."


# The generated functions' own locals are prefixed kit_, so that no parameter of the header (`in`, `out`, `call`)
# can hide them.
def judge_source(plan_: Plan) -> str:
    """The judge's proxies: each public function, forwarding its call to the runner."""
    lines = [_generated_from(plan_),
             "// The judge's side: each function of the lab's header calls the student's in the runner.",
             '#include "kit/remote.hpp"', f'#include "{plan_.header.name}"', ""]
    for index, f in enumerate(plan_.functions):
        params = ", ".join(f"{p.type} {p.name}" for p in f.parameters)
        lines.append(f"{f.returns} {f.name}({params}) {{")
        lines.append(f'  kit::remote::Call kit_call({index}, "{f.name}");')
        for p in f.parameters:
            if p.host_count is not None:
                read_only = "true" if p.read_only else "false"
                lines.append(f'  kit_call.host({p.name}, sizeof(*{p.name}) * static_cast<std::size_t>({p.host_count}), '
                             f'{read_only}, "{p.name}");')
            elif p.pointer:
                lines.append(f'  kit_call.device({p.name}, "{p.name}");')
            else:
                lines.append(f"  kit_call.value({p.name});")
        lines.append("  kit_call.run();" if f.returns == "void" else f"  return kit_call.run_returning<{f.returns}>();")
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def runner_source(plan_: Plan) -> str:
    """The runner's table: each public function, reading its arguments and calling the student's."""
    lines = [_generated_from(plan_),
             "// The runner's side: reads each call's arguments and calls the student's function.",
             '#include "kit/runner.hpp"', f'#include "{plan_.header.name}"', "", "namespace {", ""]
    for index, f in enumerate(plan_.functions):  # numbered: a header may overload a name
        lines.append(f"void call_{index}_{f.name}(kit::runner::Arguments& kit_in, kit::runner::Result& kit_out) {{")
        for p in f.parameters:
            if p.pointer:
                lines.append(f"  {p.type} {p.name} = kit_in.pointer<{p.pointee}>();")
            else:
                lines.append(f"  const auto {p.name} = kit_in.value<{p.type}>();")
        args = ", ".join(p.name for p in f.parameters)
        lines.append(f"  {f.name}({args});" if f.returns == "void" else f"  kit_out.set({f.name}({args}));")
        if not f.parameters:
            lines.append("  (void)kit_in;")
        if f.returns == "void":
            lines.append("  (void)kit_out;")
        lines.append("}")
        lines.append("")
    lines.append("}  // namespace")
    lines.append("")
    entries = ", ".join(f'{{"{f.name}", call_{i}_{f.name}}}' for i, f in enumerate(plan_.functions))
    lines.append(f"const kit::runner::Function kit::runner::kFunctions[] = {{{entries}}};")
    lines.append(f"const std::size_t kit::runner::kFunctionCount = {len(plan_.functions)};")
    return "\n".join(lines) + "\n"
