// SPDX-License-Identifier: Apache-2.0
#include <qpatch/safetensors/dtype.hpp>
#include <qpatch/util/bytes.hpp>

#include <algorithm>
#include <array>
#include <utility>

namespace qpatch::safetensors {
namespace {

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  uint64_t bits;
};

constexpr std::array<DtypeInfo, 22> k_dtypes{{
    {Dtype::BOOL, "BOOL", 8},
    {Dtype::F4, "F4", 4},
    {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6},
    {Dtype::U8, "U8", 8},
    {Dtype::I8, "I8", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8},
    {Dtype::F8_E4M3, "F8_E4M3", 8},
    {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {Dtype::I16, "I16", 16},
    {Dtype::U16, "U16", 16},
    {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},
    {Dtype::I32, "I32", 32},
    {Dtype::U32, "U32", 32},
    {Dtype::F32, "F32", 32},
    {Dtype::C64, "C64", 64},
    {Dtype::F64, "F64", 64},
    {Dtype::I64, "I64", 64},
    {Dtype::U64, "U64", 64},
}};

// Bytes [from, from + 8) of a name as one word, at compile time (no dtype name is longer than 11
// bytes); util::load_le_bytes gives the same word at run time.
constexpr uint64_t pack(std::string_view text, size_t from) {
  uint64_t word = 0;
  for (size_t i = from; i < text.size() && i < from + 8; ++i) {
    word |= static_cast<uint64_t>(static_cast<unsigned char>(text[i])) << (8 * (i - from));
  }
  return word;
}

struct PackedName {
  uint64_t low = 0;
  uint64_t high = 0;
  size_t size = 0;
  size_t dtype_index = 0; // into k_dtypes
};

constexpr size_t k_slots = 64; // a power of two, under half full
constexpr size_t slot_of(uint64_t low, uint64_t high, size_t size) {
  return static_cast<size_t>(((low ^ (high * 31) ^ size) * 0x9E3779B97F4A7C15ULL) >> 58);
}

// An open-addressing table of the names, built at compile time; size 0 marks an empty slot.
constexpr std::array<PackedName, k_slots> k_table = [] {
  std::array<PackedName, k_slots> table{};
  for (size_t i = 0; i < k_dtypes.size(); ++i) {
    const PackedName name{
        pack(k_dtypes[i].name, 0), pack(k_dtypes[i].name, 8), k_dtypes[i].name.size(), i};
    size_t slot = slot_of(name.low, name.high, name.size);
    while (table[slot].size != 0) {
      slot = (slot + 1) % k_slots;
    }
    table[slot] = name;
  }
  return table;
}();

} // namespace

// Once per tensor (200k on a 1T-parameter checkpoint): one hashed probe of two words, not a
// compare per candidate (a byte-by-byte pack and a linear scan were 5% of --check).
std::optional<Dtype> parse_dtype(std::string_view text) {
  if (text.empty() || text.size() > 16) {
    return std::nullopt;
  }
  const uint64_t low = util::load_le_bytes(text.data(), std::min<size_t>(text.size(), 8));
  const uint64_t high = text.size() > 8 ? util::load_le_bytes(text.data() + 8, text.size() - 8) : 0;
  for (size_t slot = slot_of(low, high, text.size());; slot = (slot + 1) % k_slots) {
    const PackedName& name = k_table[slot];
    if (name.size == 0) {
      return std::nullopt;
    }
    if (name.low == low && name.high == high && name.size == text.size()) {
      return k_dtypes[name.dtype_index].dtype;
    }
  }
}

std::string_view to_string(Dtype dtype) {
  return k_dtypes.at(static_cast<size_t>(dtype)).name;
}

uint64_t bits_of(Dtype dtype) {
  return k_dtypes.at(static_cast<size_t>(dtype)).bits;
}

bool is_dense_float(Dtype dtype) {
  return dtype == Dtype::BF16 || dtype == Dtype::F16 || dtype == Dtype::F32 || dtype == Dtype::F64;
}

bool is_float8(Dtype dtype) {
  return dtype == Dtype::F8_E5M2 || dtype == Dtype::F8_E4M3 || dtype == Dtype::F8_E8M0 ||
         dtype == Dtype::F8_E4M3FNUZ || dtype == Dtype::F8_E5M2FNUZ;
}

bool is_floating(Dtype dtype) {
  return is_dense_float(dtype) || is_float8(dtype) || dtype == Dtype::F4 ||
         dtype == Dtype::F6_E2M3 || dtype == Dtype::F6_E3M2 || dtype == Dtype::C64;
}

} // namespace qpatch::safetensors
