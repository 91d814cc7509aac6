// SPDX-License-Identifier: Apache-2.0
// What the process is attached to, detected once in main() and passed to run(), so tests decide
// it explicitly. Colour is on only for a TTY and never when NO_COLOR is set and non-empty
// (https://no-color.org); --color=always|never overrides.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace qpatch::cli {

struct Terminal {
  bool stdout_is_tty = false;
  bool stderr_is_tty = false;
  bool no_color = false; // NO_COLOR is set and non-empty
  // Columns of the terminal each stream is attached to; 0 for a pipe or a file, whose lines are
  // never wrapped or cut (scripts grep them).
  size_t stdout_columns = 0;
  size_t stderr_columns = 0;

  static Terminal detect();
};

enum class ColorWhen { automatic, always, never };

// Parse "auto", "always", "never".
std::optional<ColorWhen> parse_color_when(const std::string& text);
// Return whether a stream that is (or is not) a TTY gets colour.
bool use_color(ColorWhen when, bool stream_is_tty, const Terminal& terminal);

} // namespace qpatch::cli
