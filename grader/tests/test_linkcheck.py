"""The link check against real object files: each attack a student tried, and honest code.

Most objects are compiled with the system's C++ compiler (no GPU or nvcc needed): the check reads
symbols and machine code, which are the same whichever compiler made them. The forbidden-library
checks compile CUDA with nvcc (no GPU needed either), because what they look for is what nvcc
leaves in the host object of a file that uses CUB or Thrust: the library's kernels and their
launch stubs.
"""
from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import linkcheck
from grader.config import load_lab

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


# Header-only libraries a lab forbids, used the way a student who read the release would: a quoted
# include (intake looked only at <...>), the namespace made by token pasting (no identifier starting
# with "cub" or "thrust" in the source), and NVTX switched off so no dlopen call gives it away.
CUB_BY_STEALTH = r"""
#define CCCL_DISABLE_NVTX
#include "cub/device/device_reduce.cuh"
#define CAT(a, b) a##b
void launch_reduce(const float* d_in, float* d_out, int n) {
  void* temp = nullptr;
  size_t bytes = 0;
  CAT(c, ub)::DeviceReduce::Sum(temp, bytes, d_in, d_out, n);
  cudaMalloc(&temp, bytes);
  CAT(c, ub)::DeviceReduce::Sum(temp, bytes, d_in, d_out, n);
  cudaFree(temp);
}
"""

THRUST_BY_STEALTH = r"""
#define CCCL_DISABLE_NVTX
#include "thrust/reduce.h"
#include "thrust/device_ptr.h"
#include "thrust/execution_policy.h"
#define CAT(a, b) a##b
float launch_reduce(const float* d_in, int n) {
  CAT(thr, ust)::device_ptr<const float> p(d_in);
  return CAT(thr, ust)::reduce(CAT(thr, ust)::device, p, p + n, 0.0f);
}
"""

PLAIN_KERNEL = r"""
#include "kit/cuda_check.cuh"
__global__ void reduce_kernel(const float* in, float* out, int n) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}
void launch_reduce(const float* d_in, float* d_out, int n) {
  reduce_kernel<<<(n + 255) / 256, 256>>>(d_in, d_out, n);
  CUDA_CHECK(cudaGetLastError());
}
"""

NVCC = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if Path(p).is_file()), None)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit; CI has /usr/local/cuda/bin/nvcc) "
                                "to compile the CUB and Thrust attacks; no GPU needed")


def _compile_cuda(folder: Path, name: str, source: str) -> Path:
    """Compiled as the lab build compiles a student file (CMake's Release flags, C++17), for sm_90."""
    path = folder / name / "reduction.cu"  # the link check names the file by its object's name
    path.parent.mkdir()
    path.write_text(source)
    include = Path(__file__).resolve().parents[2] / "harness" / "include"
    subprocess.run([NVCC, "-std=c++17", "-O3", "-DNDEBUG", "-arch=sm_90", f"-I{include}", "-c", str(path),
                    "-o", str(path) + ".o"], check=True, capture_output=True)
    return Path(str(path) + ".o")


