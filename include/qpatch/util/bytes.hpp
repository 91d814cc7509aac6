// SPDX-License-Identifier: Apache-2.0
// Reading a few bytes of text as one machine word, for the hashes and table lookups run once per
// name or dtype (hundreds of thousands of times on a 1T-parameter checkpoint).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qpatch::util {

// Bytes [0, n) of `p` (n <= 8) as a little-endian number, zeros above them. The length varies,
// so a memcpy would be a library call: at most two loads instead, the second overlapping the
// first and carrying the same bytes where they meet. Never reads outside [p, p + n).
inline uint64_t load_le_bytes(const char* p, size_t n) {
  if constexpr (std::endian::native != std::endian::little) {
    uint64_t word = 0;
    for (size_t i = 0; i < n; ++i) {
      word |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    return word;
  } else {
    const auto load = [p](size_t at, auto word) {
      std::memcpy(&word, p + at, sizeof(word));
      return static_cast<uint64_t>(word);
    };
    if (n >= 8) {
      return load(0, uint64_t{0});
    }
    if (n >= 4) {
      return load(0, uint32_t{0}) | load(n - 4, uint32_t{0}) << (8 * (n - 4));
    }
    if (n >= 2) {
      return load(0, uint16_t{0}) | load(n - 2, uint16_t{0}) << (8 * (n - 2));
    }
    return n == 1 ? load(0, uint8_t{0}) : 0;
  }
}

} // namespace qpatch::util
