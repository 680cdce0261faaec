"""Hostile lab 01 submissions graded for real, on a GPU machine: none may earn a point it did not.

Each attack is a correct vector add plus a trick a student tried on the landed grader. They run
where a GPU is (each is a whole build and grading; on a CPU machine `test_linkcheck.py` and
`test_sandbox.py` prove the same refusals on small programs). The honest yardstick is a correct
but slow kernel: no trick may lift it above its own score.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from grader import build, sandbox
from grader.config import load_lab
from grader.errors import NoGpu
from grader.grade import build_reference, grade_submission
from grader.run.schedule import time_reference
from grader.tests.conftest import grading_lock, needs_cuda_toolchain

# Of the lab's performance points: run-to-run noise between two gradings of the same slow kernel through the
# judge/runner path. Measured on an H200 on 2026-11-26: 3.88 and 4.19 of 15 points (2.1%), where 2% was set.
PERF_TOLERANCE = 0.05

HEADER = """\
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "kit/cuda_check.cuh"
#include "vector_add.cuh"
"""

# Slow on purpose: each thread adds 16 consecutive elements, so a warp's reads are 16 floats apart.
SLOW_KERNEL = """\
constexpr int kRun = 16;
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int first = (blockIdx.x * blockDim.x + threadIdx.x) * kRun;
  for (int i = first; i < first + kRun && i < n; ++i) c[i] = a[i] + b[i];
}
void slow_launch(const float* a, const float* b, float* c, int n) {
  const int threads = (n + kRun - 1) / kRun;
  vector_add_kernel<<<(threads + 255) / 256, 256>>>(a, b, c, n);
  CUDA_CHECK_LAUNCH();
}
void vector_add(const float* left, const float* right, float* sum, int n) {
  const size_t size = sizeof(float) * n;
  float* device[3];  // left, right, sum
  for (float*& vector : device) CUDA_CHECK(cudaMalloc(&vector, size));
  CUDA_CHECK(cudaMemcpy(device[0], left, size, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(device[1], right, size, cudaMemcpyHostToDevice));
  launch_vector_add(device[0], device[1], device[2], n);
  CUDA_CHECK(cudaMemcpy(sum, device[2], size, cudaMemcpyDeviceToHost));
  for (float* vector : device) CUDA_CHECK(cudaFree(vector));
}
"""

HONEST = HEADER + SLOW_KERNEL + """
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
"""

# Refused before anything runs: (source, words the student's message must contain).
REFUSED_AT_BUILD = {
    "forged clock_gettime": ("""
extern "C" int clock_gettime(clockid_t, struct timespec* t) { t->tv_sec = 0; t->tv_nsec = 0; return 0; }
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
""", ["clock_gettime", "libc"]),
    "forged cudaEventElapsedTime": ("""
extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) { *ms = 1e-3f; return cudaSuccess; }
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
""", ["cudaEventElapsedTime", "libcudart"]),
    "file written with a raw system call": ("""
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  syscall(SYS_open, "/tmp/pwned-by-a-submission", 0101, 0644);
  slow_launch(a, b, c, n);
}
""", ["syscall"]),
    "system call in inline assembly": ("""
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(39L) : "rcx", "r11", "memory");
  slow_launch(a, b, c, n);
}
""", ["system call"]),
    "forbidden call spelled by token pasting": ("""
#define JOIN(x, y) x##y
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  JOIN(ki, ll)(JOIN(getp, pid)(), 9);
  slow_launch(a, b, c, n);
}
""", ["kill"]),
}

# Pass the build; the timing guard must take away what they try to gain.
TIMING_TRICKS = {
    "returns early when called again with the same pointers": """
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  static const float* last = nullptr;
  static int calls = 0;
  if (a == last && ++calls > 1) return;
  last = a;
  calls = 1;
  slow_launch(a, b, c, n);
}
""",
    "restores a cached output on repeated calls": """
