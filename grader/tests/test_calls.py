"""grader/calls.py: what it reads from a lab's public header, when it refuses to split a lab, and the code it
generates for the judge (proxies) and the runner (its table of functions)."""
from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from grader import calls, cli
from grader.config import REPO_ROOT, ConfigError, list_labs, load_lab

# What each lab's header declares for the tests to call, in order (inline helpers and constants are not).
DECLARED = {
    "01-vector-add": ["vector_add", "launch_vector_add"],
    "02-picture-kernel": ["launch_scale_picture", "launch_rgb_to_gray", "launch_box_blur"],
    "03-matmul": ["launch_matmul"],
    "04-tiled-matmul": ["launch_tiled_matmul", "launch_register_tiled_matmul"],
    "05-reduction": ["launch_reduce_interleaved", "launch_reduce_sequential", "launch_reduce_grid_stride",
                     "launch_reduce_warp_shuffle", "sum_ints"],
    "06-scan": ["launch_kogge_stone_scan", "launch_work_efficient_scan", "launch_inclusive_scan",
                "launch_inclusive_scan", "launch_exclusive_scan", "launch_exclusive_scan"],
    "07-transpose": ["launch_transpose_naive", "launch_transpose_tiled", "launch_transpose_padded"],
    "08-streams": ["launch_apply_window", "allocate_host_samples", "free_host_samples", "create_pipeline",
                   "run_pipeline", "destroy_pipeline"],
    "09-nbody": ["launch_nbody_naive", "launch_nbody_tiled", "launch_leapfrog_step", "nbody_simulate"],
    "10-convolution": ["upload_filter", "launch_convolve_naive", "launch_convolve_tiled"],
    "11-histogram": ["launch_histogram_global", "launch_histogram_shared", "launch_histogram_warp_aggregated",
                     "launch_histogram_floats"],
    "12-libraries": ["launch_apply_response", "mix_beams", "normalize_scratch_bytes", "normalize_beams",
                     "create_pipeline", "run_pipeline", "destroy_pipeline"],
}
UNSPLIT = {"08-streams", "12-libraries"}


def lab_plan(lab: str) -> calls.Plan:
    return calls.lab_plan(load_lab(lab))


def signature(function: calls.Function) -> str:
    return f"{function.returns} {function.name}({', '.join(f'{p.type} {p.name}' for p in function.parameters)})"


def header_plan(tmp_path: Path, declarations: str, host_buffers: dict | None = None) -> calls.Plan:
    header = tmp_path / "pretend.cuh"
    header.write_text("#pragma once\n" + textwrap.dedent(declarations))
    return calls.plan(header, host_buffers or {}, "pretend/lab.toml")


def test_the_table_above_covers_every_lab():
    assert sorted(DECLARED) == list_labs()


@pytest.mark.parametrize("lab", sorted(DECLARED))
def test_every_function_a_labs_header_declares_is_found_and_only_those(lab: str):
    plan = lab_plan(lab)
    assert [f.name for f in plan.functions] == DECLARED[lab]
    assert plan.split == (lab not in UNSPLIT), plan.unsplit_because
    for function in plan.functions:
        assert function.parameters, f"{function.name}: no parameters read"
        assert all(p.type and p.name for p in function.parameters)


def test_both_overloads_of_a_scan_are_found_with_their_own_types():
    found = [signature(f) for f in lab_plan("06-scan").functions if f.name == "launch_inclusive_scan"]
    assert found == ["void launch_inclusive_scan(const int* d_in, int* d_out, int n)",
                     "void launch_inclusive_scan(const float* d_in, float* d_out, int n)"]


def test_an_inline_helper_is_not_a_function_of_the_student_and_a_return_type_is_kept():
    functions = {f.name: f for f in lab_plan("05-reduction").functions}
    assert "partials_capacity" not in functions  # inline, defined in the header: the judge has it already
    assert signature(functions["sum_ints"]) == "long long sum_ints(const int* d_in, std::int64_t n)"
    assert signature(functions["launch_reduce_sequential"]) == \
        "void launch_reduce_sequential(const float* d_in, std::int64_t n, float* d_sum, float* d_partials)"


def test_pointers_to_a_qualified_type_keep_their_type_and_constness():
    functions = {f.name: f for f in lab_plan("02-picture-kernel").functions}
    gray = functions["launch_rgb_to_gray"]
    assert signature(gray) == "void launch_rgb_to_gray(const std::uint8_t* d_rgb, std::uint8_t* d_gray, int width, " \
                              "int height)"
    rgb, out = gray.parameters[:2]
    assert (rgb.pointer, rgb.read_only, rgb.pointee) == (True, True, "const std::uint8_t")
    assert (out.pointer, out.read_only, out.pointee) == (True, False, "std::uint8_t")
    assert all(p.host_count is None for p in gray.parameters)  # device memory: no [host_buffers] entry


