// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/hash_sort.hpp>

#include <gtest/gtest.h>

#include <random>

namespace qpatch::util {
namespace {

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