#include <vector>
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  static const float* last = nullptr;
  static float* saved = nullptr;
  static int saved_n = 0;
  if (a == last && saved != nullptr && saved_n == n) {
    CUDA_CHECK(cudaMemcpyAsync(c, saved, n * sizeof(float), cudaMemcpyDeviceToDevice));
    return;
  }
  slow_launch(a, b, c, n);
  if (saved != nullptr) CUDA_CHECK(cudaFree(saved));
  CUDA_CHECK(cudaMalloc(&saved, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(saved, c, n * sizeof(float), cudaMemcpyDeviceToDevice));
  last = a;
  saved_n = n;
}
""",
}


# Finds any function of the C library by name without naming it in the object file: from printf's
# address down to libc's ELF header, then through its dynamic symbol table. The link check sees
# only printf and strcmp; whatever the student's process can reach, this reaches.
FIND_SYMBOL = """
#include <elf.h>
#include <link.h>
#include <cstdint>
#include <cstring>
#include <cstdio>
static void* libc_symbol(const char* wanted) {
  std::uintptr_t base = reinterpret_cast<std::uintptr_t>(&printf) & ~std::uintptr_t(0xfff);
  while (std::memcmp(reinterpret_cast<const void*>(base), ELFMAG, SELFMAG) != 0) base -= 0x1000;
  const auto* header = reinterpret_cast<const ElfW(Ehdr)*>(base);
  const auto* program = reinterpret_cast<const ElfW(Phdr)*>(base + header->e_phoff);
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < header->e_phnum; ++i)
    if (program[i].p_type == PT_DYNAMIC) dynamic = reinterpret_cast<const ElfW(Dyn)*>(base + program[i].p_vaddr);
  std::uintptr_t symbols = 0, names = 0;
  for (; dynamic && dynamic->d_tag != DT_NULL; ++dynamic) {
    std::uintptr_t at = dynamic->d_un.d_ptr < base ? base + dynamic->d_un.d_ptr : dynamic->d_un.d_ptr;
    if (dynamic->d_tag == DT_SYMTAB) symbols = at;
    if (dynamic->d_tag == DT_STRTAB) names = at;
  }
  for (auto* s = reinterpret_cast<const ElfW(Sym)*>(symbols); reinterpret_cast<std::uintptr_t>(s) < names; ++s)
    if (s->st_name && s->st_value && std::strcmp(reinterpret_cast<const char*>(names) + s->st_name, wanted) == 0)
      return reinterpret_cast<void*>(base + s->st_value);
  return nullptr;
}
"""

# A kernel that keeps the GPU busy for `ns` nanoseconds of its global timer.
KEEP_BUSY = """
__global__ void keep_busy(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
"""

# Pass the build, and try what only a separate process stops (the judge/runner split, harness/runner/).
IN_PROCESS_ATTACKS = {
    # No kernel at all: append "passed" records and a fast timing to the results file, then leave.
    "forged results file": FIND_SYMBOL + """
using Open = FILE* (*)(const char*, const char*);
using Env = char* (*)(const char*);
using Print = int (*)(FILE*, const char*, ...);
using Leave = void (*)(int);
void vector_add(const float*, const float*, float*, int) {}
void launch_vector_add(const float*, const float*, float*, int) {
  const char* path = reinterpret_cast<Env>(libc_symbol("getenv"))("KIT_RESULTS");
  if (path == nullptr) return;
  FILE* file = reinterpret_cast<Open>(libc_symbol("fopen"))(path, "a");
  if (file == nullptr) return;
  auto print = reinterpret_cast<Print>(libc_symbol("fprintf"));
  for (const char* name : {"vector_add: one element (n = 1)", "launch_vector_add: device vectors with nothing written past the end"})
    print(file, "{\\"kind\\": \\"case\\", \\"case\\": \\"%s\\", \\"status\\": \\"passed\\", \\"seconds\\": 0.1, \\"messages\\": []}\\n", name);
  print(file, "{\\"kind\\": \\"timing\\", \\"case\\": \\"vector add timing: kernel on device-resident vectors\\", \\"name\\": \\"vector_add_kernel\\", \\"median_s\\": 0.0000002, \\"samples_s\\": [0.0000002], \\"work_per_run\\": 805306368, \\"rate\\": 4026531.8, \\"unit\\": \\"GB/s\\", \\"ceiling_names\\": [], \\"ceiling_rates\\": [], \\"ceiling_bounds\\": [], \\"guarded\\": true, \\"verified_calls\\": [], \\"implausible\\": false}\\n");
  reinterpret_cast<Open>(libc_symbol("fflush"))(nullptr, nullptr);
  reinterpret_cast<Leave>(libc_symbol("_exit"))(0);
}
""",
    # The slow kernel, and the clock the old harness read made to stand still in this process.
    "clock patched in the process": FIND_SYMBOL + SLOW_KERNEL + """
using Protect = int (*)(void*, std::size_t, int);
__attribute__((constructor)) static void stop_the_clock() {
  unsigned char* code = static_cast<unsigned char*>(libc_symbol("clock_gettime"));
  auto protect = reinterpret_cast<Protect>(libc_symbol("mprotect"));
  if (code == nullptr || protect == nullptr) return;
  void* page = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(code) & ~std::uintptr_t(0xfff));
  if (protect(page, 0x2000, 7) != 0) return;
  const unsigned char return_zero[] = {0x31, 0xc0, 0xc3};  // xor eax, eax; ret: the time never moves
  std::memcpy(code, return_zero, sizeof(return_zero));
}
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
""",
    # The call returns at once; a thread of its own launches the kernel a moment later, after the reply.
    "work finished after the reply": FIND_SYMBOL + SLOW_KERNEL + """
