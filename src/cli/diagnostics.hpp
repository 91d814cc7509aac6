// SPDX-License-Identifier: Apache-2.0
// The one form of every diagnostic, whatever the subcommand, on stderr:
//   qpatch: error: ./ck/config.json: byte 887 (line 12, column 5): at /quantization_config: ...
// PATH is the file as the user would open it: the DIR argument exactly as given, joined with the
// file name; JSON files add line and column (what jq and `python -m json.tool` print), since an
// editor opens them there, not at a byte.
#pragma once

#include <qpatch/engine/pattern.hpp>
#include <qpatch/error.hpp>

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

namespace qpatch::cli {

enum class Level { error, warning, note };

// Join the DIR argument as given with a file inside it ("./ck" + "config.json" ->
// "./ck/config.json"). A `file` that already names the directory (or is empty) is kept.
std::string display_path(const std::string& dir_arg, const std::string& file);

// Return "line L, column C" for byte `offset` of `text` (both 1-based; the column counts
// characters, not UTF-8 bytes), as jq reports a position.
std::string line_column(std::string_view text, uint64_t offset);

// Render `error`, found in the checkpoint `dir_arg`, as the text after "qpatch: error: ".
std::string describe(const Error& error, const std::string& dir_arg);

// Write "qpatch: <level>: <text>\n".
void report(std::ostream& err, Level level, const std::string& text);
// Write `error` in the one form, its path joined to `dir_arg`.
void report(std::ostream& err, const Error& error, const std::string& dir_arg);
// Compile the --only REGEX `text` into `out` (left empty for ""); false, with the error on
// `err`, when it does not compile (a usage error for every subcommand that takes --only).
bool compile_only(const std::string& text, std::optional<engine::Pattern>& out, std::ostream& err);

} // namespace qpatch::cli
