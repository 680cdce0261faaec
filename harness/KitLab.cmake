# kit_add_lab(<lab>): everything a lab needs, from its config.
#
# Targets (in build/<lab>/, beside the lab's params.txt):
#   <lab>-tests              the student files (labs/<lab>/, or KIT_STUDENT_DIR) + every test available
#   <lab>-reference-tests    solutions/<lab>/ + the same tests
#   <lab>-wrong-<name>-tests each deliberately wrong variant from hidden.toml, and
#   <lab>-right-<name>-tests each correct alternative; neither is in `all`: <lab>-variants
#                            builds a lab's (the self-check does)
# ctest (labels: the lab's name, and cpu or gpu):
#   the reference's test cases, one ctest test each (gpu ones skip without a GPU), and the
#   student build's CPU-only ones; in the student release (no solutions/), every test case of
#   the student build;
#   each case whose config says `sanitizer = "<tool>"` once more under compute-sanitizer with
#   that tool (label sanitizer; skipped, saying why, where compute-sanitizer is not installed);
#   "<lab>: config is valid" (cpu: `grader configure` again, which also checks that every parameter the
#   tests read is declared), "<lab>: test cases match the config" (cpu) and "<lab>: grader self-check" (gpu).
# A lab whose config is wrong (`grader configure` fails) gets a CMake warning and no targets; the others
# are configured as usual, and its "<lab>: config is valid" test fails, so `make test` does. Where
# KIT_LABS names that one lab alone (the grader's builds), its error stops CMake, as there is nothing else.
# A lab that needs more (an image viewer, a trajectory writer) adds a
# labs/<lab>/CMakeLists.txt, included after these targets exist; its demo program is one call of
# kit_add_lab_demo() there.

set(KIT_GPU_SKIP_REGEX "No CUDA GPU available|Grading needs a CUDA GPU")
# ctest runs the GPU test cases one at a time (CPU ones still in parallel). A check that reads its result in the
# judge's device memory first finds the GPU free of the runner's work (kit::remote::JudgeAlone); beside another
# test's kernels it cannot tell theirs from the runner's, and on an H200 under `ctest --parallel 4` five of lab
# 06's cases failed so (2026-11-27). The grader, which shares the GPU among students, runs such a case again under
# its GPU lock's exclusive hold; ctest has no such second run, so it never shares the GPU.
set(KIT_GPU_LOCK "gpu")
# Grading a class: a student's build links the tests and harness that a reference build of the same
# lab compiled once (its folder here), instead of compiling them again for every student.
set(KIT_PREBUILT "" CACHE PATH "grading one lab: a reference build folder whose compiled tests and harness to link")

# compute-sanitizer, for the test cases a lab's config runs under it: on the PATH or beside nvcc.
find_program(KIT_COMPUTE_SANITIZER compute-sanitizer HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin
             DOC "compute-sanitizer, which runs the test cases whose config names a sanitizer tool")
set(KIT_SANITIZER_MISSING "compute-sanitizer was not found on the PATH or beside nvcc (${CUDAToolkit_BIN_DIR}): \
install the CUDA toolkit's compute-sanitizer (NVIDIA's cuda-sanitizer package) to run this check, then re-run cmake")

