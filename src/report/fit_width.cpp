// SPDX-License-Identifier: Apache-2.0
#include <qpatch/report/fit_width.hpp>

namespace qpatch::report {

size_t display_width(const std::string& text) {
  size_t width = 0;
  for (const char c : text) {
    width += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  }
  return width;
}

std::string
elided_list(const std::string& sign, const std::vector<std::string>& names, size_t width) {
  const std::string head = sign + std::to_string(names.size()) + ": ";
  std::string out = head;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string item = (i == 0 ? "" : ", ") + names[i];
    if (width != 0 && i > 0) {
      const size_t rest = names.size() - i;
      // Where to see them all: this list is cut only on a terminal (issue 25).
      const std::string tail = ", … (" + std::to_string(rest) + " more; -v lists all)";
      // The last name may take the room the tail would have needed.
      const size_t need =
          display_width(out) + display_width(item) + (rest > 1 ? display_width(tail) - 0 : 0);
      if (need > width) {
        return out + tail;
      }
    }
    out += item;
  }
  return out;
}

std::string wrap(const std::string& text, size_t width, size_t indent) {
  if (width == 0 || display_width(text) <= width) {
    return text;
  }
  std::string out;
  size_t line = 0;
  size_t start = 0;
  bool first_word = true;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string word = text.substr(start, end - start);
    const size_t word_width = display_width(word);
    if (!first_word && line + 1 + word_width > width) {
      out += "\n" + std::string(indent, ' ');
      line = indent;
      first_word = true;
    }
    if (!first_word) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word_width;
    first_word = false;
    start = end + 1;
  }
  return out;
}

} // namespace qpatch::report
