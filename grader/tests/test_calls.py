"""grader/calls.py: what it reads from a lab's public header and its call tables, when it refuses to split a lab,
and the code it generates for the judge (proxies) and the runner (its table of functions)."""
from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from grader import calls, cli
from grader.config import REPO_ROOT, CallTables, ConfigError, list_labs, load_lab

# What each lab's header declares for the tests to call, in order (inline helpers and constants are not).
DECLARED = {
    "00-device-basics": ["query_device", "record_places", "time_kernel_ms", "kernel_facts", "occupancy_sweep",
                         "choose_block_size"],
    "01-vector-add": ["vector_add", "launch_vector_add"],
    "02-picture-kernel": ["launch_scale_picture", "launch_rgb_to_gray", "launch_box_blur"],
    "03-matmul": ["launch_matmul"],
    "04-tiled-matmul": ["launch_tiled_matmul", "launch_register_tiled_matmul"],
    "05-reduction": ["launch_reduce_interleaved", "launch_reduce_sequential", "launch_reduce_grid_stride",
                     "launch_reduce_warp_shuffle", "sum_ints"],
    "06-scan": ["launch_kogge_stone_scan", "launch_work_efficient_scan", "launch_warp_scan", "launch_tile_scan",
                "launch_add_offsets", "launch_inclusive_scan", "launch_inclusive_scan", "launch_exclusive_scan",
                "launch_exclusive_scan", "launch_register_tiled_inclusive_scan",
                "launch_register_tiled_inclusive_scan", "launch_register_tiled_exclusive_scan",
                "launch_register_tiled_exclusive_scan"],
    "07-transpose": ["launch_transpose_naive", "launch_transpose_tiled", "launch_transpose_padded"],
    "08-streams": ["launch_apply_window", "allocate_host_samples", "free_host_samples", "create_pipeline",
                   "run_pipeline", "destroy_pipeline"],
    "09-nbody": ["launch_nbody_naive", "launch_nbody_tiled", "launch_leapfrog_step", "nbody_simulate"],
    "10-convolution": ["upload_filter", "launch_convolve_naive", "launch_convolve_tiled"],
    "11-histogram": ["launch_histogram_global", "launch_histogram_shared", "launch_histogram_warp_aggregated",
                     "launch_histogram_floats"],
    "12-libraries": ["launch_apply_response", "mix_beams", "normalize_scratch_bytes", "normalize_beams",
                     "create_pipeline", "run_pipeline", "destroy_pipeline"],
    "13-debugging": ["launch_vector_add", "launch_reduce_sum", "launch_histogram", "launch_tiled_matmul",
                     "launch_transpose_tiled"],
}


def lab_plan(lab: str) -> calls.Plan:
    return calls.lab_plan(load_lab(lab))


def signature(function: calls.Function) -> str:
    return f"{function.returns} {function.name}({', '.join(f'{p.type} {p.name}' for p in function.parameters)})"


def header_plan(tmp_path: Path, declarations: str, host_buffers: dict | CallTables | None = None) -> calls.Plan:
    header = tmp_path / "pretend.cuh"
    header.write_text("#pragma once\n#include <cuda_runtime.h>\n#include <cublas_v2.h>\n" + textwrap.dedent(declarations))
    return calls.plan(header, host_buffers or {}, "pretend/lab.toml")


def test_the_table_above_covers_every_lab():
    assert sorted(DECLARED) == list_labs()


@pytest.mark.parametrize("lab", sorted(DECLARED))
def test_every_function_a_labs_header_declares_is_found_and_only_those(lab: str):
    plan = lab_plan(lab)
    assert [f.name for f in plan.functions] == DECLARED[lab]
    assert plan.split, plan.unsplit_because  # every lab is graded in two processes
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


