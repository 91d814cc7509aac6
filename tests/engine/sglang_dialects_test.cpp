// SPDX-License-Identifier: Apache-2.0
// SGLang's dialects of the GPTQ and AWQ rules, against vLLM's, on the layers of a Qwen3.5 MoE
// draft: where the two engines build the same MTP layer differently from the same config.
#include "support/sglang_at.hpp"

#include <qpatch/engine/gptq_rules.hpp>
#include <qpatch/engine/skip_list_rules.hpp>

#include <gtest/gtest.h>

namespace qpatch::engine {
namespace {

class SglangDialectTest : public ::testing::Test {
protected:
  const ModelInfo model = model_info_for("Qwen3_5MoeForConditionalGeneration");
  const Layer fc{LayerKind::linear, "mtp.fc", "mtp.fc", "ColumnParallelLinear", {}};
  // SGLang's naming row builds the draft's fc as a plain nn.Linear (build_layers: built_dense).
  const Layer sglang_fc{LayerKind::built_dense, "mtp.fc", "mtp.fc", "Linear", {}};
  const Layer qkv{LayerKind::linear,
                  "mtp.layers.0.self_attn.qkv_proj",
                  "mtp.layers.0.self_attn.qkv_proj",
                  "QKVParallelLinear",
                  {}};
  const Layer down{LayerKind::linear,
                   "mtp.layers.0.mlp.down_proj",
                   "mtp.layers.0.mlp.down_proj",
                   "RowParallelLinear",
                   {}};
  const Layer experts{
      LayerKind::experts, "mtp.layers.0.mlp.experts", "mtp.layers.0.mlp.experts", "FusedMoE", {}};

