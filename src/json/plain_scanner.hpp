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

#include <bit>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <optional>
#include <string_view>

namespace qpatch::json {

inline uint64_t load_word(const char* p) {
  uint64_t word = 0;
  std::memcpy(&word, p, 8);
  return word;
}

// True when the N - 1 bytes at `p` (all readable) are those of the literal `word`. The length is a
// constant: eight bytes at a time, the last word overlapping the one before, all inline (GCC 12
// calls memcmp for a 17-byte constant compare, and a call per field was 2% of --check).
template <size_t N> bool starts_with_literal(const char* p, const char (&word)[N]) {
  constexpr size_t length = N - 1;
  uint64_t differ = 0;
  if constexpr (length >= 8) {
    for (size_t i = 0; i + 8 <= length; i += 8) {
      differ |= load_word(p + i) ^ load_word(word + i);
    }
    differ |= load_word(p + length - 8) ^ load_word(word + length - 8);
  } else {
    for (size_t i = 0; i < length; ++i) {
      differ |= static_cast<unsigned char>(p[i] ^ word[i]);
    }
  }
  return differ == 0;
}

class PlainScanner {
public:
  explicit PlainScanner(std::string_view text)
      : m_pos(text.data()), m_end(text.data() + text.size()) {}

  void skip_ws() {
    // Writers of safetensors headers emit no whitespace at all: one compare in the common case.
    const bool no_blank_next = m_pos != m_end && static_cast<unsigned char>(*m_pos) > 0x20;
    if (no_blank_next) {
      return;
    }
#if defined(__SSE2__)
    // An index written with indent=2 puts a newline and four spaces before each of its 200k
    // keys: test 16 bytes at a time for the first byte that is not one of the four blanks.
    const __m128i space = _mm_set1_epi8(' ');
    const __m128i newline = _mm_set1_epi8('\n');
    const __m128i carriage = _mm_set1_epi8('\r');
    const __m128i tab = _mm_set1_epi8('\t');
    while (m_end - m_pos >= 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m_pos));
      const __m128i blank =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, space), _mm_cmpeq_epi8(bytes, newline)),
                       _mm_or_si128(_mm_cmpeq_epi8(bytes, carriage), _mm_cmpeq_epi8(bytes, tab)));
      const auto other = ~static_cast<unsigned>(_mm_movemask_epi8(blank)) & 0xFFFFU;
      if (other != 0) {
        m_pos += __builtin_ctz(other);
        return;
      }
      m_pos += 16;
    }
