# Which CUDA architectures cmake/FolioCudaArchitectures.cmake picks, with a
# fake nvidia-smi standing for each kind of machine, and that no preset pins
# one (a pinned architecture in the `ci` preset once hid a default that could
# not build the kernels: enable_language(CUDA) chose sm_75).
#   cmake -DFOLIO_SOURCE_DIR=... -DWORK_DIR=... -P cuda_architectures_test.cmake
cmake_minimum_required(VERSION 3.25)
set(portable "80-real;86-real;89-real;90")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(WRITE "${WORK_DIR}/probe.cmake"
     "list(APPEND CMAKE_MODULE_PATH \"${FOLIO_SOURCE_DIR}/cmake\")\n"
     "include(FolioCudaArchitectures)\n"
     "message(\"ARCHITECTURES=\${CMAKE_CUDA_ARCHITECTURES}\")\n")

set(failures 0)
# case name, what the fake nvidia-smi does (shell), expected architectures, extra -D
function(check name smi expected)
  set(bin "${WORK_DIR}/${name}")
  file(MAKE_DIRECTORY "${bin}")
  file(WRITE "${bin}/nvidia-smi" "#!/bin/sh\n${smi}\n")
  file(CHMOD "${bin}/nvidia-smi" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PATH=${bin}:$ENV{PATH}"
                          "${CMAKE_COMMAND}" ${ARGN} -P "${WORK_DIR}/probe.cmake"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  string(REGEX MATCH "ARCHITECTURES=([^\n]*)" _ "${err}${out}")
  if(NOT rc EQUAL 0 OR NOT "${CMAKE_MATCH_1}" STREQUAL "${expected}")
    message(SEND_ERROR "${name}: got '${CMAKE_MATCH_1}' (rc ${rc}), want '${expected}'\n${err}")
  else()
    message(STATUS "${name}: ${expected}")
  endif()
  set(last_log "${err}" PARENT_SCOPE)
endfunction()

check(hopper "echo 9.0" "native")
check(two_ampere "echo 8.6; echo 8.0" "native")
check(no_driver "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver' >&2; exit 9"
      "${portable}")
check(no_gpu "exit 6" "${portable}")
check(turing "echo 7.5" "${portable}")
if(NOT last_log MATCHES "older than sm_80")
  message(SEND_ERROR "turing: no message that the GPU is too old:\n${last_log}")
endif()
check(mixed "echo 8.9; echo 7.0" "${portable}")
check(user_choice "echo 9.0" "90" -DCMAKE_CUDA_ARCHITECTURES=90)

# No preset pins an architecture: each builds what a user's machine builds.
file(READ "${FOLIO_SOURCE_DIR}/CMakePresets.json" presets)
if(presets MATCHES "CMAKE_CUDA_ARCHITECTURES")
  message(SEND_ERROR "CMakePresets.json pins CMAKE_CUDA_ARCHITECTURES")
endif()
