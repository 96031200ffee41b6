# Which GPUs the CUDA kernels are compiled for, decided before
# enable_language(CUDA): that call would otherwise set the toolkit's own
# default (sm_75 for CUDA 13), which cannot build the kernels (cp.async,
# bf16 tensor-core MMA need sm_80).
#
#   -DCMAKE_CUDA_ARCHITECTURES=...  given by the user: kept as it is
#   a GPU of sm_80 or newer visible   "native" (only what is present: fastest build)
#   otherwise                         sm_80, 86, 89 and 90 as machine code, plus
#                                     compute_90 PTX that newer GPUs compile at load
#
# A GPU older than sm_80 gets a message here; at run time Folio says so again
# and runs on the CPU (engine/src/cuda/cuda_backend.cpp).
set(FOLIO_CUDA_PORTABLE_ARCHITECTURES "80-real;86-real;89-real;90")

function(folio_visible_gpu_capabilities out)
  set(${out} "" PARENT_SCOPE)
  find_program(FOLIO_NVIDIA_SMI nvidia-smi)
  if(NOT FOLIO_NVIDIA_SMI)
    return()
  endif()
  execute_process(COMMAND "${FOLIO_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                  OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 20)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${caps}")
  set(${out} "${caps}" PARENT_SCOPE)
endfunction()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
  folio_visible_gpu_capabilities(FOLIO_GPU_CAPS)
  set(folio_old_gpus "")
  foreach(cap IN LISTS FOLIO_GPU_CAPS)
    if(cap VERSION_LESS 8.0)
      list(APPEND folio_old_gpus "sm_${cap}")
    endif()
  endforeach()
  if(FOLIO_GPU_CAPS AND NOT folio_old_gpus)
    set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING "CUDA architectures (Folio: the visible GPU's)")
    message(STATUS "Folio: CUDA kernels for the visible GPU (compute capability ${FOLIO_GPU_CAPS})")
  else()
    set(CMAKE_CUDA_ARCHITECTURES "${FOLIO_CUDA_PORTABLE_ARCHITECTURES}"
        CACHE STRING "CUDA architectures (Folio: sm_80, 86, 89, 90 + PTX)")
    if(folio_old_gpus)
      string(REPLACE "." "" folio_old_gpus "${folio_old_gpus}")
      message(WARNING "Folio: the visible GPU (${folio_old_gpus}) is older than sm_80, which Folio's CUDA "
                      "kernels need; building them for sm_80 and newer, and this GPU will not be used "
                      "(Folio runs on the CPU there)")
    else()
      message(STATUS "Folio: no GPU visible; CUDA kernels for sm_80, 86, 89, 90 + PTX")
    endif()
  endif()
endif()
