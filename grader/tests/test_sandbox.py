"""The OS sandbox, with real processes: what a hostile test program tries, and what it gets.

Each test runs a small program through `proc.run_process`, confined by `sandbox.confine` in the sandbox a test
program that holds student code gets (`runner.unsplit_confinement`): its own folder writable, nothing else of
the grader's files in view.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import sandbox
from grader.proc import run_process, scrubbed_env
from grader.run.runner import unsplit_confinement

REPO = Path(__file__).resolve().parents[2]
WHY_NOT = sandbox.probe()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=f"no OS sandbox here: {WHY_NOT}")
LIMITS = sandbox.Limits(memory_bytes=256 << 20, processes=32, file_bytes=1 << 20)


@pytest.fixture(autouse=True)
def sandboxed():
    sandbox.use(sandbox.Policy(enabled=True))
    yield
    sandbox.use(sandbox.Policy(enabled=False))


def run_in_sandbox(tmp_path: Path, script: str, timeout_s: float = 20, limits=LIMITS):
    """Run a Python script the way a test program runs: in its folder, in the sandbox."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    program = work / "program.py"
    program.write_text(script)
    command = sandbox.confine(["/usr/bin/python3", str(program)], unsplit_confinement(program, work, limits))
    return run_process(command, cwd=work, env=scrubbed_env(work), timeout_s=timeout_s)


def test_writes_only_its_own_folder(tmp_path: Path):
    outside = tmp_path / "outside.txt"
    result = run_in_sandbox(tmp_path, f"""
import os
open("inside.txt", "w").write("ok")
for path in ({str(outside)!r}, "/usr/evil", "/etc/evil", {str(REPO / "evil")!r}):
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError as error:
        print("refused", path, type(error).__name__)
""")
    assert result.ok, result.output
    # Writes elsewhere fail, or land in the sandbox's private /tmp, which vanishes with it.
    assert "WROTE /usr" not in result.output and "WROTE /etc" not in result.output
    assert (tmp_path / "work" / "inside.txt").read_text() == "ok"
    assert not outside.exists() and not (REPO / "evil").exists()


def test_sees_nothing_of_the_grader_tree_or_solutions(tmp_path: Path):
    result = run_in_sandbox(tmp_path, f"""
import os
for path in ({str(REPO)!r}, {str(REPO / "solutions")!r}, {str(tmp_path / "work")!r}):
    print(path, os.path.exists(path))
""")
    assert f"{REPO} False" in result.output and f"{REPO / 'solutions'} False" in result.output
    assert f"{tmp_path / 'work'} True" in result.output


