// SPDX-License-Identifier: Apache-2.0
// Fitting report lines to a terminal: on a TTY a 260-character line wraps under its own column
// and a module list is cut to what fits, with the count of the rest; pipes and -v get every line
// whole, since scripts grep them.
#pragma once

#include <string>
#include <vector>

namespace qpatch::report {

// Return "+8: mtp.fc, mtp.layers.0.self_attn.q_proj, … (6 more)": `sign` and the count, then as
// many names as fit in `width` columns (0: all of them). At least one name is always shown.
std::string
elided_list(const std::string& sign, const std::vector<std::string>& names, size_t width);

// Wrap `text` (one line, no newline) at spaces so that no line is wider than `width`,
// continuation lines indented by `indent` spaces; `width` 0 leaves it whole. A word longer
// than a line is never cut.
std::string wrap(const std::string& text, size_t width, size_t indent);

// Columns `text` takes on a terminal: UTF-8 characters, not bytes ("…" is one).
size_t display_width(const std::string& text);

} // namespace qpatch::report
