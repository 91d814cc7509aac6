// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/huge_pages.hpp>

#include <gtest/gtest.h>

#include <cstdint>
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

} // namespace
} // namespace qpatch::util
