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

// vLLM's Qwen3-VL (qwen3_vl.py, qwen3_vl_moe.py, 017e9f4): the dense class asks about its head
// as "lm_head" (written in), the MoE class as language_model.lm_head; only the MoE family
// builds its router with the quant config (qwen3_moe.py).
TEST(ModelInfo, Qwen3VlHeadsAndRouters) {
  const ModelInfo dense = model_info_for("Qwen3VLForConditionalGeneration", 2);
  const ModelInfo moe = model_info_for("Qwen3VLMoeForConditionalGeneration", 2);
  EXPECT_EQ(dense.layer_prefix("lm_head"), "lm_head");
  EXPECT_EQ(moe.layer_prefix("lm_head"), "language_model.lm_head");
  EXPECT_EQ(dense.layer_prefix("model.visual.blocks.0.attn.qkv"), "visual.blocks.0.attn.qkv");
  EXPECT_EQ(dense.to_vllm("model.language_model.layers.1.mlp.down_proj"),
            "language_model.model.layers.1.mlp.down_proj");
  EXPECT_EQ(dense.shards_of("gate_up_proj")->size(), 2U);
  EXPECT_EQ(moe.shards_of("gate_up_proj"), nullptr); // the config's mapping: qkv_proj only
  EXPECT_FALSE(dense.router_quant_config);
  EXPECT_TRUE(moe.router_quant_config);
  EXPECT_TRUE(model_info_for("Qwen3MoeForCausalLM").router_quant_config);
  EXPECT_FALSE(model_info_for("Qwen3_5MoeForConditionalGeneration").router_quant_config);
}

// vLLM's Qwen2.5-VL mapper reaches the built names from checkpoints in transformers' names from
// 4.52 (model.language_model., model.visual.) and from the older ones (model., visual.).
TEST(ModelInfo, Qwen25VlMapsBothCheckpointNamings) {
  const ModelInfo model = model_info_for("Qwen2_5_VLForConditionalGeneration", 28);
  EXPECT_EQ(model.layer_prefix("model.language_model.layers.0.self_attn.o_proj"),
            "language_model.model.layers.0.self_attn.o_proj");
  EXPECT_EQ(model.layer_prefix("model.layers.0.self_attn.o_proj"),
            "language_model.model.layers.0.self_attn.o_proj");
  EXPECT_EQ(model.layer_prefix("model.visual.merger.mlp.0"), "visual.merger.mlp.0");
  EXPECT_EQ(model.layer_prefix("visual.merger.mlp.0"), "visual.merger.mlp.0");
  EXPECT_EQ(model.layer_prefix("lm_head"), "language_model.lm_head");
  EXPECT_EQ(model.to_vllm("visual.blocks.0.mlp.gate_proj"), "visual.blocks.0.mlp.gate_proj");
  EXPECT_EQ(model.fused_for("gate_proj"), "gate_up_proj");
  EXPECT_TRUE(model.has_mapper);
  // Qwen2-VL: the same mapper; its vision MLP is fc1/fc2, nothing to fuse.
  const ModelInfo qwen2 = model_info_for("Qwen2VLForConditionalGeneration", 28);
  EXPECT_EQ(qwen2.layer_prefix("model.layers.1.mlp.down_proj"),
            "language_model.model.layers.1.mlp.down_proj");
  EXPECT_EQ(qwen2.layer_prefix("visual.blocks.0.mlp.fc1"), "visual.blocks.0.mlp.fc1");
  EXPECT_EQ(qwen2.row, "qwen2_vl");
}

// vLLM's Gemma 3 (gemma3_mm.py, siglip.py): the mapper from both checkpoint namings, and the
// SigLIP MLP dense but under bitsandbytes.
TEST(ModelInfo, Gemma3MapsBothNamingsAndKeepsTheSiglipMlpDense) {
  const ModelInfo model = model_info_for("Gemma3ForConditionalGeneration", 2);
  EXPECT_EQ(model.layer_prefix("model.language_model.layers.0.mlp.down_proj"),
            "language_model.model.layers.0.mlp.down_proj");
  EXPECT_EQ(model.layer_prefix("language_model.model.layers.0.mlp.down_proj"),
            "language_model.model.layers.0.mlp.down_proj");
  EXPECT_EQ(model.layer_prefix("model.vision_tower.vision_model.encoder.layers.0.mlp.fc1"),
            "vision_tower.vision_model.encoder.layers.0.mlp.fc1");
  EXPECT_TRUE(
      model.dense_but_bitsandbytes_for("model.vision_tower.vision_model.encoder.layers.0.mlp.fc2"));
  EXPECT_FALSE(model.dense_but_bitsandbytes_for(
      "model.vision_tower.vision_model.encoder.layers.0.self_attn.out_proj"));
  EXPECT_FALSE(model.dense_but_bitsandbytes_for("model.language_model.layers.0.mlp.fc1"));
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
