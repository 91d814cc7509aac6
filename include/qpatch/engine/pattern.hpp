// SPDX-License-Identifier: Apache-2.0
// Python `re` semantics over PCRE2, for the regexes engines evaluate (compressed-tensors `re:`
// entries, GPTQ `dynamic` keys, INC regex keys) and for --only. Patterns are untrusted input:
// their length is capped and every match runs under PCRE2 match and depth limits.
#pragma once

#include <qpatch/error.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace qpatch::engine {

enum class MatchMode {
  match,     // re.match: anchored at the start only
  fullmatch, // re.fullmatch: the whole subject
  search,    // re.search: anywhere
};

class Pattern {
public:
  // Compile `pattern` (Python syntax). `source` names where it came from, for errors.
  static Result<Pattern> compile(std::string_view pattern, std::string_view source);

  // Return whether the pattern matches `subject` in `mode`; nothing when PCRE2 gave up (a match
  // or depth limit), on this subject or any before it: the caller must say "undecidable",
  // never guess.
  std::optional<bool> matches(std::string_view subject, MatchMode mode) const;

  // Drop the run-wide table of compiled patterns (and with it what each has spent of its budget);
  // patterns already returned keep working. For a process that outlives one run: the fuzz
  // target calls it after each input, or every distinct pattern it tries would stay compiled.
  static void forget_compiled();

  const std::string& text() const { return m_text; }
  // True once a match of this pattern hit a limit (every later match is then undecidable).
  bool exhausted() const;

  struct Code; // the compiled copies; defined in pattern.cpp only (the run-wide table holds them)

private:
  std::shared_ptr<const Code> m_code;
  std::string m_text;
};

} // namespace qpatch::engine