def test_lab_01s_host_buffers_carry_their_counts():
    vector_add = lab_plan("01-vector-add").functions[0]
    assert [(p.name, p.host_count) for p in vector_add.parameters] == [("h_a", "n"), ("h_b", "n"), ("h_c", "n"),
                                                                       ("n", None)]


def test_lab_10s_filter_is_a_host_buffer_of_the_radius_size():
    upload = lab_plan("10-convolution").functions[0]
    assert upload.parameters[0].name == "h_filter"
    assert upload.parameters[0].host_count == "(2 * radius + 1) * (2 * radius + 1)"


def test_lab_08_runs_in_one_process_because_of_its_stream_and_its_pipeline_object():
    why = lab_plan("08-streams").unsplit_because
    assert "launch_apply_window takes stream, a cudaStream_t (a handle valid in one process only)" in why
    assert "create_pipeline takes setup by reference (const PipelineSetup&)" in why
    assert "create_pipeline returns a pointer or reference (Pipeline*)" in why


def test_lab_12_runs_in_one_process_because_of_its_streams_handle_and_references():
    why = lab_plan("12-libraries").unsplit_because
    assert "mix_beams takes handle, a cublasHandle_t" in why
    assert "normalize_beams takes stream, a cudaStream_t" in why
    assert "launch_apply_response takes stream" in why
    assert "create_pipeline takes setup by reference (const PipelineSetup&)" in why


def test_host_buffers_naming_an_unknown_function_are_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"pretend/lab.toml \[host_buffers\]: pretend.cuh declares no function "
                                          r"\['vector_sum'\]"):
        header_plan(tmp_path, "void vector_add(const float* h_a, int n);\n",
                    {"vector_add": {"h_a": "n"}, "vector_sum": {"h_a": "n"}})


def test_host_buffers_naming_an_unknown_parameter_are_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"vector_add: no parameter named \['h_b'\] in pretend.cuh"):
        header_plan(tmp_path, "void vector_add(const float* h_a, int n);\n", {"vector_add": {"h_a": "n", "h_b": "n"}})


def test_a_count_on_a_value_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"vector_add: \['n'\] in pretend.cuh is not a pointer"):
        header_plan(tmp_path, "void vector_add(const float* h_a, int n);\n", {"vector_add": {"h_a": "n", "n": "1"}})


def test_a_host_pointer_without_a_count_is_refused_where_the_lab_is_split(tmp_path: Path):
    # It would go to the runner as device memory, and every call would fail on the GPU.
    with pytest.raises(ConfigError, match=r"upload_filter: h_filter in pretend.cuh is host memory by its name"):
        header_plan(tmp_path, "void upload_filter(const float* h_filter, int radius);\n")


def test_a_definition_in_the_header_is_not_a_declaration_and_gpu_code_is_not_split(tmp_path: Path):
    plan = header_plan(tmp_path, """
        struct Options { int size = 4; };
        float twice(float x) { return 2 * x; }
        __global__ void scale_kernel(float* d_out, int n);
        extern void launch_scale(float* d_out, int n);
    """)
    assert [f.name for f in plan.functions] == ["scale_kernel", "launch_scale"]
    assert signature(plan.functions[1]) == "void launch_scale(float* d_out, int n)"  # extern: a linkage, no type
    assert plan.unsplit_because == "scale_kernel is GPU code (__global__), which the tests would launch themselves"


def test_top_level_const_is_dropped_and_a_const_pointer_to_writable_memory_is_copied_back(tmp_path: Path):
    plan = header_plan(tmp_path, "void fill(float* const h_out, const int n);\n", {"fill": {"h_out": "n"}})
    out, n = plan.functions[0].parameters
    assert (out.type, out.pointer, out.read_only, out.host_count) == ("float*", True, False, "n")
    assert (n.type, n.pointer) == ("int", False)
    assert "const auto n = kit_in.value<int>();" in calls.runner_source(plan)


def test_judge_code_sends_const_host_buffers_one_way_and_others_both_ways(tmp_path: Path):
    plan = header_plan(tmp_path, "void scale(const float* h_in, float* h_out, float* d_scratch, int n, float f);\n",
                       {"scale": {"h_in": "n", "h_out": "2 * n"}})
    judge = calls.judge_source(plan)
    assert 'kit_call.host(h_in, sizeof(*h_in) * static_cast<std::size_t>(n), true, "h_in");' in judge
    assert 'kit_call.host(h_out, sizeof(*h_out) * static_cast<std::size_t>(2 * n), false, "h_out");' in judge
    assert 'kit_call.device(d_scratch, "d_scratch");' in judge
    assert "kit_call.value(n);" in judge and "kit_call.value(f);" in judge
    # In the order of the declaration, which is the order the runner reads them in.
    assert judge.index("host(h_in") < judge.index("host(h_out") < judge.index("device(d_scratch") \
        < judge.index("value(n)") < judge.index("value(f)")
    runner = calls.runner_source(plan)
    assert "const float* h_in = kit_in.pointer<const float>();" in runner
    assert "float* h_out = kit_in.pointer<float>();" in runner
    assert "scale(h_in, h_out, d_scratch, n, f);" in runner