function(kit_add_lab lab)
  set(lab_dir ${PROJECT_SOURCE_DIR}/labs/${lab})
  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${lab})
  set(out ${CMAKE_BINARY_DIR}/${lab})

  # Fixing a broken config re-runs CMake, so these are watched before the config is read.
  set(config_files ${lab_dir}/lab.toml)
  if(EXISTS ${solution_dir}/hidden.toml)
    list(APPEND config_files ${solution_dir}/hidden.toml)
  endif()
  # The split's generated proxies (below) come from grader/calls.py: a change there makes them again.
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${config_files}
               ${PROJECT_SOURCE_DIR}/grader/calls.py)
  # The config is checked again at test time (a test source edited since may read a parameter the config
  # does not declare: grader/paramcheck.py); a lab whose config is wrong fails this test in `make test`.
  set(config_test "${lab}: config is valid")
  set(configure_args --lab ${lab} --out ${out})
  if(KIT_ONE_PROCESS)
    list(APPEND configure_args --one-process)
  endif()
  add_test(NAME "${config_test}" COMMAND ${Python3_EXECUTABLE} -m grader configure ${configure_args}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties("${config_test}" PROPERTIES LABELS "${lab};cpu")
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -m grader configure ${configure_args}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    RESULT_VARIABLE failed ERROR_VARIABLE why)
  if(failed)
    string(STRIP "${why}" why)
    list(LENGTH KIT_LABS configured)
    if(configured EQUAL 1)
      # One lab asked for (the grader's builds): nothing else to build, so stop where the error shows.
      message(FATAL_ERROR "${lab}: ${why}")
    endif()
    # One lab's broken config must not stop the others being built: this lab gets no targets, CMake
    # warns, and its ctest test "<lab>: config is valid" fails with the same message.
    message(WARNING "${lab} is left out of this build: its config is wrong (the ctest test "
                    "\"${config_test}\" fails until it is fixed):\n${why}")
    # Whatever the fix edits (a reference a variant is made from, a test reading a parameter) re-runs CMake.
    file(GLOB lab_files LIST_DIRECTORIES false ${lab_dir}/* ${lab_dir}/tests/* ${solution_dir}/* ${solution_dir}/tests/*)
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${lab_files})
    return()
  endif()
  include(${out}/lab.cmake)
  set(KIT_LAB_HARNESS_EXTRAS)
  if(cublas IN_LIST KIT_LAB_LIBRARY_NAMES)
    set(KIT_LAB_HARNESS_EXTRAS kit_harness_cublas)
  endif()
  if(EXISTS ${solution_dir})
    list(TRANSFORM KIT_LAB_STUDENT_FILES PREPEND ${solution_dir}/ OUTPUT_VARIABLE reference_files)
    # the wrong variants are made from them, and from the whole files some variants name (`source`)
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${reference_files}
                 ${KIT_LAB_VARIANT_SOURCES})
  endif()

  # The tests are compiled once and linked into every variant.
  file(GLOB test_sources CONFIGURE_DEPENDS ${lab_dir}/tests/*.cu ${lab_dir}/tests/*.cpp)
  if(EXISTS ${solution_dir}/tests)
    file(GLOB hidden_sources CONFIGURE_DEPENDS ${solution_dir}/tests/*.cu ${solution_dir}/tests/*.cpp)
    list(APPEND test_sources ${hidden_sources})
  endif()
  if(KIT_LAB_SPLIT)
    # The judge's proxies for the student's functions (grader/calls.py): the tests call them.
    list(APPEND test_sources ${out}/calls/judge_calls.cpp)
    add_library(${lab}-runner-calls OBJECT ${out}/calls/runner_calls.cpp)
    target_include_directories(${lab}-runner-calls PRIVATE ${lab_dir})
    target_link_libraries(${lab}-runner-calls PUBLIC kit_runner)
    set(runner_harness kit_runner)
    if(cublas IN_LIST KIT_LAB_STUDENT_LIBRARY_NAMES)
      # The runner's copies of the judge's cuBLAS handles, where students may use cuBLAS at all.
      target_link_libraries(${lab}-runner-calls PUBLIC kit_runner_cublas)
      list(APPEND runner_harness kit_runner_cublas)
    endif()
  else()
    message(STATUS "${lab}: graded in one process (tests and student code together): ${KIT_LAB_UNSPLIT_WHY}")
  endif()
  add_library(${lab}-test-objects OBJECT ${test_sources})
  if(hidden_sources)
    # Public tests may add what only graded runs have (e.g. a yardstick that is another lab's solution).
    target_compile_definitions(${lab}-test-objects PUBLIC KIT_HIDDEN_TESTS)
  endif()
  target_include_directories(${lab}-test-objects PUBLIC ${lab_dir} ${lab_dir}/tests)
  target_link_libraries(${lab}-test-objects PUBLIC kit_harness ${KIT_LAB_HARNESS_EXTRAS} ${KIT_LAB_LIBRARIES})
  # The compiled instructor parts a test program links: the tests, the harness and main. Grading a
  # class, a student's build reuses a reference build's (KIT_PREBUILT) rather than compiling them again.
  set(compiled ${lab}-test-objects kit_harness ${KIT_LAB_HARNESS_EXTRAS})
  set(runner_parts)
  if(KIT_LAB_SPLIT)
    set(runner_parts ${runner_harness} ${lab}-runner-calls)
  endif()
  if(KIT_PREBUILT)
    include(${KIT_PREBUILT}/${lab}/prebuilt.cmake)
    list(TRANSFORM compiled PREPEND kit_prebuilt:: OUTPUT_VARIABLE KIT_LAB_COMPILED)
    list(TRANSFORM runner_parts PREPEND kit_prebuilt:: OUTPUT_VARIABLE KIT_LAB_RUNNER_PARTS)
    set(KIT_LAB_MAIN kit_prebuilt::kit_test_main)
  else()
    export(TARGETS kit_test_main ${compiled} ${runner_parts} NAMESPACE kit_prebuilt:: FILE ${out}/prebuilt.cmake)
    set(KIT_LAB_COMPILED ${compiled})
    set(KIT_LAB_RUNNER_PARTS ${runner_parts})
    set(KIT_LAB_MAIN kit_test_main)
  endif()

  set(student_dir ${lab_dir})
  if(KIT_STUDENT_DIR)
    set(student_dir ${KIT_STUDENT_DIR})
  endif()
  kit_lab_variant(${lab} ${lab}-tests ${student_dir})
  set(KIT_LAB_TARGETS ${lab}-tests)
  if(EXISTS ${solution_dir})
    kit_lab_variant(${lab} ${lab}-reference-tests ${solution_dir})
    list(APPEND KIT_LAB_TARGETS ${lab}-reference-tests)
    # The self-check's variants are built when it runs (`grader selfcheck` builds <lab>-variants
    # once it has found a GPU): only a GPU run uses them, and they are most of the build.
    add_custom_target(${lab}-variants)
    foreach(table IN ITEMS wrong right)
      string(TOUPPER ${table} TABLE)
      foreach(name IN LISTS KIT_LAB_${TABLE})
        kit_lab_variant(${lab} ${lab}-${table}-${name}-tests ${out}/${table}/${name})
        set_target_properties(${lab}-${table}-${name}-tests PROPERTIES EXCLUDE_FROM_ALL ON)
        # A variant made from a whole file (a journey's step) is a kernel written anew: its student files
        # compile with everything else, so that a build for several GPU generations (CI's) proves it builds
        # for each. An edit of the reference compiles wherever the reference does, and waits for the self-check.
        if(NOT "${table}-${name}" IN_LIST KIT_LAB_WHOLE_FILE_VARIANTS)
          set_target_properties(${lab}-${table}-${name}-tests-student PROPERTIES EXCLUDE_FROM_ALL ON)
        endif()
        if(KIT_LAB_SPLIT)
          set_target_properties(${lab}-${table}-${name}-tests-runner PROPERTIES EXCLUDE_FROM_ALL ON)
        endif()
        add_dependencies(${lab}-variants ${lab}-${table}-${name}-tests)
      endforeach()
    endforeach()
  endif()

  kit_lab_ctests(${lab})
  if(EXISTS ${lab_dir}/CMakeLists.txt)
    add_subdirectory(${lab_dir} ${out}/extras)
  endif()
endfunction()

# Test case number `i` of a lab once more, under compute-sanitizer with the tool its config names
# and the options the grader uses (from lab.cmake), so that `make test` on a GPU proves the
# reference clean. Without compute-sanitizer the test says so and counts as skipped.
function(kit_sanitizer_ctest lab variant target i)
  set(name "${KIT_LAB_CASE_${i}_NAME}")
  set(test "${lab}/${variant} under compute-sanitizer ${KIT_LAB_CASE_${i}_SANITIZER}: ${name}")
  if(KIT_COMPUTE_SANITIZER AND KIT_LAB_SPLIT)
    # The student's code is in the runner: the judge starts it under compute-sanitizer.
    string(REPLACE ";" "\n" prefix "${KIT_COMPUTE_SANITIZER};${KIT_LAB_CASE_${i}_SANITIZER_ARGS}")
    add_test(NAME "${test}" COMMAND $<TARGET_FILE:${target}> "--test-case=${name}" --no-colors)
    set_tests_properties("${test}" PROPERTIES ENVIRONMENT "KIT_RUNNER_PREFIX=${prefix}")
  elseif(KIT_COMPUTE_SANITIZER)
    add_test(NAME "${test}" COMMAND ${KIT_COMPUTE_SANITIZER} ${KIT_LAB_CASE_${i}_SANITIZER_ARGS}
                                    $<TARGET_FILE:${target}> "--test-case=${name}" --no-colors)
  else()
    add_test(NAME "${test}" COMMAND ${CMAKE_COMMAND} -E echo "${KIT_SANITIZER_MISSING}")
  endif()
  set_tests_properties("${test}" PROPERTIES LABELS "${lab};gpu;sanitizer" TIMEOUT ${KIT_LAB_CASE_${i}_TIMEOUT}
                       SKIP_REGULAR_EXPRESSION "${KIT_GPU_SKIP_REGEX}|compute-sanitizer was not found"
                       RESOURCE_LOCK ${KIT_GPU_LOCK})
endfunction()

# One test program: the lab's student files from `source_dir`, and the lab's tests.
#
# The student files are compiled on their own (<target>-student), with only the lab's header
# and the harness's error checks in view; when KIT_SANDBOX_COMPILE is on (grading untrusted
# code) each compile runs in the grader's OS sandbox, which shows it nothing of solutions/.
#
# A split lab (KIT_LAB_SPLIT) makes two programs: <target>, the judge (tests, harness,
# proxies; no student code), and <target>-runner (the student's code and the dispatcher,
# linked with only the libraries the lab lets students use), which the judge starts and
# calls (kit/remote.hpp). A lab that is not split links the student's code into <target>.
# Before the link that holds student code, `grader link-check` refuses student objects that
# would replace a library or instructor function, call outside what student code may call,
# or hold code of a header-only library the lab forbids (CUB, Thrust); the instructor's
# objects come first in that link.
function(kit_lab_variant lab target source_dir)
  list(TRANSFORM KIT_LAB_STUDENT_FILES PREPEND ${source_dir}/ OUTPUT_VARIABLE sources)
  set(student ${target}-student)
  add_library(${student} STATIC ${sources})
  target_include_directories(${student} PRIVATE ${PROJECT_SOURCE_DIR}/labs/${lab})
  target_link_libraries(${student} PRIVATE kit_student_api ${KIT_LAB_STUDENT_LIBRARIES})
  # Line numbers for the device code (the optimised code is unchanged), so that compute-sanitizer's
  # reports name the line of the student file where a bad access happened.
  target_compile_options(${student} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
  if(KIT_SANDBOX_COMPILE)
    set(launcher ${CMAKE_COMMAND} -E env PYTHONPATH=${PROJECT_SOURCE_DIR} ${Python3_EXECUTABLE} -m grader
        sandboxed-compile --readable ${PROJECT_SOURCE_DIR}/labs/${lab} ${PROJECT_SOURCE_DIR}/harness/include
        ${source_dir} --writable ${CMAKE_BINARY_DIR}/CMakeFiles/${student}.dir --)
    set_target_properties(${student} PROPERTIES CUDA_COMPILER_LAUNCHER "${launcher}"
                                                CXX_COMPILER_LAUNCHER "${launcher}")
  endif()

  add_executable(${target} $<TARGET_OBJECTS:${KIT_LAB_MAIN}>)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/${lab})
  if(KIT_LAB_SPLIT)
    target_link_libraries(${target} PRIVATE ${KIT_LAB_COMPILED} ${KIT_LAB_LIBRARIES})
    # Only object files of other targets: with KIT_PREBUILT none is compiled here, so CMake cannot tell the
    # linker from the sources (the student's archive, which told it before the split, is the runner's now).
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
    set(holder ${target}-runner)
    set(instructor_parts ${KIT_LAB_RUNNER_PARTS})
    set(holder_libraries ${KIT_LAB_STUDENT_LIBRARIES})
    list(POP_FRONT instructor_parts first_part)
    add_executable(${holder} $<TARGET_OBJECTS:${first_part}>)
    target_link_libraries(${holder} PRIVATE ${instructor_parts} ${student} ${holder_libraries})
    set_target_properties(${holder} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/${lab})
    add_dependencies(${target} ${holder})  # the judge is no use without its runner
    set(instructor_objects)
    foreach(part IN LISTS KIT_LAB_RUNNER_PARTS)
      list(APPEND instructor_objects $<TARGET_OBJECTS:${part}>)
    endforeach()
  else()
    # The instructor's objects (main as the program's source) ahead of the student's archive.
    target_link_libraries(${target} PRIVATE ${KIT_LAB_COMPILED} ${student} ${KIT_LAB_LIBRARIES})
    set(holder ${target})
    set(holder_libraries ${KIT_LAB_LIBRARIES})
    set(instructor_objects $<TARGET_OBJECTS:${KIT_LAB_MAIN}>)
    foreach(compiled IN LISTS KIT_LAB_COMPILED)
      list(APPEND instructor_objects $<TARGET_OBJECTS:${compiled}>)
    endforeach()
  endif()
  set(libraries $<TARGET_FILE:CUDA::cudart> $<TARGET_FILE:CUDA::cudart_static>)
  foreach(library IN LISTS holder_libraries)
    list(APPEND libraries $<TARGET_FILE:${library}>)
  endforeach()
  set(library_names ${KIT_LAB_LIBRARY_NAMES})
  if(KIT_LAB_SPLIT)
    set(library_names ${KIT_LAB_STUDENT_LIBRARY_NAMES})
  endif()
  add_custom_command(TARGET ${holder} PRE_LINK
    COMMAND ${Python3_EXECUTABLE} -m grader link-check --cache-dir ${CMAKE_BINARY_DIR} --lab ${lab}
            --lab-libraries ${library_names} --student $<TARGET_OBJECTS:${student}>
            --forbidden ${KIT_LAB_FORBIDDEN} --allowed-calls ${KIT_LAB_ALLOWED_CALLS}
            --instructor ${instructor_objects} --libraries ${libraries}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} COMMAND_EXPAND_LISTS VERBATIM)
endfunction()

function(kit_lab_ctests lab)
  math(EXPR last "${KIT_LAB_CASE_COUNT} - 1")
  foreach(i RANGE ${last})
    set(name "${KIT_LAB_CASE_${i}_NAME}")
    if(TARGET ${lab}-reference-tests)
      # The instructor's tree: the references must pass everything. The student files there are
      # the skeleton, whose GPU tests fail by design (the self-check proves they fail cleanly).
      set(variants reference)
      if(NOT KIT_LAB_CASE_${i}_GPU)
        list(APPEND variants student)
      endif()
    else()
      set(variants student)  # the student release: the student's own work, every test case
    endif()
    foreach(variant IN LISTS variants)
      set(target ${lab}-${variant}-tests)
      if(variant STREQUAL "student")
        set(target ${lab}-tests)
      endif()
      if(NOT TARGET ${target})
        continue()
      endif()
      add_test(NAME "${lab}/${variant}: ${name}" COMMAND ${target} "--test-case=${name}" --no-colors)
      set(labels ${lab})
      if(KIT_LAB_CASE_${i}_GPU)
        list(APPEND labels gpu)
        set_tests_properties("${lab}/${variant}: ${name}" PROPERTIES SKIP_REGULAR_EXPRESSION "${KIT_GPU_SKIP_REGEX}"
                             RESOURCE_LOCK ${KIT_GPU_LOCK})
      else()
        list(APPEND labels cpu)
      endif()
      if(KIT_LAB_CASE_${i}_TIMING)
        list(APPEND labels timing)
      endif()
      if(KIT_LAB_CASE_${i}_SERIAL)  # timing cases, and tests that need the GPU's memory to themselves
        set_tests_properties("${lab}/${variant}: ${name}" PROPERTIES RUN_SERIAL ON)
      endif()
      set_tests_properties("${lab}/${variant}: ${name}" PROPERTIES LABELS "${labels}"
                           TIMEOUT ${KIT_LAB_CASE_${i}_TIMEOUT})
      if(KIT_LAB_CASE_${i}_SANITIZER)
        kit_sanitizer_ctest(${lab} ${variant} ${target} ${i})
      endif()
    endforeach()
  endforeach()

  foreach(target IN LISTS KIT_LAB_TARGETS)
    set(hidden_flag)
    if(target STREQUAL "${lab}-reference-tests" OR EXISTS ${PROJECT_SOURCE_DIR}/solutions/${lab}/tests)
      set(hidden_flag --with-hidden)
    endif()
    add_test(NAME "${lab}: test cases of ${target} match the config"
             COMMAND ${Python3_EXECUTABLE} -m grader check-cases --lab ${lab} --binary $<TARGET_FILE:${target}>
                     ${hidden_flag}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties("${lab}: test cases of ${target} match the config" PROPERTIES LABELS "${lab};cpu")
  endforeach()

  # Without a GPU (none visible, on any machine), the student's program ends by saying that none of their code
  # ran, in a student's words: doctest's "SUCCESS" then counts CPU test cases alone (harness/src/main.cpp).
  set(no_gpu_test "${lab}: without a GPU, the tests say that none of your code ran")
  add_test(NAME "${no_gpu_test}" COMMAND ${lab}-tests "--test-case-exclude=*" --no-colors)
  set_tests_properties("${no_gpu_test}" PROPERTIES LABELS "${lab};cpu" ENVIRONMENT "CUDA_VISIBLE_DEVICES=-1"
                       PASS_REGULAR_EXPRESSION
                       "No CUDA GPU available.*NOT TESTED: no usable CUDA GPU was found [(]no NVIDIA driver or GPU on this machine[)].*None of your code was run")

  if(TARGET ${lab}-reference-tests)
    set(check "${lab}: grader self-check (reference full marks, skeleton zero, wrong variants caught, right pass)")
    add_test(NAME "${check}"
             COMMAND ${Python3_EXECUTABLE} -m grader selfcheck --lab ${lab} --build-dir ${CMAKE_BINARY_DIR}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties("${check}" PROPERTIES LABELS "${lab};gpu;selfcheck" RUN_SERIAL ON
                         TIMEOUT ${KIT_LAB_SELFCHECK_TIMEOUT} SKIP_REGULAR_EXPRESSION "${KIT_GPU_SKIP_REGEX}")
  endif()
endfunction()

# kit_add_lab_demo(), from a lab's own CMakeLists.txt: the target <lab>-demo, the lab's demo/demo.cpp with
# the same student files as its tests (labs/<lab>/, or KIT_STUDENT_DIR when grading), the harness and the
# lab's libraries, written to build/<lab>/. A lab adds what else its demo needs to the target afterwards.
function(kit_add_lab_demo)
  list(TRANSFORM KIT_LAB_STUDENT_FILES PREPEND ${student_dir}/ OUTPUT_VARIABLE demo_student_sources)
  add_executable(${lab}-demo ${lab_dir}/demo/demo.cpp ${demo_student_sources})
  target_include_directories(${lab}-demo PRIVATE ${lab_dir})
  target_link_libraries(${lab}-demo PRIVATE kit_harness ${KIT_LAB_LIBRARIES})
  target_compile_options(${lab}-demo PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  set_target_properties(${lab}-demo PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${out})
endfunction()
