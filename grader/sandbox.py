"""The OS sandbox around every process that compiles or runs student code.

bubblewrap (Debian's `bubblewrap`) builds a world for the process out of
namespaces: it sees the system's programs and libraries read-only, the folders
it is given, a private /tmp, the GPU's device files when it runs on the GPU,
and nothing else of the file system (not the grader's tree, not solutions/, not
other students' folders). It has no network, its own process-ID namespace and
terminal session (it cannot see or signal the grader or anything else), and
dies with the grader. util-linux's `prlimit` then caps what the process may
take: memory, processes, file size, open files and CPU time.

When the grader runs as root, the sandboxed process also runs as the
unprivileged user `nobody` (util-linux's `setpriv`): Linux does not apply the
process cap to root, and a process that is not root outside its namespace has
nothing to gain from leaving it. Its writable folders are handed to that user
first.

A sandbox may also hide files of the system: the CUDA math libraries a lab
does not allow student code (library_files_to_hide), each covered so that
neither the dynamic loader nor a read finds anything there. That is for a
process that runs student code alone: a lab's test program links the
libraries its tests use, forbidden to student code or not.

The policy is set once per grader run (`use`). This module builds the command
line (`confine`) and `grader.proc` starts it like any other: proc knows nothing
of the sandbox, and the sandbox starts its probes (bubblewrap's test run,
ldconfig) through proc. Where bubblewrap cannot run (not installed, or user
namespaces are off), grading untrusted code is refused unless the TA asked for
it without a sandbox, loudly.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from grader.proc import tool_output

# System folders a compiler or a CUDA program needs, read-only. /usr holds the
# CUDA toolkit and the NVIDIA driver's libraries on the machines we know of.
SYSTEM_PATHS = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
GPU_DEVICE_GLOBS = ("nvidia*", "nvidia-caps", "dri")
DEVICES = Path("/dev")
# One GPU's own device file (/dev/nvidia<minor>); the others (nvidiactl, nvidia-uvm, ...) serve every GPU.
ONE_GPU_DEVICE = re.compile(r"nvidia(\d+)")
# Where the driver tells each GPU's UUID and the minor number of its device file.
NVIDIA_GPUS_INFO = Path("/proc/driver/nvidia/gpus")
PRIVATE_TMP_BYTES = 1 << 30
UNPRIVILEGED_ID = 65534  # nobody, nogroup

# The CUDA math libraries, by the name a lab's config gives them ("cublas"), each with the stems of the files
# it needs (lib<stem>.so, lib<stem>.so.13, lib<stem>_static.a, ...): cuBLAS loads cuBLASLt, cuSOLVER loads
# cuBLAS and cuSPARSE, and the FFTW and BLAS interfaces load the library behind them. A stem may be a pattern.
CUDA_MATH_LIBRARIES: dict[str, tuple[str, ...]] = {
    "cublas": ("cublas", "cublasLt"),
    "cufft": ("cufft",),
    "cufftw": ("cufftw", "cufft"),
    "curand": ("curand",),
    "cusparse": ("cusparse",),
    "cusolver": ("cusolver", "cusolverMg", "cublas", "cublasLt", "cusparse"),
    "nvblas": ("nvblas", "cublas", "cublasLt"),
    "nvjpeg": ("nvjpeg",),
    "npp": ("npp*",),  # NPP comes in parts: nppc, nppial, nppicc, ...
}
# Where a CUDA toolkit keeps its libraries (each with a stubs/ folder for linking), here or in NVIDIA's
# Python wheels; the dynamic loader's cache and $LD_LIBRARY_PATH add the folders of a packaged toolkit
# (Debian's, in /usr/lib/x86_64-linux-gnu).
CUDA_LIBRARY_FOLDERS = ("/usr/local/cuda*/lib64", "/usr/local/cuda*/lib", "/usr/local/cuda*/targets/*/lib",
                        "/opt/cuda*/lib64", "/opt/nvidia/hpc_sdk/*/*/math_libs/*/lib64",
                        "/usr/lib/python3*/*-packages/nvidia/*/lib", "/usr/local/lib/python3*/*-packages/nvidia/*/lib")
# lib<stem> followed by a shared object's or an archive's ending: libcublas.so.13.0.2, libcufft_static.a.
LIBRARY_FILE = re.compile(r"^lib([A-Za-z]+)(?:[._-][\w.-]*)?$")


class SandboxUnavailable(Exception):
    """Untrusted code was to run, and no sandbox can be had here."""


@dataclass(frozen=True)
class Limits:
    """Caps on one sandboxed process tree (prlimit)."""

    memory_bytes: int  # RLIMIT_DATA: heap and private writable mappings (RLIMIT_AS would stop CUDA)
    processes: int  # RLIMIT_NPROC
    file_bytes: int  # RLIMIT_FSIZE: the largest file it may write
    open_files: int = 1024
    cpu_s: int | None = None  # RLIMIT_CPU; None: only the wall-clock timeout applies

    def prlimit_args(self) -> list[str]:
        args = [f"--data={self.memory_bytes}", f"--nproc={self.processes}", f"--fsize={self.file_bytes}",
                f"--nofile={self.open_files}", "--core=0"]
        if self.cpu_s is not None:
            args.append(f"--cpu={self.cpu_s}")
        return args


# A compiler run on student code: a template or include bomb hits these, not the machine.
COMPILE_LIMITS = Limits(memory_bytes=8 << 30, processes=64, file_bytes=512 << 20, cpu_s=300)


@dataclass(frozen=True)
class Spec:
    """What one sandboxed process may see and use."""

    writable: tuple[Path, ...]  # bound read-write at the same path
    readable: tuple[Path, ...] = ()  # bound read-only at the same path
    gpu: bool = False  # the GPU's device files
    # With `gpu`, the GPUs it gets, as CUDA_VISIBLE_DEVICES names them (the one a class sends it to): only their
    # device files, so that it cannot put work on a GPU where another student is timed by setting
    # CUDA_VISIBLE_DEVICES itself before CUDA starts. None, or a name the driver does not list: every GPU's.
    gpus: str | None = None
    limits: Limits | None = None
    chdir: Path | None = None  # where it starts (default: where the grader is, if it can see that)
    # Files and folders of the system covered up: a file by an unreadable device node, a folder by an empty
    # one (e.g. library_files_to_hide's). They stay in the loader's cache, which then leads nowhere.
    hidden: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Policy:
    """How this grader run treats untrusted code."""

    enabled: bool  # sandbox every process that compiles or runs student code


_policy = Policy(enabled=False)


def use(policy: Policy) -> None:
    """Set the policy for this grader run (the command line does, once)."""
    global _policy
    _policy = policy


def current() -> Policy:
    return _policy


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def _working_mode() -> tuple[str, str]:
    """("drop", "") when root and a sandbox as nobody works; ("plain", note) when a sandbox works as we are;
    ("", why not) when none does."""
    bwrap, prlimit = bwrap_path(), shutil.which("prlimit")
    if bwrap is None:
        return "", "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if prlimit is None:
        return "", "prlimit is not installed (Debian/Ubuntu: apt-get install util-linux)"
    errors = ""
    for mode in (["drop", "plain"] if _is_root() and shutil.which("setpriv") else ["plain"]):
        code, _, errors = tool_output(_command(["true"], Spec(writable=()), mode), timeout_s=30)
        if code == 0:
            note = ("the grader runs as root and the sandbox could not run as nobody, so the cap on processes "
                    "does not apply (Linux exempts root); run the grader as an ordinary user"
                    if mode == "plain" and _is_root() else "")
            return mode, note
    return "", (f"bubblewrap could not create its namespaces here ({errors.strip()}); user namespaces may be "
                f"disabled (sysctl kernel.unprivileged_userns_clone=1, or user.max_user_namespaces > 0), or a "
                f"container forbids them")


def probe() -> str:
    """"" when bubblewrap works here, else why not (for the TA)."""
    return _working_mode()[1] if not _working_mode()[0] else ""


def caveat() -> str:
    """What the TA should know about the sandbox that does work here ("" when nothing)."""
    return _working_mode()[1] if _working_mode()[0] else ""


def _is_root() -> bool:
    return os.geteuid() == 0


def require() -> None:
    """Raise SandboxUnavailable, with the reason, when the policy wants a sandbox and none works."""
    if _policy.enabled and (why := probe()):
        raise SandboxUnavailable(why)


# The exit status of a grader run that refused to grade untrusted code without a sandbox.
UNAVAILABLE_EXIT = 5


def apply_policy(untrusted: bool, opted_out: bool) -> None:
    """Set this run's policy, as every command that grades does: the sandbox required for untrusted code (raising
    SandboxUnavailable where none works) unless the TA opted out, which is said loudly on stderr."""
    why = probe()
    if opted_out or (why and not untrusted):
        reason = "--no-sandbox was given" if opted_out else why
        print(f"WARNING: running without the OS sandbox ({reason}). Student code can then read and write "
              f"your files, reach the network and signal the grader; do this only with code you trust.",
              file=sys.stderr)
        use(Policy(enabled=False))
        return
    use(Policy(enabled=True))
    require()
    if note := caveat():
        print(f"Note on the sandbox: {note}.", file=sys.stderr)


def confine(command: list[str], spec: Spec) -> list[str]:
    """`command` as it runs in the sandbox `spec` describes (unchanged when the policy is off), with the folders
    it binds made usable by the user it runs as."""
    if not _policy.enabled:
        return command
    _prepare(spec)
    return _command(command, spec, _working_mode()[0] or "plain")


def _prepare(spec: Spec) -> None:
    """Make the folders the sandbox binds usable by the user it runs as (nothing to do unless it drops root)."""
    if _working_mode()[0] != "drop":
        return
    for path in spec.writable:
        for folder, _, files in os.walk(path):
            for item in [folder, *(os.path.join(folder, f) for f in files)]:
                os.lchown(item, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
    for path in spec.readable + spec.writable:
        _allow_passage(Path(path))


def _allow_passage(path: Path) -> None:
    """Let nobody pass through the grader's own private folders above `path` (e.g. a 0700 temporary
    folder): execute permission only, so it can reach what is bound but list nothing on the way."""
    for folder in path.resolve().parents:
        info = folder.stat()
        if info.st_uid == os.geteuid() and not info.st_mode & stat.S_IXOTH:
            folder.chmod(info.st_mode | stat.S_IXOTH)


def _command(command: list[str], spec: Spec, mode: str) -> list[str]:
    """The bubblewrap command line; mode "drop" runs it as nobody first (the grader is root)."""
    drop = ["setpriv", f"--reuid={UNPRIVILEGED_ID}", f"--regid={UNPRIVILEGED_ID}", "--clear-groups", "--"]
    args = (drop if mode == "drop" else []) + [
        bwrap_path() or "bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
        "--disable-userns", "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev",
        "--size", str(PRIVATE_TMP_BYTES), "--tmpfs", "/tmp"]
    for path in SYSTEM_PATHS:
        args += _system_bind(Path(path))
    if spec.gpu:
        for device in _gpu_devices(spec.gpus):
            args += ["--dev-bind", str(device), str(device)]
    for path in spec.readable:
        args += ["--ro-bind", str(path), str(path)]
    for path in spec.writable:
        args += ["--bind", str(path), str(path)]
    for path in spec.hidden:  # last: a mount covers only what was mounted before it
        args += _cover(Path(path))
    if spec.chdir is not None:
        args += ["--chdir", str(spec.chdir)]
    args.append("--")
    if spec.limits is not None:
        args += [shutil.which("prlimit") or "prlimit", *spec.limits.prlimit_args(), "--"]
    return args + command


def _system_bind(path: Path) -> list[str]:
    if path.is_symlink():  # e.g. /lib -> usr/lib on merged-/usr systems
        return ["--symlink", os.readlink(path), str(path)]
    if path.is_dir():
        return ["--ro-bind", str(path), str(path)]
    return []


def _cover(path: Path) -> list[str]:
    """bwrap's arguments that cover `path`: a folder by an empty read-only one, a file by /dev/null, which bwrap
    binds without device access (nodev), so that opening it fails and its size reads 0. A bind follows
    symbolic links, so covering a library's file covers every link to it."""
    if path.is_dir():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []  # nothing there to hide


