// SPDX-License-Identifier: Apache-2.0
// vLLM's Quark `exclude` (quark/quark.py QuarkConfig.get_quant_method, quark/utils.py
// should_ignore_layer, vLLM 017e9f4): plain entries equal the name, "re:" ones re.match it from
// the start, a fused layer is judged through its shards only (which must agree), experts since
// #46757 also through their children, and lm_head is never quantized. SGLang's port
// (quark/utils.py @382abd60) and transformers' (amd-quark's fnmatch) differ where tested below.
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

SkipListRules sglang_quark(std::vector<std::string> entries, const EngineVersion& version) {
  const std::string arch = "Qwen3_5ForConditionalGeneration";
  return SkipListRules(SkipListMethod::quark,
                       std::move(entries),
                       sglang_model_info(arch, 2, version),
                       false,
                       version);
}

// SGLang's should_ignore_layer has no check_children (vLLM #46757's): an entry naming one expert
// leaves the FusedMoE quantized, in every SGLang version.
TEST(QuarkRules, SglangExcludesExpertsByTheirOwnNameOnly) {
  const EngineVersion newest = newest_version(Engine::sglang);
  const std::string experts = "model.language_model.layers.7.mlp.experts";
  EXPECT_EQ(verdict(sglang_quark({experts + ".0.down_proj"}, newest),
                    LayerKind::experts,
                    experts,
                    "FusedMoE"),
            "quantized");
  EXPECT_EQ(verdict(sglang_quark({experts}, newest), LayerKind::experts, experts, "FusedMoE"),
            "dense by exclude[0]");
}

// sgl-project/sglang#23146 (qwen3_5_mtp.py @008b79d _mtp_quant_config): one exclude entry
// starting with "mtp." builds the whole Qwen3.5 draft dense, whatever the entry names; before
// it, each draft layer is judged by the list.
TEST(QuarkRules, SglangBuildsTheWholeDraftDenseOnceAnEntryStartsWithMtp) {
  const auto versions =
      versions_to_judge(Engine::sglang, "quark", "Qwen3_5ForConditionalGeneration");
  ASSERT_GE(versions.size(), 2U);
  const std::vector<std::string> one{"mtp.layers.0.mlp.down_proj"};
  const std::string up = "mtp.layers.0.mlp.up_proj";
  const auto find = [&](const char* id, bool with) {
    for (const EngineVersion& version : versions) {
      if (version.has(id) == with) {
        return version;
      }
    }
    ADD_FAILURE() << "no version " << (with ? "with " : "without ") << id;
    return versions.front();
  };
  EXPECT_EQ(
      verdict(sglang_quark(one, find("#23146", false)), LayerKind::linear, up, "RowParallelLinear"),
      "quantized");
  EXPECT_EQ(
      verdict(sglang_quark(one, find("#23146", true)), LayerKind::linear, up, "RowParallelLinear"),
      "dense");
  // Only the draft: a main layer is still judged by the list.
  const std::string main_up = "model.language_model.layers.0.mlp.up_proj";
  EXPECT_EQ(
      verdict(
          sglang_quark(one, find("#23146", true)), LayerKind::linear, main_up, "RowParallelLinear"),
      "quantized");
}

SkipListRules transformers_quark(std::vector<std::string> entries) {
  const EngineVersion version = newest_version(Engine::transformers);
  return SkipListRules(SkipListMethod::quark,
                       std::move(entries),
                       naming_of(version, "Qwen3_5ForConditionalGeneration", 2),
                       false,
                       version);
}

// transformers through amd-quark's get_layer_quant_config: fnmatch.fnmatch(module name, entry).
// "*" crosses dots, the glob must cover the whole name, "re:" is read literally, a parent does
// not cover its children, and lm_head is an nn.Linear like any other.
TEST(QuarkRules, TransformersMatchesExcludeAsGlobsOverTheWholeName) {
  const std::string down = "model.language_model.layers.0.mlp.down_proj";
  EXPECT_EQ(verdict(transformers_quark({"*.mlp.*"}), LayerKind::linear, down, "Linear"),
            "dense by exclude[0]");
  EXPECT_EQ(verdict(transformers_quark({"model.language_model.layers.0.mlp"}),
                    LayerKind::linear,
                    down,
                    "Linear"),
            "quantized");
  EXPECT_EQ(verdict(transformers_quark({"re:.*down_proj", "*layers.[0-3].mlp.down_proj"}),
                    LayerKind::linear,
                    down,
                    "Linear"),
            "dense by exclude[1]");
  EXPECT_EQ(verdict(transformers_quark({"mlp.down_proj"}), LayerKind::linear, down, "Linear"),
            "quantized");
  EXPECT_EQ(verdict(transformers_quark({}), LayerKind::lm_head, "lm_head", "Linear"), "quantized");
  EXPECT_EQ(verdict(transformers_quark({"lm_hea?"}), LayerKind::lm_head, "lm_head", "Linear"),
            "dense by exclude[0]");
}

} // namespace
} // namespace qpatch::engine
