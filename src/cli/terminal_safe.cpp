// SPDX-License-Identifier: Apache-2.0
#include "terminal_safe.hpp"

#include <array>
#include <cstdio>

namespace qpatch::cli {

namespace {

// The sequences TextStyle::paint writes (src/report/inspect_report.cpp).
constexpr std::array<std::string_view, 7> k_colours{
    "\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"};

std::string hex_escape(const char* form, unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, form, value);
  return text;
}

} // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == 0x1b) {
      bool colour = false;
      for (std::string_view code : k_colours) {
        if (text.substr(i).starts_with(code)) {
          out += code;
          i += code.size() - 1;
          colour = true;
          break;
        }
      }
      if (colour) {
        continue;
      }
    }
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f) {
      out += hex_escape("\\x%02x", byte);
    } else if (byte == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += hex_escape("\\u%04x", static_cast<unsigned char>(text[i + 1])); // C1, as UTF-8
      ++i;
    } else {
      out += static_cast<char>(byte);
    }
  }
  return out;
}

SafeStream::~SafeStream() {
  const std::string text = m_buffer.str();
  m_dest << (m_raw ? text : terminal_safe(text));
  m_dest.flush();
}

} // namespace qpatch::cli
