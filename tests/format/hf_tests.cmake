# Hugging Face folders and safetensors; included from tests/format/CMakeLists.txt.
# The suites reach the format part's internal headers (format/safetensors.h ...).
folio_add_test(NAME hf_safetensors_test SOURCES hf_safetensors_test.cpp LIBS folio_format LABELS unit)
folio_add_test(NAME hf_folder_test SOURCES hf_folder_test.cpp LIBS folio_format LABELS unit)
folio_add_test(NAME hf_smollm2_test SOURCES hf_smollm2_test.cpp LIBS folio_format LABELS model TIMEOUT 300)
foreach(hf_test IN ITEMS hf_safetensors_test hf_folder_test hf_smollm2_test)
  if(TARGET ${hf_test})
    target_include_directories(${hf_test} PRIVATE "${PROJECT_SOURCE_DIR}/engine/src")
  endif()
endforeach()
