# Runs the harness's test program the way the grader does, with a seed in $KIT_SEED and a results file
# in $KIT_RESULTS, and checks the "run" record it writes: the public seed when that is the one in
# force, and neither the grader's secret seed nor any trace of it otherwise (the record lies in the
# program's own folder, whose contents end up in what a student reads).
#
#   cmake -DPROGRAM=<kit_harness_tests> -DPARAMS=<params.txt with seed=11> -DWORK=<folder> -P run_record_seed.cmake
set(secret 314159)
set(public 11)
file(MAKE_DIRECTORY ${WORK})

function(run_record seed out_var)
  set(results ${WORK}/results-${seed}.jsonl)
  file(REMOVE ${results})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env KIT_SEED=${seed} KIT_RESULTS=${results} KIT_PARAMS=${PARAMS}
                          ${PROGRAM} "--test-case=harness: poison is NaN*" --no-colors
                  RESULT_VARIABLE code OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "the test program failed (${code}) with KIT_SEED=${seed}:\n${output}")
  endif()
  file(STRINGS ${results} records REGEX "\"kind\": \"run\"")
  if(records STREQUAL "")
    message(FATAL_ERROR "no run record in ${results}")
  endif()
  file(READ ${results} everything)
  set(${out_var} "${records}" PARENT_SCOPE)
  set(${out_var}_all "${everything}${output}" PARENT_SCOPE)
endfunction()

run_record(${secret} graded)
if(graded_all MATCHES "${secret}")
  message(FATAL_ERROR "the grader's seed ${secret} appears in what the program wrote:\n${graded_all}")
endif()
if(NOT graded MATCHES "\"seed_public\": false" OR graded MATCHES "\"seed\":")
  message(FATAL_ERROR "with the grader's seed the run record must say seed_public false and hold no seed:\n${graded}")
endif()

run_record(${public} local)
if(NOT local MATCHES "\"seed_public\": true" OR NOT local MATCHES "\"seed\": ${public}[,}]")
  message(FATAL_ERROR "with the public seed the run record must hold it:\n${local}")
endif()
