// SPDX-License-Identifier: Apache-2.0
// Fuzz target: engine::Pattern (Python `re` over PCRE2 under match and depth limits). Input: a
// mode byte, the pattern up to the first newline, then one module name per line. Properties:
// compiling either succeeds or refuses with a reason; the budget holds: once a match gives up
// (undecidable), the pattern stays undecidable for every later name and mode, without matching
// again; decided results are consistent across modes (fullmatch implies match implies search);
// and a pattern without metacharacters agrees with plain string comparison. libFuzzer's
// -timeout bounds the time an input may take.
// Each input calls Pattern::forget_compiled first, so memory stays bounded over a long run.
#include "fuzz_check.hpp"

#include <qpatch/engine/pattern.hpp>
#include <qpatch/limits.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using qpatch::engine::MatchMode;
using qpatch::engine::Pattern;
using qpatch::fuzz::check;

// Python's literal: no character `re` gives a meaning to.
bool literal(std::string_view pattern) {
  return pattern.find_first_of(".^$*+?{}[]\\|()") == std::string_view::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) {
    return 0;
  }
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto first_mode = static_cast<MatchMode>(data[0] % 3);
  const size_t newline = input.find('\n');
  const std::string_view pattern_text = input.substr(0, newline);
  std::vector<std::string_view> names;
  for (size_t start = newline; start != std::string_view::npos && names.size() < 64;) {
    const size_t next = input.find('\n', start + 1);
    const std::string_view name = input.substr(start + 1, next - start - 1);
    // Names come from checked headers and configs: valid UTF-8, at most the name cap.
    if (qpatch::fuzz::valid_utf8(name) && name.size() <= qpatch::limits::k_max_name_size) {
      names.push_back(name);
    }
    start = next;
  }
  // Each input is a run of its own: forget the patterns earlier inputs compiled.
  Pattern::forget_compiled();
  const auto compiled = Pattern::compile(pattern_text, "config.json");
  if (!compiled.ok()) {
    check(!compiled.error().message.empty(), "a refused pattern says why");
    return 0;
  }
  const Pattern& pattern = *compiled;
  check(pattern.text() == pattern_text, "the pattern keeps its text");
  const bool is_literal = literal(pattern_text);
  bool gave_up = false;
  check(!pattern.exhausted(), "a freshly compiled pattern has its whole budget");
  for (const std::string_view name : names) {
    std::optional<bool> result[3];
    for (int m = 0; m < 3; ++m) {
      const auto mode = static_cast<MatchMode>((static_cast<int>(first_mode) + m) % 3);
      const auto matched = pattern.matches(name, mode);
      if (gave_up) {
        check(!matched.has_value(), "an exhausted pattern stays undecidable");
      }
      if (!matched.has_value()) {
        gave_up = true;
        check(pattern.exhausted(), "an undecidable match marks the pattern exhausted");
      }
      result[static_cast<int>(mode)] = matched;
    }
    const auto& match = result[static_cast<int>(MatchMode::match)];
    const auto& full = result[static_cast<int>(MatchMode::fullmatch)];
    const auto& search = result[static_cast<int>(MatchMode::search)];
    if (full && match && search) {
      check(!*full || *match, "fullmatch implies match");
      check(!*match || *search, "match implies search");
    }
    if (is_literal && full && match && search) {
      check(*full == (name == pattern_text), "a literal fullmatches only itself");
      check(*match == (name.substr(0, pattern_text.size()) == pattern_text),
            "a literal matches a name it starts");
      check(*search == (name.find(pattern_text) != std::string_view::npos),
            "a literal is searched as a substring");
    }
  }
  return 0;
}
