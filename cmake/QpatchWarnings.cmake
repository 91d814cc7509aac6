# SPDX-License-Identifier: Apache-2.0
# Warning and sanitizer flags for first-party targets only: they link this INTERFACE target
# PRIVATE, so third-party headers and targets never see -Werror.
add_library(qpatch_warnings INTERFACE)
target_compile_options(qpatch_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
  -Woverloaded-virtual -Wnull-dereference
  $<$<BOOL:${QPATCH_WARNINGS_AS_ERRORS}>:-Werror>)
target_compile_definitions(qpatch_warnings INTERFACE $<$<CONFIG:Debug>:_GLIBCXX_ASSERTIONS>)
if(QPATCH_FUZZ)
  # Coverage for libFuzzer's guidance; the fuzz executables add -fsanitize=fuzzer (its main).
  target_compile_options(qpatch_warnings INTERFACE -fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(qpatch_warnings INTERFACE -fsanitize=address,undefined)
elseif(QPATCH_SANITIZE)
  # GCC 12 reports false "may be used uninitialized" inside <regex> and <functional> once ASan
  # instruments them (the sanitized code paths defeat its flow analysis); the normal build keeps
  # the warning.
  target_compile_options(qpatch_warnings INTERFACE -fsanitize=address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer
    $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
  target_link_options(qpatch_warnings INTERFACE -fsanitize=address,undefined)
endif()