#include <pthread.h>
struct Late { const float* a; const float* b; float* c; int n; };
static void* finish_late(void* raw) {
  Late late = *static_cast<Late*>(raw);
  delete static_cast<Late*>(raw);
  volatile int delay = 0;
  for (int i = 0; i < 20000; ++i) delay += i;  // let the reply go first
  slow_launch(late.a, late.b, late.c, late.n);
  cudaStreamSynchronize(0);
  return nullptr;
}
using Spawn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  pthread_t thread;
  reinterpret_cast<Spawn>(libc_symbol("pthread_create"))(&thread, nullptr, finish_late, new Late{a, b, c, n});
}
""",
    # Correct results, and a thread that keeps the GPU busy with the runner's own kernels from the first call
    # on: what a check built in the judge's device memory must not run beside (kit::remote::JudgeAlone). The
    # thread queues 30 s of kernels at once, and the first call returns only once they are queued: the GPU runs
    # queued work whether or not the runner is stopped, so every check of that program finds it there. (A
    # thread that launched one kernel at a time could be stopped with the runner before its first launch, and
    # the checks then rightly ran on a quiet GPU; the 2026-11-29 runs saw just that, and nothing of the guard.)
    "kernels running beside the checks": FIND_SYMBOL + SLOW_KERNEL + KEEP_BUSY + """
#include <atomic>
#include <pthread.h>
static std::atomic<bool> queued{false};
static void* keep_spinning(void*) {
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (int i = 0; i < 15; ++i) keep_busy<<<1, 1, 0, stream>>>(2000000000ull);  // 30 s, queued at once
  queued = true;
  cudaStreamSynchronize(stream);
  return nullptr;
}
using Spawn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  slow_launch(a, b, c, n);
  static bool started = false;
  pthread_t thread;
  if (!started) started = reinterpret_cast<Spawn>(libc_symbol("pthread_create"))(&thread, nullptr, keep_spinning,
                                                                                  nullptr) == 0;
  while (started && !queued) {
  }
}
""",
    # The seed the grader runs with, and what it would give away.
    "reads the grading seed": FIND_SYMBOL + SLOW_KERNEL + """
