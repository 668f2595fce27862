# ggml is built from the llama.cpp release bundled in node-llama-cpp (pinned in scripts/setup.sh).
if(NOT TALKBOX_GGML_SOURCE OR NOT EXISTS "${TALKBOX_GGML_SOURCE}/CMakeLists.txt")
  message(FATAL_ERROR "TALKBOX_GGML_SOURCE does not point at a ggml source folder "
                      "('${TALKBOX_GGML_SOURCE}'); run scripts/setup.sh")
endif()

set(GGML_NATIVE ${TALKBOX_NATIVE} CACHE BOOL "" FORCE)
set(GGML_CUDA   ${TALKBOX_CUDA}   CACHE BOOL "" FORCE)
set(GGML_VULKAN ${TALKBOX_VULKAN} CACHE BOOL "" FORCE)
# tinyBLAS sgemm for F32/F16 matrix products: 4.5x faster than ggml's dot-product loop on the
# full-size codec decoder (bench/decoder_bench, 1 thread: 487 -> 108 ms per frame).
set(GGML_LLAMAFILE      ON  CACHE BOOL "" FORCE)
set(GGML_BUILD_TESTS    OFF CACHE BOOL "" FORCE)
set(GGML_BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)
set(GGML_ALL_WARNINGS   OFF CACHE BOOL "" FORCE)
set(GGML_LLAMAFILE     ON  CACHE BOOL "" FORCE)  # faster F32/F16/Q8_0 matrix products on the CPU
set(BUILD_SHARED_LIBS   OFF CACHE BOOL "" FORCE)
add_subdirectory(${TALKBOX_GGML_SOURCE} ${CMAKE_BINARY_DIR}/ggml EXCLUDE_FROM_ALL)
