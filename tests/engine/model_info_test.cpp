// SPDX-License-Identifier: Apache-2.0
// The names vLLM asks the quant config about for MTP drafts (engines.md §10.2).
#include <qpatch/engine/model_info.hpp>

#include <gtest/gtest.h>

namespace qpatch::engine {
namespace {

TEST(ModelInfo, MimoRenumbersItsDraftLayersAndKeepsEntriesAsWritten) {
  const ModelInfo mimo = model_info_for("MiMoForCausalLM", 36);
  EXPECT_EQ(mimo.layer_prefix("model.mtp_layers.0.self_attn.qkv_proj"),
            "model.layers.36.self_attn.qkv_proj");
  EXPECT_EQ(mimo.layer_prefix("model.mtp_layers.2.mlp.down_proj"), "model.layers.38.mlp.down_proj");
  EXPECT_EQ(mimo.layer_prefix("model.layers.3.mlp.down_proj"), "model.layers.3.mlp.down_proj");
  EXPECT_EQ(mimo.to_vllm("model.mtp_layers.0.self_attn.q_proj"),
            "model.mtp_layers.0.self_attn.q_proj"); // the per-instance mapper is not applied
  EXPECT_TRUE(mimo.is_plain_linear("model.mtp_layers.0.input_proj"));
  EXPECT_FALSE(mimo.is_plain_linear("model.layers.0.input_proj"));
  // Without num_hidden_layers the draft cannot be placed: no renumbering is guessed.
  EXPECT_EQ(model_info_for("MiMoForCausalLM").layer_prefix("model.mtp_layers.0.mlp.up_proj"),
            "model.mtp_layers.0.mlp.up_proj");
}

TEST(ModelInfo, DeepSeekAndGlmDraftHeadAndEhProj) {
  const ModelInfo deepseek = model_info_for("DeepseekV3ForCausalLM", 61);
  EXPECT_EQ(deepseek.layer_prefix("model.layers.61.shared_head.head"), "model.layers.61.head");
  EXPECT_EQ(deepseek.layer_prefix("model.layers.60.shared_head.head"),
            "model.layers.60.shared_head.head");
  EXPECT_TRUE(deepseek.is_plain_linear("model.layers.61.eh_proj"));
  EXPECT_FALSE(deepseek.is_plain_linear("model.layers.60.eh_proj"));
  const ModelInfo air = model_info_for("Glm4MoeForCausalLM", 46);
  EXPECT_TRUE(air.is_plain_linear("model.layers.46.eh_proj"));
  EXPECT_EQ(air.layer_prefix("model.layers.46.shared_head.head"), "model.layers.46.head");
}

// num_nextn_predict_layers > 1 (Step-3.7 stores three, layers 45-47): DeepSeekMTP builds every
// one of them with a plain eh_proj and a ParallelLMHead of its own.
TEST(ModelInfo, EveryDraftLayerAfterTheMainOnesIsADraftLayer) {
  const ModelInfo glm5 = model_info_for("GlmMoeDsaForCausalLM", 45);
  EXPECT_EQ(glm5.draft_layer_of("model.layers.47.mlp.down_proj"), "model.layers.47.");
  EXPECT_EQ(glm5.draft_layer_of("model.layers.44.mlp.down_proj"), "");
  EXPECT_EQ(glm5.draft_layer_of("model.layers.4"), "");
  EXPECT_TRUE(glm5.is_plain_linear("model.layers.46.eh_proj"));
  EXPECT_TRUE(glm5.is_draft_shared_head("model.layers.47.shared_head.head"));
  EXPECT_EQ(glm5.layer_prefix("model.layers.47.shared_head.head"), "model.layers.47.head");
  EXPECT_FALSE(glm5.is_draft_shared_head("model.layers.44.shared_head.head"));
}

} // namespace
} // namespace qpatch::engine
