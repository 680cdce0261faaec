"""The scripts that make the GPU run records (docs/gpu-runs/scripts/) stay runnable: the shell scripts parse, the
Python ones compile, and the CUDA probes build, so that a session with a few minutes of a GPU runs them as they are."""
import os
import py_compile
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.config import REPO_ROOT

SCRIPTS = REPO_ROOT / "docs" / "gpu-runs" / "scripts"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_each_shell_script_parses(script: str):
    done = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True)
    assert done.returncode == 0, f"{script} does not parse:\n{done.stderr}"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_each_python_script_compiles(script: str, tmp_path: Path):
    py_compile.compile(str(SCRIPTS / script), cfile=str(tmp_path / "compiled.pyc"), doraise=True)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit) to build the probes")
def test_sweeps_builds_every_cuda_probe_for_hopper_without_warnings(tmp_path: Path):
    build_only = {**os.environ, "BUILD_ONLY": "1", "BIN": str(tmp_path), "CUDA_ARCH": "90"}  # not CI's list
    done = subprocess.run(["bash", str(SCRIPTS / "sweeps.sh")], env=build_only, capture_output=True, text=True)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"sweeps.sh could not build the probes:\n{output[-3000:]}"
    assert "warning" not in output, f"the probes build with warnings:\n{output[-3000:]}"
    unbuilt = [p.stem for p in SCRIPTS.glob("*.cu") if not (tmp_path / p.stem).is_file()]
    assert not unbuilt, f"sweeps.sh neither builds nor runs these probes: {unbuilt}"
