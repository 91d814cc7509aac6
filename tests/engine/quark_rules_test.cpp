// SPDX-License-Identifier: Apache-2.0
// vLLM's Quark `exclude` (quark/quark.py QuarkConfig.get_quant_method, quark/utils.py
// should_ignore_layer, vLLM 017e9f4): plain entries equal the name, "re:" ones re.match it from
// the start, a fused layer is judged through its shards only (which must agree), experts since
// #46757 also through their children, and lm_head is never quantized.
#include <qpatch/engine/skip_list_rules.hpp>
#include <qpatch/engine/versions.hpp>

#include <gtest/gtest.h>

namespace qpatch::engine {
namespace {

std::string verdict(const SkipListRules& rules,
                    LayerKind kind,
                    const std::string& name,
                    const std::string& cls) {
  const Layer layer{kind, name, name, cls, {}};
  const Decision d = rules.decide(layer);
  switch (d.verdict) {
  case Verdict::quantized:
    return "quantized";
  case Verdict::load_error:
    return d.error;
  case Verdict::dense:
    return d.by == DecidedBy::ignore_entry
               ? "dense by exclude[" + std::to_string(*d.ignore_index) + "]"
               : "dense";
  }
  return "";
}

SkipListRules quark(std::vector<std::string> entries,
                    const std::string& architecture = "Qwen3_5ForCausalLM",
                    const EngineVersion& version = newest_version(Engine::vllm)) {
  return SkipListRules(
      SkipListMethod::quark, std::move(entries), model_info_for(architecture), false, version);
}

TEST(QuarkRules, PlainEntriesEqualAndRegexEntriesMatchFromTheStart) {
  const auto rules = quark({"mtp.fc", "re:mtp\\.layers\\.0\\..*_proj", "re:down_proj"});
  EXPECT_EQ(verdict(rules, LayerKind::linear, "mtp.fc", "ColumnParallelLinear"),
            "dense by exclude[0]");
  EXPECT_EQ(verdict(rules, LayerKind::linear, "mtp.layers.0.mlp.down_proj", "RowParallelLinear"),
            "dense by exclude[1]");
  // re.match anchors at the start only: "down_proj" does not match "model.layers.0.mlp...".
  EXPECT_EQ(verdict(rules, LayerKind::linear, "model.layers.0.mlp.down_proj", "RowParallelLinear"),
            "quantized");
  // A plain entry is not a substring test.
  EXPECT_EQ(verdict(quark({"mtp"}), LayerKind::linear, "mtp.fc", "ColumnParallelLinear"),
            "quantized");
}

TEST(QuarkRules, AFusedLayerIsJudgedThroughItsShardsOnly) {
  const std::string qkv = "model.layers.3.self_attn.qkv_proj";
  // vLLM issue #54547's trap: the fused name itself excludes nothing.
  EXPECT_EQ(verdict(quark({qkv}), LayerKind::linear, qkv, "QKVParallelLinear"), "quantized");
  EXPECT_EQ(verdict(quark({"model.layers.3.self_attn.q_proj",
                           "model.layers.3.self_attn.k_proj",
                           "model.layers.3.self_attn.v_proj"}),
                    LayerKind::linear,
                    qkv,
                    "QKVParallelLinear"),
            "dense by exclude[0]");
  EXPECT_EQ(
      verdict(
          quark({"model.layers.3.self_attn.k_proj"}), LayerKind::linear, qkv, "QKVParallelLinear"),
      "ValueError: Found a different quantization schemes for ['q_proj', 'k_proj', "
      "'v_proj'] in model.layers.3.self_attn.qkv_proj. vLLM requires all to use the same "
      "scheme.");
}

TEST(QuarkRules, LmHeadIsNeverQuantized) {
  EXPECT_EQ(verdict(quark({}), LayerKind::lm_head, "lm_head", "ParallelLMHead"), "dense");
}

TEST(QuarkRules, ExpertsAreExcludedThroughTheirChildrenSince46757) {
  const std::string arch = "DeepseekV3ForCausalLM"; // judged from 2026-02-28 on
  const auto versions = versions_to_judge(Engine::vllm, "quark", arch);
  ASSERT_GE(versions.size(), 2U);
  const std::vector<std::string> children{"model.layers.7.mlp.experts.0.down_proj"};
  const std::string experts = "model.layers.7.mlp.experts";
  EXPECT_EQ(
      verdict(quark(children, arch, versions.front()), LayerKind::experts, experts, "FusedMoE"),
      "quantized");
  EXPECT_EQ(
      verdict(quark(children, arch, versions.back()), LayerKind::experts, experts, "FusedMoE"),
      "dense by exclude[0]");
  // A regex entry is not a child test (`if not target.startswith("re:")`), only re.match.
  EXPECT_EQ(verdict(quark({"re:model\\.layers\\.7\\.mlp\\.experts\\.0"}, arch, versions.back()),
                    LayerKind::experts,
                    experts,
                    "FusedMoE"),
            "quantized");
}

} // namespace
} // namespace qpatch::engine
