// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the format-preserving editor (jsonedit::edit_array, edit_object, append_members,
// append_member_raw). Input: a control line, then the JSON text. The control bytes pick one
// array or object of the parsed text, the items or members to drop and what to add.
// Properties, for text that parses: the output parses; it equals the intended semantic edit
// (the same edit applied to the parsed value, member order included); it differs from the
// input only inside the edited value's span; a pure-ASCII file stays pure ASCII; no newline
// style appears that the file did not have. Text that does not parse is edited too (what a
// caller that skipped parse_strict would do): a refusal or any output, never a crash.
#include "fuzz_check.hpp"

#include <qpatch/json/strict_json.hpp>
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/jsonedit/scan.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using qpatch::fuzz::check;
using qpatch::json::Json;
namespace je = qpatch::jsonedit;

struct Container {
  std::vector<std::string> pointer;
  Json* node = nullptr;
};

// Every array and object of `value`, in document order (the root first), at most 256.
void collect(Json& value, std::vector<std::string>& pointer, std::vector<Container>& out) {
  if (out.size() >= 256 || !value.is_structured()) {
    return;
  }
  out.push_back({pointer, &value});
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      pointer.push_back(std::to_string(i));
      collect(value[i], pointer, out);
      pointer.pop_back();
    }
  } else {
    for (auto& [key, member] : value.items()) {
      pointer.push_back(key);
      collect(member, pointer, out);
      pointer.pop_back();
    }
  }
}

// Strings to append and raw values for new members, when the control bytes give none.
const std::array<std::string, 5> k_strings = {"mtp.fc",
                                              "re:^model\\.layers\\.(\\d+)\\.mlp$",
                                              "caf\xc3\xa9 \xf0\x9f\x98\x80",
                                              "\x1b\"\\\n\t\x7f",
                                              ""};
const std::array<std::string, 6> k_raw_values = {
    "1", "\"v\"", "[\"a\", \"b\"]", "{\"bits\": 16, \"sym\": true}", "null", "-0.5e3"};

