"""The scripts that make the GPU run records (docs/gpu-runs/scripts/) stay runnable: the shell scripts parse, the
Python ones compile, and the CUDA probes build, so that a session with a few minutes of a GPU runs them as they are."""
import py_compile
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.config import REPO_ROOT

SCRIPTS = REPO_ROOT / "docs" / "gpu-runs" / "scripts"
LIBRARIES = {"gemm_sweep.cu": ["-lcublas"]}


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_each_shell_script_parses(script: str):
    done = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True)
    assert done.returncode == 0, f"{script} does not parse:\n{done.stderr}"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_each_python_script_compiles(script: str, tmp_path: Path):
    py_compile.compile(str(SCRIPTS / script), cfile=str(tmp_path / "compiled.pyc"), doraise=True)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit) to build the probes")
@pytest.mark.parametrize("probe", sorted(p.name for p in SCRIPTS.glob("*.cu")))
def test_each_cuda_probe_builds_for_hopper(probe: str, tmp_path: Path):
    command = ["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-o", str(tmp_path / "probe"), str(SCRIPTS / probe),
               *LIBRARIES.get(probe, [])]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{probe} does not build:\n{done.stderr[-3000:]}"
    assert "warning" not in done.stderr, f"{probe} builds with warnings:\n{done.stderr[-3000:]}"
