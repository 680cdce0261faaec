"""The judge/runner split's glue for one lab, generated from its public header.

When graded, a student's functions run in a process of their own (the runner), and the
test program (the judge) calls them through proxies with the same signatures. Both sides
are generated here from the one declaration a student already reads, the lab's public
header, plus lab.toml's call tables, which say what the header alone cannot:

    [host_buffers]          # each host-memory parameter's element count, a C++ expression in the
                            # function's parameters; a struct's pointer member by its dotted name
    vector_add = { h_a = "n", h_b = "n", h_c = "n" }
    create_pipeline = { "setup.weights" = "setup.beams * setup.channels" }

    [shared_host_buffers]   # host pointers with no count, into memory both processes map
    run_pipeline = ["h_in", "h_out"]

    [host_allocators]       # host memory the student's code allocates, and the function that frees it
    allocate_host_samples = { count = "count", free = "free_host_samples" }

    [objects]               # objects the student's code makes, and the function that ends them
    create_pipeline = { destroy = "destroy_pipeline" }

What crosses, and how:
- numbers and small structs by value;
- a pointer parameter is device memory (a CUDA IPC handle) unless a table says otherwise;
- a counted host buffer: a const one is copied to the runner, any other both ways, unless it lies in
  memory both processes map, where it travels as a place in that memory with no copy;
- a shared host buffer: a place in memory both processes map (the allocator's mirror, or a
  kit::remote::SharedHostBuffer of the test's); the judge refuses any other pointer there;
- an allocator's result: the judge makes a memfd of count elements, the runner maps it beside what the
  student's allocator returned (page-locked where that is) and the proxy returns the judge's mapping;
  the free function frees the student's memory and both mappings;
- a struct by const reference (defined in the header): its bytes, then each pointer member as a counted
  host buffer (dotted name in [host_buffers]), which the runner points at its copies;
- an object the student's code makes (a pointer to a type the header declares and never defines): the
  runner keeps it and the judge holds only its number, disguised as the pointer; the runner refuses
  numbers it did not hand out, and forgets one when the destroy function is called with it;
- a cudaStream_t: the judge's stream id and flags (the runner keeps a stream of its own per id for the
  test case); a cublasHandle_t: the handle, its stream and math mode (the runner keeps a handle of its
  own per handle for the test case). A function that takes either is asynchronous by contract: the
  runner replies without waiting for its work, and the tests wait through kit::remote::synchronize.
  Nor does it wait after a call that writes shared host memory: the judge sees there, as in one
  process, whether the results had landed when the function returned.
What cannot cross this way (another process-bound handle, a struct by non-const reference, a kernel the
tests would launch, a returned pointer no table explains, a host pointer with no count) is refused:
`plan` says why, and CMake builds such a lab in one process.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.config import CallTables, ConfigError, LabConfig
from grader.intake import code_without_comments_and_strings

# Handles to objects that live in one process and that nothing here carries: they mean nothing in another.
PROCESS_BOUND_TYPES = ("cudaEvent_t", "cufftHandle", "cudaGraph_t")
STREAM_TYPE = "cudaStream_t"
BLAS_TYPE = "cublasHandle_t"
# Declarations of GPU code: only the process that holds the code can launch or call it.
GPU_ONLY_QUALIFIERS = ("__global__", "__device__")
# A host pointer's name starts so (STYLE.md: d_ and h_ prefixes by role).
HOST_PREFIX = "h_"

_DECLARATION = re.compile(r"\s*((?:[\w:]+[\s*&]+)+?)([A-Za-z_]\w*)\s*\(([^()]*)\)\s*", re.S)
_STRUCT = re.compile(r"\b(?:struct|class)\s+([A-Za-z_]\w*)\s*(\{|;)")
# Where _without_bodies put a body: a statement ending in it is a definition, not a declaration.
_BODY = "@"


@dataclass(frozen=True)
class Member:
    """A pointer member of a struct the header defines, with its element count."""
    type: str
    name: str
    count: str

    @property
    def read_only(self) -> bool:
        return self.type.startswith("const ")

    @property
    def pointee(self) -> str:
        return self.type[:-1].strip()


@dataclass(frozen=True)
class Parameter:
    type: str  # as written, without top-level const (which is the callee's own business), e.g. "const float*"
    name: str
    host_count: str | None  # the element count of a host buffer; None for device memory or a value
    # How it crosses where it is not a number, device memory or a counted host buffer: "stream", "blas",
    # "object", "destroy" (an object to its destroy function), "release" (what an allocator returned, to its
    # free), "shared", "struct".
    kind: str = ""
    members: tuple[Member, ...] = ()  # a struct's pointer members

    @property
    def pointer(self) -> bool:
        return self.type.endswith("*")

    @property
    def read_only(self) -> bool:
        return self.type.startswith("const ") or " const" in self.type.split("*")[0]

    @property
    def pointee(self) -> str:
        return self.type[:-1].strip()

    @property
    def struct(self) -> str:
        """The struct of a struct by const reference."""
        return re.sub(r"^const\s+|\s*&$", "", self.type)


@dataclass(frozen=True)
class Function:
    returns: str
    name: str
    parameters: tuple[Parameter, ...]
    # How the result crosses where it is a pointer: "object" (the runner's number for it) or "allocation"
    # (a mirror of host memory, `allocation_count` elements).
    result: str = ""
    allocation_count: str = ""

    @property
    def asynchronous(self) -> bool:
        return any(p.kind in ("stream", "blas") for p in self.parameters)


@dataclass(frozen=True)
class Plan:
    header: Path
    functions: tuple[Function, ...]
    unsplit_because: str = ""  # why the lab runs in one process ("" when it is split)
    where: str = ""  # the call tables' place (labs/<lab>/lab.toml), for messages and generated files

    @property
    def split(self) -> bool:
        return not self.unsplit_because

    @property
    def uses_blas(self) -> bool:
        return any(p.kind == "blas" for f in self.functions for p in f.parameters)


@dataclass
class _Structs:
    """What the header says of its structs: those it defines (name -> pointer members as (type, name)) and those
    it only declares (opaque: the student's file defines them)."""
    defined: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)


