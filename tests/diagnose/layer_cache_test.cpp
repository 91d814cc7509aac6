// SPDX-License-Identifier: Apache-2.0
// DiagnoseOptions::layer_cache: the judgement and the plan's re-judgement of one checkpoint build
// each engine version's layers once, and a judgement of another inventory builds its own.
#include "diagnose/judge_common.hpp"
#include "support/fixtures.hpp"
#include "support/loaded.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/diagnose/diagnose.hpp>

#include <gtest/gtest.h>

namespace qpatch::diagnose {
namespace {

class LayerCacheTest : public test::TempDirTest {};

TEST_F(LayerCacheTest, OneCheckpointsLayersAreBuiltOnceAndAnotherBuildsItsOwn) {
  test::write_mini(dir(),
                   {test::Head::dense,
                    test::HeadFile::indexed_shard,
                    test::ct_config_json("[\"lm_head\"]", "[\"Linear\"]")});
  const test::Loaded one = test::load_checkpoint(dir());
  const test::Loaded other = test::load_checkpoint(dir()); // equal bytes, another inventory
  DiagnoseOptions options;
  options.layer_cache = make_layer_cache();
  const std::vector<uint32_t> head;
  const auto views = [&](const test::Loaded& loaded) {
    return detail::engine_views(engine::EngineSet::all(),
                                engine::model_info_for("Qwen3_5ForCausalLM", 0),
                                {loaded.modules, loaded.inventory, head, options},
                                "compressed-tensors");
  };
  const auto first = views(one);
  const auto again = views(one);
  const auto apart = views(other);
  ASSERT_EQ(first.size(), again.size());
  ASSERT_EQ(first.size(), apart.size());
  ASSERT_GE(first.size(), 3U); // vLLM, SGLang and transformers, each in one or more versions
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i]->layers.get(), again[i]->layers.get()) << i;
    EXPECT_EQ(first[i]->views.get(), again[i]->views.get()) << i;
    EXPECT_NE(first[i]->layers.get(), apart[i]->layers.get()) << i;
    EXPECT_EQ(first[i]->layers->size(), apart[i]->layers->size()) << i;
  }
  // Without a cache each call builds anew, as before.
  options.layer_cache = nullptr;
  EXPECT_NE(views(one).front()->layers.get(), first.front()->layers.get());
}

// The decisions the cache keeps (decision_memo.hpp) are those of the config judged: a judgement
// of the same inventory under another config gets that config's verdicts, not the first one's.
TEST_F(LayerCacheTest, RememberedDecisionsAreNeverThoseOfAnotherConfig) {
  const auto findings_of = [](const Diagnosis& diagnosis) {
    std::vector<std::string> out;
    for (const Finding& finding : diagnosis.findings) {
      out.push_back(finding.detail);
    }
    return out;
  };
  test::write_mini(dir() / "a",
                   {test::Head::dense,
                    test::HeadFile::indexed_shard,
                    test::ct_config_json("[\"lm_head\"]", "[\"Linear\"]")});
  test::write_mini(dir() / "b",
                   {test::Head::dense,
                    test::HeadFile::indexed_shard,
                    test::ct_config_json("[\"lm_head\", \"re:.*mtp.*\"]", "[\"Linear\"]")});
  const test::Loaded a = test::load_checkpoint(dir() / "a");
  const test::Loaded b = test::load_checkpoint(dir() / "b");
  const auto judge = [&](const quant::ConfigSet& configs, const DiagnoseOptions& options) {
    auto diagnosis = diagnose(a.inventory, a.modules, configs, options);
    EXPECT_TRUE(diagnosis) << diagnosis.error().message;
    return findings_of(*diagnosis);
  };
  const std::vector<std::string> fresh_a = judge(a.configs, {});
  const std::vector<std::string> fresh_b = judge(b.configs, {});
  ASSERT_NE(fresh_a, fresh_b); // the configs disagree, so a stale answer would show
  DiagnoseOptions cached;
  cached.layer_cache = make_layer_cache();
  EXPECT_EQ(judge(a.configs, cached), fresh_a);
  EXPECT_EQ(judge(b.configs, cached), fresh_b);
  EXPECT_EQ(judge(a.configs, cached), fresh_a);
}

} // namespace
} // namespace qpatch::diagnose
