// SPDX-License-Identifier: Apache-2.0
// Names matched by sorting their hashes instead of probing a hash table. Sorting 200k (hash, id)
// pairs with an LSD radix sort streams through memory; a hash table over the same names misses
// the cache on nearly every probe, and cost 3x more on a 1T-parameter checkpoint's headers.
#pragma once

#include <qpatch/util/huge_pages.hpp>
#include <qpatch/util/name_index.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace qpatch::util {

struct HashedId {
  uint64_t hash = 0;
  uint64_t check = 0; // a second, independent hash: (hash, check) is a 128-bit fingerprint
  uint32_t id = 0;
  uint32_t aux = 0; // caller data carried along (a file or shard index), so a join over
                    // sorted ids never has to chase the records
};

using HashedIds = LargeVector<HashedId>;

// An order-independent fingerprint of a set of distinct names: how many, and the sums (mod 2^64)
// of their fingerprints' two hashes. Two sets with equal sums are the same set but for a ~2^-128
// chance, so comparing per-file sums replaces a sort and a join when nothing is wrong.
struct NameSum {
  uint64_t count = 0;
  uint64_t hash = 0;
  uint64_t check = 0;
  void add(const NameFingerprint& name) {
    ++count;
    hash += name.hash;
    check += name.check;
  }
  bool operator==(const NameSum&) const = default;
};

// Sort by hash; stable, so equal hashes keep increasing ids.
// Two passes of 16-bit digits over the top 32 bits (the counts, 256 KB, stay in cache), then an
// insertion sort over each run of equal top halves: among 200k names such runs have a handful
// of members, so this costs half of a full four-pass sort for the same order.
inline void radix_sort(HashedIds& items) {
  HashedIds scratch(items.size());
  std::vector<uint32_t> count(65537);
  for (unsigned shift = 32; shift < 64; shift += 16) {
    std::fill(count.begin(), count.end(), 0U);
    for (const HashedId& item : items) {
      ++count[((item.hash >> shift) & 0xFFFF) + 1];
    }
    for (size_t i = 1; i < count.size(); ++i) {
      count[i] += count[i - 1];
    }
    for (const HashedId& item : items) {
      scratch[count[(item.hash >> shift) & 0xFFFF]++] = item;
    }
    items.swap(scratch);
  }
  for (size_t i = 1; i < items.size(); ++i) {
    if ((items[i].hash >> 32) != (items[i - 1].hash >> 32) || items[i].hash >= items[i - 1].hash) {
      continue; // already in order (equal hashes keep their stable id order)
    }
    const HashedId item = items[i];
    size_t j = i;
    for (; j > 0 && (items[j - 1].hash >> 32) == (item.hash >> 32) && items[j - 1].hash > item.hash;
         --j) {
      items[j] = items[j - 1];
    }
    items[j] = item;
  }
}

// Return (hash, check, id) for ids [0, count), sorted by hash, then id; `aux_of(id)` fills aux.
template <class NameOf, class AuxOf>
HashedIds sort_by_hash(size_t count, NameOf&& name_of, AuxOf&& aux_of) {
  HashedIds items(count);
  for (size_t i = 0; i < count; ++i) {
    const auto id = static_cast<uint32_t>(i);
    const std::string_view name = name_of(id);
    const NameFingerprint fingerprint = fingerprint_name(name);
    items[i] = {fingerprint.hash, fingerprint.check, id, aux_of(id)};
  }
  radix_sort(items);
  return items;
}

template <class NameOf> HashedIds sort_by_hash(size_t count, NameOf&& name_of) {
  return sort_by_hash(count, name_of, [](uint32_t) { return 0U; });
}

// Return the first id in `sorted` whose name is `name`, if any.
template <class NameOf>
std::optional<uint32_t>
find_sorted(const HashedIds& sorted, std::string_view name, NameOf&& name_of) {
  const uint64_t hash = hash_name(name);
  size_t low = 0;
  size_t high = sorted.size();
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    if (sorted[mid].hash < hash) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  for (size_t i = low; i < sorted.size() && sorted[i].hash == hash; ++i) {
    if (name_of(sorted[i].id) == name) {
      return sorted[i].id;
    }
  }
  return std::nullopt;
}

} // namespace qpatch::util
