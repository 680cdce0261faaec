"""The run stage against a stand-in for a GPU test program.

The stand-in is a small Python script that behaves like a harness-built test
program: it lists its cases and, for --test-case=NAME, writes the same JSON
records to $KIT_RESULTS, then passes, fails, crashes or hangs as told.
"""
from pathlib import Path

import pytest

from grader.config import load_lab
import time

from grader.proc import ProcessResult, run_process, scrubbed_env
from grader.run import judge
from grader.run.judge import list_cases, run_case, run_group
from grader.run.schedule import evaluate
from grader.tests.conftest import TOY_CONFIG_HEAD, write

STAND_IN = r'''#!/usr/bin/env python3
import json, os, signal, sys, time
cases = {"passes": "", "fails": "", "crashes": "", "hangs": "", "crashes after": "", "cpu": "cpu",
         "busy beside others": "", "busy with its own work": ""}
out = open(os.environ["KIT_RESULTS"], "a")
def record(**fields):
    out.write(json.dumps(fields) + "\n"); out.flush()
record(kind="run", gpu_available=True, gpu="Stand-in GPU", driver="1.0", seed=int(os.environ.get("KIT_SEED", 7)))
if "--list-test-cases" in sys.argv:
    for name, suite in cases.items():
        record(kind="listed", case=name, suite=suite)
    sys.exit(0)
# As doctest does: a comma-separated list of names, run in the program's own order.
wanted = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--test-case=")).split(",")
failed = False
for name in [c for c in cases if c in wanted]:
    record(kind="case_start", case=name)
    print("console noise that the grader must not parse: passed")
    if name == "hangs":
        time.sleep(600)
    if name == "crashes":
        os.kill(os.getpid(), signal.SIGSEGV)
    record(kind="timing", case=name, name="k", median_s=0.5, rate=2.0, unit="GB/s", pid=os.getpid(),
           gpu_wait=os.environ.get("KIT_GPU_WAIT"), measure_only=os.environ.get("KIT_MEASURE_ONLY"))
    # As kit::remote::gpu_free finds it: beside other programs (KIT_GPU_WAIT=block) their work keeps the GPU busy.
    busy = name == "busy with its own work" or (name == "busy beside others" and os.environ.get("KIT_GPU_WAIT"))
    status = "failed" if name == "fails" or busy else "passed"
    failed = failed or status == "failed"
    record(kind="case", case=name, status=status, seconds=0.1, gpu_busy=bool(busy),
           messages=["Wrong result for input: n = 3 (seed %s)" % os.environ.get("KIT_SEED")] if name == "fails" else
                    ["the check: after your code returned, it still had work running on the GPU"] if busy else [])
    if name == "crashes after":
        sys.exit(134)
sys.exit(1 if failed else 0)
'''


def stand_in(tmp_path: Path) -> Path:
    program = tmp_path / "fake-tests"
    program.write_text(STAND_IN)
    program.chmod(0o755)
    return program


def test_listing_reads_cases_and_gpu(tmp_path: Path):
    listing = list_cases(stand_in(tmp_path), tmp_path)
    assert listing.problem == ""
    assert listing.info.gpu_available and listing.info.gpu == "Stand-in GPU"
    assert listing.cases["cpu"] == "cpu" and "passes" in listing.cases


def test_pass_fail_crash_and_timeout_are_told_apart(tmp_path: Path):
    program = stand_in(tmp_path)
    passed = run_case(program, "passes", 10, tmp_path, seed=42)
    assert passed.status == "passed" and passed.timing("k")["median_s"] == 0.5
    failed = run_case(program, "fails", 10, tmp_path, seed=42)
    assert failed.status == "failed" and failed.messages == ["Wrong result for input: n = 3 (seed 42)"]
    crashed = run_case(program, "crashes", 10, tmp_path, seed=42)
    assert crashed.status == "crashed" and "SIGSEGV" in crashed.messages[0]
    hung = run_case(program, "hangs", 1, tmp_path, seed=42)
    assert hung.status == "timed_out" and "killed after" in hung.messages[0]
    late = run_case(program, "crashes after", 10, tmp_path, seed=42)
    assert late.status == "crashed" and "SIGABRT" in late.messages[-1]  # 134 = 128 + SIGABRT, as a sandbox reports it
    missing = run_case(program, "no such case", 10, tmp_path, seed=42)
    assert missing.status == "not_found"


