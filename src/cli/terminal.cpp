// SPDX-License-Identifier: Apache-2.0
#include "terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

namespace qpatch::cli {

namespace {

// The window size the terminal reports, else $COLUMNS (set by shells, not exported by all), else
// the classic 80.
size_t columns_of(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
    const long value = std::strtol(columns, nullptr, 10);
    if (value > 0) {
      return static_cast<size_t>(value);
    }
  }
  return 80;
}

} // namespace

Terminal Terminal::detect() {
  Terminal terminal;
  terminal.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
  terminal.stderr_is_tty = ::isatty(STDERR_FILENO) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  terminal.no_color = no_color != nullptr && no_color[0] != '\0';
  terminal.stdout_columns = terminal.stdout_is_tty ? columns_of(STDOUT_FILENO) : 0;
  terminal.stderr_columns = terminal.stderr_is_tty ? columns_of(STDERR_FILENO) : 0;
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
