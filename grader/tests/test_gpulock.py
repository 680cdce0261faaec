"""The GPU lock between separate grader processes: exclusive excludes everything, shared holders run
together, and a waiting exclusive holder is not starved by shared ones that keep coming."""
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from grader import gpulock
from grader.gpulock import Gpu, GpuLock, choose_gpus, parse_smi_listing
from grader.tests.conftest import REPO

HOLDER = """
import json, sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from grader.gpulock import GpuLock
lock = GpuLock("gpu-test", Path({folder!r}))
hold = lock.exclusive() if {mode!r} == "exclusive" else lock.shared()
with hold as waited:
    start = time.time()
    time.sleep({seconds})
    end = time.time()
print(json.dumps({{"mode": {mode!r}, "start": start, "end": end, "waited": waited}}))
"""


def holder(folder: Path, mode: str, seconds: float) -> subprocess.Popen:
    code = HOLDER.format(repo=str(REPO), folder=str(folder), mode=mode, seconds=seconds)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def result(process: subprocess.Popen) -> dict:
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    return json.loads(out)


def overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def wait_until_held(folder: Path, process: subprocess.Popen) -> None:
    """Wait until `process` holds the lock: then a non-blocking exclusive attempt fails."""
    import fcntl
    import os
    path = GpuLock("gpu-test", folder).path
    for _ in range(300):
        fd = os.open(path, os.O_RDONLY | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            return
        finally:
            os.close(fd)
        time.sleep(0.05)
    raise AssertionError("the holder never took the lock")


def test_exclusive_excludes_shared_and_shared_holders_run_together(tmp_path: Path):
    first = holder(tmp_path, "exclusive", 1.0)
    wait_until_held(tmp_path, first)
    readers = [holder(tmp_path, "shared", 1.0) for _ in range(2)]
    timed = result(first)
    shared = [result(r) for r in readers]
    assert all(s["start"] >= timed["end"] - 0.01 for s in shared)  # they queued behind the exclusive holder
    assert overlap(shared[0], shared[1])  # and then ran side by side


def test_a_waiting_exclusive_holder_is_not_starved(tmp_path: Path):
    reader = holder(tmp_path, "shared", 1.5)
    wait_until_held(tmp_path, reader)
    writer = holder(tmp_path, "exclusive", 0.5)
    time.sleep(0.5)  # the writer now waits for the reader
    late_reader = holder(tmp_path, "shared", 0.5)
    first, timed, late = result(reader), result(writer), result(late_reader)
    assert timed["start"] >= first["end"] - 0.01
    assert late["start"] >= timed["end"] - 0.01, "a shared holder got in ahead of the waiting exclusive one"


def test_threads_of_one_grader_queue_too(tmp_path: Path):
    lock = GpuLock("gpu-test", tmp_path)
    spans = []

    def timed():
        with lock.exclusive():
            start = time.time()
            time.sleep(0.3)
            spans.append((start, time.time()))

    threads = [threading.Thread(target=timed) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spans.sort()
    assert all(a[1] <= b[0] + 0.01 for a, b in zip(spans, spans[1:]))


def _span(lock: GpuLock, how: str, seconds: float, spans: dict, name: str) -> threading.Thread:
    def hold():
        with (lock.shared() if how == "shared" else lock.exclusive()):
            start = time.monotonic()
            time.sleep(seconds)
            spans[name] = (start, time.monotonic())
    thread = threading.Thread(target=hold)
    thread.start()
    return thread


def test_a_waiting_exclusive_holder_lets_the_others_by_a_hold_that_looks_hung(tmp_path: Path, monkeypatch):
    # A student's kernel that never ends holds the lock shared until its case's time limit. The timing that
    # waits for it must not shut out every other correctness run of the class meanwhile.
    monkeypatch.setattr(gpulock, "SUSPECT_AFTER_S", 0.4)
    lock = GpuLock("gpu-test", tmp_path)
    spans: dict = {}
    hung = _span(lock, "shared", 1.5, spans, "hung")
    time.sleep(0.1)
    timing = _span(lock, "exclusive", 0.1, spans, "timing")
    time.sleep(0.6)  # the first hold now looks hung
    other = _span(lock, "shared", 0.2, spans, "other")
    for thread in (hung, timing, other):
        thread.join()
    assert spans["other"][0] < spans["hung"][1], "a correctness run waited behind the hung one"
    assert spans["timing"][0] >= max(spans["hung"][1], spans["other"][1]) - 0.01, "timed beside a shared holder"


def test_a_hold_is_suspect_only_when_long_against_the_graders_usual_holds(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(gpulock, "SUSPECT_AFTER_S", 0.05)
    lock = GpuLock("gpu-test", tmp_path)
    for _ in range(3):  # the usual hold here lasts 0.2 s
        with lock.shared():
            time.sleep(0.2)
    spans: dict = {}
    thread = _span(lock, "shared", 0.9, spans, "long")
    time.sleep(0.3)
    assert not lock.suspect_hold(), "0.3 s is not long against holds of 0.2 s"
    time.sleep(0.4)
    assert lock.suspect_hold(), "0.7 s is more than twice the usual 0.2 s"
    thread.join()
    assert not lock.suspect_hold()


SMI = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-66666666-7777-8888-9999-000000000000)
"""


def test_gpus_are_keyed_by_uuid_and_follow_cuda_visible_devices():
    listed = parse_smi_listing(SMI)
    assert [g.key for g in listed] == ["GPU-11111111-2222-3333-4444-555555555555",
                                       "GPU-66666666-7777-8888-9999-000000000000"]
    assert listed[0].name == "NVIDIA H100 80GB HBM3" and listed[0].visible == listed[0].key
    assert choose_gpus(listed, None) == listed
    assert choose_gpus(listed, "1") == [listed[1]]
    assert choose_gpus(listed, listed[1].key) == [listed[1]]
    assert choose_gpus([], "0,1") == [Gpu("0", "0"), Gpu("1", "1")]  # no nvidia-smi: the indices
    assert choose_gpus([], None) == [Gpu("0", "0")]