def test_lab_00s_structs_return_by_value_and_its_gpu_code_is_no_function_of_the_students():
    functions = {f.name: f for f in lab_plan("00-device-basics").functions}
    # Returned structs cross as their bytes (run_returning / Result::set), as any return value does.
    assert signature(functions["query_device"]) == "DeviceFacts query_device(int device)"
    assert signature(functions["choose_block_size"]) == \
        "BlockSizeChoice choose_block_size(LabKernel kernel, std::size_t dynamic_shared_bytes, int block_size_limit)"
    # A struct and an enum by value are values; the device pointers are device memory.
    timing = functions["time_kernel_ms"]
    assert [(p.name, p.kind, p.host_count) for p in timing.parameters] == [
        ("launch", "", None), ("d_data", "", None), ("d_launches", "", None), ("warmup", "", None),
        ("repeats", "", None)]
    assert [(p.name, p.host_count) for p in functions["occupancy_sweep"].parameters] == [
        ("kernel", None), ("dynamic_shared_bytes", None), ("h_block_sizes", "count"), ("h_rows", "count"),
        ("count", None)]
    # The kernels and helpers the header defines under __CUDACC__ (lab_kernel, launch_lab_kernel) are the
    # tests' own copies, not functions to call in the runner.
    assert not {"lab_kernel", "launch_lab_kernel", "sm_id", "spin_kernel"} & set(functions)


def test_lab_10s_filter_is_a_host_buffer_of_the_radius_size():
    upload = lab_plan("10-convolution").functions[0]
    assert upload.parameters[0].name == "h_filter"
    assert upload.parameters[0].host_count == "(2 * radius + 1) * (2 * radius + 1)"


def test_lab_08s_streams_allocations_struct_and_pipeline_each_cross_their_own_way():
    functions = {f.name: f for f in lab_plan("08-streams").functions}
    assert [p.kind for p in functions["launch_apply_window"].parameters] == ["", "", "", "stream"]
    assert functions["launch_apply_window"].asynchronous
    assert (functions["allocate_host_samples"].result, functions["allocate_host_samples"].allocation_count) == \
        ("allocation", "count")
    assert [p.kind for p in functions["free_host_samples"].parameters] == ["release"]
    assert functions["create_pipeline"].result == "object"
    setup = functions["create_pipeline"].parameters[0]
    assert (setup.kind, setup.struct, setup.members) == ("struct", "PipelineSetup", ())  # no pointer members
    assert [p.kind for p in functions["run_pipeline"].parameters] == ["object", "shared", "shared", ""]
    assert not functions["run_pipeline"].asynchronous  # no stream: the runner waits, unless results are shared
    assert [p.kind for p in functions["destroy_pipeline"].parameters] == ["destroy"]


def test_lab_12s_handle_and_setup_pointers_cross_with_their_counts():
    functions = {f.name: f for f in lab_plan("12-libraries").functions}
    assert [p.kind for p in functions["mix_beams"].parameters][0] == "blas"
    assert functions["mix_beams"].asynchronous and functions["normalize_beams"].asynchronous
    setup = functions["create_pipeline"].parameters[0]
    assert [(m.name, m.count, m.read_only) for m in setup.members] == [
        ("weights", "setup.beams * setup.channels", True), ("response", "setup.samples / 2 + 1", True)]
    assert lab_plan("12-libraries").uses_blas and not lab_plan("08-streams").uses_blas


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


def test_every_judge_marks_itself_as_having_a_runner(tmp_path: Path):
    # harness/src/remote.cu shares host memory with a runner only where the mark is defined; a program built in
    # one process links no proxies, and keeps shared host memory to itself.
    plan = header_plan(tmp_path, "void scale(float* d_out, int n);\n")
    assert f'extern "C" const char {calls.JUDGE_MARK} = 1;' in calls.judge_source(plan)
    assert calls.JUDGE_MARK not in calls.runner_source(plan)
    remote = (REPO_ROOT / "harness" / "src" / "remote.cu").read_text()
    assert f'extern "C" const char {calls.JUDGE_MARK} __attribute__((weak));' in remote


