// SPDX-License-Identifier: Apache-2.0
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/jsonedit/scan.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace qpatch::jsonedit {
namespace {

std::string join_pointer(const std::vector<std::string>& pointer) {
  std::string out;
  for (const std::string& token : pointer) {
    out += "/" + token;
  }
  return out;
}

Error not_found(std::string_view path,
                const std::vector<std::string>& pointer,
                const std::string& what) {
  Error error = make_error(ErrorCode::invalid_json,
                           std::string(path),
                           std::nullopt,
                           join_pointer(pointer),
                           "expected " + what);
  error.subject_kind = "at";
  return error;
}

// The whitespace that starts the line holding position `pos`.
std::string line_indent(std::string_view text, size_t pos) {
  const size_t line_start = text.rfind('\n', pos);
  size_t begin = line_start == std::string_view::npos ? 0 : line_start + 1;
  size_t end = begin;
  while (end < text.size() && (text[end] == ' ' || text[end] == '\t')) {
    ++end;
  }
  return std::string(text.substr(begin, end - begin));
}

// How the items of a container are separated: the text after a comma and before an item.
struct Layout {
  std::string head; // between the opening bracket and the first item
  std::string sep;  // between a comma and the next item
  std::string tail; // after the last item, closing bracket included
  bool empty = true;
};

Layout layout_of(std::string_view text,
                 Span container,
                 const std::vector<Span>& items,
                 const FileStyle& style) {
  Layout layout;
  const char close = text[container.end - 1];
  if (items.empty()) {
    if (text.find('\n') == std::string_view::npos) {
      layout.head = "";
      layout.sep = " ";
      layout.tail = std::string(1, close);
    } else {
      const std::string indent = line_indent(text, container.begin);
      layout.head = style.newline + indent + style.indent_unit;
      layout.sep = layout.head;
      layout.tail = style.newline + indent + close;
    }
    return layout;
  }
  layout.empty = false;
  layout.head = std::string(text.substr(container.begin + 1, items[0].begin - container.begin - 1));
  if (items.size() >= 2) {
    const Span& last = items.back();
    const Span& before = items[items.size() - 2];
    const size_t comma = text.find(',', before.end);
    layout.sep = std::string(text.substr(comma + 1, last.begin - comma - 1));
  } else {
    layout.sep = layout.head.find('\n') != std::string::npos ? layout.head : " ";
  }
  layout.tail = std::string(text.substr(items.back().end, container.end - items.back().end));
  return layout;
}

} // namespace

FileStyle detect_style(std::string_view text) {
  FileStyle style;
  style.newline = text.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";
  style.ascii_only = std::all_of(
      text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  const size_t first_newline = text.find('\n');
  if (first_newline != std::string_view::npos) {
    const std::string indent = line_indent(text, first_newline + 1);
    if (!indent.empty()) {
      style.indent_unit = indent;
    }
  }
  return style;
}

std::string encode_string(std::string_view value, bool ascii_only) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    char buffer[16];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else if (c >= 0x80 && ascii_only) {
      // Decode one UTF-8 sequence and write it as \uXXXX (a surrogate pair above U+FFFF).
      const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      uint32_t code = c & (0xFF >> (length + 1));
      for (size_t k = 1; k < length && i + k < value.size(); ++k) {
        code = (code << 6) | (static_cast<unsigned char>(value[i + k]) & 0x3F);
      }
      i += length - 1;
      if (code >= 0x10000) {
        code -= 0x10000;
        std::snprintf(buffer,
                      sizeof buffer,
                      "\\u%04x\\u%04x",
                      0xD800 + (code >> 10),
                      0xDC00 + (code & 0x3FF));
      } else {
        std::snprintf(buffer, sizeof buffer, "\\u%04x", code);
      }
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

Result<std::string>
edit_array(std::string_view text, const ArrayEdit& edit, std::string_view path) {
  const auto span = find_value(text, edit.pointer);
  // Empty or all-space text (bad input) puts the root's span at the end.
  if (!span || span->begin >= text.size() || text[span->begin] != '[') {
    return not_found(path, edit.pointer, "an array");
  }
  const FileStyle style = detect_style(text);
  const std::vector<Span> items = array_items(text, *span);
  const Layout layout = layout_of(text, *span, items, style);
  std::vector<std::string> encoded;
  for (const std::string& value : edit.append) {
    encoded.push_back(encode_string(value, style.ascii_only));
  }
  std::string array;
  if (edit.remove.empty() && !layout.empty) {
    // Appending only: every original byte of the array stays, new items go after the last.
    array = std::string(text.substr(span->begin, items.back().end - span->begin));
    for (const std::string& item : encoded) {
      array += "," + layout.sep + item;
    }
    array += layout.tail;
  } else {
    std::vector<std::string> kept;
    for (size_t i = 0; i < items.size(); ++i) {
      if (std::find(edit.remove.begin(), edit.remove.end(), i) == edit.remove.end()) {
        kept.emplace_back(text.substr(items[i].begin, items[i].end - items[i].begin));
      }
    }
    kept.insert(kept.end(), encoded.begin(), encoded.end());
    if (kept.empty()) {
      array = "[]"; // what json.dumps writes for an empty list, whatever the indent
    } else {
      // When the array started empty, json.dumps(indent=...) layout applies.
      array = "[" + layout.head;
      for (size_t i = 0; i < kept.size(); ++i) {
        array += (i ? "," + layout.sep : "") + kept[i];
      }
      array += layout.tail;
    }
  }
  return std::string(text.substr(0, span->begin)) + array + std::string(text.substr(span->end));
}

Result<std::string> append_members(std::string_view text,
                                   const std::vector<std::string>& pointer,
                                   const std::vector<std::pair<std::string, std::string>>& members,
                                   std::string_view path) {
  const bool ascii = detect_style(text).ascii_only;
  std::vector<std::pair<std::string, std::string>> members_raw;
  members_raw.reserve(members.size());
  for (const auto& [key, value] : members) {
    members_raw.emplace_back(key, encode_string(value, ascii));
  }
  return edit_object(text, {pointer, {}, {}, members_raw}, path);
}

Result<std::string> append_member_raw(std::string_view text,
                                      const std::vector<std::string>& pointer,
                                      const std::string& key,
                                      const std::string& raw_value,
                                      std::string_view path) {
  return edit_object(text, {pointer, {}, {}, {{key, raw_value}}}, path);
}

Result<std::string>
edit_object(std::string_view text, const ObjectEdit& edit, std::string_view path) {
  const auto span = find_value(text, edit.pointer);
  // Empty or all-space text (bad input) puts the root's span at the end.
  if (!span || span->begin >= text.size() || text[span->begin] != '{') {
    return not_found(path, edit.pointer, "an object");
  }
  const FileStyle style = detect_style(text);
  const std::vector<Member> members = object_members(text, *span);
  std::vector<Span> spans;
  for (const Member& member : members) {
    spans.push_back({member.key.begin, member.value.end});
  }
  const Layout layout = layout_of(text, *span, spans, style);
  const std::string colon =
      members.empty() ? ": "
                      : std::string(text.substr(members[0].key.end,
                                                members[0].value.begin - members[0].key.end));
  const auto member = [&](const std::pair<std::string, std::string>& key_value) {
    return encode_string(key_value.first, style.ascii_only) + colon + key_value.second;
  };
  std::string object;
  if (edit.remove.empty() && edit.prepend.empty() && !layout.empty) {
    // Appending only: every original byte of the object stays, new members go after the last.
    object = std::string(text.substr(span->begin, spans.back().end - span->begin));
    for (const auto& key_value : edit.append) {
      object += "," + layout.sep + member(key_value);
    }
    object += layout.tail;
    return std::string(text.substr(0, span->begin)) + object + std::string(text.substr(span->end));
  }
  std::vector<std::string> items;
  for (const auto& key_value : edit.prepend) {
    items.push_back(member(key_value));
  }
  for (size_t i = 0; i < members.size(); ++i) {
    if (std::find(edit.remove.begin(), edit.remove.end(), members[i].name) == edit.remove.end()) {
      items.emplace_back(text.substr(spans[i].begin, spans[i].end - spans[i].begin));
    }
  }
  for (const auto& key_value : edit.append) {
    items.push_back(member(key_value));
  }
  if (items.empty()) {
    object = "{}";
  } else {
    object = "{" + layout.head;
    for (size_t i = 0; i < items.size(); ++i) {
      object += (i ? "," + layout.sep : "") + items[i];
    }
    object += layout.tail;
  }
  return std::string(text.substr(0, span->begin)) + object + std::string(text.substr(span->end));
}

} // namespace qpatch::jsonedit
