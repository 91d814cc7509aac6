// SPDX-License-Identifier: Apache-2.0
// A list cut to a terminal's width says how many names it left out and where to see them.
#include <qpatch/report/fit_width.hpp>

#include <gtest/gtest.h>

namespace qpatch::report {
namespace {

TEST(FitWidth, ACutListCountsTheRestAndPointsToVerbose) {
  const std::vector<std::string> names{"mtp.fc",
                                       "mtp.layers.0.self_attn.q_proj",
                                       "mtp.layers.0.self_attn.k_proj",
                                       "mtp.layers.0.mlp.up_proj"};
  EXPECT_EQ(elided_list("+", names, 60), "+4: mtp.fc, … (3 more; -v lists all)");
  EXPECT_EQ(elided_list("+", names, 0),
            "+4: mtp.fc, mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
            "mtp.layers.0.mlp.up_proj");
}

TEST(FitWidth, DisplayWidthCountsCharactersNotBytes) {
  EXPECT_EQ(display_width("…layers"), 7U);
}

} // namespace
} // namespace qpatch::report