def test_timeout_kills_the_whole_process_group(tmp_path: Path):
    marker = tmp_path / "grandchild-still-alive"
    script = f"(sleep 2; touch {marker}) & sleep 30"
    result = run_process(["bash", "-c", script], cwd=tmp_path, env=scrubbed_env(tmp_path), timeout_s=0.5)
    assert result.timed_out and result.returncode is None
    import time
    time.sleep(2.5)
    assert not marker.exists(), "a child of the timed-out process survived the kill"


def test_environment_is_scrubbed(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "x")
    result = run_process(["env"], cwd=tmp_path, env=scrubbed_env(tmp_path, {"KIT_SEED": "5"}), timeout_s=10)
    assert "SECRET_TOKEN" not in result.output
    assert "KIT_SEED=5" in result.output and f"HOME={tmp_path}" in result.output


def test_children_number_gpus_as_nvidia_smi_does_whatever_the_grader_was_given(tmp_path: Path, monkeypatch):
    # An index in CUDA_VISIBLE_DEVICES names the GPU whose lock the grader takes only in nvidia-smi's order.
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    result = run_process(["env"], cwd=tmp_path, env=scrubbed_env(tmp_path), timeout_s=10)
    lines = result.output.splitlines()
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in lines and "CUDA_VISIBLE_DEVICES=1" in lines


def test_endless_output_keeps_only_a_tail(tmp_path: Path):
    result = run_process(["bash", "-c", "yes line | head -c 5000000"], cwd=tmp_path, env=scrubbed_env(tmp_path),
                         timeout_s=20)
    assert result.ok and len(result.output) <= 16_000


def stand_in_lab(tmp_path: Path, serial: bool = False,
                 cases: tuple[str, ...] = ("passes", "fails", "crashes", "hangs", "crashes after")):
    """A lab whose tests are these of the stand-in's cases, as the scheduler reads them: 10 s each, 'hangs' 1 s;
    with `serial`, each needs the GPU alone, so that each runs in a program of its own."""
    tests = "".join(f'\n[[tests]]\nname = "{name}"\npoints = 1\ntimeout_s = {1 if name == "hangs" else 10}\n'
                    f'serial = {str(serial).lower()}\n' for name in cases)
    write(tmp_path / "repo/labs/70-stand-in/lab.toml", TOY_CONFIG_HEAD + tests)
    return load_lab("70-stand-in", tmp_path / "repo")


@pytest.mark.parametrize("serial", [False, True], ids=["in a shared program", "each in a program of its own"])
def test_a_submission_that_runs_out_of_time_skips_its_remaining_cases(tmp_path: Path, serial: bool):
    outcomes = evaluate(stand_in_lab(tmp_path, serial), stand_in(tmp_path), tmp_path / "run",
                        ["passes", "hangs", "fails"]).outcomes
    assert outcomes["passes"].status == "passed"
    assert outcomes["hangs"].status == "timed_out"
    assert outcomes["fails"].status == "not_run"
    assert "'hangs'" in outcomes["fails"].messages[0] and "fix that case first" in outcomes["fails"].messages[0]


def test_an_honest_failure_does_not_spend_the_budget(tmp_path: Path):
    outcomes = evaluate(stand_in_lab(tmp_path), stand_in(tmp_path), tmp_path / "run",
                        ["fails", "crashes", "passes"]).outcomes
    assert [o.status for o in outcomes.values()] == ["failed", "crashed", "passed"]


def test_cases_sharing_a_program_settle_only_their_passes(tmp_path: Path):
    settled = run_group(stand_in(tmp_path), [("passes", 10), ("fails", 10), ("cpu", 10)], tmp_path, seed=3)
    assert sorted(settled) == ["cpu", "passes"]  # the failure is left to run alone
    assert settled["passes"].passed and settled["passes"].timing("k")["median_s"] == 0.5


