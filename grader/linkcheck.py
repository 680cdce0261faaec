"""Link check: what a student's compiled code may define and call, checked before it is linked.

Student code is linked into the same test program as the harness that times
and checks it, so the build refuses student object files that could change
that harness from inside:

- a definition of a function or variable that a library in the link also
  defines (the C library's clock_gettime, the CUDA runtime's
  cudaEventElapsedTime, libstdc++'s steady_clock::now): the executable's copy
  would replace the library's for the harness too;
- a strong definition of a symbol that the harness or the tests define (the
  linker would stop on it anyway; this says why). Weak definitions (inline
  functions and template instances from shared headers) are fine: the
  instructor's objects come first in the link, so their copies are the ones
  kept;
- a call to anything outside the allowed set (the CUDA runtime, the C++
  runtime, maths, console output, the lab's libraries, the harness's CUDA
  error checks): no files, processes, signals, threads, dynamic loading or raw
  system calls; and no system-call instruction in the compiled host code;
- code from a header-only library the lab forbids (CUB, Thrust): any symbol,
  local ones included, whose name lies in the library's namespace. The
  compiler has already undone every spelling trick of the source (a quoted
  include, a namespace made by token pasting), and a library's kernels leave
  their names in the host object (nvcc's launch stubs), so what the student's
  object defines is the one place the use cannot hide.

CMake runs it before linking each lab test program (`python3 -m grader
link-check`); a refusal is a build error that names the file, the symbol and
the reason.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from grader.proc import tool_output

# Calls student code may make, as patterns over mangled names. Everything else is refused.
ALLOWED_CALLS = tuple(re.compile(p) for p in (
    r"cuda[A-Z]\w*", r"__cuda\w*", r"__nv\w*", r"__fatbinwrap\w*",  # the CUDA runtime and nvcc's own glue
    r"_Zn[wa]m\w*", r"_Zd[la]Pv\w*",  # operator new and delete
    r"__cxa_\w+", r"__gxx_personality_v0", r"_Unwind_Resume", r"__dso_handle", r"__stack_chk_fail",
    r"_ZT[VIS]\w+",  # vtables and type information
    r"_ZSt\d*__throw_\w+", r"_ZSt9terminatev",  # errors thrown by the standard library
    r"_ZNSt\d*(?:__cxx11::)?\d*basic_string\w*", r"_ZNSt7__cxx1112basic_string\w*", r"_ZNKSt7__cxx1112basic_string\w*",
    r"_ZNSt8ios_base4Init\w*", r"_ZSt21ios_base_library_initv",  # <iostream>'s set-up (libstdc++ 13 and later)
    r"_ZSt4cout", r"_ZSt4cerr", r"_ZSt4endl\w*",
    r"_ZNSo\w*", r"_ZNKSo\w*", r"_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc",
    r"_ZSt16__ostream_insert\w*", r"_GLOBAL_OFFSET_TABLE_",
    r"_ZNK?St\d+(?:exception|runtime_error|logic_error|invalid_argument|out_of_range|length_error|overflow_error"
    r"|range_error|domain_error|bad_alloc)\w*",
    r"_ZSt7nothrow", r"_ZSt28__throw_bad_array_new_lengthv",
    r"_ZSt18_Rb_tree_\w+", r"_ZSt29_Rb_tree_insert_and_rebalance\w*", r"_ZNSt8__detail15_List_node_base\w*",
    r"_ZNSt6chrono3_V212steady_clock3nowEv",  # reading the clock is harmless: the harness's clock is its own
    r"(?:__)?(?:mem(?:cpy|set|move|cmp)|str(?:len|cmp|ncmp|chr))(?:_chk)?",
    r"(?:__)?(?:printf|puts|putchar|snprintf|sprintf|vsnprintf|fputs|fputc|fwrite|fflush)(?:_chk)?", r"stdout", r"stderr",
    r"(?:f|l|ll)?(?:abs|div)", r"(?:sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan|atan2"
    r"|sinh|cosh|tanh|floor|ceil|round|lround|llround|trunc|fmod|remainder|fmin|fmax|fma|hypot|frexp|ldexp|modf"
    r"|erf|erfc|lgamma|tgamma|nan|nearbyint|rint|lrint|copysign|nextafter|ilogb|scalbn|isnan|isinf)[fl]?",
    r"__(?:isnan|isinf|finite)[fl]?", r"__errno_location", r"qsort", r"bsearch", r"rand", r"srand",
    r"(?:malloc|calloc|realloc|free|aligned_alloc|posix_memalign)", r"atexit",
    r"exit",  # nvcc's host stubs of __device__ functions call it; ending the test early only fails the case
    # The harness's error checks (CUDA_CHECK, CUBLAS_CHECK, CUFFT_CHECK) and the error they throw.
    r"_ZN3kit16throw_cuda_errorE\w+", r"_ZN3kit10check_cudaE\w+", r"_ZN3kit12check_cublasE\w+",
    r"_ZN3kit11check_cufftE\w+", r"_ZN3kit9CudaError\w+",
))
# The libraries a lab may link, by the config's name, and the calls that come with them.
LIBRARY_CALLS = {"cublas": re.compile(r"cublas\w*"), "cufft": re.compile(r"cufft\w*")}


@dataclass(frozen=True)
class HeaderLibrary:
    """A header-only library a lab may forbid (lab.toml's `forbidden`), as its symbols show it."""
    title: str  # as the handouts write it
    namespace: str
    # CCCL puts an inline namespace named after its version and the GPU architectures inside the
    # library's own (cub::CUB_300001_SM_900::, cub::CUB_300001_SM_750_900:: for two): it names the
    # library even inside another namespace.
    version_tag: str

    def uses(self, mangled: str, demangled: str) -> bool:
        """Whether a symbol belongs to the library or names one of its types."""
        ns = re.escape(self.namespace)
        return bool(re.search(rf"(?<![\w$]){ns}::", demangled)  # also inside template arguments
                    # nvcc names a kernel's launch stub after the kernel's mangled name
                    # (__device_stub__ZN3cub...), which c++filt leaves as it is.
                    or re.search(rf"(?<![0-9]){len(self.namespace)}{ns}(?=[0-9])", mangled)
                    or re.search(rf"(?<![A-Za-z]){self.version_tag}", mangled))


HEADER_LIBRARIES = {
    "cub": HeaderLibrary("CUB", "cub", r"CUB_\d+_SM_\d+"),
    "thrust": HeaderLibrary("Thrust", "thrust", r"THRUST_\d+_SM_\d+"),
}
# The inline namespace named after CCCL's version and the architectures built: noise in a message to a student.
VERSION_NAMESPACE = re.compile(r"\b(?:CUB|THRUST)_\d+_SM_\d+(?:_\d+)*(?:_NS)?::")

# Host instructions that enter the kernel directly, as objdump prints them.
SYSTEM_CALL_INSTRUCTION = re.compile(r"\t(?:syscall|sysenter|int\s+\$0x80|svc\s+#?0x?0)\b")


class LinkRefused(Exception):
    """The student's object files may not be linked; the message says which symbol and why."""


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # nm's letter: T/D/B/R (strong), W/V/u (weak or unique), U (undefined)

    @property
    def weak(self) -> bool:
        return self.kind in "WVwvu"


def symbols(path: Path, dynamic: bool = False, local: bool = False) -> list[Symbol]:
    """The external symbols of an object file, archive or (dynamic=True) shared library; local=True adds the
    file's local ones (functions with internal linkage, such as CCCL's kernels)."""
    command = ["nm", "-P"] + ([] if local else ["-g"]) + (["-D"] if dynamic else []) + [str(path)]
    _, output, _ = tool_output(command)
    found = []
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 2 and len(parts[1]) == 1 and not parts[0].endswith(":"):
            found.append(Symbol(parts[0].split("@")[0], parts[1]))
    return found


def library_definitions(libraries: list[Path], cache_dir: Path) -> dict[str, str]:
    """Every symbol the libraries define -> the library's file name (cached, the lists are long)."""
    key = hashlib.sha256(json.dumps([(str(p), p.stat().st_mtime_ns) for p in libraries]).encode()).hexdigest()[:16]
    cache = cache_dir / f"link-check-libraries-{key}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, json.JSONDecodeError):
        pass  # not made yet
    defined: dict[str, str] = {}
    for library in libraries:
        shared = ".so" in library.name
        for symbol in symbols(library, dynamic=shared):
            if symbol.kind != "U":
                defined.setdefault(symbol.name, library.name)
    # Parallel link steps may make it at once: each writes its own file, then renames it into place whole.
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps(defined))
    partial.replace(cache)
    return defined


