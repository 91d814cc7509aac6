// SPDX-License-Identifier: Apache-2.0
// ANSI colour for human reports, on or off as a whole. The CLI decides (TTY, NO_COLOR, --color);
// renderers only ask for a role.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qpatch::report {

enum class Role { heading, dim, good, warning, error, emphasis };

struct TextStyle {
  bool color = false;
  // Return `text` wrapped in the escape codes of `role` when colour is on.
  std::string paint(std::string_view text, Role role) const;
};

// What paint writes where a colour code starts: "\x1b[" followed by a token drawn at random
// once per process, so that no name read from a file can spell it. The terminal filter
// (cli/terminal_safe.cpp) turns it into "\x1b[" and escapes every other ESC: a name holding
// "\x1b[31m" is printed as text, with colour on or off.
std::string_view colour_marker();

// Return `value` with thousands separators: 70000 -> "70,000".
std::string with_commas(uint64_t value);
// Return a byte count for people: "16.9 GB" (decimal units, as Hugging Face shows sizes).
std::string human_bytes(uint64_t bytes);

} // namespace qpatch::report