def public_header(config: LabConfig) -> Path:
    headers = sorted(p for p in config.lab_dir.iterdir()
                     if p.suffix in (".cuh", ".h", ".hpp") and p.name not in config.student_files)
    if len(headers) != 1:
        raise ConfigError(f"labs/{config.name}: expected one public header (.cuh) beside the student files, "
                          f"found {[p.name for p in headers]}")
    return headers[0]


def lab_plan(config: LabConfig) -> Plan:
    """The plan of a lab in labs/: its public header and lab.toml's call tables. A header that passes a cuBLAS
    handle in a lab whose student code may not use cuBLAS is a ConfigError: the runner, which links only what
    student code may use, could not make its copy of the handle."""
    where = f"labs/{config.name}/lab.toml"
    result = plan(public_header(config), config.call_tables, where)
    if result.split and result.uses_blas and "cublas" not in config.student_libraries:
        raise ConfigError(f"{where}: {result.header.name} passes a {BLAS_TYPE}, but [lab] libraries does not let "
                          f"student code use cuBLAS, so its process cannot hold a handle")
    return result


def _code(text: str) -> str:
    code = code_without_comments_and_strings(text)
    return re.sub(r"^\s*#.*$", "", code, flags=re.M)


def _declarations(code: str) -> list[tuple[str, str, str]]:
    """(return type, name, parameter list) of each function declared (not defined) at the header's top level."""
    found = []
    for statement in _without_bodies(code).split(";"):
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


