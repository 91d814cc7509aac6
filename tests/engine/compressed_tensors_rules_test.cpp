// SPDX-License-Identifier: Apache-2.0
// The matcher against vLLM's compressed-tensors rules (engines.md §3, §11, §13): a golden table
// of ignore/targets cases, each with the verdict vLLM's own code reaches.
#include <qpatch/engine/compressed_tensors_rules.hpp>

#include <gtest/gtest.h>

namespace qpatch::engine {
namespace {

struct Case {
  std::string name;
  std::vector<std::string> ignore;
  std::vector<std::string> targets;
  LayerKind kind;
  std::string layer; // checkpoint naming
  std::string cls;
  std::string expected;
  std::string architecture = "Qwen3_5ForConditionalGeneration";
};

std::string verdict(const Case& c) {
  quant::CtConfig config;
  config.ignore = c.ignore;
  config.groups.push_back({"group_0", c.targets, "pack-quantized"});
  const ModelInfo model = model_info_for(c.architecture);
  const CompressedTensorsRules judge(config, model);
  Layer layer;
  layer.kind = c.kind;
  layer.name = c.layer;
  layer.prefix = model.to_vllm(c.layer);
  layer.cls = c.cls;
  const Decision d = judge.decide(layer);
  switch (d.verdict) {
  case Verdict::quantized:
    return "quantized by " + d.target + " (" + std::string(to_string(d.by)) + ")";
  case Verdict::load_error:
    return d.error;
  case Verdict::dense:
    return d.by == DecidedBy::ignore_entry
               ? "dense by ignore[" + std::to_string(*d.ignore_index) + "]"
               : "dense (" + std::string(to_string(d.by)) + ")";
  }
  return "";
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class CompressedTensorsRulesTable : public ::testing::TestWithParam<Case> {};

TEST_P(CompressedTensorsRulesTable, Verdict) {
  EXPECT_EQ(verdict(GetParam()), GetParam().expected);
}

const std::vector<std::string> k_linear{"Linear"};
constexpr LayerKind k_lin = LayerKind::linear;

INSTANTIATE_TEST_SUITE_P(
    Engines,
    CompressedTensorsRulesTable,
    ::testing::Values(
        Case{"LinearClassTargetHitsMtpFc",
             {"lm_head"},
             k_linear,
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "quantized by Linear (target_class)"},
        Case{"ExactNameIgnores",
             {"mtp.fc"},
             k_linear,
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "dense by ignore[0]"},
        Case{"ReCaretMtpIgnoresFc",
             {"re:^mtp.*"},
             k_linear,
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "dense by ignore[0]"},
        Case{"ReDotStarMtpIgnoresFused",
             {"re:.*mtp.*"},
             k_linear,
             k_lin,
             "mtp.layers.0.self_attn.qkv_proj",
             "QKVParallelLinear",
             "dense by ignore[0]"},
        Case{"ReDotMtpDotIsDead",
             {"re:.mtp."},
             k_linear,
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "quantized by Linear (target_class)"},
        Case{"ReMtpEscapedDotIgnores",
             {"re:mtp\\..*"},
             k_linear,
             k_lin,
             "mtp.layers.0.mlp.gate_up_proj",
             "MergedColumnParallelLinear",
             "dense by ignore[0]"},
        Case{"PlainMtpIsNotASubstringMatch",
             {"mtp"},
             k_linear,
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "quantized by Linear (target_class)"},
        Case{"GlobIsNotAGlob",
             {"mtp*"},
             k_linear,
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "quantized by Linear (target_class)"},
        Case{"ClassNameInIgnoreIsNeverConsulted",
             {"Linear"},
             k_linear,
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "quantized by Linear (target_class)"},
        Case{"FusedShardsAllIgnored",
             {"mtp.layers.0.self_attn.q_proj",
              "mtp.layers.0.self_attn.k_proj",
              "mtp.layers.0.self_attn.v_proj"},
             k_linear,
             k_lin,
             "mtp.layers.0.self_attn.qkv_proj",
             "QKVParallelLinear",
             "dense by ignore[0]"},
        Case{"FusedShardsDisagree",
             {"mtp.layers.0.self_attn.k_proj"},
             k_linear,
             k_lin,
             "mtp.layers.0.self_attn.qkv_proj",
             "QKVParallelLinear",
             "ValueError: Found a different quantization schemes for ['q_proj', 'k_proj', "
             "'v_proj'] in mtp.layers.0.self_attn.qkv_proj. vLLM requires all to use the same "
             "scheme."},
        Case{"FusedNameListedVerbatimIsHonoured",
             {"mtp.layers.0.self_attn.qkv_proj"},
             k_linear,
             k_lin,
             "mtp.layers.0.self_attn.qkv_proj",
             "QKVParallelLinear",
             "dense by ignore[0]"},
        Case{"FusedTargetByEveryShard",
             {},
             {"re:.*\\.gate_proj$", "re:.*\\.up_proj$"},
             k_lin,
             "mtp.layers.0.mlp.gate_up_proj",
             "MergedColumnParallelLinear",
             "quantized by re:.*\\.gate_proj$ (target_fused)"},
        Case{"RegexTargetMatchesTheFusedNameItself",
             {},
             {"re:.*up_proj$"},
             k_lin,
             "mtp.layers.0.mlp.gate_up_proj",
             "MergedColumnParallelLinear",
             "quantized by re:.*up_proj$ (target_name)"},
        Case{"NameTargetBeforeClass",
             {},
             {"Linear", "re:.*mtp\\..*proj$"},
             k_lin,
             "mtp.layers.0.self_attn.o_proj",
             "RowParallelLinear",
             "quantized by re:.*mtp\\..*proj$ (target_name)"},
        Case{"NoTargetIsDense",
             {},
             {"re:.*mlp.*"},
             k_lin,
             "mtp.layers.0.self_attn.o_proj",
             "RowParallelLinear",
             "dense (no_target)"},
        Case{"ClassTargetIsCaseInsensitiveSubstring",
             {},
             {"linear"},
             k_lin,
             "mtp.fc",
             "ColumnParallelLinear",
             "quantized by linear (target_class)"},
        Case{"LmHeadIsNotALinearByClass",
             {},
             k_linear,
             LayerKind::lm_head,
             "lm_head",
             "ParallelLMHead",
             "dense (no_target)"},
        Case{"LmHeadByName",
             {},
             {"Linear", "lm_head"},
             LayerKind::lm_head,
             "lm_head",
             "ParallelLMHead",
             "quantized by lm_head (target_name)",
             "Qwen3_5ForCausalLM"},
        Case{"DottedEntriesAreRenamedLikeLayers",
             {"model.language_model.layers.0.self_attn.o_proj"},
             k_linear,
             k_lin,
             "model.language_model.layers.0.self_attn.o_proj",
             "RowParallelLinear",
             "dense by ignore[0]"},
        Case{"RegexesAreNotRenamed",
             {"re:model\\.language_model\\.layers\\..*"},
             k_linear,
             k_lin,
             "model.language_model.layers.0.self_attn.o_proj",
             "RowParallelLinear",
             "quantized by Linear (target_class)"},
        Case{"ExpertsJudgedThroughExpertZero",
             {"mtp.layers.0.mlp.experts.0.gate_proj",
              "mtp.layers.0.mlp.experts.0.up_proj",
              "mtp.layers.0.mlp.experts.0.down_proj"},
             k_linear,
             LayerKind::experts,
             "mtp.layers.0.mlp.experts",
             "RoutedExperts",
             "dense by ignore[0]"},
        Case{"ExpertsGetLinearCopiedToRoutedExperts",
             {},
             k_linear,
             LayerKind::experts,
             "mtp.layers.0.mlp.experts",
             "RoutedExperts",
             "quantized by RoutedExperts (target_class)"},
        Case{"ExpertsLowercaseLinearIsNotCopied",
             {},
             {"linear"},
             LayerKind::experts,
             "mtp.layers.0.mlp.experts",
             "RoutedExperts",
             "dense (no_target)"},
        Case{"ExpertProjectionsDisagree",
             {"mtp.layers.0.mlp.experts.0.down_proj"},
             k_linear,
             LayerKind::experts,
             "mtp.layers.0.mlp.experts",
             "RoutedExperts",
             "ValueError: All MoE projections need to have same quantization scheme but found "
             "multiple"},
        Case{"BuiltDenseWhateverTheConfig",
             {},
             k_linear,
             LayerKind::built_dense,
             "model.language_model.layers.0.linear_attn.conv1d",
             "ColumnParallelLinear",
             "dense (built_dense)"},
        // _find_first_match(module.__class__.__name__, targets, True): a re: target is
        // re.match-ed against the class name too (compressed_tensors/utils.py, 017e9f4).
        Case{"RegexTargetMatchesTheClassName",
             {},
             {"re:.*ParallelLinear"},
             k_lin,
             "model.language_model.layers.0.mlp.down_proj",
             "RowParallelLinear",
             "quantized by re:.*ParallelLinear (target_class)"},
        Case{"RegexTargetAnchoredAtTheStartOfTheClassName",
             {},
             {"re:ParallelLinear"},
             k_lin,
             "model.language_model.layers.0.mlp.down_proj",
             "RowParallelLinear",
             "dense (no_target)"}),
    [](const auto& case_info) { return case_info.param.name; });

// SGLang's dialect (sglang/dialect.cpp): find_matched_target raises for a Linear no target
// matches, and tries the class step before the fused shards; vLLM main does neither.
TEST(CompressedTensorsDialectTest, SglangRaisesForAnUntargetedLinearAndTriesClassBeforeFused) {
  const ModelInfo vllm_model = model_info_for("Qwen3_5ForConditionalGeneration");
  const ModelInfo sglang_model = sglang_model_info("Qwen3_5ForConditionalGeneration", 0);
  Layer q_proj{LayerKind::linear,
               "model.language_model.layers.3.self_attn.q_proj",
               "model.language_model.layers.3.self_attn.q_proj",
               "ColumnParallelLinear",
               {}};
  quant::CtConfig untargeted;
  untargeted.groups.push_back({"group_0", {"re:.*mlp.*"}, "pack-quantized"});
  const auto decide = [&](const quant::CtConfig& config, Engine engine, const Layer& layer) {
    const ModelInfo& model = engine == Engine::sglang ? sglang_model : vllm_model;
    return CompressedTensorsRules(config, model, newest_version(engine)).decide(layer);
  };
  const Decision sglang = decide(untargeted, Engine::sglang, q_proj);
  EXPECT_EQ(sglang.verdict, Verdict::load_error);
  EXPECT_EQ(sglang.by, DecidedBy::untargeted);
  EXPECT_EQ(sglang.error,
            "ValueError: Unable to find matching target for "
            "model.language_model.layers.3.self_attn.q_proj in the compressed-tensors config.");
  q_proj.prefix = vllm_model.to_vllm(q_proj.name);
  EXPECT_EQ(decide(untargeted, Engine::vllm, q_proj).verdict, Verdict::dense);

  // Shard-name targets in one group, "Linear" in another: the fused layer takes the fused
  // group in vLLM (name, fused, class) and the class group in SGLang (name, class, fused).
  quant::CtConfig two_groups;
  two_groups.groups.push_back(
      {"shards", {"re:.*\\.q_proj$", "re:.*\\.k_proj$", "re:.*\\.v_proj$"}, "pack-quantized"});
  two_groups.groups.push_back({"linear", {"Linear"}, "pack-quantized"});
  Layer qkv{LayerKind::linear,
            "model.language_model.layers.3.self_attn.qkv_proj",
            "model.language_model.layers.3.self_attn.qkv_proj",
            "QKVParallelLinear",
            {}};
  EXPECT_EQ(decide(two_groups, Engine::sglang, qkv).group, "linear");
  qkv.prefix = vllm_model.to_vllm(qkv.name);
  EXPECT_EQ(decide(two_groups, Engine::vllm, qkv).group, "shards");
}

// SGLang as of a day (its version in force then).
EngineVersion sglang_on(const std::string& day) {
  VersionPins pins;
  pins.of(Engine::sglang) = day;
  return versions_to_judge(
             Engine::sglang, "compressed-tensors", "Qwen3_5ForConditionalGeneration", pins)
      .front();
}

// SGLang's substring ignore (until #32736) over a long list (over 4,096 entries) is looked up by
// the name's substrings instead of scanned: it must pick the same first entry as the scan does.
// Fillers that match nothing are spread between the entries of a short list; the long list's
// verdict is then the short list's, at the position its entry moved to.
TEST(CompressedTensorsDialectTest, SglangLongIgnoreListLookupPicksWhatTheScanPicks) {
  const ModelInfo model = sglang_model_info("Qwen3_5ForConditionalGeneration", 0);
  const EngineVersion substring_era = sglang_on("2026-07-01");
  ASSERT_TRUE(dialect_of(substring_era, model).compressed_tensors.substring_ignore);
  const std::vector<std::vector<std::string>> short_lists{
      {"zzz", "re:.*layers\\.3\\.mlp.*", "Self_Attn.Q_PROJ", "layers.3", "re:.*q_proj$", ""},
      {"re:.*q_proj$", "layers.3", "Self_Attn.Q_PROJ", "re:.*layers\\.3\\.mlp.*"},
      {"MLP.DOWN", "re:.*o_proj", "language_model.layers.4."},
      {"nothing.matches", "re:^x"}};
  const std::vector<std::string> names{"model.language_model.layers.3.self_attn.q_proj",
                                       "model.language_model.layers.3.self_attn.o_proj",
                                       "model.language_model.layers.3.mlp.down_proj",
                                       "model.language_model.layers.4.mlp.up_proj",
                                       "model.language_model.layers.44.self_attn.q_proj"};
  quant::CtConfig config;
  config.groups.push_back({"group_0", {"Linear"}, "pack-quantized"});
  for (const auto& short_list : short_lists) {
    config.ignore = short_list;
    const CompressedTensorsRules scan(config, model, substring_era);
    std::vector<size_t> moved_to;
    config.ignore.clear();
    for (size_t i = 0; i < short_list.size(); ++i) {
      for (size_t filler = 0; filler < 1100; ++filler) {
        config.ignore.push_back("visual.blocks." + std::to_string(i * 1100 + filler) + ".never");
      }
      moved_to.push_back(config.ignore.size());
      config.ignore.push_back(short_list[i]);
    }
    const CompressedTensorsRules lookup(config, model, substring_era);
    for (const std::string& name : names) {
      const Layer layer{LayerKind::linear, name, name, "RowParallelLinear", {}};
      const Decision expected = scan.decide(layer);
      const Decision got = lookup.decide(layer);
      ASSERT_EQ(got.verdict, expected.verdict) << name;
      ASSERT_EQ(got.ignore_index.has_value(), expected.ignore_index.has_value()) << name;
      if (expected.ignore_index) {
        EXPECT_EQ(*got.ignore_index, moved_to[*expected.ignore_index]) << name;
      }
    }
  }
}

// transformers through the compressed-tensors library (match.py _match_class, ac8e2ba8): a class
// matches only by equality with a class name, never by substring or regex, and no fused name
// reaches a shard (no fused mapping is given).
TEST(CompressedTensorsDialectTest, TransformersMatchesClassesByEqualityAndNoFusedNames) {
  const ModelInfo model =
      naming_of(newest_version(Engine::transformers), "Qwen3_5ForConditionalGeneration", 0);
  const Layer q_proj{LayerKind::linear,
                     "model.language_model.layers.3.self_attn.q_proj",
                     "model.language_model.layers.3.self_attn.q_proj",
                     "Linear",
                     {}};
  const auto verdict = [&](std::vector<std::string> targets, std::vector<std::string> ignore) {
    quant::CtConfig config;
    config.ignore = std::move(ignore);
    config.groups.push_back({"group_0", std::move(targets), "pack-quantized"});
    return verdict_text(
        CompressedTensorsRules(config, model, newest_version(Engine::transformers)).decide(q_proj));
  };
  EXPECT_EQ(verdict({"Linear"}, {}), "quantized (target_class, group_0)");
  EXPECT_EQ(verdict({"linear"}, {}), "dense (no_target)");
  EXPECT_EQ(verdict({"re:.*Linear"}, {}), "dense (no_target)");
  EXPECT_EQ(verdict({"re:.*qkv_proj$"}, {}), "dense (no_target)");
  EXPECT_EQ(verdict({"Linear"}, {"model.language_model.layers.3.self_attn.qkv_proj"}),
            "quantized (target_class, group_0)");
  EXPECT_EQ(verdict({"Linear"}, {"Linear"}), "dense (ignore_entry)");
}

// From #32736 (2026-07-29) SGLang reads a plain ignore entry as the layer name or a dotted
// suffix of it, case-sensitive (compressed_tensors/utils.py check_equal_or_regex_match at
// f69af7b7a): a parent module's entry no longer reaches its children, nor a part of a name.
TEST(CompressedTensorsDialectTest, SglangReadsPlainEntriesAsDottedSuffixesFrom32736) {
  const ModelInfo model = sglang_model_info("Qwen3_5ForConditionalGeneration", 0);
  quant::CtConfig config;
  config.groups.push_back({"group_0", {"Linear"}, "pack-quantized"});
  const std::string name = "model.language_model.layers.3.mlp.down_proj";
  const Layer layer{LayerKind::linear, name, name, "RowParallelLinear", {}};
  const auto verdict = [&](const std::string& entry, const EngineVersion& version) {
    config.ignore = {"zzz", entry};
    return verdict_text(CompressedTensorsRules(config, model, version).decide(layer));
  };
  const EngineVersion before = sglang_on("2026-07-28");
  const EngineVersion from = sglang_on("2026-07-29");
  for (const std::string& entry : std::vector<std::string>{"mlp.down_proj", "down_proj", name}) {
    EXPECT_EQ(verdict(entry, from), "dense (ignore_entry)") << entry;
  }
  for (const std::string entry :
       {"model.language_model.layers.3.mlp", "own_proj", "MLP.DOWN_PROJ", "layers.3.mlp.down"}) {
    EXPECT_EQ(verdict(entry, before), "dense (ignore_entry)") << entry;
    EXPECT_EQ(verdict(entry, from), "quantized (target_class, group_0)") << entry;
  }
}

} // namespace
} // namespace qpatch::engine
