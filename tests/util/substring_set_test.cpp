// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/substring_set.hpp>

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace qpatch::util {
namespace {

// The least id whose string occurs in `text`, by testing each string: what SGLang's scan does.
std::optional<size_t> naive(const std::vector<std::string>& strings, const std::string& text) {
  for (size_t i = 0; i < strings.size(); ++i) {
    if (text.find(strings[i]) != std::string::npos) {
      return i;
    }
  }
  return std::nullopt;
}

TEST(SubstringSetTest, AgreesWithTestingEachStringOnRandomSets) {
  std::mt19937 rng(20261205);
  const auto random_text = [&](size_t max_length) {
    std::string text(rng() % (max_length + 1), 'a');
    for (char& c : text) {
      c = "ab.1"[rng() % 4]; // a small alphabet: overlaps and shared suffixes are the rule
    }
    return text;
  };
  size_t hits = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<std::string> strings(1 + rng() % 12);
    for (std::string& s : strings) {
      s = random_text(6);
    }
    SubstringSet set;
    for (size_t i = 0; i < strings.size(); ++i) {
      set.add(strings[i], i);
    }
    set.build();
    for (int t = 0; t < 20; ++t) {
      const std::string text = random_text(24);
      const auto expected = naive(strings, text);
      ASSERT_EQ(set.first_in(text), expected) << "round " << round << ", text " << text;
      hits += expected ? 1U : 0U;
    }
  }
  EXPECT_GT(hits, 1000U); // the comparison saw matches, not only misses
}

TEST(SubstringSetTest, TheLeastIdWinsAndTheEmptyStringOccursEverywhere) {
  SubstringSet set;
  set.add("layers.3", 7);
  set.add("q_proj", 2);
  set.add("layers.3", 1); // added again: the least id is kept
  set.build();
  EXPECT_EQ(set.first_in("model.layers.3.self_attn.q_proj"), 1U);
  EXPECT_EQ(set.first_in("model.layers.4.self_attn.q_proj"), 2U);
  EXPECT_EQ(set.first_in("model.layers.4.mlp.up_proj"), std::nullopt);
  SubstringSet with_empty;
  with_empty.add("", 5);
  with_empty.add("mlp", 9);
  with_empty.build();
  EXPECT_FALSE(with_empty.empty());
  EXPECT_EQ(with_empty.first_in("anything"), 5U);
  EXPECT_TRUE(SubstringSet().empty());
}

} // namespace
} // namespace qpatch::util