def library_files_to_hide(allowed: Iterable[str], folders: Iterable[Path] | None = None) -> tuple[Path, ...]:
    """Every file of every CUDA math library (CUDA_MATH_LIBRARIES) that `allowed` (names as a lab's config
    gives them) does not need, in `folders` and their stubs/ (by default: the toolkit's library folders and
    every folder where the dynamic loader finds one of these libraries): shared objects under every version
    of their name, static archives and stubs, each as the file its links end at, for Spec.hidden."""
    unknown = set(allowed) - set(CUDA_MATH_LIBRARIES)
    if unknown:
        raise ValueError(f"unknown CUDA libraries {sorted(unknown)} (known: {sorted(CUDA_MATH_LIBRARIES)})")
    kept = {stem for name in allowed for stem in CUDA_MATH_LIBRARIES[name]}
    hidden = {stem for stems in CUDA_MATH_LIBRARIES.values() for stem in stems} - kept

    def hides(file_name: str) -> bool:
        match = LIBRARY_FILE.match(file_name)
        if match is None or not (".so" in file_name or file_name.endswith(".a")):
            return False
        stem = match.group(1)
        return (any(fnmatchcase(stem, pattern) for pattern in hidden)
                and not any(fnmatchcase(stem, pattern) for pattern in kept))

    found: set[Path] = set()
    for folder in (cuda_library_folders() if folders is None else folders):
        for place in (Path(folder), Path(folder) / "stubs"):
            try:
                entries = list(place.iterdir())
            except OSError:
                continue
            for entry in entries:
                if hides(entry.name) and (target := entry.resolve()).is_file():
                    found.add(target)
    return tuple(sorted(found))