def _structs(code: str) -> _Structs:
    """The structs the header defines at its top level, with their pointer members, and those it only declares."""
    structs = _Structs()
    depth, position = 0, 0
    while (match := _STRUCT.search(code, position)) is not None:
        depth += code.count("{", position, match.start()) - code.count("}", position, match.start())
        name, opening = match.group(1), match.group(2)
        position = match.end()
        if depth != 0:
            continue
        if opening == ";":
            structs.opaque.add(name)
            continue
        body_start, level = match.end(), 1
        end = body_start
        while level and end < len(code):
            level += {"{": 1, "}": -1}.get(code[end], 0)
            end += 1
        members = []
        for statement in _without_bodies(code[body_start:end - 1]).split(";"):
            declaration = statement.split("=")[0].strip()
            if "(" in declaration or not declaration or declaration.endswith(_BODY):
                continue  # a member function, or nothing
            member = re.fullmatch(r"(.*?\*)\s*([A-Za-z_]\w*)", declaration, re.S)
            if member:
                members.append((re.sub(r"\s*\*", "*", re.sub(r"\s+", " ", member.group(1))).strip(),
                                member.group(2)))
        structs.defined[name] = members
        position = end
    structs.opaque -= set(structs.defined)
    return structs


def _parameter(text: str) -> tuple[str, str]:
    match = re.fullmatch(r"(.*?[\s*&])([A-Za-z_]\w*)", text.strip(), re.S)
    if match is None:
        raise ConfigError(f"cannot read the parameter '{text.strip()}' (each needs a type and a name)")
    kind = re.sub(r"\s+", " ", match.group(1)).strip()
    kind = re.sub(r"\s*\*", "*", kind)
    kind = re.sub(r"\s*&", "&", kind)
    # Top-level const (`float* const p`, `const int n`) binds only the callee's copy: the call is the same
    # without it, and the runner's reader needs a type it can assign.
    kind = re.sub(r"\*\s*const$", "*", kind)
    if not kind.endswith(("*", "&")):
        kind = re.sub(r"^const |\sconst$", "", kind).strip()
    return kind, match.group(2)


def plan(header: Path, tables: CallTables | dict[str, dict[str, str]], where: str) -> Plan:
    """What `header` declares, each parameter with how it crosses from `tables` (the call tables written at
    `where`; a plain dict is a [host_buffers] table alone), and whether it can be split. A table that names
    what the header does not declare, or gives a count to a value, is a ConfigError."""
    if not isinstance(tables, CallTables):
        tables = CallTables(host_buffers=tables)
    code = _code(header.read_text())
    structs = _structs(code)
    frees = {entry["free"]: allocator for allocator, entry in tables.host_allocators.items()}
    destroys = {entry["destroy"]: creator for creator, entry in tables.objects.items()}
    functions: list[Function] = []
    problems: list[str] = []
    for returns, name, params_text in _declarations(code):
        counts = tables.host_buffers.get(name, {})
        shared = set(tables.shared_host_buffers.get(name, ()))
        parameters = []
        for piece in [p for p in params_text.split(",") if p.strip() and p.strip() != "void"]:
            kind, param = _parameter(piece)
            role = "free" if name in frees else "destroy" if name in destroys else ""
            parameters.append(_crossing(kind, param, counts, shared, structs, role if not parameters else ""))
        names = {p.name for p in parameters}
        members = {f"{p.name}.{m.name}" for p in parameters for m in p.members}
        if unknown := {c for c in counts if c not in names and c not in members}:
            raise ConfigError(f"{where} [host_buffers] {name}: no parameter named {sorted(unknown)} in {header.name} "
                              f"(a struct's pointer member is named parameter.member)")
        if unknown := shared - names:
            raise ConfigError(f"{where} [shared_host_buffers] {name}: no parameter named {sorted(unknown)} in "
                              f"{header.name}")
        if values := [p.name for p in parameters if p.host_count is not None and not p.pointer]:
            raise ConfigError(f"{where} [host_buffers] {name}: {values} in {header.name} is not a pointer, so it "
                              f"has no elements to count (only host-memory pointers take a count)")
        returns = re.sub(r"\s+", " ", re.sub(r"\bextern\b", "", returns)).strip()  # a linkage, not a type
        returns = re.sub(r"\s*\*", "*", returns)
        result, allocation_count = "", ""
        if name in tables.host_allocators:
            result, allocation_count = "allocation", tables.host_allocators[name]["count"]
        elif name in tables.objects:
            result = "object"
        function = Function(returns, name, tuple(parameters), result, allocation_count)
        problems += _why_not_portable(function, structs)
        functions.append(function)
    by_name = {f.name: f for f in functions}
    for table, listed in (("host_buffers", tables.host_buffers), ("shared_host_buffers", tables.shared_host_buffers),
                          ("host_allocators", tables.host_allocators), ("objects", tables.objects)):
        if unknown := set(listed) - set(by_name):
            raise ConfigError(f"{where} [{table}]: {header.name} declares no function {sorted(unknown)}")
    for allocator, entry in tables.host_allocators.items():
        _check_release(by_name, entry["free"], by_name[allocator].returns, f"{where} [host_allocators] {allocator}",
                       header.name, "free")
    for creator, entry in tables.objects.items():
        _check_release(by_name, entry["destroy"], by_name[creator].returns, f"{where} [objects] {creator}",
                       header.name, "destroy")
    if not functions:
        problems.append(f"{header.name} declares no function for the tests to call")
    result = Plan(header, tuple(functions), "; ".join(problems), where)
    if result.split:
        _check_host_pointers_counted(result)
    return result


