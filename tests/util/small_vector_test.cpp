// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/small_vector.hpp>

#include <gtest/gtest.h>

namespace qpatch::util {
namespace {

// The heap form shares bytes with the inline items: growing past N, copying, moving and
// assigning must keep every value (run under ASan to check ownership of the heap block).
TEST(SmallVector, KeepsValuesAcrossGrowthCopiesAndMoves) {
  SmallVector<uint64_t, 4> values;
  std::vector<uint64_t> expected;
  for (uint64_t i = 0; i < 40; ++i) {
    values.push_back(i * 7);
    expected.push_back(i * 7);
    ASSERT_EQ(values, expected) << i;
  }
  SmallVector<uint64_t, 4> copy = values;
  EXPECT_EQ(copy, expected);
  SmallVector<uint64_t, 4> moved = std::move(copy);
  EXPECT_EQ(moved, expected);
  EXPECT_TRUE(copy.empty()); // NOLINT(bugprone-use-after-move): moved-from is empty, by design
  SmallVector<uint64_t, 4> small{1, 2};
  small = moved;
  EXPECT_EQ(small, expected);
  moved = SmallVector<uint64_t, 4>{3};
  EXPECT_EQ(moved, (std::vector<uint64_t>{3}));
  moved.clear();
  EXPECT_TRUE(moved.empty());
  moved.push_back(9);
  EXPECT_EQ(moved, (std::vector<uint64_t>{9}));
}

} // namespace
} // namespace qpatch::util
