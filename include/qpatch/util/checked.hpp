// SPDX-License-Identifier: Apache-2.0
// Overflow-checked arithmetic and little-endian loads for numbers that come from files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace qpatch::util {

// Return a + b, or nothing when it overflows 64 bits.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return std::nullopt;
  }
  return sum;
}

// Return a * b, or nothing when it overflows 64 bits.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    return std::nullopt;
  }
  return product;
}

// Assemble a little-endian u64 byte by byte, so host endianness and alignment never matter.
inline uint64_t load_u64_le(const unsigned char* bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) {
    value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  }
  return value;
}

} // namespace qpatch::util
