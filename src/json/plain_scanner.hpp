// SPDX-License-Identifier: Apache-2.0
// A cursor over "plain" JSON: the strict subset that writers of safetensors headers and index
// files actually emit (strings without escapes or control characters, unsigned integers without
// leading zeros that fit in 64 bits). The readers use it as a fast path: when the text stays
// inside the subset the scan is a complete, exact parse of valid JSON, with no DOM and no second
// pass; at the first byte outside it the scan gives up and the reader re-parses the whole text
// with its general (simdjson/nlohmann) path, which also produces the precise error messages.
// A 1T-parameter checkpoint has ~26 MB of header JSON and a ~20 MB index, so the DOM's tape,
// string buffer and page faults were most of `qpatch --check`'s time. Private to src/.
//
// The caller must have checked that the text is valid UTF-8 and holds no NUL byte: the scanner
// then only needs to look at ASCII structure.
#pragma once

#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <optional>
#include <string_view>

namespace qpatch::json {

class PlainScanner {
public:
  explicit PlainScanner(std::string_view text)
      : m_pos(text.data()), m_end(text.data() + text.size()) {}

  void skip_ws() {
    // Writers of safetensors headers emit no whitespace at all: one compare in the common case.
    while (m_pos < m_end && static_cast<unsigned char>(*m_pos) <= ' ' &&
           (*m_pos == ' ' || *m_pos == '\n' || *m_pos == '\r' || *m_pos == '\t')) {
      ++m_pos;
    }
  }
  // Consume `c` (after whitespace); false when the next byte is something else.
  bool take(char c) {
    skip_ws();
    if (m_pos < m_end && *m_pos == c) {
      ++m_pos;
      return true;
    }
    return false;
  }
  // The next non-blank byte, not consumed; 0 at the end.
  char peek() {
    skip_ws();
    return m_pos < m_end ? *m_pos : '\0';
  }
  bool at_end() {
    skip_ws();
    return m_pos == m_end;
  }

  // A string with no escape and no control character; nullopt otherwise (or when absent).
  std::optional<std::string_view> string() {
    if (!take('"')) {
      return std::nullopt;
    }
    const char* start = m_pos;
    const char* end = find_string_end(start);
    if (end == m_end || *end != '"') {
      return std::nullopt; // unterminated, or an escape or control character came first
    }
    m_pos = end + 1;
    return std::string_view(start, static_cast<size_t>(end - start));
  }

  // An unsigned integer token that serde would read as u64: no sign, no leading zero, no
  // fraction or exponent, at most 2^64-1. Anything else (valid JSON or not) returns nullopt.
  std::optional<uint64_t> unsigned_integer() {
    skip_ws();
    const char* start = m_pos;
    // 19 digits always fit in 64 bits: only a 20th needs the overflow test (a division per
    // digit was a quarter of the header scan's instructions).
    uint64_t value = 0;
    while (m_pos < m_end && *m_pos >= '0' && *m_pos <= '9' && m_pos - start < 19) {
      value = value * 10 + static_cast<uint64_t>(*m_pos - '0');
      ++m_pos;
    }
    if (m_pos < m_end && *m_pos >= '0' && *m_pos <= '9') {
      const auto digit = static_cast<uint64_t>(*m_pos - '0');
      if (value > (UINT64_MAX - digit) / 10) {
        return std::nullopt;
      }
      value = value * 10 + digit;
      ++m_pos;
      if (m_pos < m_end && *m_pos >= '0' && *m_pos <= '9') {
        return std::nullopt; // 21 digits or more
      }
    }
    const size_t digits = static_cast<size_t>(m_pos - start);
    if (digits == 0 || (digits > 1 && *start == '0')) {
      return std::nullopt;
    }
    if (m_pos < m_end && (*m_pos == '.' || *m_pos == 'e' || *m_pos == 'E')) {
      return std::nullopt;
    }
    return value;
  }

private:
  static bool special(unsigned char c) { return c == '"' || c == '\\' || c < 0x20; }

  // The first '"', '\\' or control character at or after `p`; m_end when there is none. Names
  // are ~50 bytes and there are 200k of them in a 1T-parameter checkpoint's headers: 16 bytes
  // are tested at a time (SSE2, part of x86-64), never reading past m_end.
  const char* find_string_end(const char* p) const {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i low = _mm_set1_epi8(0x1F);
    for (; m_end - p >= 16; p += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // c < 0x20 (unsigned): min(c, 0x1F) == c.
      const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(bytes, low), bytes);
      const __m128i hits = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)), control);
      const auto mask = static_cast<unsigned>(_mm_movemask_epi8(hits));
      if (mask != 0) {
        return p + __builtin_ctz(mask);
      }
    }
#endif
    while (p < m_end && !special(static_cast<unsigned char>(*p))) {
      ++p;
    }
    return p;
  }

  const char* m_pos;
  const char* m_end;
};

// True when `text` is the literal `word`. The length is a constant, so the compiler compares
// words inline instead of calling memcmp: this runs three times for every tensor entry.
template <size_t N> bool is_literal(std::string_view text, const char (&word)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), word, N - 1) == 0;
}

} // namespace qpatch::json