def _crossing(kind: str, name: str, counts: dict[str, str], shared: set[str], structs: _Structs,
              role: str) -> Parameter:
    """How a parameter of this type crosses, from the tables and the header's structs. `role`: "free" or "destroy"
    for the first parameter of a function that frees an allocation or destroys an object."""
    if re.search(rf"\b{STREAM_TYPE}\b", kind) and not kind.endswith(("*", "&")):
        return Parameter(kind, name, None, "stream")
    if re.search(rf"\b{BLAS_TYPE}\b", kind) and not kind.endswith(("*", "&")):
        return Parameter(kind, name, None, "blas")
    if kind.endswith("&"):
        struct = re.sub(r"^const\s+|\s*&$", "", kind)
        if kind.startswith("const ") and struct in structs.defined:
            members = tuple(Member(t, m, counts[f"{name}.{m}"]) if f"{name}.{m}" in counts else Member(t, m, "")
                            for t, m in structs.defined[struct])
            return Parameter(kind, name, None, "struct", members)
        return Parameter(kind, name, None)  # refused by _why_not_portable
    if kind.endswith("*") and role == "free":
        return Parameter(kind, name, None, "release")
    if kind.endswith("*") and re.sub(r"^const\s+", "", kind[:-1].strip()) in structs.opaque:
        return Parameter(kind, name, None, "destroy" if role == "destroy" else "object")
    if name in shared:
        return Parameter(kind, name, None, "shared")
    return Parameter(kind, name, counts.get(name))


def _check_release(by_name: dict[str, Function], releaser: str, returns: str, where: str, header: str,
                   role: str) -> None:
    """The function that frees or destroys what another returns: it exists, returns nothing, and takes that
    pointer first."""
    function = by_name.get(releaser)
    if function is None:
        raise ConfigError(f"{where}: {role} = \"{releaser}\", which {header} does not declare")
    first = function.parameters[0] if function.parameters else None
    if function.returns != "void" or first is None or first.type != returns:
        raise ConfigError(f"{where}: {releaser} in {header} must return void and take the {returns} to {role} "
                          f"first")
    if role == "free" and len(function.parameters) != 1:
        raise ConfigError(f"{where}: {releaser} in {header} must take the {returns} to free and nothing else "
                          f"(the runner calls it with what the allocator returned)")


