"""The OS sandbox, with real processes: what a hostile test program tries, and what it gets.

Each test runs a small program through `proc.run_process` in the sandbox a test program gets
(`run.confinement`): its own folder writable, nothing else of the grader's files in view.
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
from grader.run import confinement

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
    return run_process(["/usr/bin/python3", str(program)], cwd=work, env=scrubbed_env(work), timeout_s=timeout_s,
                       confined=confinement(program, work, limits))


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