@functools.lru_cache(maxsize=1)
def cuda_library_folders() -> tuple[Path, ...]:
    """The folders that may hold a CUDA math library: CUDA_LIBRARY_FOLDERS, $CUDA_HOME's, $LD_LIBRARY_PATH's,
    the one beside nvcc, and every folder of the dynamic loader's cache (`ldconfig -p`) that holds one."""
    patterns = list(CUDA_LIBRARY_FOLDERS)
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if home := os.environ.get(variable):
            patterns += [f"{home}/lib64", f"{home}/lib"]
    patterns += [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    if nvcc := shutil.which("nvcc"):
        patterns.append(str(Path(nvcc).resolve().parent.parent / "lib64"))
    folders = [Path(p) for pattern in patterns for p in glob.glob(pattern)]
    folders += _loader_cache_folders()
    return tuple(dict.fromkeys(f.resolve() for f in folders if f.is_dir()))


def _loader_cache_folders() -> list[Path]:
    """The folders in which the dynamic loader's cache has a CUDA math library."""
    ldconfig = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig")
                                                 if os.access(p, os.X_OK)), None)
    if ldconfig is None:
        return []
    code, listing, _ = tool_output([ldconfig, "-p"], timeout_s=30)
    stems = {stem for stems in CUDA_MATH_LIBRARIES.values() for stem in stems}
    folders = []
    for line in listing.splitlines() if code == 0 else []:
        name, _, path = line.strip().partition(" => ")
        match = LIBRARY_FILE.match(name.split(" ")[0])
        if path and match and any(fnmatchcase(match.group(1), stem) for stem in stems):
            folders.append(Path(path).parent)
    return folders


