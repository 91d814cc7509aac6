// SPDX-License-Identifier: Apache-2.0
#include "terminal_safe.hpp"

#include <qpatch/report/text_style.hpp>

#include <cstdio>
#include <string>

namespace qpatch::cli {

namespace {

std::string hex_escape(const char* form, unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, form, value);
  return text;
}

// A name from a file can be any length (a 200 KB tensor name is a valid header); printed whole
// it buries the report. A run of more than k_longest_word bytes with no space or newline keeps
// its first k_kept_head and last k_kept_tail bytes, cut on UTF-8 boundaries, and says how many
// it left out. JSON and diffs (colour_codes) are never shortened.
constexpr size_t k_longest_word = 1024;
constexpr size_t k_kept_head = 160;
constexpr size_t k_kept_tail = 32;

bool continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

std::string elide_long_words(std::string text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = start;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n' && text[end] != '\t') {
      ++end;
    }
    if (end - start > k_longest_word) {
      size_t head = start + k_kept_head;
      while (head > start && continuation(text[head])) {
        --head;
      }
      size_t tail = end - k_kept_tail;
      while (tail < end && continuation(text[tail])) {
        ++tail;
      }
      out.append(text, start, head - start);
      out += "…[" + std::to_string(tail - head) + " bytes left out]…";
      out.append(text, tail, end - tail);
    } else {
      out.append(text, start, end - start);
    }
    if (end < text.size()) {
      out += text[end];
    }
    start = end + 1;
  }
  return out;
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
  return elide_long_words(std::move(out));
}

SafeStream::~SafeStream() {
  const std::string text = m_buffer.str();
  m_dest << (m_raw ? colour_codes(text) : terminal_safe(text));
  m_dest.flush();
}

} // namespace qpatch::cli
