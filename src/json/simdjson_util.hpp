// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the simdjson readers (shard headers, the index). Private to src/.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace qpatch::json {

// Return "an array", "a string", ... for messages that say what was found.
inline std::string type_name(simdjson::dom::element_type type) {
  using simdjson::dom::element_type;
  switch (type) {
  case element_type::ARRAY:
    return "an array";
  case element_type::OBJECT:
    return "an object";
  case element_type::INT64:
  case element_type::UINT64:
  case element_type::DOUBLE:
    return "a number";
  case element_type::STRING:
    return "a string";
  case element_type::BOOL:
    return "a boolean";
  case element_type::NULL_VALUE:
    return "null";
  }
  return "a value";
}

// Return the first key that appears twice in some object inside `value` (depth is bounded by
// the parser's max_depth, so the recursion is too).
inline std::optional<std::string> find_duplicate_key(simdjson::dom::element value) {
  if (value.is_object()) {
    std::unordered_set<std::string_view> seen;
    for (auto field : value.get_object()) {
      if (!seen.insert(field.key).second) {
        return std::string(field.key);
      }
      if (auto nested = find_duplicate_key(field.value)) {
        return nested;
      }
    }
  } else if (value.is_array()) {
    for (simdjson::dom::element item : value.get_array()) {
      if (auto nested = find_duplicate_key(item)) {
        return nested;
      }
    }
  }
  return std::nullopt;
}

} // namespace qpatch::json