def test_a_function_that_returns_a_value_returns_what_the_runner_sends(tmp_path: Path):
    plan = header_plan(tmp_path, "long long total(const int* d_in, int n);\n")
    assert "return kit_call.run_returning<long long>();" in calls.judge_source(plan)
    assert "kit_out.set(total(d_in, n));" in calls.runner_source(plan)


# ---- streams, handles, objects, structs by reference, shared and allocated host memory ----

FEATURES = """
    struct Setup { int count = 1; const float* h_table = nullptr; float* h_out = nullptr; int width = 2; };
    struct Machine;
    Machine* build_machine(const Setup& setup);
    void run_machine(Machine* machine, const float* h_in, float* h_out, int n);
    void stop_machine(Machine* machine);
    float* allocate_floats(std::size_t count);
    void free_floats(float* h_floats);
    void queue_scale(float* d_x, int n, cudaStream_t stream);
    void product(cublasHandle_t handle, const float* d_a, float* d_b, int n);
"""
FEATURE_TABLES = CallTables(
    host_buffers={"build_machine": {"setup.h_table": "setup.count * setup.width", "setup.h_out": "setup.count"}},
    shared_host_buffers={"run_machine": ("h_in", "h_out")},
    host_allocators={"allocate_floats": {"count": "count", "free": "free_floats"}},
    objects={"build_machine": {"destroy": "stop_machine"}})


def feature_plan(tmp_path: Path) -> calls.Plan:
    return header_plan(tmp_path, "#include <cstddef>\n" + FEATURES, FEATURE_TABLES)


def test_each_new_kind_of_parameter_crosses_its_own_way(tmp_path: Path):
    plan = feature_plan(tmp_path)
    assert plan.split, plan.unsplit_because
    judge, runner = calls.judge_source(plan), calls.runner_source(plan)
    # A struct by const reference: its bytes, then each pointer member as a counted host buffer, in order.
    assert "  kit_call.value(setup);\n  kit_call.host(setup.h_table, sizeof(*setup.h_table) * " \
           "static_cast<std::size_t>(setup.count * setup.width), true, \"setup.h_table\");\n" \
           "  kit_call.host(setup.h_out, sizeof(*setup.h_out) * static_cast<std::size_t>(setup.count), false, " \
           "\"setup.h_out\");" in judge
    assert "  auto setup = kit_in.value<Setup>();\n  setup.h_table = kit_in.pointer<const float>();\n" \
           "  setup.h_out = kit_in.pointer<float>();" in runner
    # An object: the runner's number, disguised in the judge; forgotten by the destroy function alone.
    assert "return kit_call.run_returning_object<Machine>();" in judge
    assert 'kit_out.set_object(build_machine(setup), "Machine");' in runner
    assert 'Machine* machine = kit_in.object<Machine>("Machine");\n  const float* h_in' in runner
    assert 'Machine* machine = kit_in.object<Machine>("Machine", true);\n  stop_machine(machine);' in runner
    # Shared host memory: a place in it, no count.
    assert 'kit_call.shared_host(h_in, "h_in");' in judge and 'kit_call.shared_host(h_out, "h_out");' in judge
    # An allocator and its free.
    assert "return static_cast<float*>(kit_call.run_allocating(sizeof(float) * static_cast<std::size_t>(count)));" \
        in judge
    assert "kit::runner::mirror_allocation(kit_in, kit_out, allocate_floats(count));" in runner
    assert 'kit_call.release(h_floats, "h_floats");' in judge
    assert "kit::runner::free_allocation(kit_in, [](void* kit_allocated) { " \
           "free_floats(static_cast<float*>(kit_allocated)); });" in runner
    # A stream and a cuBLAS handle: asynchronous by contract; the cuBLAS glue only where a handle is passed.
    assert 'kit_call.stream(stream, "stream");' in judge and "cudaStream_t stream = kit_in.stream();" in runner
    assert 'kit::remote::pass_blas(kit_call, handle, "handle");' in judge
    assert "cublasHandle_t handle = kit::runner::blas_handle(kit_in);" in runner
    assert '#include "kit/remote_cublas.hpp"' in judge and '#include "kit/runner_cublas.hpp"' in runner
    assert [f.name for f in plan.functions if f.asynchronous] == ["queue_scale", "product"]


