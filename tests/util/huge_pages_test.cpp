// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/huge_pages.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>

namespace qpatch::util {
namespace {

// Large blocks start on a 2 MiB boundary (THP backs only aligned ranges) and hold every value
// across growth and shrinking; small blocks come from operator new (run under ASan to check that
// each block goes back the way it came).
TEST(HugePageAllocator, AlignsLargeBlocksAndKeepsValuesAcrossGrowth) {
  LargeVector<uint64_t> values;
  for (uint64_t i = 0; i < 3'000'000; ++i) { // 24 MB: grows through small and large blocks
    values.push_back(i);
  }
  EXPECT_GE(values.capacity() * sizeof(uint64_t), k_huge_page_threshold);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values.data()) % (uintptr_t{2} << 20), 0U);
  EXPECT_EQ(std::accumulate(values.begin(), values.end(), uint64_t{0}),
            uint64_t{3'000'000} * 2'999'999 / 2);
  values.resize(10);
  values.shrink_to_fit(); // back to a small block
  EXPECT_EQ(values, (LargeVector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(HugePageAllocator, OddSizedLargeBlockIsWholeAndWritable) {
  const size_t bytes = k_huge_page_threshold + 12345; // not a multiple of the page size
  auto* block = static_cast<unsigned char*>(allocate_large(bytes));
  block[0] = 1;
  block[bytes - 1] = 2;
  EXPECT_EQ(block[0] + block[bytes - 1], 3);
  release_large(block, bytes);
}

// Ranges come back to back from one block until it is full; a range outlives the arena and the
// block it came from stays alive while any range holds it; a large request gets a block of its
// own and leaves the current block in use.
TEST(ByteArena, CutsRangesFromSharedBlocksThatLiveAsLongAsTheirRanges) {
  std::shared_ptr<char[]> first;
  std::shared_ptr<char[]> second;
  std::shared_ptr<char[]> large;
  std::shared_ptr<char[]> after_large;
  {
    ByteArena arena;
    first = arena.allocate(100);
    second = arena.allocate(50);
    large = arena.allocate(ByteArena::k_block_size / 2);
    after_large = arena.allocate(10);
  }
  EXPECT_EQ(second.get(), first.get() + 100);
  EXPECT_EQ(after_large.get(), second.get() + 50);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.get()) % (uintptr_t{2} << 20), 0U);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.get()) % (uintptr_t{2} << 20), 0U);
  EXPECT_EQ(first.use_count(), 3); // first, second and after_large share one block
  std::fill(first.get(), first.get() + 100, 'a');
  std::fill(large.get(), large.get() + ByteArena::k_block_size / 2, 'b');
  first.reset();
  second.reset();
  EXPECT_EQ(after_large.use_count(), 1);
  after_large[9] = 'c'; // still mapped (ASan would catch a freed block)
  EXPECT_EQ(after_large[9], 'c');
}

TEST(ByteArena, StartsANewBlockWhenTheCurrentOneIsFull) {
  ByteArena arena;
  const size_t quarter = ByteArena::k_block_size / 4;
  std::vector<std::shared_ptr<char[]>> ranges;
  for (int i = 0; i < 5; ++i) {
    ranges.push_back(arena.allocate(quarter)); // four fill a block, the fifth starts the next
  }
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(ranges[static_cast<size_t>(i)].get(),
              ranges[0].get() + i * static_cast<long>(quarter));
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ranges[4].get()) % (uintptr_t{2} << 20), 0U);
  EXPECT_NE(ranges[4].get(), ranges[0].get() + 4 * static_cast<long>(quarter));
  ranges[4][quarter - 1] = 'z';
  EXPECT_EQ(ranges[4][quarter - 1], 'z');
}

} // namespace
} // namespace qpatch::util
