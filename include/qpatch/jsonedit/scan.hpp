// SPDX-License-Identifier: Apache-2.0
// Byte spans of JSON values inside a file's original text, so an edit can replace exactly one
// value and copy every other byte through. The text must already be valid JSON (parse_strict
// ran first); the scanner still refuses to read past the end on bad input.
#pragma once

#include <qpatch/error.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qpatch::jsonedit {

struct Span {
  size_t begin = 0; // position of the value's first byte
  size_t end = 0;   // one past its last byte
};

struct Member {
  Span key; // the key's string token, quotes included
  Span value;
  std::string name; // the key, unescaped
};

// Return the span of the value at `pointer` (object keys and array indexes, already split).
std::optional<Span> find_value(std::string_view text, const std::vector<std::string>& pointer);
// Return the spans of the items of the array at `array`.
std::vector<Span> array_items(std::string_view text, Span array);
// Return the members of the object at `object`.
std::vector<Member> object_members(std::string_view text, Span object);
// Return the unescaped content of the string token at `token`.
std::string decode_string(std::string_view token);

} // namespace qpatch::jsonedit
