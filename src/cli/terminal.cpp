// SPDX-License-Identifier: Apache-2.0
#include "terminal.hpp"

#include <unistd.h>

#include <cstdlib>

namespace qpatch::cli {

Terminal Terminal::detect() {
  Terminal terminal;
  terminal.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
  terminal.stderr_is_tty = ::isatty(STDERR_FILENO) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  terminal.no_color = no_color != nullptr && no_color[0] != '\0';
  return terminal;
}

std::optional<ColorWhen> parse_color_when(const std::string& text) {
  if (text == "auto") {
    return ColorWhen::automatic;
  }
  if (text == "always") {
    return ColorWhen::always;
  }
  if (text == "never") {
    return ColorWhen::never;
  }
  return std::nullopt;
}

bool use_color(ColorWhen when, bool stream_is_tty, const Terminal& terminal) {
  switch (when) {
  case ColorWhen::always:
    return true;
  case ColorWhen::never:
    return false;
  case ColorWhen::automatic:
    return stream_is_tty && !terminal.no_color;
  }
  return false;
}

} // namespace qpatch::cli
