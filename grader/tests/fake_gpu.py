"""A stand-in for a lab's test program on a GPU, for grading tests on machines without one.

`fake_build` replaces the build stage: instead of compiling the student's
toy.cu it writes this program, told how to behave by the comment line
`// fake: {...}` in toy.cu (or `// fake: compile error`): which cases fail, hang or crash, the medians its timing
reports (a megabyte's work, so 1 ms is 1 GB/s) and those of measurements it reports before it (`stages`), a
timing that is implausible, cases whose check finds the GPU busy when they run beside others (`busy_beside`),
the GPU's name, whether it is a split lab's judge (a runner file beside it). The program lists
its cases and runs one per call as a harness-built program does (the JSON
records in $KIT_RESULTS), and logs when each run started and ended and on which GPU (its
CUDA_VISIBLE_DEVICES), so that tests can check what ran beside what.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from grader.build import BuildResult, binary_path

PROGRAM = r'''#!PYTHON
import json, os, signal, subprocess, sys, time
if sys.argv[1:] == ["--kit-serve"]:
    # A judge serving runs (grader/run/servers.py): each run is this program started with the run's arguments,
    # environment, folder and output, behaving as the student's build beside the runner it names asks.
    print("ready", flush=True)
    run, pending = {"arg": [], "env": {}}, b""
    while chunk := sys.stdin.buffer.read1(1 << 16):
        pending += chunk
        while b"\0" in pending:
            field, _, pending = pending.partition(b"\0")
            key, _, value = field.decode().partition("=")
            if key == "env":
                run["env"][value.partition("=")[0]] = value.partition("=")[2]
            elif key == "arg":
                run["arg"].append(value)
            elif key:
                run[key] = value
            else:
                student = os.path.join(os.path.dirname(run["env"]["KIT_RUNNER"]), "behaviour.json")
                with open(run["out"], "w") as output:
                    code = subprocess.call([sys.argv[0], *run["arg"]], cwd=run["cwd"], stdout=output,
                                           stderr=subprocess.STDOUT,
                                           env={**run["env"], "FAKE_BEHAVIOUR": student, "FAKE_JUDGE": str(os.getpid())})
                if code < 0:  # it died of a signal: so does the judge, as one whose own process crashed
                    os.kill(os.getpid(), -code)
                print(f"done {code} ok", flush=True)
                run = {"arg": [], "env": {}}
    sys.exit(0)
behaviour = json.load(open(os.environ.get("FAKE_BEHAVIOUR", BEHAVIOUR)))
out = open(os.environ["KIT_RESULTS"], "a")
def record(**fields):
    out.write(json.dumps(fields) + "\n"); out.flush()
record(kind="run", gpu_available=behaviour.get("gpu", True), gpu=behaviour.get("gpu_name", "Fake GPU"),
       driver="1.0", why_no_gpu="no driver in this test", seed=int(os.environ.get("KIT_SEED", 0)))
cases = behaviour["cases"]
if "--list-test-cases" in sys.argv:
    with open(behaviour["log"] + ".listings", "a") as log:
        log.write(behaviour["who"] + "\n")
    for name in cases:
        record(kind="listed", case=name, suite=behaviour.get("suites", {}).get(name, ""))
    sys.exit(0)
# As doctest does: a comma-separated list of names, run in the program's own order.
wanted = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--test-case=")).split(",")
with open(behaviour["log"] + ".programs", "a") as log:  # each start of the program, with what it was asked
    log.write(json.dumps({"who": behaviour["who"], "cases": wanted, "gpu_wait": os.environ.get("KIT_GPU_WAIT"),
                          "work_queues": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"),
                          "measure_only": os.environ.get("KIT_MEASURE_ONLY"),
                          "served_by": os.environ.get("FAKE_JUDGE"),
                          "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}) + "\n")
only = os.environ.get("KIT_MEASURE_ONLY")  # as kit::measured reads it
measured = lambda name: only is None or name in only.split(",")
failed = False
for name in [c for c in cases if c in wanted]:
    start = time.time()
    record(kind="case_start", case=name)
    if name in behaviour.get("hang", []):
        time.sleep(600)
    if name in behaviour.get("crash", []):
        os.abort()
    time.sleep(behaviour.get("seconds", 0.05))
    # As the harness does, a rate past what the hardware allows is recorded, then fails its case.
    too_fast = name in behaviour.get("implausible", [])
    # A check that needs the GPU free of the runner's work, beside programs whose work keeps it busy (gpu_free).
    busy = name in behaviour.get("busy_beside", []) and os.environ.get("KIT_GPU_WAIT") == "block"
    status = "failed" if name in behaviour.get("fail", []) or too_fast or busy else "passed"
    failed = failed or status == "failed"
    if name in behaviour.get("timing", []):
        counter = os.path.join(os.path.dirname(BEHAVIOUR), "timing-runs")
        runs = int(open(counter).read()) if os.path.exists(counter) else 0
        open(counter, "w").write(str(runs + 1))
        medians = behaviour.get("medians", [0.001])
        median = medians[min(runs, len(medians) - 1)]
        # Measurements of the same case before the timed one (a pipeline's stages alone), each with its medians.
        for stage, stage_medians in behaviour.get("stages", {}).items():
            if not measured(stage):
                continue
            stage_median = stage_medians[min(runs, len(stage_medians) - 1)]
            record(kind="timing", case=name, name=stage, median_s=stage_median, rate=0.001 / stage_median,
                   unit="GB/s", samples=[stage_median])
        record(kind="timing", case=name, name=behaviour["measurement"], median_s=median,
               rate=0.001 / median, unit="GB/s", samples=[0.001], implausible=too_fast)
    record(kind="case", case=name, status=status, seconds=0.05, gpu_busy=busy,
           messages=["the GPU was busy"] if busy else ["wrong result for n = 3"] if status == "failed" else [])
    with open(behaviour["log"], "a") as log:
        log.write(json.dumps({"who": behaviour["who"], "case": name, "start": start, "end": time.time(),
                              "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}) + "\n")
sys.exit(1 if failed else 0)
'''


def write_program(folder: Path, name: str, behaviour: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "behaviour.json").write_text(json.dumps(behaviour))
    program = folder / name
    program.write_text(PROGRAM.replace("PYTHON", sys.executable).replace("BEHAVIOUR",
                                                                          repr(str(folder / "behaviour.json"))))
    program.chmod(0o755)
    if behaviour.get("split"):  # a judge beside its runner, which this stand-in judge never starts; serving, it
        # behaves as the behaviour.json beside the runner it is given asks
        (folder / (name + "-runner")).write_text("#!/bin/sh\nexit 0\n")
    return program


def behaviour_of(source: str) -> dict | None:
    """The behaviour a toy.cu asks for; None for a compile error."""
    line = next(line for line in source.splitlines() if line.startswith("// fake: "))
    text = line.removeprefix("// fake: ")
    return None if text == "compile error" else json.loads(text)


class FakeBuilds:
    """Stands in for grade.build_submission and classroom.build_reference_tree."""

    def __init__(self, config, log: Path, reference: dict):
        self.config = config
        self.log = log
        self.reference = reference
        self.cases = list(config.all_case_names)
        self.timing = list(config.timing_cases)
        self.builds: list[Path] = []

    def _behaviour(self, who: str, asked: dict) -> dict:
        return {"cases": self.cases, "timing": self.timing, "measurement": self.config.perf[0].measurement,
                "log": str(self.log), "who": who, **asked}

    def build_submission(self, config, staged_folder: Path, build_dir: Path, reference_build=None) -> BuildResult:
        self.builds.append(staged_folder)
        asked = behaviour_of((staged_folder / "toy.cu").read_text())
        if asked is None:
            # nvcc names the file it compiled: the staged copy
            return BuildResult(ok=False, binary=None, log=f"{staged_folder / 'toy.cu'}(3): error: expected a \";\"")
        program = write_program(build_dir, "toy-tests", self._behaviour(staged_folder.parent.name, asked))
        return BuildResult(ok=True, binary=program, log="")

    def build_reference_tree(self, config, folder: Path) -> Path:
        write_program(binary_path(folder, config.name, "reference").parent, f"{config.name}-reference-tests",
                      self._behaviour("reference", self.reference))
        return folder