def test_a_crash_leaves_every_case_of_its_program_to_run_alone(tmp_path: Path):
    program = stand_in(tmp_path)
    assert run_group(program, [("passes", 10), ("crashes", 10), ("cpu", 10)], tmp_path, seed=3) == {}
    # passed, then the program died on its way out: which case is to blame is for runs alone to tell
    assert run_group(program, [("passes", 10), ("crashes after", 10)], tmp_path, seed=3) == {}


def test_cases_timed_together_spin_and_take_only_the_listed_measurements(tmp_path: Path):
    settled = run_group(stand_in(tmp_path), [("passes", 10), ("cpu", 10)], tmp_path, seed=3, beside_others=False,
                        measure_only=frozenset({"k"}))
    assert settled["passes"].timing("k")["gpu_wait"] is None  # a program that times keeps the spinning wait
    assert settled["passes"].timing("k")["measure_only"] == "k"
    beside = run_group(stand_in(tmp_path), [("passes", 10), ("cpu", 10)], tmp_path, seed=3)
    assert beside["passes"].timing("k")["gpu_wait"] == "block" and beside["passes"].timing("k")["measure_only"] is None


def test_a_check_that_found_the_gpu_busy_beside_others_runs_again_alone(tmp_path: Path):
    lab = stand_in_lab(tmp_path, cases=("passes", "busy beside others", "busy with its own work"))
    run = evaluate(lab, stand_in(tmp_path), tmp_path / "run")
    programs = [(p["cases"], p["hold"]) for p in run.programs if p["cases"]]  # not the listing
    # found busy in the shared program: straight to one program alone for both (one of its own beside others would
    # find the same); the one still busy there is decided in a program of its own
    assert programs == [(["passes", "busy beside others", "busy with its own work"], "shared"),
                        (["busy beside others", "busy with its own work"], "alone"), (["busy with its own work"], "alone")]
    assert run.outcomes["passes"].passed
    assert run.outcomes["busy beside others"].passed  # alone, the GPU was free: others' work had kept it busy
    busy = run.outcomes["busy with its own work"]  # alone too: then it was the runner's own work
    assert busy.status == "failed" and busy.gpu_busy and "still had work running" in busy.messages[0]


def test_only_a_failed_case_is_taken_as_found_busy():
    exited = ProcessResult(returncode=1, timed_out=False, output="", seconds=1.0)
    records = [{"kind": "case_start", "case": "c"}, {"kind": "case", "case": "c", "status": "passed", "gpu_busy": True}]
    assert not judge._outcome("c", records, exited).gpu_busy  # it passed: nothing to run again
    records[1]["status"] = "failed"
    assert judge._outcome("c", records, exited).gpu_busy


def test_a_case_found_busy_in_a_program_of_its_own_beside_others_runs_again_alone(tmp_path: Path):
    lab = stand_in_lab(tmp_path, cases=("busy beside others",))  # alone in the lab: no shared program
    run = evaluate(lab, stand_in(tmp_path), tmp_path / "run")
    assert [(p["cases"], p["hold"]) for p in run.programs if p["cases"]] == [
        (["busy beside others"], "shared"), (["busy beside others"], "alone")]
    assert run.outcomes["busy beside others"].passed


def test_a_timing_case_found_busy_with_the_gpu_held_alone_is_timed_again_in_its_own_program(tmp_path: Path):
    settled = run_group(stand_in(tmp_path), [("passes", 10), ("busy with its own work", 10)], tmp_path, seed=3,
                        beside_others=False)
    assert list(settled) == ["passes"]  # alone, busy is the runner's own work: its own run decides