  std::string gptq(Engine engine, std::vector<quant::GptqRule> rules, const Layer& layer) const {
    quant::GptqConfig config;
    config.dynamic = std::move(rules);
    config.has_dynamic = true;
    config.modules_in_block = std::vector<std::string>{"self_attn.q_proj"};
    config.in_hf_config = true; // config.json's quantization_config, where vLLM's Qwen3.5 MTP
                                // special case looks
    return verdict_text(GptqRules(config, model, {}, newest_version(engine)).decide(layer));
  }
  std::string awq(Engine engine, std::vector<std::string> entries, const Layer& layer) const {
    return verdict_text(
        SkipListRules(SkipListMethod::awq, std::move(entries), model, false, newest_version(engine))
            .decide(layer));
  }
};

// SGLang's GPTQ reads `dynamic` only: a Linear no negative rule matches is quantized whatever
// modules_in_block_to_quantize says, GPTQ Marlin quantizes every FusedMoE layer, and its Qwen3.5
// draft builds mtp.fc plain. vLLM reads the list, and `dynamic` for experts.
TEST_F(SglangDialectTest, GptqReadsDynamicOnlyAndAlwaysQuantizesExperts) {
  const quant::GptqRule exclude{"-:^mtp\\.", true, "^mtp\\."};
  EXPECT_EQ(gptq(Engine::vllm, {}, down), "dense (no_target)"); // not in the list
  EXPECT_EQ(gptq(Engine::sglang, {}, down), "quantized (target_name)");
  EXPECT_EQ(gptq(Engine::sglang, {exclude}, down), "dense (ignore_entry)");
  // vLLM's Qwen3.5 special case: a "-:" key holding "mtp" builds the MTP decoder layers dense.
  EXPECT_EQ(gptq(Engine::vllm, {exclude}, experts), "dense (built_dense)");
  EXPECT_EQ(gptq(Engine::sglang, {exclude}, experts), "quantized (built_quantized)");
  EXPECT_TRUE(sglang_model_info("Qwen3_5MoeForConditionalGeneration", 0).is_plain_linear("mtp.fc"));
  EXPECT_EQ(gptq(Engine::sglang, {}, sglang_fc), "dense (built_dense)");
}

// SGLang's AWQ tests a layer under the one name it builds it as (the fused name, never its shards;
// the experts name, never one expert's) and builds Qwen3.5's mtp.fc plain. vLLM's AWQ expands
// fused layers to shards.
TEST_F(SglangDialectTest, AwqTestsFusedAndExpertsLayersByTheirOwnNames) {
  const std::vector<std::string> shards{"mtp.layers.0.self_attn.q_proj",
                                        "mtp.layers.0.self_attn.k_proj",
                                        "mtp.layers.0.self_attn.v_proj"};
  EXPECT_EQ(awq(Engine::vllm, shards, qkv), "dense (ignore_entry)");
  EXPECT_EQ(awq(Engine::sglang, shards, qkv), "quantized (target_class)");
  EXPECT_EQ(awq(Engine::sglang, {"mtp.layers.0.self_attn.qkv_proj"}, qkv), "dense (ignore_entry)");
  EXPECT_EQ(awq(Engine::vllm, {"mtp"}, experts), "dense (ignore_entry)");
  EXPECT_EQ(awq(Engine::sglang, {"mtp"}, experts), "dense (ignore_entry)");
  EXPECT_EQ(awq(Engine::sglang, {"mtp.layers.0.mlp.experts.0.gate_proj"}, experts),
            "quantized (target_class)");
  EXPECT_EQ(awq(Engine::vllm, {}, fc), "quantized (target_class)");
  EXPECT_EQ(awq(Engine::sglang, {}, sglang_fc), "dense (built_dense)");
}

// override_config (vLLM utils/gptq_utils.py 017e9f4; SGLang quantization/utils/utils.py
// @c5bef61): a positive rule that overrides bits or sym to a pair GPTQ Marlin's TYPE_MAP lacks
// makes the engine raise while it builds the layer; plain GPTQ (SGLang, a config Marlin cannot
// serve) takes 2, 3, 4 or 8 bits.
TEST_F(SglangDialectTest, DynamicOverrideMarlinCannotServeRaises) {
  const auto decide =
      [&](Engine engine, std::optional<int64_t> bits, quant::GptqRule rule, const Layer& layer) {
        quant::GptqConfig config;
        config.bits = bits;
        config.group_size = 128;
        config.sym = true;
        config.dynamic = {std::move(rule)};
        config.has_dynamic = true;
        config.modules_in_block = std::vector<std::string>{"mlp.down_proj"};
        const Decision decision =
            GptqRules(config, model, {}, newest_version(engine)).decide(layer);
        return decision.verdict == Verdict::load_error ? decision.error : verdict_text(decision);
      };
  quant::GptqRule three_bits{"+:.*down_proj", false, ".*down_proj"};
  three_bits.bits = 3;
  EXPECT_EQ(decide(Engine::vllm, 4, three_bits, down),
            "ValueError: Unsupported quantization config: bits=3, sym=True");
  EXPECT_EQ(decide(Engine::sglang, 4, three_bits, down),
            "ValueError: Unsupported quantization config: bits=3, sym=True");
  quant::GptqRule asymmetric{"+:.*", false, ".*"};
  asymmetric.sym = false;
  EXPECT_EQ(decide(Engine::sglang, 4, asymmetric, down),
            "ValueError: Unsupported quantization config: bits=4, sym=False");
  // A 3-bit config is not Marlin's: SGLang serves it with plain GPTQ, which takes 8 bits too.
  quant::GptqRule eight_bits{"+:.*down_proj", false, ".*down_proj"};
  eight_bits.bits = 8;
  EXPECT_EQ(decide(Engine::sglang, 3, eight_bits, down), "quantized (target_name)");
  quant::GptqRule five_bits{"+:.*down_proj", false, ".*down_proj"};
  five_bits.bits = 5;
  EXPECT_EQ(decide(Engine::sglang, 3, five_bits, down),
            "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported for GPTQ, "
            "but got 5 bits.");
  // A rule that overrides nothing the kernel checks leaves the layer as it was.
  const quant::GptqRule plain{"+:.*down_proj", false, ".*down_proj"};
  EXPECT_EQ(decide(Engine::vllm, 4, plain, down), "quantized (target_name)");
}

// SGLang's FP8 is_layer_skipped as main had it in 2026 (docs/research/sglang-fp8-skip.md): a
// substring, with no fused mapping before #18742 (the fused name is tested) and the shards after
// (gate_proj hit, up_proj not: ValueError); from #23467 whole dotted parts; from #26287 a
// trailing dot is stripped.
TEST(SglangFp8SkipTest, IsLayerSkippedAsMainHadItIn2026) {
  const ModelInfo model = sglang_model_info("Qwen3_5ForConditionalGeneration", 0);
  const Layer gate_up{LayerKind::linear,
                      "model.language_model.layers.0.mlp.gate_up_proj",
                      "model.language_model.layers.0.mlp.gate_up_proj",
                      "MergedColumnParallelLinear",
                      {}};
  const auto verdict = [&](const std::string& day, const std::string& entry) {
    return test::skip_list_verdict(
        {day, SkipListMethod::fp8, model.architecture}, {entry}, gate_up);
  };
  EXPECT_EQ(verdict("2026-02-20", "mlp.gate"), "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-05-01", "mlp.gate"), "quantized (target_class)");
  EXPECT_EQ(verdict("2026-05-01", "model.language_model.layers.0."), "quantized (target_class)");
  EXPECT_EQ(verdict("2026-06-01", "model.language_model.layers.0."), "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-06-01", "language_model.layers.0.mlp"), "dense (ignore_entry)");
}

// Before #18546 (33c33a7d, 2026-02-21) each ModelOpt class had its own is_layer_excluded:
// ModelOptFp8Config tested substrings (a "*" is then a literal), ModelOptFp4Config full-matched
// the whole name; and no FusedMoE was excluded. From it one glob rule for both, experts included.
TEST(SglangModelOptTest, ExclusionBefore18546WasPerClassAndSparedExperts) {
  const std::string arch = "Qwen3_5MoeForConditionalGeneration";
  const std::string layer3 = "model.language_model.layers.3.mlp.";
  const Layer down{LayerKind::linear,
                   layer3 + "shared_expert.down_proj",
                   layer3 + "shared_expert.down_proj",
                   "RowParallelLinear",
                   {}};
  const Layer experts{LayerKind::experts, layer3 + "experts", layer3 + "experts", "FusedMoE", {}};
  const auto verdict = [&](const std::string& day,
                           bool nvfp4,
                           const std::string& entry,
                           const Layer& layer) {
    return test::skip_list_verdict({day, SkipListMethod::modelopt, arch, nvfp4}, {entry}, layer);
  };
  EXPECT_EQ(verdict("2026-02-18", false, "*down_proj", down), "quantized (target_class)");
  EXPECT_EQ(verdict("2026-02-18", true, "*down_proj", down), "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-02-21", false, "*down_proj", down), "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-02-18", false, "*.mlp.experts", experts), "quantized (target_class)");
  EXPECT_EQ(verdict("2026-02-21", false, "*.mlp.experts", experts), "dense (ignore_entry)");
}

} // namespace
} // namespace qpatch::engine