def test_a_function_that_returns_a_value_returns_what_the_runner_sends(tmp_path: Path):
    plan = header_plan(tmp_path, "long long total(const int* d_in, int n);\n")
    assert "return kit_call.run_returning<long long>();" in calls.judge_source(plan)
    assert "kit_out.set(total(d_in, n));" in calls.runner_source(plan)


# ---- the generated code compiles, and means what the header says ----

def cuda_include() -> Path | None:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    include = Path(nvcc).resolve().parent.parent / "include"
    return include if (include / "cuda_runtime.h").is_file() else None


needs_compiler = pytest.mark.skipif(shutil.which("g++") is None or cuda_include() is None,
                                    reason="needs g++ and the CUDA toolkit's headers")


def compile_generated(plan: calls.Plan, folder: Path) -> None:
    """Both generated files, each compiled beside the header. -Werror=missing-declarations makes a proxy whose
    parameter list differs from the header's declaration an error (it would be a new overload, never called)."""
    for name, text in (("judge_calls.cpp", calls.judge_source(plan)), ("runner_calls.cpp", calls.runner_source(plan))):
        source = folder / name
        source.write_text(text)
        command = ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Werror=missing-declarations",
                   f"-I{plan.header.parent}", f"-I{REPO_ROOT / 'harness/include'}",
                   f"-I{REPO_ROOT / 'harness/runner/include'}", f"-I{cuda_include()}", str(source)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{name} for {plan.header.name}:\n{done.stderr}\n{text}"


@needs_compiler
@pytest.mark.parametrize("lab", sorted(set(DECLARED) - UNSPLIT))
def test_a_split_labs_generated_code_compiles_against_its_header(lab: str, tmp_path: Path):
    compile_generated(lab_plan(lab), tmp_path)


@needs_compiler
def test_parameters_named_like_the_generated_locals_hide_nothing(tmp_path: Path):
    plan = header_plan(tmp_path, "int pass(const float* in, float* out, int call, int kit);\nint none();\n")
    compile_generated(plan, tmp_path)


def test_a_proxy_with_a_changed_parameter_list_would_not_compile(tmp_path: Path):
    # The compile check above is only worth having if it can fail: a proxy for `int` where the header says `long`.
    if shutil.which("g++") is None or cuda_include() is None:
        pytest.skip("needs g++ and the CUDA toolkit's headers")
    plan = header_plan(tmp_path, "void f(const float* d_in, long n);\n")
    changed = calls.Plan(plan.header, (calls.Function("void", "f", (plan.functions[0].parameters[0],
                                                                    calls.Parameter("int", "n", None))),),
                         where=plan.where)
    with pytest.raises(AssertionError, match="no previous declaration"):
        compile_generated(changed, tmp_path)


# ---- `python3 -m grader calls`, which CMake runs for harness/tests/remote ----

def test_the_calls_command_writes_both_sides(tmp_path: Path):
    header = tmp_path / "pretend.hpp"
    header.write_text("#pragma once\nvoid fill(float* h_out, int n);\n")
    toml = tmp_path / "host_buffers.toml"
    toml.write_text('[host_buffers]\nfill = { h_out = "n" }\n')
    judge, runner = tmp_path / "out/judge_calls.cpp", tmp_path / "out/runner_calls.cpp"
    assert cli.main(["calls", "--header", str(header), "--host-buffers", str(toml), "--judge-out", str(judge),
                     "--runner-out", str(runner)]) == 0
    assert 'kit_call.host(h_out, sizeof(*h_out) * static_cast<std::size_t>(n), false, "h_out");' in judge.read_text()
    assert 'kit::runner::kFunctions[] = {{"fill", call_0_fill}};' in runner.read_text()


def test_the_calls_command_refuses_a_header_it_cannot_split(tmp_path: Path, capsys):
    header = tmp_path / "pretend.hpp"
    header.write_text("#pragma once\n#include <cuda_runtime.h>\nvoid run(float* d_x, cudaStream_t stream);\n")
    toml = tmp_path / "host_buffers.toml"
    toml.write_text("[host_buffers]\n")
    assert cli.main(["calls", "--header", str(header), "--host-buffers", str(toml), "--judge-out",
                     str(tmp_path / "j.cpp"), "--runner-out", str(tmp_path / "r.cpp")]) == 2
    assert "cannot be split into judge and runner: run takes stream, a cudaStream_t" in capsys.readouterr().err
    assert not (tmp_path / "j.cpp").exists()
