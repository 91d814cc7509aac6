// SPDX-License-Identifier: Apache-2.0
#include <qpatch/jsonedit/scan.hpp>

#include <cstdint>

namespace qpatch::jsonedit {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) {
    ++pos;
  }
  return pos;
}

size_t skip_string(std::string_view text, size_t pos) {
  for (++pos; pos < text.size(); ++pos) {
    if (text[pos] == '\\') {
      ++pos;
    } else if (text[pos] == '"') {
      return pos + 1;
    }
  }
  return text.size();
}

// Return one past the end of the value starting at `pos`. Iterative, so depth costs no stack.
size_t skip_value(std::string_view text, size_t pos) {
  size_t depth = 0;
  do {
    pos = skip_space(text, pos);
    if (pos >= text.size()) {
      return text.size();
    }
    const char c = text[pos];
    if (c == '"') {
      pos = skip_string(text, pos);
    } else if (c == '{' || c == '[') {
      ++depth;
      ++pos;
    } else if (c == '}' || c == ']') {
      if (depth == 0) {
        return pos;
      }
      --depth;
      ++pos;
    } else if (c == ',' || c == ':') {
      ++pos;
    } else {
      while (pos < text.size() && !is_space(text[pos]) && text[pos] != ',' && text[pos] != ']' &&
             text[pos] != '}') {
        ++pos;
      }
    }
  } while (depth > 0);
  return pos;
}

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

uint32_t hex4(std::string_view text, size_t pos) {
  uint32_t value = 0;
  for (size_t i = pos; i < pos + 4 && i < text.size(); ++i) {
    const char c = text[i];
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      value |= static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      value |= static_cast<uint32_t>(c - 'A' + 10);
    }
  }
  return value;
}

} // namespace

std::string decode_string(std::string_view token) {
  std::string out;
  const std::string_view body = token.substr(1, token.size() >= 2 ? token.size() - 2 : 0);
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    const char e = body[++i];
    switch (e) {
    case 'n':
      out += '\n';
      break;
    case 't':
      out += '\t';
      break;
    case 'r':
      out += '\r';
      break;
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'u': {
      uint32_t code = hex4(body, i + 1);
      i += 4;
      if (code >= 0xD800 && code <= 0xDBFF && i + 6 < body.size() + 1 && body[i + 1] == '\\' &&
          body[i + 2] == 'u') {
        const uint32_t low = hex4(body, i + 3);
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        i += 6;
      }
      append_utf8(out, code);
      break;
    }
    default:
      out += e;
      break; // \" \\ \/
    }
  }
  return out;
}

std::vector<Member> object_members(std::string_view text, Span object) {
  std::vector<Member> members;
  size_t pos = skip_space(text, object.begin + 1);
  while (pos < object.end && text[pos] == '"') {
    Member member;
    member.key = {pos, skip_string(text, pos)};
    member.name = decode_string(text.substr(member.key.begin, member.key.end - member.key.begin));
    pos = skip_space(text, member.key.end);
    pos = skip_space(text, pos + 1); // ':'
    member.value = {pos, skip_value(text, pos)};
    members.push_back(std::move(member));
    pos = skip_space(text, members.back().value.end);
    if (pos < object.end && text[pos] == ',') {
      pos = skip_space(text, pos + 1);
    }
  }
  return members;
}

std::vector<Span> array_items(std::string_view text, Span array) {
  std::vector<Span> items;
  size_t pos = skip_space(text, array.begin + 1);
  while (pos < array.end && text[pos] != ']') {
    const Span item{pos, skip_value(text, pos)};
    if (item.end <= pos) {
      break; // a '}' where an item belongs (bad input): stop, or this loop would never end
    }
    items.push_back(item);
    pos = skip_space(text, item.end);
    if (pos < array.end && text[pos] == ',') {
      pos = skip_space(text, pos + 1);
    }
  }
  return items;
}

std::optional<Span> find_value(std::string_view text, const std::vector<std::string>& pointer) {
  const size_t start = skip_space(text, 0);
  Span current{start, skip_value(text, start)};
  for (const std::string& token : pointer) {
    if (current.begin >= text.size()) {
      return std::nullopt;
    }
    if (text[current.begin] == '{') {
      bool found = false;
      for (const Member& member : object_members(text, current)) {
        if (member.name == token) {
          current = member.value;
          found = true; // the last duplicate would win, but parse_strict rejects duplicates
        }
      }
      if (!found) {
        return std::nullopt;
      }
    } else if (text[current.begin] == '[') {
      const auto items = array_items(text, current);
      size_t index = 0;
      for (const char c : token) {
        if (c < '0' || c > '9') {
          return std::nullopt;
        }
        index = index * 10 + static_cast<size_t>(c - '0');
      }
      if (token.empty() || index >= items.size()) {
        return std::nullopt;
      }
      current = items[index];
    } else {
      return std::nullopt;
    }
  }
  return current;
}

} // namespace qpatch::jsonedit
