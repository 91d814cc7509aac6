// SPDX-License-Identifier: Apache-2.0
// Human output that cannot drive the terminal. Tensor, file and index names come from files
// anyone can write, and a name holding ESC or BEL would retitle or clear the terminal of whoever
// reads qpatch's report. Every human stream goes through terminal_safe(): control characters
// become visible escapes (ESC -> \x1b, C1 controls such as U+009B -> \u009b); the only escape
// sequences left are the colour codes report::TextStyle::paint wrote, told from a name's bytes
// by a marker drawn at random per process (report::colour_marker), so a name holding
// "\x1b[31m" is escaped like any other ESC, with colour on or off.
// JSON output is left as nlohmann writes it: it escapes every control character itself.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace qpatch::cli {

std::string terminal_safe(std::string_view text);
// `text` with TextStyle::paint's markers made colour codes and nothing else changed (JSON and
// diffs, written byte for byte).
std::string colour_codes(std::string_view text);

// Collects a stream's output and writes it, made terminal-safe unless raw, when destroyed.
class SafeStream {
public:
  explicit SafeStream(std::ostream& dest) : m_dest(dest) {}
  ~SafeStream();
  SafeStream(const SafeStream&) = delete;
  SafeStream& operator=(const SafeStream&) = delete;
  std::ostream& stream() { return m_buffer; }
  void set_raw(bool raw) { m_raw = raw; }

private:
  std::ostream& m_dest;
  std::ostringstream m_buffer;
  bool m_raw = false;
};

} // namespace qpatch::cli