def _gpu_devices(gpus: str | None = None) -> list[Path]:
    """The GPU device files to bind: those every GPU needs, and the own files of the GPUs `gpus` names (every
    GPU's where it names none, or one that gpu_minors cannot place)."""
    found: list[Path] = []
    for pattern in GPU_DEVICE_GLOBS:
        found += sorted(DEVICES.glob(pattern))
    names = [name.strip() for name in (gpus or "").split(",") if name.strip()]
    minors = gpu_minors()
    if not names or any(name not in minors for name in names):
        return found
    wanted = {str(minors[name]) for name in names}
    return [device for device in found
            if not (match := ONE_GPU_DEVICE.fullmatch(device.name)) or match.group(1) in wanted]


def gpu_minors() -> dict[str, int]:
    """Each GPU's UUID -> the minor number of its device file (/dev/nvidia<minor>), as the driver tells them; empty
    where it does not (no driver, or another kernel)."""
    minors = {}
    for info in sorted(NVIDIA_GPUS_INFO.glob("*/information")):
        try:
            fields = dict(line.split(":", 1) for line in info.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        uuid, minor = fields.get("GPU UUID", "").strip(), fields.get("Device Minor", "").strip()
        if uuid and minor.isdigit():
            minors[uuid] = int(minor)
    return minors
