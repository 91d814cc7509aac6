// SPDX-License-Identifier: Apache-2.0
// The loop every judge's fix runs: how many rounds it takes, when it gives up, and which layers
// a round looks at.
#include "diagnose/fixpoint.hpp"

#include <gtest/gtest.h>

namespace qpatch::diagnose::detail {
namespace {

TEST(FixpointTest, StopsAfterTheFirstRoundThatChangesNothing) {
  int rounds = 0;
  const bool reached = fix_to_fixpoint([&] { return ++rounds < 3; });
  EXPECT_TRUE(reached);
  EXPECT_EQ(rounds, 3); // two rounds changed the patch, the third confirmed it
}

TEST(FixpointTest, AFirstRoundThatChangesNothingIsAFixpoint) {
  int rounds = 0;
  EXPECT_TRUE(fix_to_fixpoint([&] {
    ++rounds;
    return false;
  }));
  EXPECT_EQ(rounds, 1);
}

TEST(FixpointTest, GivesUpAfterTheBound) {
  int rounds = 0;
  EXPECT_FALSE(fix_to_fixpoint([&] {
    ++rounds;
    return true;
  }));
  EXPECT_EQ(rounds, 16);
  EXPECT_EQ(max_fix_rounds, 16);
  rounds = 0;
  EXPECT_FALSE(fix_to_fixpoint(
      [&] {
        ++rounds;
        return true;
      },
      4));
  EXPECT_EQ(rounds, 4);
}

TEST(FixpointTest, ARoundThatSettlesOnTheLastAllowedRoundReachesTheFixpoint) {
  int rounds = 0;
  EXPECT_TRUE(fix_to_fixpoint([&] { return ++rounds < 4; }, 4));
  EXPECT_EQ(rounds, 4);
}

// A judge that calls every layer quantized and counts what it was asked.
struct CountingJudge {
  mutable std::vector<std::string> asked;
  engine::Decision decide(const engine::Layer& layer) const {
    asked.push_back(layer.name);
    engine::Decision decision;
    decision.verdict = engine::Verdict::quantized;
    return decision;
  }
};

TEST(FixpointTest, EachDecidedSkipsLayersNoConfigCanFix) {
  std::vector<engine::Layer> layers(4);
  layers[0].name = "dense";
  layers[1].name = "quantized";
  layers[2].name = "mixed";
  layers[3].name = "inconsistent";
  const std::vector<LayerView> views{{&layers[0], Disk::dense, "BF16", 0},
                                     {&layers[1], Disk::quantized, "pack-quantized", 1},
                                     {&layers[2], Disk::mixed, "", 2},
                                     {&layers[3], Disk::inconsistent, "", 3}};
  const CountingJudge judge;
  std::vector<std::pair<size_t, engine::Verdict>> seen;
  each_decided(views, judge, [&](const LayerView& view, const engine::Decision& decision) {
    seen.emplace_back(view.order, decision.verdict);
  });
  EXPECT_EQ(judge.asked, (std::vector<std::string>{"dense", "quantized"}));
  EXPECT_EQ(seen,
            (std::vector<std::pair<size_t, engine::Verdict>>{{0, engine::Verdict::quantized},
                                                             {1, engine::Verdict::quantized}}));
}

} // namespace
} // namespace qpatch::diagnose::detail
