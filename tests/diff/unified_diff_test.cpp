// SPDX-License-Identifier: Apache-2.0
#include <qpatch/diff/unified_diff.hpp>

#include <gtest/gtest.h>

namespace qpatch::diff {
namespace {

TEST(UnifiedDiff, EqualTextsHaveNoDiff) {
  EXPECT_EQ(unified_diff("a\n", "a\n", "x"), "");
}

TEST(UnifiedDiff, OneHunkWithContext) {
  const std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n";
  const std::string after = "1\n2\n3\n4\nfive\n6\n7\n8\n";
  EXPECT_EQ(unified_diff(before, after, "config.json"),
            "--- a/config.json\n+++ b/config.json\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n"
            " 6\n 7\n 8\n");
}

TEST(UnifiedDiff, DistantChangesMakeTwoHunks) {
  std::string before;
  for (int i = 1; i <= 20; ++i) {
    before += std::to_string(i) + "\n";
  }
  std::string after = before;
  after.replace(after.find("2\n"), 2, "two\n");
  after.replace(after.find("19\n"), 3, "nineteen\n");
  EXPECT_EQ(unified_diff(before, after, "f"),
            "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
            "@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20\n");
}

TEST(UnifiedDiff, MissingFinalNewlineIsMarked) {
  EXPECT_EQ(unified_diff("a\nb", "a\nc", "f"),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
            "\\ No newline at end of file\n");
}

TEST(UnifiedDiff, PureInsertion) {
  EXPECT_EQ(unified_diff("a\nc\n", "a\nb\nc\n", "f"),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n+b\n c\n");
}

} // namespace
} // namespace qpatch::diff