def _demangle(names: list[str]) -> dict[str, str]:
    _, output, _ = tool_output(["c++filt"], stdin="\n".join(names))
    lines = output.splitlines()
    return dict(zip(names, lines)) if len(lines) == len(names) else {n: n for n in names}


def problems(student: list[Path], instructor: list[Path], library_symbols: dict[str, str],
             allowed_libraries: tuple[str, ...], forbidden: tuple[str, ...] = (),
             allowed_calls: tuple[str, ...] = (), lab: str = "") -> list[str]:
    """What is wrong with the student's object files, one sentence each (empty: they may be linked)."""
    instructor_defined: dict[str, Symbol] = {}
    for path in instructor:
        for symbol in symbols(path):
            if symbol.kind != "U":
                instructor_defined.setdefault(symbol.name, symbol)
    allowed = (ALLOWED_CALLS + tuple(LIBRARY_CALLS[lib] for lib in allowed_libraries)
               + tuple(re.compile(re.escape(name)) for name in allowed_calls))
    found: list[tuple[Path, str, str]] = []  # (file, mangled name, why)
    own = {path: symbols(path) for path in student}
    student_defined = {s.name for listed in own.values() for s in listed if s.kind != "U"}
    for path in student:
        for symbol in own[path]:
            if symbol.kind == "U":
                banned = next((f for f in forbidden if symbol.name.lower().startswith(f.lower())), None)
                if banned:
                    found.append((path, symbol.name, f"calls it, and this lab does not allow {banned} in student "
                                  f"code"))
                elif symbol.name not in student_defined and not any(p.fullmatch(symbol.name) for p in allowed):
                    found.append((path, symbol.name, "calls it, and student code may only call the CUDA runtime, "
                                  "the C++ runtime, maths functions, console output and the lab's libraries"))
            elif symbol.name in library_symbols:
                found.append((path, symbol.name, f"defines it, and it belongs to {library_symbols[symbol.name]}: "
                              f"student code may not replace library functions (rename yours)"))
            elif not symbol.weak and symbol.name in instructor_defined:
                found.append((path, symbol.name, "defines it, and it belongs to the test harness: student code "
                              "may not replace harness functions (rename yours)"))
        if _has_system_call(path):
            found.append((path, "", "its compiled host code makes a system call directly (inline assembly); "
                          "student code may not"))
    names = _demangle([name for _, name, _ in found if name])
    return ([f"{_source_name(path)}: '{names.get(name, name)}': {why}" if name else f"{_source_name(path)}: {why}"
             for path, name, why in found]
            + [problem for path in student for problem in _forbidden_library_uses(path, forbidden, lab)])