def timed_lab(tmp_path: Path):
    """A lab whose timing cases are the stand-in's 'passes', 'fails' and 'cpu', and whose one test is serial."""
    perf = "".join(f'\n[[perf]]\ncase = "{name}"\nmeasurement = "k"\npoints = 1\n' for name in ("passes", "fails", "cpu"))
    tests = '\n[[tests]]\nname = "crashes after"\npoints = 1\nserial = true\n'
    write(tmp_path / "repo/labs/71-timed/lab.toml", TOY_CONFIG_HEAD + tests + perf)
    return load_lab("71-timed", tmp_path / "repo")


def test_timing_cases_share_one_program_and_a_failed_one_runs_again_alone(tmp_path: Path):
    run = evaluate(timed_lab(tmp_path), stand_in(tmp_path), tmp_path / "run")
    programs = [(p["cases"], p["hold"]) for p in run.programs if p["cases"]]  # not the listing
    # the serial test in a program of its own; the timing cases together; the failure again in its own
    assert programs == [(["crashes after"], "alone"), (["passes", "fails", "cpu"], "alone"), (["fails"], "alone")]
    assert run.outcomes["passes"].passed and run.outcomes["cpu"].passed
    assert run.outcomes["passes"].timing("k")["pid"] == run.outcomes["cpu"].timing("k")["pid"]
    assert run.outcomes["fails"].status == "failed" and run.outcomes["crashes after"].status == "crashed"


def test_serial_tests_that_may_share_a_program_run_alone_in_one_with_the_busy_ones(tmp_path: Path):
    # 'passes' and 'cpu' only take much memory (share_program); 'fails' reads the device's state (a program of its own)
    tests = "".join(f'\n[[tests]]\nname = "{name}"\npoints = 1\nserial = true\n{share}'
                    for name, share in (("passes", "share_program = true\n"), ("fails", ""),
                                        ("cpu", "share_program = true\n")))
    tests += '\n[[tests]]\nname = "busy beside others"\npoints = 1\n'
    write(tmp_path / "repo/labs/72-sharing/lab.toml", TOY_CONFIG_HEAD + tests)
    run = evaluate(load_lab("72-sharing", tmp_path / "repo"), stand_in(tmp_path), tmp_path / "run")
    programs = [(p["cases"], p["hold"]) for p in run.programs if p["cases"]]
    assert programs == [(["busy beside others"], "shared"), (["fails"], "alone"),
                        (["passes", "cpu", "busy beside others"], "alone")]
    assert run.outcomes["passes"].passed and run.outcomes["cpu"].passed and run.outcomes["busy beside others"].passed
    assert run.outcomes["fails"].status == "failed"


def test_a_case_that_hangs_in_a_shared_program_has_its_own_time_limit(tmp_path: Path):
    started = time.monotonic()
    settled = run_group(stand_in(tmp_path), [("passes", 10), ("hangs", 1), ("cpu", 10)], tmp_path, seed=3)
    assert time.monotonic() - started < 6  # stopped after its own second, not the group's 21
    assert settled["passes"].passed
    assert settled["hangs"].status == "timed_out" and "within its time limit (1 s)" in settled["hangs"].messages[0]
    assert "cpu" not in settled  # never reached: the caller decides (a spent budget skips it)



def _program(tmp_path: Path, name: str, libraries: list[str]) -> Path:
    """A tiny program that needs `libraries` (forced into its dynamic section), as a runner would be linked."""
    import shutil
    import subprocess
    cuda_lib = Path("/usr/local/cuda/lib64")
    if shutil.which("cc") is None or not (cuda_lib / "libcublas.so").exists():
        pytest.skip("needs a C compiler and the CUDA toolkit's libraries in /usr/local/cuda/lib64")
    source = tmp_path / f"{name}.c"
    source.write_text("int main(void) { return 0; }\n")
    program = tmp_path / name
    subprocess.run(["cc", str(source), "-o", str(program), f"-L{cuda_lib}", "-Wl,--no-as-needed",
                    *[f"-l{lib}" for lib in libraries]], check=True)
    return program


