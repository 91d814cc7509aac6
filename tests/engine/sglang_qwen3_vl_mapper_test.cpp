// SPDX-License-Identifier: Apache-2.0
// Qwen3-VL's hf_to_sglang_mapper over the Qwen3.5 VLM's quant config until #23471
// (sglang/naming.cpp qwen3_vl_config_mapper, docs/research/sglang-qwen3vl-mapper.md): what it
// makes of an entry, which methods and versions it reaches, and how the rules then judge the
// target's layers (renamed entries) and the MTP draft's (entries as written).
#include "support/sglang_at.hpp"

#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/skip_list_rules.hpp>

#include <gtest/gtest.h>

namespace qpatch::engine {
namespace {

constexpr const char* k_arch = "Qwen3_5ForConditionalGeneration";

EngineVersion sglang_at(const std::string& day, const std::string& method) {
  return test::sglang_at(day, method, k_arch);
}

Layer linear(const std::string& prefix, const std::string& cls = "RowParallelLinear") {
  return {LayerKind::linear, prefix, prefix, cls, {}};
}

// WeightsMapper._map_name (models/utils.py): one substring rule, then the longest prefix rule;
// a "re:" entry never starts with a prefix, and "lm_head" lacks the dot of "lm_head.".
TEST(SglangQwen3VlMapperTest, MapsEntriesAsWeightsMapperDoes) {
  const ConfigMapper& mapper =
      sglang_model_info(k_arch, 0, sglang_at("2026-03-01", "compressed-tensors"))
          .target_config_mapper;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"model.language_model.layers.3.mlp.gate", "language_model.model.layers.3.mlp.gate"},
      {"model.layers.3.mlp.gate", "language_model.model.layers.3.mlp.gate"},
      {"language_model.layers.3.mlp.gate", "language_model.layers.3.mlp.gate"},
      {"mlp.gate", "mlp.gate"},
      {"lm_head", "lm_head"},
      {"lm_head.weight", "language_model.lm_head.weight"},
      {"mtp.fc", "mtp.fc"},
      {"model.visual.blocks.0.attn.qkv", "visual.blocks.0.attn.qkv_proj"},
      {"re:.*mlp\\.gate$", "re:.*mlp\\.gate$"},
      {"re:.*attn.qkv.*", "re:.*attn.qkv_proj.*"},
      {"model.language_model.layers.3.self_attn.qkv_proj",
       "language_model.model.layers.3.self_attn.qkv_proj_proj"}};
  for (const auto& [entry, mapped] : cases) {
    EXPECT_EQ(mapper.map(entry), mapped) << entry;
  }
}

// The methods whose config implements apply_weight_name_mapper, by the day it arrived; none
// from #23471, when the classes set hf_to_sglang_mapper = None.
TEST(SglangQwen3VlMapperTest, ReachesEachMethodFromItsDayUntil23471) {
  const auto methods = [](const std::string& day, const std::string& method) {
    return sglang_model_info(k_arch, 0, sglang_at(day, method)).target_config_mapper.methods;
  };
  EXPECT_EQ(methods("2026-02-10", "compressed-tensors"), "compressed-tensors modelopt");
  EXPECT_EQ(methods("2026-03-01", "quark"), "compressed-tensors modelopt quark");
  EXPECT_EQ(methods("2026-04-05", "fp8"), "compressed-tensors modelopt quark fp8");
  EXPECT_EQ(methods("2026-04-28", "compressed-tensors"), "");
  EXPECT_EQ(methods("2026-04-28", "quark"), "");
}

// compressed-tensors from 2026-02-17 to #23471: the checkpoint spelling becomes
// language_model.model.X, part of no layer's name; a dotted tail the mapper leaves is still a
// substring; the draft's entries are read as written. From #23471 the checkpoint spelling
// reaches the layer.
TEST(SglangQwen3VlMapperTest, CompressedTensorsJudgesTheTargetRenamedAndTheDraftAsWritten) {
  const Layer down = linear("model.language_model.layers.3.mlp.down_proj");
  // The draft's fused qkv_proj, judged by its own name (its class declares no packed mapping):
  // the target's mapper would make the entry naming it ...qkv_proj_proj.
  const Layer draft_qkv = linear("mtp.layers.0.self_attn.qkv_proj", "QKVParallelLinear");
  const auto verdict = [&](const std::string& day, const std::string& entry, const Layer& layer) {
    const EngineVersion version = sglang_at(day, "compressed-tensors");
    quant::CtConfig config;
    config.ignore = {entry};
    config.groups.push_back({"group_0", {"Linear"}, "pack-quantized"});
    const CompressedTensorsRules rules(config, sglang_model_info(k_arch, 0, version), version);
    return verdict_text(rules.decide(layer));
  };
  EXPECT_EQ(verdict("2026-03-01", "model.language_model.layers.3.mlp.down_proj", down),
            "quantized (target_class, group_0)");
  EXPECT_EQ(verdict("2026-03-01", "language_model.layers.3.mlp.down_proj", down),
            "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-03-01", "re:.*layers\\.3\\.mlp\\.down_proj$", down),
            "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-03-01", "mtp.layers.0.self_attn.qkv_proj", draft_qkv),
            "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-04-28", "model.language_model.layers.3.mlp.down_proj", down),
            "dense (ignore_entry)");
}

