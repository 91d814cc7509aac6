// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/parallel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace qpatch::util {
namespace {

TEST(ParallelFor, RunsEveryJobOnce) {
  std::vector<std::atomic<int>> runs(97);
  parallel_for(runs.size(), [&](size_t i) { ++runs[i]; });
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].load(), 1) << i;
  }
  parallel_for(0, [&](size_t) { FAIL() << "no job to run"; });
}

TEST(ParallelFor, AFailedJobIsRethrownAfterTheOthersRan) {
  std::atomic<int> ran{0};
  const auto run = [&] {
    parallel_for(16, [&](size_t i) {
      ++ran;
      if (i == 3) {
        throw std::runtime_error("job 3");
      }
    });
  };
  try {
    run();
    FAIL() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "job 3");
  }
  EXPECT_EQ(ran.load(), 16);
}

} // namespace
} // namespace qpatch::util
