// SPDX-License-Identifier: Apache-2.0
// Small string helpers on dotted module and tensor names, shared by every stage.
#pragma once

#include <string>
#include <string_view>

namespace qpatch::util {

inline bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Return the last dot-separated component: "mtp.layers.0.mlp.up_proj" -> "up_proj".
inline std::string_view last_component(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

// Return everything up to and including the last dot: "a.b.c" -> "a.b.", "c" -> "".
inline std::string parent_of(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(name.substr(0, dot + 1));
}

// Python's str.replace: every occurrence of `from`, left to right.
inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) {
    return text;
  }
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos)) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

} // namespace qpatch::util