using Env = char* (*)(const char*);
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  const auto getenv_ = reinterpret_cast<Env>(libc_symbol("getenv"));
  for (const char* secret : {"KIT_SEED", "KIT_RESULTS", "KIT_PARAMS"})
    if (getenv_(secret) != nullptr) printf("ATTACK-SAW %s=%s\\n", secret, getenv_(secret));
  slow_launch(a, b, c, n);
}
""",
}


# Lab 04 forbids cuBLAS, which its tests load as the yardstick. A student who knows that looks the library up by
# name (dlopen and dlsym, found through libc's own symbol table) and lets it do both launchers' work. Where the
# runner's sandbox hides it, nothing is computed and every GPU test must fail.
CUBLAS_BY_NAME = FIND_SYMBOL + """
#include "kit/cuda_check.cuh"
#include "tiled_matmul.cuh"
using Open = void* (*)(const char*, int);
using Find = void* (*)(void*, const char*);
using Create = int (*)(void**);
using Gemm = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                     const float*, float*, int);
static Gemm found_gemm(void** handle) {
  const auto load = reinterpret_cast<Open>(libc_symbol("dlopen"));
  const auto find = reinterpret_cast<Find>(libc_symbol("dlsym"));
  if (load == nullptr || find == nullptr) return nullptr;
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"}) {
    void* library = load(name, 2);  // RTLD_NOW
    if (library == nullptr) continue;
    const auto create = reinterpret_cast<Create>(find(library, "cublasCreate_v2"));
    const auto gemm = reinterpret_cast<Gemm>(find(library, "cublasSgemm_v2"));
    if (create != nullptr && gemm != nullptr && create(handle) == 0) return gemm;
  }
  return nullptr;
}
// Row-major C = A B is column-major C^T = B^T A^T.
static void gemm_by_name(const float* a, const float* b, float* c, int m, int k, int n) {
  static void* handle = nullptr;
  static const Gemm gemm = found_gemm(&handle);
  const float one = 1.0f, zero = 0.0f;
  if (gemm != nullptr) gemm(handle, 0, 0, n, m, k, &one, b, n, a, k, &zero, c, n);
}
void launch_tiled_matmul(const float* a, const float* b, float* c, int m, int k, int n) { gemm_by_name(a, b, c, m, k, n); }
void launch_register_tiled_matmul(const float* a, const float* b, float* c, int m, int k, int n) {
  gemm_by_name(a, b, c, m, k, n);
}
"""


def _gpu_here() -> bool:
    return shutil.which("nvidia-smi") is not None and subprocess.run(["nvidia-smi", "-L"],
                                                                      capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _gpu_here(), reason="grades whole submissions on a GPU machine (no GPU here)")


@pytest.fixture(autouse=True)
def sandboxed():
    if why := sandbox.probe():
        pytest.skip(f"no OS sandbox here: {why}")
    sandbox.use(sandbox.Policy(enabled=True))
    yield
    sandbox.use(sandbox.Policy(enabled=False))


def _grade(config, tmp_path: Path, name: str, source: str, reference=None):
    folder = tmp_path / name.replace(" ", "-")
    folder.mkdir()
    (folder / config.student_files[0]).write_text(source)
    return grade_submission(config, folder, tmp_path / f"{folder.name}-work", reference=reference,
                            lock=grading_lock())


def _reference(config, tmp_path: Path):
    """The reference's timing, taken once for all of a test's gradings (each would otherwise build and time it)."""
    build_dir = tmp_path / "reference-build"
    assert build.configure(config, build_dir, None).ok
    return time_reference(config, build_reference(config, build_dir), tmp_path / "reference-run", grading_lock())


def _performance(results: dict) -> float:
    return sum(t["score"] for t in results["tests"] if t["name"].startswith("performance"))


def _correctness_lost(config, results: dict) -> float:
    """The correctness points a graded submission did not get (0 for correct code, whatever else ran on the GPU
    meanwhile: a false failure of the grader's would show here)."""
    return sum(t.points for t in config.tests if not t.extra_credit) - (results["score"] - _performance(results))


@needs_cuda_toolchain()
@pytest.mark.parametrize("attack", sorted(REFUSED_AT_BUILD))
def test_attack_is_refused_at_the_build(lab01, tmp_path: Path, attack: str):
    source, words = REFUSED_AT_BUILD[attack]
    results = _grade(lab01, tmp_path, attack, HEADER + SLOW_KERNEL + source).results
    assert results["score"] == 0
    assert all(word in results["output"] for word in words), results["output"]
    assert not Path("/tmp/pwned-by-a-submission").exists()


@needs_cuda_toolchain()
def test_timing_tricks_gain_nothing_over_the_honest_slow_kernel(lab01, tmp_path: Path):
    try:
        honest = _grade(lab01, tmp_path, "honest", HONEST)
    except NoGpu as error:
        pytest.skip(f"the timing tricks need a GPU ({error})")
    honest_perf = _performance(honest.results)
    assert _correctness_lost(lab01, honest.results) == 0, honest.results
    allowance = PERF_TOLERANCE * sum(p.points for p in lab01.perf)
    for trick, source in TIMING_TRICKS.items():
        cheat = _grade(lab01, tmp_path, trick, HEADER + SLOW_KERNEL + source).results
        assert _performance(cheat) <= honest_perf + allowance, (trick, _performance(cheat), honest_perf)


# The runner starts with the test program, before the judge times its ceilings: a kernel launched from a
# static constructor, still running then, would leave the copy ceiling without a median (and so no rate
# implausible against it), unless the ceiling's own quiet-GPU guard fails the case.
BUSY_AT_START = KEEP_BUSY + """
struct BusyAtStart {
  BusyAtStart() { keep_busy<<<1, 1>>>(8000000000ull); }
} busy_at_start;
void launch_vector_add(const float* a, const float* b, float* c, int n) { slow_launch(a, b, c, n); }
"""


@needs_cuda_toolchain()
def test_a_kernel_left_running_from_the_start_spoils_no_ceiling(lab01, tmp_path: Path):
    try:
        graded = _grade(lab01, tmp_path, "busy at start", HEADER + SLOW_KERNEL + BUSY_AT_START).results
    except NoGpu as error:
        pytest.skip(f"the attack needs a GPU ({error})")
    assert _performance(graded) == 0, graded
    assert "still had work running on the GPU" in json.dumps(graded), graded


@needs_cuda_toolchain()
def test_in_process_attacks_gain_nothing(lab01, tmp_path: Path):
    """The attacks that scored 100/100 when student code shared the tests' process: with the judge/runner split
    none earns a point it did not (no kernel: nothing; a slow kernel: the honest slow kernel's points at most)."""
    try:
        reference = _reference(lab01, tmp_path)
    except NoGpu as error:
        pytest.skip(f"the attacks need a GPU ({error})")
    honest = _grade(lab01, tmp_path, "honest", HONEST, reference)
    allowance = PERF_TOLERANCE * sum(p.points for p in lab01.perf)
    results, scores, outputs = {}, {}, {}
    for attack, source in IN_PROCESS_ATTACKS.items():
        graded = results[attack] = _grade(lab01, tmp_path, attack, HEADER + source, reference).results
        scores[attack] = (graded["score"], _performance(graded))
        outputs[attack] = json.dumps(graded)
        assert "ATTACK-SAW" not in graded["output"] and not any(
            "ATTACK-SAW" in t.get("output", "") for t in graded["tests"]), attack
    print("attack scores (total, performance):", scores, "honest:", honest.results["score"], _performance(honest.results))
    assert _correctness_lost(lab01, honest.results) == 0, honest.results
    assert _correctness_lost(lab01, results["reads the grading seed"]) == 0, scores  # correct code, seed or not
    assert scores["forged results file"][0] == 0, scores
    assert scores["work finished after the reply"][1] == 0, scores
    assert "could not check the result" in outputs["kernels running beside the checks"], scores
    for attack, (total, perf) in scores.items():
        assert total <= honest.results["score"] + allowance, (attack, scores)
        assert perf <= _performance(honest.results) + allowance, (attack, scores)


# Class grading's judges serve one student's programs after another's (grader/run/servers.py). A student who knows
# that leaves a process of their own behind, in a session of its own, writing where the runner's output went, for
# the next students the judge serves to read as theirs, or to be blamed on them.
LEAVES_A_PROCESS = FIND_SYMBOL + """
using Fork = int (*)();
using Call = int (*)();
using Write = long (*)(int, const void*, unsigned long);
using Sleep = int (*)(unsigned);
using Exit = void (*)(int);
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  static bool left = false;
  if (!left && reinterpret_cast<Fork>(libc_symbol("fork"))() == 0) {
    reinterpret_cast<Call>(libc_symbol("setsid"))();
    const char text[] = "ATTACK-LEFTOVER\\n";
    for (int i = 0; i < 6000; ++i) {
      reinterpret_cast<Write>(libc_symbol("write"))(1, text, sizeof(text) - 1);
      reinterpret_cast<Write>(libc_symbol("write"))(2, text, sizeof(text) - 1);
      reinterpret_cast<Sleep>(libc_symbol("usleep"))(10000);
    }
    reinterpret_cast<Exit>(libc_symbol("_exit"))(0);
  }
  left = true;
  slow_launch(a, b, c, n);
}
"""


@needs_cuda_toolchain()
def test_what_a_student_leaves_behind_never_reaches_the_next_student_a_judge_serves(lab01, tmp_path: Path,
                                                                                   monkeypatch):
    from grader import classroom
    try:
        gpus = classroom.list_gpus()
    except NoGpu as error:
        pytest.skip(f"class grading needs a GPU ({error})")
    monkeypatch.setattr(classroom, "list_gpus", lambda: gpus[:1])  # one GPU: one judge serves both, in order
    submissions = tmp_path / "class"
    for name, source in {"a-leaves-a-process": HEADER + SLOW_KERNEL + LEAVES_A_PROCESS, "b-honest": HONEST}.items():
        (submissions / name).mkdir(parents=True)
        (submissions / name / lab01.student_files[0]).write_text(source)
    out = tmp_path / "graded"
    classroom.grade_class(lab01, submissions, out, tmp_path / "work", classroom.ClassOptions(jobs=1, gpu_jobs=1),
                          stream=open("/dev/null", "w"))
    honest = json.loads((out / "b-honest" / "results.json").read_text())
    assert "ATTACK-LEFTOVER" not in json.dumps(honest), honest
    assert _correctness_lost(lab01, honest) == 0, honest
    left = [pid for pid in Path("/proc").glob("[0-9]*")
            if "a-leaves-a-process" in (pid / "cmdline").read_bytes().decode(errors="replace")
            if (pid / "cmdline").exists()]
    assert not left, f"processes of the first student outlived its grading: {left}"


# Before CUDA starts (a static initializer), forget the GPU the grader named, so that CUDA would see every GPU of
# the host; then compute only while just one GPU can be seen. With the others' device files in its sandbox it
# would see them all: work beside another student's timing, there for the taking.
EVERY_GPU = FIND_SYMBOL + """
static const bool forgot = reinterpret_cast<int (*)(const char*)>(libc_symbol("unsetenv"))("CUDA_VISIBLE_DEVICES") == 0;
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  int gpus = 0;
  CUDA_CHECK(cudaGetDeviceCount(&gpus));
  if (forgot && gpus == 1) slow_launch(a, b, c, n);  // otherwise c is left as it was: every check fails
}
"""


@needs_cuda_toolchain()
def test_student_code_that_names_every_gpu_still_sees_only_its_own(lab01, tmp_path: Path, monkeypatch):
    from grader import classroom
    try:
        gpus = classroom.list_gpus()
    except NoGpu as error:
        pytest.skip(f"class grading needs a GPU ({error})")
    if len(gpus) < 2:
        pytest.skip("needs a host with two GPUs or more: with one, there is no other GPU to reach")
    monkeypatch.setattr(classroom, "list_gpus", lambda: gpus[-1:])  # the last: not the one CUDA would number 0
    (tmp_path / "class" / "greedy").mkdir(parents=True)
    (tmp_path / "class" / "greedy" / lab01.student_files[0]).write_text(HEADER + SLOW_KERNEL + EVERY_GPU)
    out = tmp_path / "graded"
    classroom.grade_class(lab01, tmp_path / "class", out, tmp_path / "work",
                          classroom.ClassOptions(jobs=1, gpu_jobs=1), stream=open("/dev/null", "w"))
    greedy = json.loads((out / "greedy" / "results.json").read_text())
    assert _correctness_lost(lab01, greedy) == 0, greedy["output"]  # it saw one GPU, and that one was its own


@needs_cuda_toolchain()
def test_cublas_looked_up_by_name_is_not_there_where_lab_04_forbids_it(tmp_path: Path):
    """Lab 04's tests load cuBLAS; the student's runner must not find it, however it asks."""
    lab04 = load_lab("04-tiled-matmul")
    try:
        results = _grade(lab04, tmp_path, "cublas by name", CUBLAS_BY_NAME).results
    except NoGpu as error:
        pytest.skip(f"the attack needs a GPU ({error})")
    assert "case_status" in results["extra_data"], results["output"]  # it built and ran: the attack was tried
    on_gpu = {t.name for t in lab04.tests if t.gpu} | {f"performance: {p.measurement}" for p in lab04.perf}
    earned = {t["name"]: t["score"] for t in results["tests"] if t["name"] in on_gpu and t["score"] > 0}
    assert earned == {}, earned