def _why_not_portable(function: Function, structs: _Structs) -> list[str]:
    problems = []
    if qualifiers := [q for q in GPU_ONLY_QUALIFIERS if q in function.returns.split()]:
        problems.append(f"{function.name} is GPU code ({qualifiers[0]}), which the tests would launch themselves")
    elif function.result == "object":
        if function.returns[:-1].strip() not in structs.opaque:
            problems.append(f"{function.name} returns {function.returns}, which [objects] lists, but the header does "
                            f"not declare that type without defining it (an object only the student's code opens)")
    elif function.result == "allocation":
        if not function.returns.endswith("*"):
            problems.append(f"{function.name} is in [host_allocators] but returns {function.returns}, not a pointer")
    elif "*" in function.returns or "&" in function.returns:
        problems.append(f"{function.name} returns a pointer or reference ({function.returns}) that no table "
                        f"explains ([host_allocators] for host memory, [objects] for an object the student's code "
                        f"makes)")
    for p in function.parameters:
        if p.kind == "struct":
            if uncounted := [m.name for m in p.members if not m.count]:
                problems.append(f"{function.name} takes {p.name} ({p.type}), whose pointer member(s) {uncounted} "
                                f"have no count in [host_buffers] (\"{p.name}.{uncounted[0]}\" = \"...\")")
        elif "&" in p.type:
            problems.append(f"{function.name} takes {p.name} by reference ({p.type}): only a struct the header "
                            f"defines, by const reference, can cross")
        elif any(re.search(rf"\b{t}\b", p.type) for t in PROCESS_BOUND_TYPES):
            problems.append(f"{function.name} takes {p.name}, a {p.type} (a handle valid in one process only)")
    return problems


def _check_host_pointers_counted(plan_: Plan) -> None:
    """A pointer named as host memory but given no count would be sent as device memory, and every call of it
    would fail on the GPU: say so when the lab is configured instead."""
    for f in plan_.functions:
        for p in f.parameters:
            if p.pointer and p.host_count is None and not p.kind and p.name.startswith(HOST_PREFIX):
                raise ConfigError(f"{plan_.where} [host_buffers] {f.name}: {p.name} in {plan_.header.name} is host "
                                  f"memory by its name; give it an element count, e.g. "
                                  f"{f.name} = {{ {p.name} = \"n\" }}, or, where it always points into memory both "
                                  f"processes map, list it in [shared_host_buffers]")


# Defined by every judge's proxies; harness/src/remote.cu reads it to tell a judge from a test program built in one
# process (-DKIT_ONE_PROCESS=ON), which has no runner.
JUDGE_MARK = "kit_judge_has_runner"


def _generated_from(plan_: Plan) -> str:
    return f"// Generated from {plan_.header.name} and {plan_.where}'s call tables by grader/calls.py; do not edit."


def _host_bytes(expression: str, count: str) -> str:
    return f"sizeof(*{expression}) * static_cast<std::size_t>({count})"


# The generated functions' own locals are prefixed kit_, so that no parameter of the header (`in`, `out`, `call`)
# can hide them.
def judge_source(plan_: Plan) -> str:
    """The judge's proxies: each public function, forwarding its call to the runner."""
    lines = [_generated_from(plan_),
             "// The judge's side: each function of the lab's header calls the student's in the runner.",
             '#include "kit/remote.hpp"']
    if plan_.uses_blas:
        lines.append('#include "kit/remote_cublas.hpp"')
    lines += [f'#include "{plan_.header.name}"', "",
              "// This program has a runner: host memory the test shares (kit::remote::share_host) goes to it.",
              f"extern \"C\" const char {JUDGE_MARK} = 1;", ""]
    for index, f in enumerate(plan_.functions):
        params = ", ".join(f"{p.type} {p.name}" for p in f.parameters)
        lines.append(f"{f.returns} {f.name}({params}) {{")
        lines.append(f'  kit::remote::Call kit_call({index}, "{f.name}");')
        for p in f.parameters:
            lines += _judge_argument(p)
        if f.result == "allocation":
            lines.append(f"  return static_cast<{f.returns}>(kit_call.run_allocating(sizeof({f.returns[:-1].strip()}) * "
                         f"static_cast<std::size_t>({f.allocation_count})));")
        elif f.result == "object":
            lines.append(f"  return kit_call.run_returning_object<{f.returns[:-1].strip()}>();")
        elif f.returns == "void":
            lines.append("  kit_call.run();")
        else:
            lines.append(f"  return kit_call.run_returning<{f.returns}>();")
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def _judge_argument(p: Parameter) -> list[str]:
    if p.kind == "stream":
        return [f'  kit_call.stream({p.name}, "{p.name}");']
    if p.kind == "blas":
        return [f'  kit::remote::pass_blas(kit_call, {p.name}, "{p.name}");']
    if p.kind in ("object", "destroy"):
        return [f"  kit_call.object({p.name});"]
    if p.kind == "release":
        return [f'  kit_call.release({p.name}, "{p.name}");']
    if p.kind == "shared":
        return [f'  kit_call.shared_host({p.name}, "{p.name}");']
    if p.kind == "struct":
        lines = [f"  kit_call.value({p.name});"]
        for m in p.members:  # each pointer member's elements, after the struct's bytes, in the struct's order
            member = f"{p.name}.{m.name}"
            lines.append(f"  kit_call.host({member}, {_host_bytes(member, m.count)}, "
                         f'{"true" if m.read_only else "false"}, "{member}");')
        return lines
    if p.host_count is not None:
        read_only = "true" if p.read_only else "false"
        return [f'  kit_call.host({p.name}, {_host_bytes(p.name, p.host_count)}, {read_only}, "{p.name}");']
    if p.pointer:
        return [f'  kit_call.device({p.name}, "{p.name}");']
    return [f"  kit_call.value({p.name});"]