@pytest.fixture(scope="module")
def cuda_objects(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("linkcheck-cuda")
    sources = {"cub": CUB_BY_STEALTH, "thrust": THRUST_BY_STEALTH, "plain": PLAIN_KERNEL}
    with ThreadPoolExecutor(len(sources)) as pool:  # nvcc takes seconds per CCCL file: compile them at once
        compiled = {name: pool.submit(_compile_cuda, folder, name, source) for name, source in sources.items()}
        return {name: future.result() for name, future in compiled.items()}


def _check_as_lab(setting, student: Path, lab: str) -> list[str]:
    """The link check of one object as CMake runs it for `lab`: that lab's libraries, forbidden list and calls."""
    _, harness, definitions = setting
    config = load_lab(lab)
    return linkcheck.problems([student], [harness], definitions, config.libraries, config.forbidden,
                              config.allowed_calls, lab=lab)


@needs_nvcc
@pytest.mark.parametrize("library, title, symbol", [
    ("cub", "CUB", "'cub::DeviceReduce::Sum<...>(...)'"),
    ("thrust", "Thrust", "'thrust::"),
])
def test_a_forbidden_library_is_refused_however_the_source_spells_it(setting, cuda_objects, library, title, symbol):
    assert library in load_lab("05-reduction").forbidden
    found = _check_as_lab(setting, cuda_objects[library], "05-reduction")
    refusal = [p for p in found if f"does not allow {title} in student code" in p]
    assert refusal, found
    # The message names the student's file, the library's symbol (without CCCL's version namespace)
    # and the lab, in words the student can act on.
    assert refusal[0].startswith(f"reduction.cu: {symbol}"), refusal[0]
    assert "lab 05-reduction" in refusal[0] and "write that part yourself" in refusal[0]
    assert "_SM_" not in refusal[0]


@needs_nvcc
@pytest.mark.parametrize("library", ["cub", "thrust"])
def test_the_same_library_code_is_accepted_where_the_lab_allows_it(setting, cuda_objects, library):
    assert load_lab("12-libraries").forbidden == ()
    assert _check_as_lab(setting, cuda_objects[library], "12-libraries") == []


@needs_nvcc
@pytest.mark.parametrize("lab", ["05-reduction", "06-scan", "11-histogram"])
def test_a_plain_kernel_is_accepted_where_cub_and_thrust_are_forbidden(setting, cuda_objects, lab):
    assert _check_as_lab(setting, cuda_objects["plain"], lab) == []


def test_library_names_are_told_from_look_alikes():
    cub = linkcheck.HEADER_LIBRARIES["cub"]
    # The library, wrapped in another namespace (CUB_WRAPPED_NAMESPACE) or in a launch stub's name.
    assert cub.uses("_ZN3cub6detail6Kernel", "cub::detail::Kernel()")
    assert cub.uses("x", "evil::cub::DeviceReduce::Sum()")
    assert cub.uses("__device_stub__ZN3cub17CUB_300001_SM_9006detail1kEv", "__device_stub__ZN3cub17CUB_300001")
    assert cub.uses("_ZN4evil17CUB_300001_SM_9006DeviceE", "evil::CUB_300001_SM_900::Device")
    assert cub.uses("_Z9my_kernelIN3cub3SumEEvv", "void my_kernel<cub::Sum>()")
    # Names that only look like it: the CUDA runtime's handle, a student's own namespace or type.
    assert not cub.uses("_ZL20__cudaFatCubinHandle", "__cudaFatCubinHandle")
    assert not cub.uses("_ZN5mycub3sumEv", "mycub::sum()")
    assert not cub.uses("_Z4cube", "cube(float)")


def test_a_library_symbol_is_shortened_to_what_the_student_wrote():
    name = ("cudaError cub::CUB_300001_SM_900::DeviceReduce::Sum<float const*, float*, int>(void*, unsigned long&, "
            "float const*, float*, int, CUstream_st*) [clone .isra.0]")
    assert linkcheck._shorten(name) == "cub::DeviceReduce::Sum<...>(...)"
    assert (linkcheck._shorten("guard variable for cub::CUB_300001_SM_900::DeviceCountCachedValue()::count")
            == "guard variable for cub::DeviceCountCachedValue()::count")
    # Built for several GPU generations (CUDA_ARCH="75;80;86;89;90"), the namespace lists them all.
    several = name.replace("SM_900", "SM_750_800_860_890_900")
    assert linkcheck._shorten(several) == "cub::DeviceReduce::Sum<...>(...)"
    assert linkcheck.HEADER_LIBRARIES["cub"].uses("_ZN4evil28CUB_300001_SM_750_800_860_8906DeviceE",
                                                  "evil::CUB_300001_SM_750_800_860_890::Device")
