# TALKBOX_SANITIZE / TALKBOX_FUZZ: ASan + UBSan (fatal, so that CI fails on a report) and, for
# fuzzing, coverage on every target defined after this point, i.e. talkbox's own code. ggml's
# compute kernels stay uninstrumented: instrumenting ggml-cpu adds build time and slows every
# inference in the sanitized server tests without reaching our parsers. ggml-base holds the GGUF
# reader behind the model and voice fuzzers: it gets ASan and coverage, not UBSan (it loads
# unvalidated enum values before checking them).
if(NOT (TALKBOX_SANITIZE OR TALKBOX_FUZZ))
  return()
endif()
set(TALKBOX_ASAN -fsanitize=address -fno-omit-frame-pointer)
if(TALKBOX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TALKBOX_FUZZ needs clang: configure with CC=clang CXX=clang++")
  endif()
  list(APPEND TALKBOX_ASAN -fsanitize=fuzzer-no-link)
endif()
# -O1 and line tables: readable reports at a fraction of -O3's compile time (ggml keeps -O3).
add_compile_options(${TALKBOX_ASAN} -fsanitize=undefined -fno-sanitize-recover=undefined -O1 -g1)
add_link_options(-fsanitize=address,undefined)
target_compile_options(ggml-base PRIVATE ${TALKBOX_ASAN})
