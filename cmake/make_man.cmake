# SPDX-License-Identifier: Apache-2.0
# Write qpatch.1 from the binary's own --help text (the program's and each subcommand's), so the
# man page and --help have one source and cannot drift. Run as cmake -P at build time.
# In: QPATCH (the built binary), OUTPUT, VERSION.
function(help_of out)
  execute_process(COMMAND "${QPATCH}" ${ARGN} --help OUTPUT_VARIABLE text RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${QPATCH} ${ARGN} --help exited ${status}")
  endif()
  # roff: a backslash is \e, a hyphen in an option is \-, and a line may not start with . or '.
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  # groff reads ASCII: the few non-ASCII characters of the help texts as roff escapes.
  string(REPLACE "…" "\\[u2026]" text "${text}")
  string(REPLACE "—" "\\[em]" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

help_of(main)
set(page ".TH QPATCH 1 \"\" \"qpatch ${VERSION}\" \"User Commands\"
.SH NAME
qpatch \\- make a quantized checkpoint's quantization config agree with the tensors it stores
.SH SYNOPSIS
.B qpatch
[\\fIOPTIONS\\fR] \\fIDIR\\fR|\\fIORG/NAME\\fR...
.br
.B qpatch
\\fBinspect\\fR|\\fBexplain\\fR|\\fBrestore\\fR [\\fIOPTIONS\\fR] \\fIDIR\\fR...
.br
.B qpatch graft
\\fB\\-\\-from\\fR \\fIDONOR\\fR [\\fIOPTIONS\\fR] \\fIDIR\\fR
.SH DESCRIPTION
.nf
${main}.fi
")
# The subcommands in the order `qpatch --help` lists them: src/cli/command_table.cpp is their
# one list.
execute_process(COMMAND "${QPATCH}" --help OUTPUT_VARIABLE raw_main)
string(REGEX MATCH "\nSubcommands:\n.*" listed "${raw_main}")
string(REGEX MATCHALL "\n  [a-z]+ " words "${listed}")
set(commands "")
foreach(word IN LISTS words)
  string(STRIP "${word}" word)
  list(APPEND commands "${word}")
endforeach()
if(NOT commands)
  message(FATAL_ERROR "${QPATCH} --help lists no subcommands")
endif()
foreach(command IN LISTS commands)
  help_of(text ${command})
  string(APPEND page ".SH \"QPATCH ${command}\"\n.nf\n${text}.fi\n")
endforeach()
string(APPEND page ".SH SEE ALSO
The README of the qpatch sources: the JSON schema, what each engine's rules are taken from, and
recipes.
")
file(WRITE "${OUTPUT}.tmp" "${page}")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
