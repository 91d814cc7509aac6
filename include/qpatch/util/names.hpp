// SPDX-License-Identifier: Apache-2.0
// Small string helpers on dotted module and tensor names, shared by every stage.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace qpatch::util {

inline bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// `tail` is `name` or a run of its last dot-separated components: "mlp.gate" of
// "model.layers.0.mlp.gate", never of "model.layers.0.mlp.gate_up_proj" (SGLang's
// compressed-tensors ignore test from #32736).
inline bool is_dotted_suffix(std::string_view tail, std::string_view name) {
  return ends_with(name, tail) &&
         (name.size() == tail.size() || name[name.size() - tail.size() - 1] == '.');
}

// `word` is one of the space-separated items of `list` ("fp8" of "awq fp8 quark"; never "fp"):
// the engines' histories and naming rows list methods and architectures so.
inline bool contains_word(std::string_view list, std::string_view word) {
  for (size_t start = 0; start <= list.size();) {
    const size_t end = std::min(list.find(' ', start), list.size());
    if (end > start && list.substr(start, end - start) == word) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

// ASCII case folds, as Python's str.upper() / str.lower() act on module names and quant_algo
// values (which are ASCII).
inline std::string upper_ascii(std::string text) {
  for (char& c : text) {
    c = c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
  }
  return text;
}
inline std::string lower_ascii(std::string text) {
  for (char& c : text) {
    c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return text;
}

// The position of the last '.' in `name`, or npos: std::string_view::rfind, eight bytes at a
// time. Names are split at their last dot several times each, for 200k tensors and 70k modules
// of a 1T-parameter checkpoint, and rfind tests one byte per step.
inline size_t last_dot(std::string_view name) {
  if constexpr (std::endian::native == std::endian::little) {
    constexpr uint64_t k_dots = 0x2E2E2E2E2E2E2E2EULL;
    constexpr uint64_t k_low7 = 0x7F7F7F7F7F7F7F7FULL;
    size_t end = name.size();
    for (; end >= 8; end -= 8) {
      uint64_t word = 0;
      std::memcpy(&word, name.data() + end - 8, 8);
      const uint64_t differ = word ^ k_dots; // a zero byte where the name has a dot
      // Exactly the zero bytes get their top bit set (no borrow runs between bytes).
      const uint64_t zero = ~(((differ & k_low7) + k_low7) | differ | k_low7);
      if (zero != 0) { // the highest address is the most significant byte
        return end - 8 + static_cast<size_t>(63 - __builtin_clzll(zero)) / 8;
      }
    }
    while (end > 0) {
      if (name[--end] == '.') {
        return end;
      }
    }
    return std::string_view::npos;
  } else {
    return name.rfind('.');
  }
}

// Return the last dot-separated component: "mtp.layers.0.mlp.up_proj" -> "up_proj".
inline std::string_view last_component(std::string_view name) {
  const size_t dot = last_dot(name);
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