def test_a_handle_in_a_lab_whose_students_may_not_use_cublas_is_a_config_error(tmp_path: Path, monkeypatch):
    config = load_lab("04-tiled-matmul")  # cuBLAS is the yardstick there, forbidden to student code
    header = tmp_path / "tiled.cuh"
    header.write_text("#pragma once\n#include <cublas_v2.h>\nvoid product(cublasHandle_t handle, float* d_x);\n")
    monkeypatch.setattr(calls, "public_header", lambda _config: header)
    with pytest.raises(ConfigError, match=r"passes a cublasHandle_t, but \[lab\] libraries does not let student "
                                          r"code use cuBLAS"):
        calls.lab_plan(config)


def test_without_a_handle_no_cublas_glue_is_included(tmp_path: Path):
    plan = header_plan(tmp_path, "void queue_scale(float* d_x, int n, cudaStream_t stream);\n")
    assert "cublas" not in calls.judge_source(plan) and "cublas" not in calls.runner_source(plan)


def test_a_struct_pointer_member_without_a_count_keeps_the_lab_in_one_process(tmp_path: Path):
    plan = header_plan(tmp_path, "struct Setup { const float* h_table; int n; };\nvoid use(const Setup& setup);\n")
    assert plan.unsplit_because == "use takes setup (const Setup&), whose pointer member(s) ['h_table'] have no " \
                                   "count in [host_buffers] (\"setup.h_table\" = \"...\")"


def test_a_struct_by_writable_reference_and_an_undefined_struct_keep_the_lab_in_one_process(tmp_path: Path):
    plan = header_plan(tmp_path, "struct Setup { int n; };\nstruct Other;\nvoid a(Setup& setup);\n"
                                 "void b(const Other& other);\n")
    assert "a takes setup by reference (Setup&): only a struct the header defines, by const reference, can " \
           "cross" in plan.unsplit_because
    assert "b takes other by reference (const Other&)" in plan.unsplit_because


def test_a_returned_pointer_no_table_explains_keeps_the_lab_in_one_process(tmp_path: Path):
    plan = header_plan(tmp_path, "struct Machine;\nMachine* build();\nfloat* allocate(int n);\n")
    assert "build returns a pointer or reference (Machine*) that no table explains" in plan.unsplit_because
    assert "allocate returns a pointer or reference (float*) that no table explains" in plan.unsplit_because


def test_an_object_table_for_a_type_the_header_defines_is_refused(tmp_path: Path):
    # A complete type could be read by the tests, which would then dereference the runner's number.
    plan = header_plan(tmp_path, "struct Machine { int x; };\nMachine* build();\nvoid stop(Machine* m);\n",
                       CallTables(objects={"build": {"destroy": "stop"}}))
    assert "build returns Machine*, which [objects] lists, but the header does not declare that type without " \
           "defining it" in plan.unsplit_because


def test_a_destroy_or_free_function_that_does_not_match_is_a_config_error(tmp_path: Path):
    declarations = "struct Machine;\nMachine* build();\nint stop(Machine* m);\nfloat* grab(int n);\n" \
                   "void drop(float* h, int n);\n"
    with pytest.raises(ConfigError, match=r"\[objects\] build: stop in pretend.cuh must return void and take the "
                                          r"Machine\* to destroy first"):
        header_plan(tmp_path, declarations, CallTables(objects={"build": {"destroy": "stop"}}))
    with pytest.raises(ConfigError, match=r"\[host_allocators\] grab: drop in pretend.cuh must take the float\* to "
                                          r"free and nothing else"):
        header_plan(tmp_path, declarations, CallTables(host_allocators={"grab": {"count": "n", "free": "drop"}}))
    with pytest.raises(ConfigError, match=r"\[host_allocators\] grab: free = \"release\", which pretend.cuh does "
                                          r"not declare"):
        header_plan(tmp_path, declarations, CallTables(host_allocators={"grab": {"count": "n", "free": "release"}}))