#endif
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
  // Consume `c` when it is the very next byte (no blanks skipped).
  bool take_exact(char c) {
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
  // Where the next token starts.
  const char* position() const {
    return m_pos;
  }
  // Consume the string token whose content is exactly `text` (after whitespace), when it is
  // next; false, consuming nothing, otherwise. `text` must hold no quote, backslash or control
  // character: then `"text"` can only be that string. For a value that repeats, such as the
  // shard file name of 200k consecutive index entries, this is one compare instead of a scan.
  bool take_string(std::string_view text) {
    skip_ws();
    const size_t quoted = text.size() + 2;
    if (static_cast<size_t>(m_end - m_pos) < quoted || m_pos[0] != '"' ||
        m_pos[quoted - 1] != '"' || std::memcmp(m_pos + 1, text.data(), text.size()) != 0) {
      return false;
    }
    m_pos += quoted;
    return true;
  }
  // Go back to a position() taken earlier, to scan the same text another way.
  void rewind(const char* pos) {
    m_pos = pos;
  }
  // Consume exactly the bytes of `word` (no whitespace before or inside it); false, consuming
  // nothing, when the text differs. For the fixed punctuation of the layout writers emit: the
  // length is a constant, so the compare is a few word loads, not a call.
  template <size_t N> bool take_literal(const char (&word)[N]) {
    if (static_cast<size_t>(m_end - m_pos) < N - 1 || !starts_with_literal(m_pos, word)) {
      return false;
    }
    m_pos += N - 1;
    return true;
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
    // Sizes and offsets have 1-11 digits, and there are close to a million of them in a
    // 1T-parameter checkpoint's headers: up to 15 digits take two word loads and no loop (at
    // most 15 digits cannot overflow). 16 or more, or fewer than 16 bytes left: the loop below.
    if (m_end - m_pos >= 16) {
      uint64_t word = load_word(m_pos);
      const size_t run = leading_digits(word);
      if (run == 0 || (run > 1 && *m_pos == '0')) {
        return std::nullopt;
      }
      uint64_t value = digits_value(word, run);
      const char* next = m_pos + run;
      if (run == 8) {
        word = load_word(next);
        const size_t more = leading_digits(word);
        if (more == 8) {
          return long_unsigned_integer();
        }
        if (more != 0) {
          value = value * k_powers[more] + digits_value(word, more);
          next += more;
        }
      }
      if (*next == '.' || *next == 'e' || *next == 'E') {
        return std::nullopt;
      }
      m_pos = next;
      return value;
    }
    return long_unsigned_integer();
  }

private:
  static constexpr uint64_t k_powers[9] = {
      1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

  // unsigned_integer() for any length, near the end of the text too. Out of line, so that the
  // common path above needs no saved registers (that was a third of its instructions).
  [[gnu::noinline]] std::optional<uint64_t> long_unsigned_integer() {
    const char* start = m_pos;
    uint64_t value = 0;
    size_t digits = 0;
    // Eight digits at a time while eight bytes remain (sizes and offsets have 4-11 digits, and
    // there are a million of them in a 1T-parameter checkpoint's headers), then byte by byte.
    while (m_end - m_pos >= 8) {
      const uint64_t word = load_word(m_pos);
      const size_t run = leading_digits(word);
      if (run == 0) {
        break;
      }
      if (!append_digits(value, word, run)) {
        return std::nullopt;
      }
      digits += run;
      m_pos += run;
      if (run < 8) {
        break;
      }
    }
    if (m_end - m_pos < 8) {
      while (m_pos < m_end && *m_pos >= '0' && *m_pos <= '9') {
        const auto digit = static_cast<uint64_t>(*m_pos - '0');
        if (__builtin_mul_overflow(value, uint64_t{10}, &value) ||
            __builtin_add_overflow(value, digit, &value)) {
          return std::nullopt;
        }
        ++digits;
        ++m_pos;
      }
    }
    if (digits == 0 || (digits > 1 && *start == '0')) {
      return std::nullopt;
    }
    if (m_pos < m_end && (*m_pos == '.' || *m_pos == 'e' || *m_pos == 'E')) {
      return std::nullopt;
    }
    return value;
  }

  // How many of the eight bytes of `word` (in memory order) are ASCII digits before the first
  // that is not. A byte is a digit when (byte ^ '0') < 10: adding 0x76 then leaves its top bit
  // clear. A carry out of a non-digit byte can only reach bytes after it, which do not count.
  static size_t leading_digits(uint64_t word) {
    if constexpr (std::endian::native != std::endian::little) {
      word = __builtin_bswap64(word);
    }
    const uint64_t values = word ^ 0x3030303030303030ULL;
    const uint64_t not_digit = (values | (values + 0x7676767676767676ULL)) & 0x8080808080808080ULL;
    return not_digit == 0 ? 8 : static_cast<size_t>(__builtin_ctzll(not_digit)) / 8;
  }

  // The number that the first `run` (1-8) bytes of `word` spell, all of them digits.
  static uint64_t digits_value(uint64_t word, size_t run) {
    if constexpr (std::endian::native != std::endian::little) {
      word = __builtin_bswap64(word);
    }
    // Shift the digits to the top so that zeros lead, then combine pairs, quads and octets.
    uint64_t digits = (word & 0x0F0F0F0F0F0F0F0FULL) << (8 * (8 - run));
    digits = (digits * 10 + (digits >> 8)) & 0x00FF00FF00FF00FFULL;
    digits = (digits * 100 + (digits >> 16)) & 0x0000FFFF0000FFFFULL;
    return (digits * 10000 + (digits >> 32)) & 0x00000000FFFFFFFFULL;
  }

  // value = value * 10^run + the first `run` digits of `word`; false on overflow past 2^64 - 1.
  static bool append_digits(uint64_t& value, uint64_t word, size_t run) {
    return !__builtin_mul_overflow(value, k_powers[run], &value) &&
           !__builtin_add_overflow(value, digits_value(word, run), &value);
  }

  static bool special(unsigned char c) {
    return c == '"' || c == '\\' || c < 0x20;
  }

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

// True when `text` is the literal `word` (a field name: three per tensor in a general layout).
template <size_t N> bool is_literal(std::string_view text, const char (&word)[N]) {
  return text.size() == N - 1 && starts_with_literal(text.data(), word);
}

} // namespace qpatch::json
