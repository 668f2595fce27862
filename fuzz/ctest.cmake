# Included by the main build when TALKBOX_SANITIZE_BUILD names a TALKBOX_FUZZ build folder
# (scripts/setup.sh makes build-sanitize/): its fuzz runs and sanitized suites become tests of this
# build's ctest, so that one summary counts them (ctest -L fuzz, ctest -L sanitize run them alone).
include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)
set(run ${PROJECT_SOURCE_DIR}/scripts/fuzz_sanitize.sh)
foreach(name ${TALKBOX_FUZZ_TARGETS})
  add_test(NAME fuzz.${name} COMMAND ${run} fuzz ${TALKBOX_SANITIZE_BUILD} ${name})
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endforeach()
foreach(entry ${TALKBOX_SANITIZED_TESTS})
  string(REGEX MATCH "^[^=]+" binary "${entry}")
  string(REGEX REPLACE "^[^=]+=" "" filter "${entry}")
  add_test(NAME sanitize.${binary} COMMAND ${run} gtest ${TALKBOX_SANITIZE_BUILD} ${binary} ${filter})
  set_tests_properties(sanitize.${binary} PROPERTIES LABELS sanitize TIMEOUT 900)
endforeach()