def test_has_no_network(tmp_path: Path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        result = run_in_sandbox(tmp_path, f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("CONNECTED")
except OSError as error:
    print("no network:", error)
""")
    finally:
        listener.close()
    assert "CONNECTED" not in result.output and "no network" in result.output


def test_cannot_signal_the_grader_or_its_processes(tmp_path: Path):
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        result = run_in_sandbox(tmp_path, f"""
import os, signal
for target in ({os.getpid()}, {bystander.pid}, {os.getppid()}):
    try:
        os.kill(target, signal.SIGKILL)
        print("KILLED", target)
    except OSError as error:
        print("cannot signal", target, error)
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
""")
        assert "KILLED" not in result.output
        assert bystander.poll() is None, "a process outside the sandbox was killed"
    finally:
        bystander.kill()
        bystander.wait()


def test_the_whole_process_tree_dies_at_the_timeout(tmp_path: Path):
    heartbeat = tmp_path / "work" / "heartbeat"
    result = run_in_sandbox(tmp_path, f"""
import os, time
if os.fork() == 0:
    os.setsid()  # a grandchild that leaves the session and tries to live on
    while True:
        with open({str(heartbeat)!r}, "a") as f:
            f.write("x")
        time.sleep(0.1)
time.sleep(600)
""", timeout_s=2)
    assert result.timed_out
    time.sleep(0.5)
    size = heartbeat.stat().st_size
    time.sleep(1.0)
    assert heartbeat.stat().st_size == size, "a child of the timed-out program is still running"


def test_memory_is_capped(tmp_path: Path):
    result = run_in_sandbox(tmp_path, "x = bytearray(1 << 30)\nprint('ALLOCATED')\n")
    assert "ALLOCATED" not in result.output and "MemoryError" in result.output


def test_output_and_files_are_capped(tmp_path: Path):
    # `yes` prints without end; Python itself would ignore the signal that stops a file growing past its cap.
    result = run_in_sandbox(tmp_path, "import os, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
                                      "os.execv('/usr/bin/yes', ['yes', 'flood'])\n", timeout_s=20)
    assert not result.timed_out and result.signal is not None
    assert "SIGXFSZ" in result.describe_exit()


def test_processes_are_capped(tmp_path: Path):
    result = run_in_sandbox(tmp_path, """
import os, time
started = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        started += 1
except OSError as error:
    print("fork refused after", started)
print("STARTED", started)
""")
    started = int(result.output.split("STARTED")[1].split()[0])
    assert started < LIMITS.processes, result.output


def test_compiler_launcher_compiles_in_the_sandbox(tmp_path: Path):
    """CMake's launcher for student files: a compile that includes a file outside its view fails."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "ok.cpp").write_text("int f() { return 1; }\n")
    secret = tmp_path / "secret.h"
    secret.write_text("int secret = 271828;\n")
    (source / "peek.cpp").write_text(f'#include "{secret}"\n')
    out = tmp_path / "obj"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def compile_(name: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grader", "sandboxed-compile", "--readable", str(source),
                               "--writable", str(out), "--", "c++", "-c", str(source / name), "-o",
                               str(out / f"{name}.o")], env=env, capture_output=True, text=True)

    assert compile_("ok.cpp").returncode == 0 and (out / "ok.cpp.o").is_file()
    peek = compile_("peek.cpp")
    assert peek.returncode != 0 and "271828" not in peek.stderr


# The CUDA math libraries a lab does not allow: the sandbox of student code covers them, so that neither the
# dynamic loader (by name, or by path) nor a read finds them, while an allowed library stays usable.
CUDA_LIBRARIES = Path("/usr/local/cuda/lib64")


def make_library(folder: Path, name: str, links: tuple[str, ...] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"\x7fELF" + name.encode())
    for link in links:
        (folder / link).symlink_to(name)
    return (folder / name).resolve()


def test_every_file_of_a_library_not_allowed_is_found(tmp_path: Path):
    """Versioned names, links (to another folder too), static archives and stubs; not the CUDA runtime."""
    lib = tmp_path / "cuda/lib64"
    cublas = make_library(lib, "libcublas.so.13.0.2.14", ("libcublas.so.13", "libcublas.so"))
    cublas_lt = make_library(lib, "libcublasLt.so.13", ("libcublasLt.so",))
    cublas_static = make_library(lib, "libcublas_static.a")
    cublas_stub = make_library(lib / "stubs", "libcublas.so")
    cufft = make_library(lib, "libcufft.so.12", ("libcufft.so",))
    cufftw = make_library(lib, "libcufftw.so.12")
    cufft_static = make_library(lib, "libcufft_static_nocallback.a")
    npp = make_library(lib, "libnppial.so.13", ("libnppial.so",))
    nvjpeg = make_library(lib, "libnvjpeg.so.13")
    cusparse = make_library(tmp_path / "elsewhere", "libcusparse.so.12.6")
    (lib / "libcusparse.so.12").symlink_to(cusparse)
    make_library(lib, "libcudart.so.13", ("libcudart.so",))
    make_library(lib, "libcublas.txt")

    every = {cublas, cublas_lt, cublas_static, cublas_stub, cufft, cufftw, cufft_static, npp, nvjpeg, cusparse}
    assert set(sandbox.library_files_to_hide(set(), [lib])) == every
    assert set(sandbox.library_files_to_hide({"cufft"}, [lib])) == every - {cufft, cufft_static}
    # cuBLAS loads cuBLASLt: allowing one keeps both.
    assert set(sandbox.library_files_to_hide({"cublas"}, [lib])) == every - {cublas, cublas_lt, cublas_static,
                                                                             cublas_stub}
    with pytest.raises(ValueError, match="cublass"):
        sandbox.library_files_to_hide({"cublass"}, [lib])


def test_hidden_paths_are_covered_after_the_system_binds(tmp_path: Path):
    folder = tmp_path / "hidden-folder"
    folder.mkdir()
    library = make_library(tmp_path, "libcublas.so.13")
    args = sandbox._command(["true"], sandbox.Spec(writable=(), hidden=(library, folder, tmp_path / "gone")), "plain")
    last_system_bind = max(i for i, a in enumerate(args) if a in sandbox.SYSTEM_PATHS)
    assert args.index(str(library)) > last_system_bind and args[args.index(str(library)) - 1] == "/dev/null"
    assert args[args.index(str(folder)) - 1] == "--tmpfs"
    assert str(tmp_path / "gone") not in args

    # For real: a folder and a file inside what the sandbox shows, covered.
    tree = tmp_path / "tree"
    make_library(tree / "private", "libcufft.so.12")
    make_library(tree, "libcurand.so.10")
    make_library(tree, "libcudart.so.13")
    work = tmp_path / "work"
    work.mkdir()
    spec = sandbox.Spec(writable=(work,), readable=(tree,), hidden=(tree / "private", tree / "libcurand.so.10"))
    result = run_process(sandbox.confine(["/usr/bin/python3", "-c", f"""
import os
print("LISTED", sorted(os.listdir({str(tree / "private")!r})))
for name in ("libcurand.so.10", "libcudart.so.13"):
    try:
        print("READ", name, open(os.path.join({str(tree)!r}, name), "rb").read())
    except OSError as error:
        print("NOT READ", name, type(error).__name__)
"""], spec), cwd=work, env=scrubbed_env(work), timeout_s=20)
    assert "LISTED []" in result.output and "NOT READ libcurand.so.10 PermissionError" in result.output
    assert "READ libcudart.so.13 b'\\x7fELFlibcudart.so.13'" in result.output, result.output


def run_python(tmp_path: Path, code: str, hidden: tuple[Path, ...]):
    """`python3 -c code` as student code would run: its own folder, the system's libraries, `hidden` covered."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    spec = sandbox.Spec(writable=(work,), hidden=hidden,
                        limits=sandbox.Limits(memory_bytes=4 << 30, processes=32, file_bytes=1 << 20))
    return run_process(sandbox.confine(["/usr/bin/python3", "-c", code], spec), cwd=work, env=scrubbed_env(work),
                       timeout_s=60)


PROBE = """
import ctypes, os
for name in {names!r}:
    try:
        ctypes.CDLL(name)
        print("LOADED", name)
    except OSError as error:
        print("NOT LOADED", name, error)
for path in {paths!r}:
    try:
        with open(path, "rb") as file:
            print("READ", path, file.read(4), os.path.getsize(path))
    except OSError as error:
        print("NOT READ", path, error, os.path.getsize(path) if os.path.exists(path) else None)
"""


@pytest.mark.skipif(not (CUDA_LIBRARIES / "libcublas.so").exists() or not (CUDA_LIBRARIES / "libcufft.so").exists(),
                    reason=f"needs the CUDA toolkit's cuBLAS and cuFFT in {CUDA_LIBRARIES}")
def test_a_library_the_lab_forbids_can_be_neither_loaded_nor_read(tmp_path: Path, lab_configs):
    cublas = (CUDA_LIBRARIES / "libcublas.so").resolve()
    cufft = (CUDA_LIBRARIES / "libcufft.so").resolve()
    names = ["libcublas.so", cublas.name, "libcublasLt.so", str(CUDA_LIBRARIES / "libcublas.so"), str(cublas),
             "libcufft.so"]
    probe = PROBE.format(names=names, paths=[str(cublas), str(CUDA_LIBRARIES / "libcublas.so"), str(cufft)])

    # Lab 08: the tests link cuFFT, and student code may use it (it must); cuBLAS is no part of the lab.
    allowed = set(lab_configs["08-streams"].student_libraries)
    assert allowed == {"cufft"}
    hidden = sandbox.library_files_to_hide(allowed)
    assert cublas in hidden and cufft not in hidden
    result = run_python(tmp_path, probe, hidden)
    assert result.ok, result.output
    for name in names[:-1]:
        assert f"NOT LOADED {name} " in result.output, result.output
    assert f"NOT READ {cublas} " in result.output and f"NOT READ {CUDA_LIBRARIES / 'libcublas.so'} " in result.output
    assert str(cublas.stat().st_size) not in result.output  # its size is not to be had either
    assert "LOADED libcufft.so" in result.output and f"READ {cufft} b'\\x7fELF' {cufft.stat().st_size}" in result.output

    # Without the cover the very same probe finds cuBLAS: the test above is not vacuous.
    plain = run_python(tmp_path, probe.replace(repr(names), repr(["libcufft.so"])), ())
    assert f"READ {cublas} b'\\x7fELF' {cublas.stat().st_size}" in plain.output, plain.output


@pytest.mark.skipif(not (CUDA_LIBRARIES / "libcublasLt.so").exists(),
                    reason=f"needs the CUDA toolkit's cuBLAS in {CUDA_LIBRARIES}")
def test_a_lab_that_forbids_its_yardstick_hides_it_and_one_that_allows_it_does_not(tmp_path: Path, lab_configs):
    """Lab 03 links cuBLAS for its tests and forbids it to student code; lab 12's student code calls it."""
    cublas, cublas_lt = ((CUDA_LIBRARIES / n).resolve() for n in ("libcublas.so", "libcublasLt.so"))
    assert lab_configs["03-matmul"].student_libraries == ()
    assert {cublas, cublas_lt} <= set(sandbox.library_files_to_hide(lab_configs["03-matmul"].student_libraries))
    shown = sandbox.library_files_to_hide(lab_configs["12-libraries"].student_libraries)
    assert cublas not in shown and cublas_lt not in shown
    probe = PROBE.format(names=[], paths=[str(cublas), str(cublas_lt)])
    result = run_python(tmp_path, probe, shown)
    assert f"READ {cublas} b'\\x7fELF'" in result.output and f"READ {cublas_lt} b'\\x7fELF'" in result.output


@pytest.fixture
def lab_configs():
    from grader.config import load_lab
    return {lab: load_lab(lab) for lab in ("03-matmul", "08-streams", "12-libraries")}


def test_a_program_sent_to_one_gpu_gets_that_gpus_device_file_and_no_other(tmp_path: Path, monkeypatch):
    """A class on several GPUs names each program's GPU in CUDA_VISIBLE_DEVICES; student code could name them all
    before CUDA starts and put work beside another student's timing, unless the other GPUs' files are not there.
    The driver places each GPU's file by its minor number, which need not be its index."""
    devices = tmp_path / "dev"
    devices.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm"):
        (devices / name).touch()
    for bus, uuid, minor in (("0000:18:00.0", "GPU-a", 0), ("0000:2a:00.0", "GPU-b", 2), ("0000:3a:00.0", "GPU-c", 1)):
        (tmp_path / "gpus" / bus).mkdir(parents=True)
        (tmp_path / "gpus" / bus / "information").write_text(
            f"Model: \t\t NVIDIA H100\nGPU UUID: \t {uuid}\nBus Location: \t {bus}\nDevice Minor: \t {minor}\n")
    monkeypatch.setattr(sandbox, "DEVICES", devices)
    monkeypatch.setattr(sandbox, "NVIDIA_GPUS_INFO", tmp_path / "gpus")

    def bound(gpus: str | None) -> set[str]:
        args = sandbox._command(["true"], sandbox.Spec(writable=(), gpu=True, gpus=gpus), "plain")
        return {Path(args[k + 1]).name for k, arg in enumerate(args) if arg == "--dev-bind"}
    shared = {"nvidiactl", "nvidia-uvm"}
    assert bound("GPU-b") == shared | {"nvidia2"}
    assert bound("GPU-a,GPU-c") == shared | {"nvidia0", "nvidia1"}
    every = shared | {"nvidia0", "nvidia1", "nvidia2"}
    assert bound(None) == every  # the grader's own choice: as before
    assert bound("1") == every and bound("GPU-b,MIG-x") == every  # a name the driver does not place: every GPU's