// Quark from #19425 (2026-02-26): exact names, so no plain spelling survives the mapper; a "re:"
// entry does. Before #19425 QuarkConfig had no apply_weight_name_mapper.
TEST(SglangQwen3VlMapperTest, QuarkReachesTheTargetOnlyByRegexWhileMapped) {
  const Layer down = linear("model.language_model.layers.3.mlp.down_proj");
  const auto verdict = [&](const std::string& day, const std::string& entry) {
    return test::skip_list_verdict({day, SkipListMethod::quark, k_arch}, {entry}, down);
  };
  EXPECT_EQ(verdict("2026-02-20", "model.language_model.layers.3.mlp.down_proj"),
            "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-03-01", "model.language_model.layers.3.mlp.down_proj"),
            "quantized (target_class)");
  EXPECT_EQ(verdict("2026-03-01", "re:^model\\.language_model\\.layers\\.3\\.mlp\\.down_proj$"),
            "dense (ignore_entry)");
}

// explain's trace says which entry the mapper renamed away, and what into.
TEST(SglangQwen3VlMapperTest, TraceNamesTheEntryTheMapperRenamedAway) {
  const Layer down = linear("model.language_model.layers.3.mlp.down_proj");
  const EngineVersion version = sglang_at("2026-03-01", "quark");
  const SkipListRules rules(SkipListMethod::quark,
                            {"lm_head", "model.language_model.layers.3.mlp.down_proj"},
                            sglang_model_info(k_arch, 0, version),
                            false,
                            version);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"exclude", "2 entries checked, none matches model.language_model.layers.3.mlp.down_proj"},
      {"exclude[1]",
       "\"model.language_model.layers.3.mlp.down_proj\" is held as "
       "\"language_model.model.layers.3.mlp.down_proj\" after Qwen3-VL's hf_to_sglang_mapper "
       "(qwen3_vl.py; the Qwen3.5 classes inherit it until #23471)"},
      {"verdict", "quantized (target_class)"}};
  EXPECT_EQ(rules.trace(down, "exclude"), expected);
}

// ModelOpt keeps each mapped name starting "language_model." without it as well: the checkpoint
// spelling's copy model.layers.3.X is a substring of model.language_model.layers.3.X, which
// is_layer_skipped matched until #23467 (2026-04-22), and a run of whole dotted parts of it
// only after (no longer).
TEST(SglangQwen3VlMapperTest, ModelOptReachesTheTargetByItsStrippedCopyUntil23467) {
  const Layer down = linear("model.language_model.layers.3.mlp.down_proj");
  const auto verdict = [&](const std::string& day, const std::string& entry) {
    return test::skip_list_verdict({day, SkipListMethod::modelopt, k_arch}, {entry}, down);
  };
  EXPECT_EQ(verdict("2026-03-01", "model.language_model.layers.3.mlp.down_proj"),
            "dense (ignore_entry)");
  EXPECT_EQ(verdict("2026-04-23", "model.language_model.layers.3.mlp.down_proj"),
            "quantized (target_class)");
  EXPECT_EQ(verdict("2026-04-23", "language_model.layers.3.mlp.down_proj"), "dense (ignore_entry)");
}

// FP8 from #21280 (2026-04-03): from_config holds each entry without "model." too, which the
// mapper leaves: the checkpoint spelling still reaches the layer.
TEST(SglangQwen3VlMapperTest, Fp8CheckpointSpellingSurvivesTheMapper) {
  const Layer down = linear("model.language_model.layers.3.mlp.down_proj");
  EXPECT_EQ(test::skip_list_verdict({"2026-04-05", SkipListMethod::fp8, k_arch},
                                    {"model.language_model.layers.3.mlp.down_proj"},
                                    down),
            "dense (ignore_entry)");
}

} // namespace
} // namespace qpatch::engine
