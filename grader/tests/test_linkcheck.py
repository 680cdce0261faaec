"""The link check against real object files: each attack a student tried, and honest code.

The objects are compiled with the system's C++ compiler (no GPU or nvcc needed): the check reads
symbols and machine code, which are the same whichever compiler made them.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from grader import linkcheck

pytestmark = pytest.mark.skipif(not (shutil.which("c++") and shutil.which("nm") and shutil.which("objdump")),
                                reason="needs a C++ compiler and binutils (apt-get install g++ binutils)")

# Stands for the harness and the tests: a clock read and an inline helper both sides instantiate.
HARNESS = r"""
#include <chrono>
#include <vector>
namespace kit {
double elapsed() {
  auto t = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
void write_record(const char*) {}
inline int shared_helper(int x) { return x + 1; }
int use_helper(int x) { std::vector<int> v(3, x); return shared_helper(v[0]); }
}
void launch_vector_add(const float*, const float*, float*, int);
void call_student() { launch_vector_add(nullptr, nullptr, nullptr, 0); }
"""

HONEST = r"""
#include <vector>
#include <stdexcept>
#include <cstdio>
#include <cmath>
namespace kit { inline int shared_helper(int x) { return x + 1; } }
static float helper(float x) { return std::sqrt(x); }
void launch_vector_add(const float* a, const float* b, float* c, int n) {
  std::vector<float> tmp(n);
  if (n < 0) throw std::invalid_argument("negative n");
  for (int i = 0; i < n; ++i) tmp[i] = helper(a[i]) + b[i] + kit::shared_helper(i);
  std::printf("%d\n", n);
}
"""

ATTACKS = {
    "forged clock": (r"""
#include <time.h>
extern "C" int clock_gettime(clockid_t, struct timespec* t) { t->tv_sec = 0; t->tv_nsec = 0; return 0; }
void launch_vector_add(const float*, const float*, float*, int) {}
""", "clock_gettime", "libc"),
    "forged CUDA event timer": (r"""
extern "C" int cudaEventElapsedTime(float* ms, void*, void*) { *ms = 0.001f; return 0; }
void launch_vector_add(const float*, const float*, float*, int) {}
""", "cudaEventElapsedTime", "libcudart"),
    "forged steady clock": (r"""
#include <chrono>
namespace std { namespace chrono { inline namespace _V2 {
steady_clock::time_point steady_clock::now() noexcept { return time_point(); }
} } }
void launch_vector_add(const float*, const float*, float*, int) {}
""", "steady_clock::now", "libstdc++"),
    "replaced harness function": (r"""
namespace kit { double elapsed() { return 1e-9; } }
void launch_vector_add(const float*, const float*, float*, int) {}
""", "kit::elapsed", "test harness"),
    "raw system call": (r"""
#include <unistd.h>
#include <sys/syscall.h>
void launch_vector_add(const float*, const float*, float*, int) { syscall(SYS_getpid); }
""", "syscall", "may only call"),
    "system call in inline assembly": (r"""
void launch_vector_add(const float*, const float*, float*, int) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(39L) : "rcx", "r11", "memory");
}
""", "", "system call directly"),
    "forbidden call spelled by token pasting": (r"""
#include <cstdio>
#define JOIN(a, b) a##b
void launch_vector_add(const float*, const float*, float*, int) { JOIN(fop, en)("/tmp/x", "w"); }
""", "fopen", "may only call"),
    "forged results through the harness": (r"""
namespace kit { void write_record(const char*); }
void launch_vector_add(const float*, const float*, float*, int) { kit::write_record("{}"); }
""", "kit::write_record", "may only call"),
}


def _compile(folder: Path, name: str, source: str) -> Path:
    path = folder / f"{name.replace(' ', '_')}.cpp"
    path.write_text(source)
    subprocess.run(["c++", "-std=c++17", "-O2", "-fPIC", "-c", str(path), "-o", str(path) + ".o"], check=True,
                   capture_output=True)
    return Path(str(path) + ".o")


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    folder = tmp_path_factory.mktemp("linkcheck")
    harness = _compile(folder, "harness", HARNESS)
    libraries = linkcheck.system_libraries()
    # A stand-in for the CUDA runtime: a shared library that defines its timer.
    runtime_source = folder / "cudart.cpp"
    runtime_source.write_text('extern "C" int cudaEventElapsedTime(float*, void*, void*) { return 0; }\n')
    runtime = folder / "libcudart.so"
    subprocess.run(["c++", "-shared", "-fPIC", str(runtime_source), "-o", str(runtime)], check=True)
    definitions = linkcheck.library_definitions(libraries + [runtime], folder / "cache")
    return folder, harness, definitions


def test_honest_code_passes(setting):
    folder, harness, definitions = setting
    student = _compile(folder, "honest", HONEST)
    assert linkcheck.problems([student], [harness], definitions, ()) == []


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_is_refused_with_its_reason(setting, attack):
    folder, harness, definitions = setting
    source, symbol, reason = ATTACKS[attack]
    student = _compile(folder, attack, source)
    found = linkcheck.problems([student], [harness], definitions, ())
    assert found, f"{attack} was not refused"
    assert any(symbol in problem and reason in problem for problem in found), found


def test_lab_libraries_are_allowed_only_where_the_lab_links_them(setting):
    folder, harness, definitions = setting
    student = _compile(folder, "uses cublas", r"""
extern "C" int cublasCreate_v2(void**);
void launch_vector_add(const float*, const float*, float*, int) { void* h; cublasCreate_v2(&h); }
""")
    assert linkcheck.problems([student], [harness], definitions, ("cublas",)) == []
    assert any("cublasCreate_v2" in p for p in linkcheck.problems([student], [harness], definitions, ()))


def test_a_lab_may_allow_further_calls_by_name(setting):
    folder, harness, definitions = setting
    student = _compile(folder, "uses getenv", r"""
#include <cstdlib>
void launch_vector_add(const float*, const float*, float*, int) { std::getenv("HOME"); }
""")
    assert any("getenv" in p for p in linkcheck.problems([student], [harness], definitions, ()))
    assert linkcheck.problems([student], [harness], definitions, (), allowed_calls=("getenv",)) == []
