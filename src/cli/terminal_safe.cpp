// SPDX-License-Identifier: Apache-2.0
#include "terminal_safe.hpp"

#include <qpatch/report/text_style.hpp>

#include <cstdio>

namespace qpatch::cli {

namespace {

std::string hex_escape(const char* form, unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, form, value);
  return text;
}

} // namespace

std::string colour_codes(std::string_view text) {
  const std::string_view marker = report::colour_marker();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && text.substr(i).starts_with(marker)) {
      out += "\x1b[";
      i += marker.size() - 1;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string terminal_safe(std::string_view text) {
  const std::string_view marker = report::colour_marker();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == 0x1b && text.substr(i).starts_with(marker)) {
      out += "\x1b["; // a colour code TextStyle::paint wrote: its SGR digits follow
      i += marker.size() - 1;
      continue;
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
  m_dest << (m_raw ? colour_codes(text) : terminal_safe(text));
  m_dest.flush();
}

} // namespace qpatch::cli
