// SPDX-License-Identifier: Apache-2.0
// An open-addressing hash index from names to the ids of records that hold them. It stores no
// keys (8 bytes a slot): the caller's `key_of(id)` returns the name of a record, so the names
// live once, in their own storage. std::unordered_map with string keys cost 10x more time and
// memory on a 200k-tensor checkpoint.
#pragma once

#include <qpatch/util/bytes.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::util {

// Two independent 64-bit hashes of a name, computed in one pass over its words: `hash` places it
// in tables and sorts, and (hash, check) together is a 128-bit fingerprint (see NameSum). A
// 1T-parameter checkpoint has 200k names in its headers and again in its index; reading each
// once for both hashes, and only once, saved a third of the hashing. Words are read in host byte
// order: the values only need to be consistent within one process.
struct NameFingerprint {
  uint64_t hash = 0;
  uint64_t check = 0;
};

// The bytes of `text` from `from` to its end (fewer than 8) as a word, zeros above them. A name of
// 8 bytes or more gives them with one load of its last whole word, the bytes already hashed
// shifted out.
inline uint64_t tail_word(std::string_view text, size_t from) {
  const size_t n = text.size() - from;
  if (std::endian::native == std::endian::little && n > 0 && text.size() >= 8) {
    uint64_t word = 0;
    std::memcpy(&word, text.data() + text.size() - 8, 8);
    return word >> (8 * (8 - n));
  }
  return load_le_bytes(text.data() + from, n);
}

inline NameFingerprint fingerprint_name(std::string_view text) {
  // Different constants and a different mixing step (xor-multiply vs add-multiply) per hash.
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ text.size();
  uint64_t c = 0xD6E8FEB86659FD93ULL + text.size();
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, text.data() + i, 8);
    h = (h ^ word) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
    c = (c + word) * 0x9FB21C651E98DF25ULL;
    c ^= c >> 28;
  }
  const uint64_t tail = tail_word(text, i);
  h = (h ^ tail) * 0x94D049BB133111EBULL;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  c = (c + tail) * 0xC2B2AE3D27D4EB4FULL;
  return {h ^ (h >> 32), c ^ (c >> 31)};
}

// The first of the two: inlined, the compiler drops the second.
inline uint64_t hash_name(std::string_view text) {
  return fingerprint_name(text).hash;
}

class NameIndex {
public:
  // Size the table for `count` names without rehashing.
  void reserve(size_t count) {
    size_t capacity = 16;
    while (capacity < count * 2) {
      capacity *= 2;
    }
    if (capacity > m_slots.size()) {
      rehash(capacity);
    }
  }
  void clear() {
    std::fill(m_slots.begin(), m_slots.end(), Slot{});
    m_size = 0;
  }
  size_t size() const { return m_size; }

  // Return the id of the record named `key`, if one was inserted.
  template <class KeyOf> std::optional<uint32_t> find(std::string_view key, KeyOf&& key_of) const {
    if (m_slots.empty()) {
      return std::nullopt;
    }
    const uint64_t hash = hash_name(key);
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & (m_slots.size() - 1);; i = (i + 1) & (m_slots.size() - 1)) {
      const Slot& slot = m_slots[i];
      if (slot.id_plus_one == 0) {
        return std::nullopt;
      }
      if (slot.tag == tag && key_of(slot.id_plus_one - 1) == key) {
        return slot.id_plus_one - 1;
      }
    }
  }

  // Insert `id` under `key` unless the key is present; return the id stored under the key and
  // whether this call inserted it.
  template <class KeyOf>
  std::pair<uint32_t, bool> insert(std::string_view key, uint32_t id, KeyOf&& key_of) {
    return insert(key, hash_name(key), id, key_of);
  }
  // The same, for a caller that already has hash_name(key).
  template <class KeyOf>
  std::pair<uint32_t, bool>
  insert(std::string_view key, uint64_t hash, uint32_t id, KeyOf&& key_of) {
    if ((m_size + 1) * 2 > m_slots.size()) {
      rehash(m_slots.empty() ? 16 : m_slots.size() * 2);
    }
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & (m_slots.size() - 1);; i = (i + 1) & (m_slots.size() - 1)) {
      Slot& slot = m_slots[i];
      if (slot.id_plus_one == 0) {
        slot = Slot{tag, id + 1, static_cast<uint32_t>(hash)};
        ++m_size;
        return {id, true};
      }
      if (slot.tag == tag && key_of(slot.id_plus_one - 1) == key) {
        return {slot.id_plus_one - 1, false};
      }
    }
  }

private:
  struct Slot {
    uint32_t tag = 0;         // high hash bits, to skip most key comparisons
    uint32_t id_plus_one = 0; // 0: empty
    uint32_t low = 0;         // low hash bits, to rehash without the keys
  };

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(m_slots);
    m_slots.assign(capacity, Slot{});
    for (const Slot& slot : old) {
      if (slot.id_plus_one == 0) {
        continue;
      }
      for (size_t i = slot.low & (capacity - 1);; i = (i + 1) & (capacity - 1)) {
        if (m_slots[i].id_plus_one == 0) {
          m_slots[i] = slot;
          break;
        }
      }
    }
  }

  std::vector<Slot> m_slots;
  size_t m_size = 0;
};

} // namespace qpatch::util