def test_a_runner_sees_only_the_cuda_libraries_it_was_linked_with(tmp_path: Path):
    """The runner's sandbox covers every CUDA math library its program does not need: lab 04's runner (no
    cuBLAS: it is the yardstick) must not find libcublas by name or by dlopen, while a runner of a lab that lets
    students use cuBLAS keeps it."""
    from grader.run.runner import linked_libraries, runner_confinement
    plain = _program(tmp_path, "plain-runner", [])
    with_cublas = _program(tmp_path, "cublas-runner", ["cublas"])
    assert linked_libraries(plain) == set()
    assert linked_libraries(with_cublas) == {"cublas"}
    hidden_from_plain = {p.name for p in runner_confinement(plain, None).hidden}
    hidden_from_cublas = {p.name for p in runner_confinement(with_cublas, None).hidden}
    assert any(name.startswith("libcublas.so") for name in hidden_from_plain), hidden_from_plain
    assert not any(name.startswith("libcublas.so") for name in hidden_from_cublas), hidden_from_cublas
    assert any(name.startswith("libcufft.so") for name in hidden_from_cublas)


def test_a_runner_sees_neither_the_results_file_nor_the_parameters(tmp_path: Path):
    """The runner's sandbox binds its own program and nothing of the judge's folder: not the results file, not
    params.txt beside the program (hidden parameters), and it writes nothing outside its private /tmp."""
    from grader.run.runner import runner_confinement
    runner = tmp_path / "lab-tests-runner"
    runner.write_text("")
    (tmp_path / "params.txt").write_text("very_large_n=268435459\n")
    spec = runner_confinement(runner, None)
    assert spec.readable == (runner,)
    assert spec.writable == ()
    assert spec.chdir == Path("/tmp")


JUDGE_STAND_IN = r'''#!/usr/bin/env python3
# A judge that starts its runner as the harness does (KIT_RUNNER_PREFIX, then KIT_RUNNER) and reports what the
# runner could see: it passes only if the runner saw no KIT_ variable and could not read the results file.
import json, os, subprocess, sys
out = open(os.environ["KIT_RESULTS"], "a")
def record(**fields):
    out.write(json.dumps(fields) + "\n"); out.flush()
record(kind="run", gpu_available=True, gpu="Stand-in GPU", driver="1.0")
if "--list-test-cases" in sys.argv:
    record(kind="listed", case="runner", suite=""); sys.exit(0)
command = [line for line in os.environ.get("KIT_RUNNER_PREFIX", "").split("\n") if line] + [os.environ["KIT_RUNNER"]]
env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG")}
seen = subprocess.run(command + [os.environ["KIT_RESULTS"]], capture_output=True, text=True, env=env).stdout
record(kind="case_start", case="runner")
record(kind="case", case="runner", status="passed" if seen.strip() == "nothing" else "failed", seconds=0.1,
       messages=[seen])
'''

RUNNER_STAND_IN = r'''#!/usr/bin/env python3
import os, sys
seen = [k for k in os.environ if k.startswith("KIT_")]
try:
    open(sys.argv[1]).read(); seen.append("the results file")
except OSError:
    pass
print(", ".join(seen) or "nothing")
'''


def test_a_split_lab_runs_its_runner_in_the_sandbox_and_its_judge_outside(tmp_path: Path):
    """With a <program>-runner beside the program, the grader runs the program (the judge) as it is and hands it
    the sandboxed command for the runner: the runner sees no KIT_ variable and cannot read the results file."""
    from grader import sandbox
    if why := sandbox.probe():
        pytest.skip(f"no OS sandbox here: {why}")
    judge = tmp_path / "lab" / "lab-tests"
    judge.parent.mkdir()
    judge.write_text(JUDGE_STAND_IN)
    runner = judge.with_name("lab-tests-runner")
    runner.write_text(RUNNER_STAND_IN)
    for program in (judge, runner):
        program.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    sandbox.use(sandbox.Policy(enabled=True))
    try:
        outcome = run_case(judge, "runner", 60, work, seed=913)
    finally:
        sandbox.use(sandbox.Policy(enabled=False))
    assert outcome.status == "passed", outcome.messages + [outcome.output_tail]