def _forbidden_library_uses(path: Path, forbidden: tuple[str, ...], lab: str) -> list[str]:
    """One sentence for each forbidden header-only library whose code the object file holds."""
    libraries = [HEADER_LIBRARIES[f.lower()] for f in forbidden if f.lower() in HEADER_LIBRARIES]
    if not libraries:
        return []
    # Local symbols too: CCCL gives its kernels internal linkage, and a student's functor in an
    # anonymous namespace does the same to every instance made with it.
    listed = [s for s in symbols(path, local=True) if not s.name.startswith(".")]
    names = _demangle([s.name for s in listed])
    found = []
    for library in libraries:
        used = [(s, _shorten(names.get(s.name, s.name))) for s in listed
                if library.uses(s.name, names.get(s.name, s.name))]
        if used:
            found.append((len(used), _forbidden_library_message(path, library, used, lab)))
    # The library the file uses most first: CUB's headers bring a Thrust variable or two along, and
    # the student who called cub::DeviceReduce should read about CUB first.
    return [message for _, message in sorted(found, key=lambda f: -f[0])]


def _forbidden_library_message(path: Path, library: HeaderLibrary, used: list[tuple[Symbol, str]], lab: str) -> str:
    # Name the most telling symbol: a function of the library's own API (cub::DeviceReduce::Sum)
    # before its internal kernels and guard variables, and the shortest of those.
    mentions = re.compile(rf"(?<![\w$]){re.escape(library.namespace)}::")
    symbol, short = min(used, key=lambda u: (not mentions.search(u[1]), "::detail::" in u[1],
                                             u[1].startswith("guard variable"), u[0].kind not in "TtWw",
                                             len(u[1])))
    more = f" (and {len(used) - 1} more of {library.title}'s functions and variables)" if len(used) > 1 else ""
    verb = {"U": "calls"}.get(symbol.kind, "instantiates" if symbol.kind in "TtWw" else "defines")
    which = f"lab {lab}" if lab else "this lab"
    return (f"{_source_name(path)}: '{short}': {which} does not allow {library.title} in student code, and your file "
            f"{verb} it from {library.title}'s headers{more}, however the source spells it; write that part "
            f"yourself (the lab's points are for your own kernels)")


