// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/hash_sort.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>

namespace qpatch::util {
namespace {

// The last bytes of a name, read with whole-word loads that never leave the name: equal to a
// plain copy of those bytes for every length and every start of the tail.
TEST(NameFingerprint, TailWordIsTheBytesAfterTheLastWholeWord) {
  const std::string text = "model.layers.0.mlp.experts.7.gate_proj.weight_packed";
  for (size_t size = 0; size <= text.size(); ++size) {
    // Each name on its own in the heap, so a read past its end would show under ASan.
    const std::unique_ptr<char[]> name(new char[size + 1]);
    std::memcpy(name.get(), text.data(), size);
    const std::string_view view(name.get(), size);
    const size_t from = size / 8 * 8;
    uint64_t expected = 0;
    std::memcpy(&expected, view.data() + from, size - from);
    EXPECT_EQ(tail_word(view, from), expected) << size;
  }
  // Names that differ only in their tail differ in both hashes.
  const auto a = fingerprint_name("layers.0.q_proj.weight_scale");
  const auto b = fingerprint_name("layers.0.q_proj.weight_scalf");
  EXPECT_NE(a.hash, b.hash);
  EXPECT_NE(a.check, b.check);
}

// The radix sort looks at the top 32 bits only and repairs runs of equal top halves: feed it
// many such runs (and exact duplicates, which must keep their id order) and compare with a
// stable sort on the whole hash.
TEST(RadixSort, OrdersLikeAStableSortOnTheWholeHash) {
  std::mt19937_64 random(42);
  HashedIds items;
  for (uint32_t id = 0; id < 50'000; ++id) {
    const uint64_t top = random() % 3000; // ~17 items share each top half
    const uint64_t low = random() % 8;    // and often the whole hash
    items.push_back({(top << 32) | low, random(), id, 0});
  }
  HashedIds expected = items;
  std::stable_sort(expected.begin(), expected.end(), [](const HashedId& a, const HashedId& b) {
    return a.hash < b.hash;
  });
  radix_sort(items);
  ASSERT_EQ(items.size(), expected.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_EQ(items[i].hash, expected[i].hash) << i;
    ASSERT_EQ(items[i].id, expected[i].id) << i;
  }
}

TEST(RadixSort, FindSortedFindsEveryNameAndNoOther) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) {
    names.push_back("model.layers." + std::to_string(i) + ".mlp.down_proj.weight");
  }
  const auto name_of = [&](uint32_t id) { return std::string_view(names[id]); };
  const auto sorted = sort_by_hash(names.size(), name_of);
  for (uint32_t id = 0; id < names.size(); ++id) {
    ASSERT_EQ(find_sorted(sorted, names[id], name_of), std::optional<uint32_t>(id));
  }
  EXPECT_EQ(find_sorted(sorted, "model.layers.5000.mlp.down_proj.weight", name_of), std::nullopt);
}

} // namespace
} // namespace qpatch::util
