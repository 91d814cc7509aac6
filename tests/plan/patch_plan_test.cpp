// SPDX-License-Identifier: Apache-2.0
// The planned bytes of each kind of edit (remove, append, an absent key created, a null one
// replaced, an object prepended to), and the verification that refuses a plan whose re-judged
// checkpoint still has a finding the plan meant to fix.
#include "support/fixtures.hpp"
#include "support/loaded.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/plan/patch_plan.hpp>

#include <gtest/gtest.h>

namespace qpatch::plan {
namespace {

using diagnose::ArrayChange;
using diagnose::Diagnosis;
using diagnose::ObjectChange;
using test::Head;
using test::HeadFile;

// A compressed-tensors config.json whose quantization_config members are `members` (lines
// ending in ",\n"), before quant_method.
std::string ct_config(const std::string& members) {
  return "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
         "  \"quantization_config\": {\n    \"config_groups\": {\n      \"group_0\": {\n"
         "        \"format\": \"pack-quantized\",\n        \"targets\": [\n          \"Linear\"\n"
         "        ],\n        \"weights\": {\n          \"group_size\": 32,\n"
         "          \"num_bits\": 4,\n          \"strategy\": \"group\",\n"
         "          \"symmetric\": true,\n          \"type\": \"int\"\n        }\n      }\n"
         "    },\n    \"format\": \"pack-quantized\",\n" +
         members + "    \"quant_method\": \"compressed-tensors\"\n  }\n}\n";
}

ArrayChange
ignore_change(std::vector<size_t> remove, std::vector<std::string> append, bool create = false) {
  ArrayChange change;
  change.file = "config.json";
  change.pointer = {"quantization_config", "ignore"};
  change.create = create;
  change.remove = std::move(remove);
  change.append = std::move(append);
  return change;
}

class PatchPlanTest : public test::TempDirTest {
protected:
  // Plan `diagnosis` over a checkpoint with no MTP head, its config.json `config`.
  Result<PatchPlan> plan(const std::string& config,
                         const Diagnosis& diagnosis,
                         test::Packing packing = test::Packing::compressed_tensors) {
    test::write_mini(dir(), {Head::absent, HeadFile::indexed_shard, config, packing});
    m_loaded = test::load_checkpoint(dir());
    return plan_patch(diagnosis, m_loaded.configs, m_loaded.inventory, {});
  }

private:
  test::Loaded m_loaded;
};

TEST_F(PatchPlanTest, RemoveAndAppendInOneArray) {
  Diagnosis diagnosis;
  diagnosis.array_changes.push_back(ignore_change({1}, {"model.visual.merger"}));
  diagnosis.array_changes.back().removed_values = {"re:^model\\.visual.*"};
  auto planned = plan(ct_config("    \"ignore\": [\n      \"lm_head\",\n"
                                "      \"re:^model\\\\.visual.*\"\n    ],\n"),
                      diagnosis);
  ASSERT_TRUE(planned.ok()) << planned.error().to_string();
  ASSERT_EQ(planned->changes.size(), 1U);
  const FileChange& change = planned->changes.front();
  EXPECT_EQ(change.file, "config.json");
  EXPECT_EQ(change.after,
            ct_config("    \"ignore\": [\n      \"lm_head\",\n"
                      "      \"model.visual.merger\"\n    ],\n"));
  EXPECT_EQ(change.added, std::vector<std::string>{"model.visual.merger"});
  EXPECT_EQ(change.removed, std::vector<std::string>{"re:^model\\.visual.*"});
  EXPECT_FALSE(change.is_symlink);
}

TEST_F(PatchPlanTest, AnAbsentKeyIsCreatedAtTheEndOfItsObject) {
  Diagnosis diagnosis;
  diagnosis.array_changes.push_back(ignore_change({}, {"lm_head"}, true));
  auto planned = plan(ct_config(""), diagnosis);
  ASSERT_TRUE(planned.ok()) << planned.error().to_string();
  ASSERT_EQ(planned->changes.size(), 1U);
  std::string expected = ct_config("");
  expected.replace(expected.find("\"compressed-tensors\"\n"),
                   21,
                   "\"compressed-tensors\",\n    \"ignore\": [\n      \"lm_head\"\n    ]\n");
  EXPECT_EQ(planned->changes.front().after, expected);
}

TEST_F(PatchPlanTest, ANullKeyIsReplacedInPlace) {
  Diagnosis diagnosis;
  diagnosis.array_changes.push_back(ignore_change({}, {"lm_head"}, true));
  auto planned = plan(ct_config("    \"ignore\": null,\n"), diagnosis);
  ASSERT_TRUE(planned.ok()) << planned.error().to_string();
  ASSERT_EQ(planned->changes.size(), 1U);
  EXPECT_EQ(planned->changes.front().after,
            ct_config("    \"ignore\": [\n      \"lm_head\"\n    ],\n"));
}

TEST_F(PatchPlanTest, ObjectKeysArePrependedAndRemoved) {
  const std::string config =
      test::gptq_config("Qwen3_5ForCausalLM",
                        "    \"dynamic\": {\n      \"-:.*attn.*\": {},\n      \"lm_head\": {}\n"
                        "    },\n");
  Diagnosis diagnosis;
  ObjectChange change;
  change.file = "config.json";
  change.pointer = {"quantization_config", "dynamic"};
  change.remove = {"-:.*attn.*"};
  change.prepend = {"-:^mtp\\."};
  diagnosis.object_changes.push_back(change);
  auto planned = plan(config, diagnosis, test::Packing::gptq);
  ASSERT_TRUE(planned.ok()) << planned.error().to_string();
  ASSERT_EQ(planned->changes.size(), 1U);
  EXPECT_EQ(planned->changes.front().after,
            test::gptq_config("Qwen3_5ForCausalLM",
                              "    \"dynamic\": {\n      \"-:^mtp\\\\.\": {},\n"
                              "      \"lm_head\": {}\n    },\n"));
  EXPECT_EQ(planned->changes.front().added, std::vector<std::string>{"-:^mtp\\."});
  EXPECT_EQ(planned->changes.front().removed, std::vector<std::string>{"-:.*attn.*"});
}

TEST_F(PatchPlanTest, NoEditPlansNothing) {
  auto planned = plan(ct_config("    \"ignore\": [\n      \"lm_head\"\n    ],\n"), Diagnosis{});
  ASSERT_TRUE(planned.ok());
  EXPECT_TRUE(planned->empty());
}

TEST_F(PatchPlanTest, APlanThatLeavesAFixableFindingIsRefused) {
  // Putting an attention shard in ignore makes its fused layer's shards disagree: re-judging the
  // patched config finds that, so the plan is an internal error and nothing would be written.
  Diagnosis diagnosis;
  diagnosis.array_changes.push_back(
      ignore_change({}, {"model.language_model.layers.0.self_attn.k_proj"}));
  auto planned = plan(ct_config("    \"ignore\": [\n      \"lm_head\"\n    ],\n"), diagnosis);
  ASSERT_FALSE(planned.ok());
  const Error error = planned.take_error();
  EXPECT_EQ(error.code, ErrorCode::internal);
  EXPECT_EQ(error.to_string(),
            "config.json: internal error: the planned edit leaves a finding it meant to fix: "
            "model.language_model.layers.0.self_attn: 3 modules are judged as one layer "
            "(model.language_model.layers.0.self_attn.qkv_proj) but its shards disagree in the "
            "config; vLLM: ValueError: Found a different quantization schemes for ['q_proj', "
            "'k_proj', 'v_proj'] in model.layers.0.self_attn.qkv_proj. vLLM requires all to use "
            "the same scheme. (vLLM from 2026-08-06 (0.27 and newer) only); nothing was written");
}

} // namespace
} // namespace qpatch::plan
