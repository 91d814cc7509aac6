// SPDX-License-Identifier: Apache-2.0
// Format-preserving edits of one JSON array or object inside a file people review in diffs:
// only the bytes of the edited value change; kept items keep their bytes; new items follow the
// value's own layout (one per line at the same indentation, or inline with the same separator),
// the file's newline style (LF or CRLF) and its escaping (\uXXXX when the file is pure ASCII,
// as Python's json.dumps writes by default). An empty array that grows takes the file's indent
// unit, one item per line, as json.dumps(indent=...) writes it.
#pragma once

#include <qpatch/error.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::jsonedit {

struct FileStyle {
  std::string newline = "\n";
  std::string indent_unit = "  ";
  bool ascii_only = true;
};

// Return how `text` is written: newline, indent unit, whether it is pure ASCII.
FileStyle detect_style(std::string_view text);
// Return `value` as a JSON string token, escaped like the file.
std::string encode_string(std::string_view value, bool ascii_only);

struct ArrayEdit {
  std::vector<std::string> pointer; // e.g. {"quantization_config", "ignore"}
  std::vector<size_t> remove;       // indexes of items to drop
  std::vector<std::string> append;  // strings to add at the end, in order
};

// Apply `edit` to `text`; `path` names the file in errors.
Result<std::string> edit_array(std::string_view text, const ArrayEdit& edit, std::string_view path);

// Append "key": "value" members at the end of the object at `pointer`.
Result<std::string> append_members(std::string_view text,
                                   const std::vector<std::string>& pointer,
                                   const std::vector<std::pair<std::string, std::string>>& members,
                                   std::string_view path);

} // namespace qpatch::jsonedit

namespace qpatch::jsonedit {

// Append a member "key": <raw_value> (raw JSON text) at the end of the object at `pointer`.
Result<std::string> append_member_raw(std::string_view text,
                                      const std::vector<std::string>& pointer,
                                      const std::string& key,
                                      const std::string& raw_value,
                                      std::string_view path);

} // namespace qpatch::jsonedit

namespace qpatch::jsonedit {

struct ObjectEdit {
  std::vector<std::string> pointer;                         // the object, e.g. {"dynamic"}
  std::vector<std::string> remove;                          // keys to drop
  std::vector<std::pair<std::string, std::string>> prepend; // (key, raw JSON value), in order
  std::vector<std::pair<std::string, std::string>> append;  // (key, raw JSON value), in order
};

// Apply `edit` to the object at its pointer, keeping the object's layout and every kept member's
// bytes. Order-sensitive objects (GPTQ `dynamic`: first match wins) get new members in front.
Result<std::string>
edit_object(std::string_view text, const ObjectEdit& edit, std::string_view path);

} // namespace qpatch::jsonedit