def _shorten(name: str, limit: int = 160) -> str:
    """cub::DeviceReduce::Sum<...>(...) for the page-long name of one instance: the library's function is what
    the student needs to see, not its template arguments or CCCL's version namespace."""
    name = VERSION_NAMESPACE.sub("", name).replace("(anonymous namespace)", "{anonymous}")
    name = re.sub(r"\s*\[clone [^\]]*\]", "", name)
    kept, depth, inside = [], 0, False
    for ch in name:
        if ch in "<(":
            if depth == 0:
                kept.append(ch)
            inside = depth > 0
            depth += 1
        elif ch in ">)" and depth > 0:
            depth -= 1
            if depth == 0:
                kept.append(("..." if inside else "") + ch)
        elif depth == 0:
            kept.append(ch)
        else:
            inside = True
    short = name if depth else "".join(kept)  # unbalanced (operator<): keep the name as it is
    short = re.sub(r"^[\w:]+ (?=[\w:~]+[<(])", "", short)  # the return type of a template function
    return short if len(short) <= limit else short[:limit - 3] + "..."


def _has_system_call(path: Path) -> bool:
    _, output, _ = tool_output(["objdump", "-d", "--no-show-raw-insn", str(path)])
    return bool(SYSTEM_CALL_INSTRUCTION.search(output))


def _source_name(object_path: Path) -> str:
    """vector_add.cu for .../vector_add.cu.o."""
    return object_path.name.removesuffix(".o")


SYSTEM_LIBRARIES = ("libstdc++.so.6", "libc.so.6", "libm.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2",
                    "librt.so.1")


def system_libraries() -> list[Path]:
    """The C and C++ runtime libraries every test program links, where the C++ compiler finds them."""
    found = []
    for name in SYSTEM_LIBRARIES:
        _, output, _ = tool_output(["c++", f"-print-file-name={name}"])
        path = Path(output.strip())
        if path.is_absolute() and path.is_file():
            found.append(path.resolve())
    return found