def runner_source(plan_: Plan) -> str:
    """The runner's table: each public function, reading its arguments and calling the student's."""
    lines = [_generated_from(plan_),
             "// The runner's side: reads each call's arguments and calls the student's function.",
             '#include "kit/runner.hpp"']
    if plan_.uses_blas:
        lines.append('#include "kit/runner_cublas.hpp"')
    lines += [f'#include "{plan_.header.name}"', "", "namespace {", ""]
    for index, f in enumerate(plan_.functions):  # numbered: a header may overload a name
        lines.append(f"void call_{index}_{f.name}(kit::runner::Arguments& kit_in, kit::runner::Result& kit_out) {{")
        release = next((p for p in f.parameters if p.kind == "release"), None)
        for p in f.parameters:
            if p is not release:
                lines += _runner_argument(p)
        args = ", ".join(p.name for p in f.parameters)
        if release is not None:
            # The student's free gets what their allocator returned, not the mirror the judge named.
            lines.append(f"  kit::runner::free_allocation(kit_in, [](void* kit_allocated) {{ "
                         f"{f.name}(static_cast<{release.type}>(kit_allocated)); }});")
        elif f.result == "allocation":
            lines.append(f"  kit::runner::mirror_allocation(kit_in, kit_out, {f.name}({args}));")
        elif f.result == "object":
            lines.append(f'  kit_out.set_object({f.name}({args}), "{f.returns[:-1].strip()}");')
        elif f.returns == "void":
            lines.append(f"  {f.name}({args});")
        else:
            lines.append(f"  kit_out.set({f.name}({args}));")
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


def _runner_argument(p: Parameter) -> list[str]:
    if p.kind == "stream":
        return [f"  {p.type} {p.name} = kit_in.stream();"]
    if p.kind == "blas":
        return [f"  {p.type} {p.name} = kit::runner::blas_handle(kit_in);"]
    if p.kind in ("object", "destroy"):  # a destroy function's object: its number is forgotten as it is read
        release = ", true" if p.kind == "destroy" else ""
        return [f'  {p.type} {p.name} = kit_in.object<{p.pointee}>("{p.pointee}"{release});']
    if p.kind == "struct":
        lines = [f"  auto {p.name} = kit_in.value<{p.struct}>();"]
        lines += [f"  {p.name}.{m.name} = kit_in.pointer<{m.pointee}>();" for m in p.members]
        return lines
    if p.pointer:
        return [f"  {p.type} {p.name} = kit_in.pointer<{p.pointee}>();"]
    return [f"  const auto {p.name} = kit_in.value<{p.type}>();"]
