# SPDX-License-Identifier: Apache-2.0
# Run at every build (cmake -P): write the version header with the git commit the binary is built
# from, so `qpatch --version` names it in bug reports. configure_file rewrites the header only
# when its text changes, so an unchanged commit rebuilds nothing.
# In: SOURCE_DIR, OUTPUT, VERSION.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE QPATCH_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE status ERROR_QUIET)
if(NOT status EQUAL 0 OR QPATCH_GIT_COMMIT STREQUAL "")
  set(QPATCH_GIT_COMMIT "unknown") # a source tarball: no repository to ask
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes ERROR_QUIET)
  if(NOT changes STREQUAL "")
    string(APPEND QPATCH_GIT_COMMIT "-dirty")
  endif()
endif()
set(QPATCH_VERSION "${VERSION}")
configure_file("${SOURCE_DIR}/cmake/version.hpp.in" "${OUTPUT}" @ONLY)