bool ascii(std::string_view text) {
  return std::all_of(
      text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

void check_output(std::string_view text,
                  const qpatch::Result<std::string>& output,
                  const std::vector<std::string>& pointer,
                  const Json& intended) {
  check(output.ok(), "an edit of a value that exists succeeds");
  const auto reparsed = qpatch::json::parse_strict(*output, "config.json");
  check(reparsed.ok(), "the output parses");
  check(*reparsed == intended, "the output is the intended semantic edit");
  const auto span = je::find_value(text, pointer);
  check(span.has_value(), "the edited value is found");
  const std::string& out = *output;
  check(out.size() >= span->begin + (text.size() - span->end), "the output keeps the rest");
  check(out.compare(0, span->begin, text.substr(0, span->begin)) == 0,
        "the bytes before the edited value are kept");
  check(out.compare(
            out.size() - (text.size() - span->end), std::string::npos, text.substr(span->end)) == 0,
        "the bytes after the edited value are kept");
  if (ascii(text)) {
    check(ascii(out), "a pure-ASCII file stays pure ASCII");
  }
  if (text.find('\r') == std::string_view::npos) {
    check(out.find('\r') == std::string::npos, "no CR in the output of a file without one");
  }
  if (text.find('\n') == std::string_view::npos) {
    check(out.find('\n') == std::string::npos, "no newline in the output of a one-line file");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos || newline < 4) {
    return 0;
  }
  const std::string_view control = input.substr(0, newline);
  const std::string_view text = input.substr(newline + 1);
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(control[i]); };
  // Pieces of the control line after its first four bytes, split at ',': the new strings/keys.
  std::vector<std::string> pieces;
  for (size_t start = 4; start <= control.size();) {
    const size_t comma = std::min(control.find(',', start), control.size());
    pieces.emplace_back(control.substr(start, comma - start));
    start = comma + 1;
  }
  const size_t additions = byte(3) % 4;
  std::vector<std::string> strings;
  for (size_t i = 0; i < additions; ++i) {
    strings.push_back(i < pieces.size() && !pieces[i].empty() ? pieces[i]
                                                              : k_strings[(i + byte(3)) % 5]);
    if (!qpatch::fuzz::valid_utf8(strings.back())) {
      return 0; // callers add tensor names from checked headers: valid UTF-8
    }
  }
  const auto parsed = qpatch::json::parse_strict(text, "config.json");
  if (!parsed.ok()) {
    const std::vector<std::string> pointer =
        byte(0) % 2 ? std::vector<std::string>{} : std::vector<std::string>{"quantization_config"};
    (void)je::edit_array(text, {pointer, {0}, strings}, "config.json");
    (void)je::edit_object(text, {pointer, {"ignore"}, {}, {{"bits", "4"}}}, "config.json");
    return 0;
  }
  Json intended = *parsed;
  std::vector<Container> containers;
  std::vector<std::string> pointer;
  collect(intended, pointer, containers);
  if (containers.empty()) {
    return 0;
  }
  const Container& target = containers[byte(0) % containers.size()];
  Json& node = *target.node;
  const unsigned remove_mask = byte(2);

  if (node.is_array()) {
    je::ArrayEdit edit{target.pointer, {}, strings};
    Json edited = Json::array();
    for (size_t i = 0; i < node.size(); ++i) {
      if (i < 8 && (remove_mask >> i) & 1U) {
        edit.remove.push_back(i);
      } else {
        edited.push_back(node[i]);
      }
    }
    for (const std::string& value : strings) {
      edited.push_back(value);
    }
    node = std::move(edited);
    check_output(text, je::edit_array(text, edit, "config.json"), target.pointer, intended);
    return 0;
  }

  // An object: drop the first eight members the mask selects, then add new members; a new key
  // equal to a kept or another new key would make a duplicate, which no caller asks for.
  je::ObjectEdit edit{target.pointer, {}, {}, {}};
  std::vector<std::string> kept_keys;
  size_t index = 0;
  for (const auto& [key, value] : node.items()) {
    if (index < 8 && (remove_mask >> index) & 1U) {
      edit.remove.push_back(key);
    } else {
      kept_keys.push_back(key);
    }
    ++index;
  }
  const unsigned op = byte(1) % 3;
  if (op != 0) {
    edit.remove.clear(); // append_members and append_member_raw only append
    kept_keys.clear();
    for (const auto& [key, value] : node.items()) {
      kept_keys.push_back(key);
    }
  }
  std::vector<std::string> keys = kept_keys;
  const size_t prepends = op == 0 ? static_cast<size_t>(byte(1) / 3 % 3) : 0;
  if (op == 2 && strings.size() > 1) {
    strings.resize(1);
  }
  for (size_t i = 0; i < prepends + strings.size(); ++i) {
    const std::string key = i < prepends ? "new" + std::to_string(i) : strings[i - prepends];
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      return 0;
    }
    keys.push_back(key);
    const std::string& raw = k_raw_values[(byte(2) + i) % k_raw_values.size()];
    (i < prepends ? edit.prepend : edit.append).emplace_back(key, raw);
  }
  Json edited = Json::object();
  for (const auto& [key, raw] : edit.prepend) {
    edited[key] = Json::parse(raw);
  }
  for (const auto& [key, value] : node.items()) {
    if (std::find(edit.remove.begin(), edit.remove.end(), key) == edit.remove.end()) {
      edited[key] = value;
    }
  }
  qpatch::Result<std::string> output = std::string();
  if (op == 0) {
    for (const auto& [key, raw] : edit.append) {
      edited[key] = Json::parse(raw);
    }
    output = je::edit_object(text, edit, "config.json");
  } else if (op == 1) {
    // append_members adds string values: the strings are both key and value here.
    std::vector<std::pair<std::string, std::string>> members;
    for (const auto& [key, raw] : edit.append) {
      members.emplace_back(key, key);
      edited[key] = key;
    }
    output = je::append_members(text, target.pointer, members, "config.json");
  } else {
    if (edit.append.empty()) {
      return 0;
    }
    const auto& [key, raw] = edit.append.front();
    edited[key] = Json::parse(raw);
    output = je::append_member_raw(text, target.pointer, key, raw, "config.json");
  }
  node = std::move(edited);
  check_output(text, output, target.pointer, intended);
  return 0;
}
