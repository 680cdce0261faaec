# kit_add_lab(<lab>): everything a lab needs, from its config.
#
# Targets (in build/<lab>/, beside the lab's params.txt):
#   <lab>-tests              the student files (labs/<lab>/, or KIT_STUDENT_DIR) + every test available
#   <lab>-reference-tests    solutions/<lab>/ + the same tests
#   <lab>-wrong-<name>-tests each deliberately wrong variant from hidden.toml
# ctest (labels: the lab's name, and cpu or gpu):
#   the reference's test cases, one ctest test each (gpu ones skip without a GPU), and the
#   student build's CPU-only ones; in the student release (no solutions/), every test case of
#   the student build;
#   "<lab>: test cases match the config" (cpu) and "<lab>: grader self-check" (gpu).
# A lab that needs more (an image viewer, a trajectory writer) adds a
# labs/<lab>/CMakeLists.txt, included after these targets exist.

set(KIT_GPU_SKIP_REGEX "No CUDA GPU available|Grading needs a CUDA GPU")
# Grading a class: a student's build links the tests and harness that a reference build of the same
# lab compiled once (its folder here), instead of compiling them again for every student.
set(KIT_PREBUILT "" CACHE PATH "grading one lab: a reference build folder whose compiled tests and harness to link")

function(kit_add_lab lab)
  set(lab_dir ${PROJECT_SOURCE_DIR}/labs/${lab})
  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${lab})
  set(out ${CMAKE_BINARY_DIR}/${lab})

  execute_process(
    COMMAND ${Python3_EXECUTABLE} -m grader configure --lab ${lab} --out ${out}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    RESULT_VARIABLE failed ERROR_VARIABLE why)
  if(failed)
    message(FATAL_ERROR "${lab}: ${why}")
  endif()
  set(config_files ${lab_dir}/lab.toml)
  if(EXISTS ${solution_dir}/hidden.toml)
    list(APPEND config_files ${solution_dir}/hidden.toml)
  endif()
  include(${out}/lab.cmake)
  if(EXISTS ${solution_dir})
    list(TRANSFORM KIT_LAB_STUDENT_FILES PREPEND ${solution_dir}/ OUTPUT_VARIABLE reference_files)
    list(APPEND config_files ${reference_files})  # the wrong variants are made from them
  endif()
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${config_files})

  # The tests are compiled once and linked into every variant.
  file(GLOB test_sources CONFIGURE_DEPENDS ${lab_dir}/tests/*.cu ${lab_dir}/tests/*.cpp)
  if(EXISTS ${solution_dir}/tests)
    file(GLOB hidden_sources CONFIGURE_DEPENDS ${solution_dir}/tests/*.cu ${solution_dir}/tests/*.cpp)
    list(APPEND test_sources ${hidden_sources})
  endif()
  add_library(${lab}-test-objects OBJECT ${test_sources})
  if(hidden_sources)
    # Public tests may add what only graded runs have (e.g. a yardstick that is another lab's solution).
    target_compile_definitions(${lab}-test-objects PUBLIC KIT_HIDDEN_TESTS)
  endif()
  target_include_directories(${lab}-test-objects PUBLIC ${lab_dir} ${lab_dir}/tests)
  target_link_libraries(${lab}-test-objects PUBLIC kit_harness ${KIT_LAB_LIBRARIES})
  if(KIT_PREBUILT)
    include(${KIT_PREBUILT}/${lab}/prebuilt.cmake)
    set(KIT_LAB_COMPILED kit_prebuilt::${lab}-test-objects kit_prebuilt::kit_test_main kit_prebuilt::kit_harness)
  else()
    export(TARGETS ${lab}-test-objects kit_test_main kit_harness NAMESPACE kit_prebuilt:: FILE ${out}/prebuilt.cmake)
    set(KIT_LAB_COMPILED ${lab}-test-objects kit_test_main kit_harness)
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
    foreach(wrong IN LISTS KIT_LAB_WRONG)
      kit_lab_variant(${lab} ${lab}-wrong-${wrong}-tests ${out}/wrong/${wrong})
    endforeach()
  endif()

  kit_lab_ctests(${lab})
  if(EXISTS ${lab_dir}/CMakeLists.txt)
    add_subdirectory(${lab_dir} ${out}/extras)
  endif()
endfunction()

# One test program: the lab's student files from `source_dir`, linked with the lab's tests.
function(kit_lab_variant lab target source_dir)
  list(TRANSFORM KIT_LAB_STUDENT_FILES PREPEND ${source_dir}/ OUTPUT_VARIABLE sources)
  add_executable(${target} ${sources})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/labs/${lab})
  target_link_libraries(${target} PRIVATE ${KIT_LAB_COMPILED} ${KIT_LAB_LIBRARIES})
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/${lab})
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
        set_tests_properties("${lab}/${variant}: ${name}" PROPERTIES SKIP_REGULAR_EXPRESSION "${KIT_GPU_SKIP_REGEX}")
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

  if(TARGET ${lab}-reference-tests)
    set(check "${lab}: grader self-check (reference full marks, skeleton zero, wrong variants lose points)")
    add_test(NAME "${check}"
             COMMAND ${Python3_EXECUTABLE} -m grader selfcheck --lab ${lab} --build-dir ${CMAKE_BINARY_DIR}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties("${check}" PROPERTIES LABELS "${lab};gpu;selfcheck" RUN_SERIAL ON
                         TIMEOUT ${KIT_LAB_SELFCHECK_TIMEOUT} SKIP_REGULAR_EXPRESSION "${KIT_GPU_SKIP_REGEX}")
  endif()
endfunction()
