// SPDX-License-Identifier: Apache-2.0
// SGLang's names for checkpoint modules, per architecture row of sglang_model_info.cpp: where
// each layer is built (the prefix its quant config is asked about) and how a fused layer is
// judged (through its shards, or by its own name when the class declares no mapping). Module
// names come from real index files in testdata/real-configs where there is one.
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/model_info.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qpatch::engine {
namespace {

namespace fs = std::filesystem;

std::string shards_text(const ModelInfo& model, const std::string& prefix) {
  const auto* shards = model.shards_of_layer(prefix);
  if (shards == nullptr) {
    return "(fused name)";
  }
  std::string out;
  for (const std::string& shard : *shards) {
    out += (out.empty() ? "" : ",") + shard;
  }
  return out;
}

bool in_real_index(const std::string& file, const std::string& tensor) {
  std::ifstream in(fs::path(QPATCH_TESTDATA_DIR) / "real-configs" / file);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str())["weight_map"].contains(tensor);
}

bool in_real_ignore(const std::string& file, const std::string& entry) {
  std::ifstream in(fs::path(QPATCH_TESTDATA_DIR) / "real-configs" / file);
  std::stringstream text;
  text << in.rdbuf();
  const auto ignore = nlohmann::json::parse(text.str())["quantization_config"]["ignore"];
  return std::find(ignore.begin(), ignore.end(), entry) != ignore.end();
}

// SGLang main as of `day`, with the unmerged PRs of `with` (versions.hpp).
EngineVersion sglang_at(const std::string& day, std::vector<std::string_view> with = {}) {
  EngineVersion version;
  version.engine = Engine::sglang;
  version.from = day;
  version.with = std::move(with);
  return version;
}

// Before #18926 (assumed row): the text model at model, the vision tower quantized at visual.
TEST(SglangNaming, Qwen35VlmBefore18926TextVisionAndDraft) {
  const ModelInfo model =
      sglang_model_info("Qwen3_5ForConditionalGeneration", 64, sglang_at("2026-02-09"));
  // Checkpoint names as the real Qwen3.6-27B config lists them in ignore.
  ASSERT_TRUE(in_real_ignore("qwen3.6-27b-w4a16-awq-ct-packed-mtp.config.json",
                             "model.language_model.layers.4.linear_attn.in_proj_b"));
  ASSERT_TRUE(in_real_ignore("qwen3.6-27b-w4a16-awq-ct-packed-mtp.config.json",
                             "model.visual.blocks.0.attn.qkv"));
  // The GDN projections are layers of their own (fused only from #21019), and no class
  // declares packed_modules_mapping: fused layers are judged by their own names.
  EXPECT_EQ(model.layer_prefix("model.language_model.layers.4.linear_attn.in_proj_b"),
            "model.layers.4.linear_attn.in_proj_b");
  EXPECT_EQ(model.fused_for("in_proj_b"), "");
  EXPECT_EQ(model.fused_for("q_proj"), "qkv_proj");
  EXPECT_EQ(shards_text(model, "model.layers.4.self_attn.qkv_proj"), "(fused name)");
  EXPECT_EQ(model.layer_prefix("model.visual.blocks.0.attn.qkv"), "visual.blocks.0.attn.qkv_proj");
  EXPECT_EQ(shards_text(model, "visual.blocks.0.attn.qkv_proj"), "(fused name)");
  EXPECT_EQ(model.layer_prefix("lm_head"), "lm_head");
  EXPECT_EQ(model.to_vllm("model.language_model.layers.0.mlp.gate_proj"),
            "model.language_model.layers.0.mlp.gate_proj"); // hf_to_sglang_mapper = None
  EXPECT_EQ(model.layer_prefix("mtp.layers.0.self_attn.qkv_proj"),
            "mtp.layers.0.self_attn.qkv_proj");
  EXPECT_TRUE(model.is_plain_linear("mtp.fc"));
  // The draft's quant config has no mapping, and #35887's (the text model's) is none here.
  EXPECT_EQ(shards_text(model, "mtp.layers.0.self_attn.qkv_proj"), "(fused name)");
  const ModelInfo later =
      sglang_model_info("Qwen3_5ForConditionalGeneration", 64, sglang_at("2026-02-09", {"#35887"}));
  EXPECT_EQ(shards_text(later, "mtp.layers.0.self_attn.qkv_proj"), "(fused name)");
  EXPECT_EQ(model.row, later.row); // #35887 changes the quant mapping, not the layers
  EXPECT_FALSE(model.assumed_naming);
}

// Since #18926 (a5ea6158): the text model at model.language_model, so its layers carry the
// checkpoint's names; the vision tower built without a quant config.
TEST(SglangNaming, Qwen35VlmSince18926LayersCarryCheckpointNames) {
  const ModelInfo model = sglang_model_info("Qwen3_5ForConditionalGeneration", 64);
  EXPECT_EQ(model.layer_prefix("model.language_model.layers.4.linear_attn.in_proj_ba"),
            "model.language_model.layers.4.linear_attn.in_proj_ba");
  EXPECT_EQ(shards_text(model, "model.language_model.layers.4.linear_attn.in_proj_ba"),
            "in_proj_b,in_proj_a");
  EXPECT_TRUE(model.built_without_quant_config_for("model.visual.blocks.0.attn.qkv"));
  EXPECT_FALSE(model.built_without_quant_config_for("model.language_model.layers.0.mlp.up_proj"));
  EXPECT_EQ(model.layer_prefix("lm_head"), "lm_head");
  EXPECT_TRUE(model.is_plain_linear("mtp.fc"));
  EXPECT_EQ(shards_text(model, "mtp.layers.0.self_attn.qkv_proj"), "(fused name)");
  EXPECT_NE(model.row,
            sglang_model_info("Qwen3_5ForConditionalGeneration", 64, sglang_at("2026-02-16")).row);
}

// Qwen3-VL's own classes: named as the Qwen3.5 VLM's text model and vision tower, but the
// Qwen3-VL mapper renames the config on every version (FP8 from #21280), and no class declares a
// packed mapping.
TEST(SglangNaming, Qwen3VlKeepsItsMapperAndHasNoPackedMapping) {
  const ModelInfo newest = sglang_model_info("Qwen3VLMoeForConditionalGeneration", 2);
  EXPECT_EQ(newest.layer_prefix("model.language_model.layers.0.mlp.experts"),
            "model.language_model.layers.0.mlp.experts");
  EXPECT_EQ(newest.fused_for("q_proj"), "qkv_proj");
  EXPECT_EQ(shards_text(newest, "model.language_model.layers.0.self_attn.qkv_proj"),
            "(fused name)");
  EXPECT_TRUE(newest.built_without_quant_config_for("model.visual.blocks.0.attn.qkv"));
  EXPECT_EQ(newest.target_config_mapper.map("model.language_model.layers.0.mlp.gate"),
            "language_model.model.layers.0.mlp.gate");
  EXPECT_EQ(newest.target_config_mapper.map("language_model.layers.0.mlp.gate"),
            "language_model.layers.0.mlp.gate");
  EXPECT_TRUE(newest.target_config_mapper.maps("fp8"));
  EXPECT_FALSE(newest.router_quant_config);
  EXPECT_EQ(newest.row,
            "qwen3_vl/language_model/qwen3_vl_mapper:compressed-tensors modelopt "
            "quark fp8");
  const ModelInfo first =
      sglang_model_info("Qwen3VLForConditionalGeneration", 2, sglang_at("2026-02-09"));
  EXPECT_EQ(first.layer_prefix("model.language_model.layers.0.mlp.down_proj"),
            "model.layers.0.mlp.down_proj");
  EXPECT_EQ(first.layer_prefix("model.visual.blocks.0.attn.qkv"), "visual.blocks.0.attn.qkv_proj");
  EXPECT_FALSE(first.built_without_quant_config_for("model.visual.blocks.0.attn.qkv"));
  EXPECT_FALSE(first.target_config_mapper.maps("fp8"));
  EXPECT_FALSE(first.assumed_naming);
}

// Qwen2.5-VL (qwen2_5_vl.py @b98d4721): text layers at model.layers.N from either checkpoint
// naming, the vision tower quantizable with qkv built as qkv_proj, the quant config's mapping
// gate_up_proj only, and Qwen3-VL's mapper over the config.
TEST(SglangNaming, Qwen25VlBuildsModelLayersAndMapsEntriesAway) {
  const ModelInfo model = sglang_model_info("Qwen2_5_VLForConditionalGeneration", 28);
  EXPECT_EQ(model.layer_prefix("model.language_model.layers.0.mlp.down_proj"),
            "model.layers.0.mlp.down_proj");
  EXPECT_EQ(model.layer_prefix("model.layers.0.mlp.down_proj"), "model.layers.0.mlp.down_proj");
  EXPECT_EQ(model.layer_prefix("visual.blocks.0.attn.qkv"), "visual.blocks.0.attn.qkv_proj");
  EXPECT_EQ(model.layer_prefix("model.visual.blocks.0.attn.qkv"), "visual.blocks.0.attn.qkv_proj");
  EXPECT_FALSE(model.built_without_quant_config_for("visual.blocks.0.attn.qkv"));
  EXPECT_EQ(shards_text(model, "model.layers.0.self_attn.qkv_proj"), "(fused name)");
  EXPECT_EQ(shards_text(model, "model.layers.0.mlp.gate_up_proj"), "gate_proj,up_proj");
  EXPECT_EQ(model.target_config_mapper.map("model.layers.0.mlp.down_proj"),
            "language_model.model.layers.0.mlp.down_proj");
  EXPECT_EQ(model.target_config_mapper.map("visual.blocks.0.attn.qkv"),
            "visual.blocks.0.attn.qkv_proj");
  EXPECT_FALSE(model.assumed_naming);
  EXPECT_FALSE(sglang_model_info("Qwen3MoeForCausalLM", 48).assumed_naming);
  // Qwen2-VL (qwen2_vl.py @b98d4721): the same names, and no packed mapping at all.
  const ModelInfo qwen2 = sglang_model_info("Qwen2VLForConditionalGeneration", 28);
  EXPECT_EQ(qwen2.layer_prefix("visual.blocks.0.attn.qkv"), "visual.blocks.0.attn.qkv_proj");
  EXPECT_EQ(shards_text(qwen2, "model.layers.0.mlp.gate_up_proj"), "(fused name)");
  EXPECT_EQ(qwen2.target_config_mapper.map("model.layers.0.mlp.down_proj"),
            "language_model.model.layers.0.mlp.down_proj");
}

TEST(SglangNaming, Qwen3NextDraftIsBuiltUnderModel) {
  const ModelInfo model = sglang_model_info("Qwen3NextForCausalLM", 48);
  EXPECT_EQ(model.layer_prefix("mtp.layers.0.self_attn.qkv_proj"),
            "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(model.layer_prefix("mtp.layers.0.mlp.experts"), "model.layers.0.mlp.experts");
  EXPECT_TRUE(model.is_plain_linear("mtp.fc"));
  EXPECT_EQ(model.layer_prefix("model.layers.5.linear_attn.in_proj_qkvz"),
            "model.layers.5.linear_attn.in_proj_qkvz");
  EXPECT_EQ(shards_text(model, "model.layers.5.linear_attn.in_proj_qkvz"), "(fused name)");
  EXPECT_EQ(shards_text(model, "model.layers.3.self_attn.qkv_proj"), "q_proj,k_proj,v_proj");
}

TEST(SglangNaming, DeepSeekAndGlmNextnLayerIsModelDecoder) {
  const ModelInfo deepseek = sglang_model_info("DeepseekV3ForCausalLM", 61);
  EXPECT_EQ(deepseek.layer_prefix("model.layers.61.self_attn.fused_qkv_a_proj_with_mqa"),
            "model.decoder.self_attn.fused_qkv_a_proj_with_mqa");
  EXPECT_EQ(deepseek.layer_prefix("model.layers.61.shared_head.head"), "model.shared_head.head");
  EXPECT_EQ(deepseek.layer_prefix("model.layers.60.mlp.experts"), "model.layers.60.mlp.experts");
  EXPECT_TRUE(deepseek.is_plain_linear("model.layers.61.eh_proj"));
  EXPECT_EQ(deepseek.fused_for("q_a_proj"), "fused_qkv_a_proj_with_mqa");
  EXPECT_EQ(shards_text(deepseek, "model.layers.3.self_attn.fused_qkv_a_proj_with_mqa"),
            "q_a_proj,kv_a_proj_with_mqa");
  EXPECT_EQ(shards_text(deepseek, "model.layers.0.mlp.gate_up_proj"), "(fused name)");
  const ModelInfo glm = sglang_model_info("Glm4MoeForCausalLM", 46);
  EXPECT_EQ(glm.layer_prefix("model.layers.46.self_attn.qkv_proj"),
            "model.decoder.self_attn.qkv_proj");
  EXPECT_EQ(shards_text(glm, "model.layers.1.self_attn.qkv_proj"), "(fused name)");
  EXPECT_TRUE(glm.is_plain_linear("model.layers.46.eh_proj"));
}

TEST(SglangNaming, MimoDraftBlockHasNoPrefix) {
  ASSERT_TRUE(in_real_index("mimo-7b-bf16.model.safetensors.index.json",
                            "model.mtp_layers.0.self_attn.q_proj.weight"));
  const ModelInfo model = sglang_model_info("MiMoForCausalLM", 36);
  EXPECT_EQ(model.layer_prefix("model.mtp_layers.0.self_attn.qkv_proj"), "self_attn.qkv_proj");
  EXPECT_EQ(model.layer_prefix("model.layers.3.mlp.gate_up_proj"),
            "model.layers.3.mlp.gate_up_proj");
  EXPECT_TRUE(model.is_plain_linear("model.mtp_layers.0.input_proj"));
  EXPECT_EQ(shards_text(model, "self_attn.qkv_proj"), "(fused name)");
}

TEST(SglangNaming, LlamaQwenJudgeFusedLayersByTheirNames) {
  for (const char* architecture : {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"}) {
    const ModelInfo model = sglang_model_info(architecture, 32);
    EXPECT_EQ(model.layer_prefix("model.layers.0.self_attn.qkv_proj"),
              "model.layers.0.self_attn.qkv_proj")
        << architecture;
    EXPECT_EQ(shards_text(model, "model.layers.0.self_attn.qkv_proj"), "(fused name)")
        << architecture;
    EXPECT_FALSE(model.assumed_naming) << architecture;
  }
}

TEST(SglangNaming, UnknownArchitectureIsAssumed) {
  const ModelInfo model = sglang_model_info("PhiForCausalLM", 32);
  EXPECT_TRUE(model.assumed_naming);
  EXPECT_EQ(shards_text(model, "model.layers.0.self_attn.qkv_proj"), "q_proj,k_proj,v_proj");
  EXPECT_TRUE(sglang_model_info("Qwen3_5ForCausalLM", 64).assumed_naming); // no entry class
}

// Qwen3.5-MoE (the REAP checkpoint's model.language_model.* per-expert layout): experts are
// judged as one FusedMoE at model.layers.N.mlp.experts.
TEST(SglangNaming, Qwen35MoeExpertsAndLinearAttentionBefore18926) {
  const ModelInfo model =
      sglang_model_info("Qwen3_5MoeForConditionalGeneration", 40, sglang_at("2026-02-09"));
  EXPECT_EQ(model.layer_prefix("model.language_model.layers.0.mlp.experts"),
            "model.layers.0.mlp.experts");
  EXPECT_EQ(model.layer_prefix("model.language_model.layers.0.linear_attn.in_proj_qkv"),
            "model.layers.0.linear_attn.in_proj_qkv");
  EXPECT_EQ(model.fused_for("in_proj_qkv"), ""); // built apart until #21019
}

} // namespace
} // namespace qpatch::engine