def test_call_tables_naming_what_the_header_lacks_are_config_errors(tmp_path: Path):
    declarations = "struct Setup { const float* h_table; };\nvoid use(const Setup& setup, float* h_out);\n"
    with pytest.raises(ConfigError, match=r"\[shared_host_buffers\] use: no parameter named \['h_in'\]"):
        header_plan(tmp_path, declarations, CallTables(shared_host_buffers={"use": ("h_in",)}))
    with pytest.raises(ConfigError, match=r"\[host_buffers\] use: no parameter named \['setup.h_tabel'\]"):
        header_plan(tmp_path, declarations, CallTables(host_buffers={"use": {"setup.h_tabel": "1"}}))
    with pytest.raises(ConfigError, match=r"\[objects\]: pretend.cuh declares no function \['make'\]"):
        header_plan(tmp_path, declarations, CallTables(objects={"make": {"destroy": "use"}}))


def test_a_host_pointer_with_neither_count_nor_shared_memory_is_refused_naming_both_ways(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"give it an element count.*or, where it always points into memory both "
                                          r"processes map, list it in \[shared_host_buffers\]"):
        header_plan(tmp_path, "void use(const float* h_in, int n);\n")


def test_other_process_bound_handles_are_still_refused(tmp_path: Path):
    plan = header_plan(tmp_path, "#include <cufft.h>\nvoid fft(cufftHandle plan, float* d_x);\n"
                                 "void wait_for(cudaEvent_t done);\n")
    assert "fft takes plan, a cufftHandle (a handle valid in one process only)" in plan.unsplit_because
    assert "wait_for takes done, a cudaEvent_t" in plan.unsplit_because


def test_call_tables_of_the_wrong_shape_are_config_errors(tmp_path: Path):
    from grader.config import load_call_tables
    bad = {"[host_allocators]\ngrab = { count = \"n\" }\n": r"\[host_allocators\] grab: give exactly count, free",
           "[objects]\nbuild = \"stop\"\n": r"\[objects\] build: give exactly destroy",
           "[shared_host_buffers]\nuse = \"h_in\"\n": r"\[shared_host_buffers\] use: list the parameters by name"}
    for text, message in bad.items():
        toml = tmp_path / "tables.toml"
        toml.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_call_tables(toml)


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
@pytest.mark.parametrize("lab", sorted(DECLARED))
def test_a_split_labs_generated_code_compiles_against_its_header(lab: str, tmp_path: Path):
    compile_generated(lab_plan(lab), tmp_path)


@needs_compiler
def test_parameters_named_like_the_generated_locals_hide_nothing(tmp_path: Path):
    plan = header_plan(tmp_path, "int pass(const float* in, float* out, int call, int kit);\nint none();\n")
    compile_generated(plan, tmp_path)


@needs_compiler
def test_the_new_kinds_of_parameter_compile_on_both_sides(tmp_path: Path):
    compile_generated(feature_plan(tmp_path), tmp_path)


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
    header.write_text("#pragma once\n#include <cuda_runtime.h>\nvoid run(float* d_x, cudaEvent_t done);\n")
    toml = tmp_path / "host_buffers.toml"
    toml.write_text("[host_buffers]\n")
    assert cli.main(["calls", "--header", str(header), "--host-buffers", str(toml), "--judge-out",
                     str(tmp_path / "j.cpp"), "--runner-out", str(tmp_path / "r.cpp")]) == 2
    assert "cannot be split into judge and runner: run takes done, a cudaEvent_t" in capsys.readouterr().err
    assert not (tmp_path / "j.cpp").exists()
