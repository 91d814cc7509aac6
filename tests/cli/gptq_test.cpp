// SPDX-License-Identifier: Apache-2.0
// GPTQ `dynamic` under vLLM's rules: the official Qwen3.5 config, the dead "-:.mtp." trap with
// short module names, and the reverse trap on a partly packed Qwen3.5 head.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;
namespace fs = std::filesystem;

using test::gptq_config;

// The draft's layers as vLLM (mtp.layers.0) and SGLang (model.layers.0, qwen3_next_mtp.py)
// name them for Qwen3-Next, excluded for both.
const std::string k_both_engines_keys =
    R"({"-:^(mtp|model)\\.layers\\.0\\.self_attn\\.qkv_proj$":{},)"
    R"("-:^(mtp|model)\\.layers\\.0\\.self_attn\\.o_proj$":{},)"
    R"("-:^(mtp|model)\\.layers\\.0\\.mlp\\.gate_up_proj$":{},)"
    R"("-:^(mtp|model)\\.layers\\.0\\.mlp\\.down_proj$":{})";
const std::string k_both_engines_dynamic = k_both_engines_keys + R"(,"-:.mtp.":{}})";

// Main's rules: engine_versions_test.cpp tests what differs between versions.
// Qwen3-Next's BF16 MTP head quantized by both engines (no negative rule excludes it), the
// patch that excludes it under both engines' names, and the verdict: the tail of several reports.
constexpr const char* k_unexcluded_qwen3_next_head =
    "  fixable     mtp.layers.0: 7 modules stored BF16 but quantized by "
    "modules_in_block_to_quantize; no negative dynamic rule excludes them [vllm]\n  breaks      "
    "vLLM: start-up fails once speculative decoding loads the MTP head: \"ValueError: There is "
    "no module or parameter named 'layers.0.self_attn.q_proj.weight' in ...\"\n  fixable     "
    "mtp.layers.0: 7 modules stored BF16 but quantized by (SGLang's GPTQ default: every Linear); "
    "no negative dynamic rule excludes them [sglang]\n  breaks      SGLang: loads, and drops the "
    "stored weights silently\n  would patch config.json +4: "
    "-:^(mtp|model)\\.layers\\.0\\.self_attn\\.qkv_proj$, "
    "-:^(mtp|model)\\.layers\\.0\\.self_attn\\.o_proj$, "
    "-:^(mtp|model)\\.layers\\.0\\.mlp\\.gate_up_proj$, "
    "-:^(mtp|model)\\.layers\\.0\\.mlp\\.down_proj$\n  status      needs-patch\n  apply       "
    "qpatch DIR\n";

class GptqTest : public test::CheckpointCliTest {
protected:
  // vLLM and SGLang: transformers reads GPTQ through optimum (gptq_transformers_test.cpp).
  GptqTest() { m_engine = "vllm@main,sglang@main"; }
};

TEST_F(GptqTest, OfficialQwenRulesAgainstPackedAttention) {
  // The official rules keep attention BF16 ("-:.*attn.*"); this disk packs it, so the rule
  // must go, while "-:.*mtp.*" keeps the dense head dense and stays.
  const std::string config =
      gptq_config("Qwen3_5ForCausalLM",
                  "    \"dynamic\": {\n      \"lm_head\": {},\n      \"-:.*attn.*\": {},\n"
                  "      \"-:.*mtp.*\": {}\n    },\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1) << out; // attention is packed on disk but "-:.*attn.*" makes it dense
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17) and SGLang\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names "
      "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
      "  fixable     model.language_model.layers.0.self_attn: 4 modules stored gptq but made "
      "dense by dynamic rule \"-:.*attn.*\" (dynamic[1])\n"
      "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
      "named 'model.language_model.layers.0.self_attn.q_proj.qweight' in ...\"; SGLang: "
      "loads, and drops the stored weights silently\n"
      "  would patch config.json -1: -:.*attn.*\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
}

// A `dynamic` key whose regex runs out of its match budget decides nothing: every layer it
// could not finish on is undecidable, never a verdict of its own (issue 24 item 4: it used to
// read "quantized_untargeted" and ": 7 modules stored BF16 but quantized by ;").
TEST_F(GptqTest, DynamicRegexOutOfBudgetIsUndecidable) {
  const std::string config = gptq_config(
      "Qwen3_5ForCausalLM", "    \"dynamic\": {\n      \"-:(.*)*(.*)*(.*)*y$\": {}\n    },\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  not fixable model.language_model.layers.0: 7 modules could not be judged: a regex "
            "key of dynamic gave up (match limit) before it decided, and is not tried again\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
  const auto [fix_code, fix_out] = run_qpatch({"--engine", "vllm@main"});
  EXPECT_EQ(fix_code, 1) << fix_out;
  EXPECT_EQ(read("config.json"), config);
}

TEST_F(GptqTest, DeadDotMtpDotRuleWithShortNamesIsFixedWithAnAnchoredRule) {
  // Qwen3-Next has no special case: the short names catch the dense MTP layers by substring.
  const std::string config = gptq_config(
      "Qwen3NextForCausalLM",
      "    \"dynamic\": {\n      \"-:.mtp.\": {}\n    },\n"
      "    \"modules_in_block_to_quantize\": [\n      [\n        \"self_attn.q_proj\",\n"
      "        \"self_attn.k_proj\",\n        \"self_attn.v_proj\",\n        \"self_attn.o_proj\"\n"
      "      ],\n      [\n        \"mlp.gate_proj\",\n        \"mlp.up_proj\",\n"
      "        \"mlp.down_proj\"\n      ]\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  // SGLang reads no modules_in_block_to_quantize: the whole head, fc included.
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17) and SGLang\n  mtp head    8 linears BF16, 4 "
      "norms in model_extra_tensors.safetensors\n  note        dynamic rule \"-:.mtp.\" matches no "
      "layer of this checkpoint under re.match (anchored at the start): it looks like an MTP "
      "exclusion but excludes nothing; on vLLM since 2026-07-23 it only works through the Qwen3.5 "
      "special case, which does not cover mtp.fc\n  lint        dynamic: 1 entry; 1 dead (no "
      "verdict changes without them, in any version judged), 0 duplicates, 0 over-broad (a layer "
      "stored quantized is built dense by them); qpatch --prune DIR removes the dead and duplicate "
      "ones\n" +
          std::string(k_unexcluded_qwen3_next_head));
  const test::CliOutcome explained =
      test::run_cli({"explain", "DIR", "mtp.fc", "--engine", "vllm@main,sglang@main"}, dir());
  EXPECT_EQ(explained.code, 0);
  EXPECT_EQ(explained.out + explained.err,
            "mtp.fc\n"
            "  stored       dense BF16 [64, 128] in model_extra_tensors.safetensors\n"
            "  layer        mtp.fc (ColumnParallelLinear)\n"
            "  config       config.json /quantization_config (gptq), judged as vllm main 017e9f4 "
            "(2026-08-17) and sglang 0cdfa2f (gptq/gptq.py) load it\n"
            "  engine       vllm main 017e9f4 (2026-08-17)\n"
            // vLLM tests the list first; unlisted, the layer is dense whatever dynamic says.
            "  list         no entry of modules_in_block_to_quantize is a substring of mtp.fc\n"
            "  verdict      dense (no_target)\n"
            "  engine       sglang 0cdfa2f (gptq/gptq.py)\n"
            // SGLang's Qwen3-Next draft (qwen3_next_mtp.py): fc at model.fc, a plain nn.Linear.
            "  layer        model.fc (SGLang's name)\n"
            "  built        as a plain nn.Linear by the MTP draft: always dense\n"
            "  verdict      dense (built_dense)\n"
            "  on disk      dense (BF16)\n"
            "  status       consistent: every engine builds what is stored\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  const auto doc = nlohmann::ordered_json::parse(read("config.json"));
  EXPECT_EQ(doc["quantization_config"]["dynamic"].dump(), k_both_engines_dynamic);
}

TEST_F(GptqTest, MtpRuleOverAPackedQwen35HeadIsRemoved) {
  // The head was re-quantized but "-:.*mtp.*" stayed: vLLM's special case builds the packed
  // decoder layers dense.
  const std::string config =
      gptq_config("Qwen3_5ForCausalLM", "    \"dynamic\": {\n      \"-:.*mtp.*\": {}\n    },\n");
  test::write_mini(dir(), {Head::packed_fc_dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({});
  EXPECT_EQ(code, 0) << out;
  const auto doc = nlohmann::ordered_json::parse(read("config.json"));
  EXPECT_EQ(doc["quantization_config"]["dynamic"].dump(), "{}");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

TEST_F(GptqTest, MissingDynamicIsCreated) {
  const std::string config = gptq_config(
      "Qwen3NextForCausalLM",
      "    \"modules_in_block_to_quantize\": [\n      \"self_attn\",\n      \"mlp\"\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({});
  EXPECT_EQ(code, 0) << out;
  const auto doc = nlohmann::ordered_json::parse(read("config.json"));
  EXPECT_EQ(doc["quantization_config"]["dynamic"].dump(), k_both_engines_keys + "}");
}

} // namespace
} // namespace qpatch::cli

namespace qpatch::cli {
namespace {

TEST_F(GptqTest, QuantizeConfigJsonIsKeptInStepAndReadWhenConfigJsonHasNone) {
  const std::string rules = "    \"dynamic\": {\n      \"-:.mtp.\": {}\n    },\n"
                            "    \"modules_in_block_to_quantize\": [\n      \"self_attn\",\n"
                            "      \"mlp\"\n    ],\n";
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    gptq_config("Qwen3NextForCausalLM", rules),
                    Packing::gptq});
  // AutoGPTQ's own file, without quant_method, carries the same rules.
  write(
      "quantize_config.json",
      "{\n  \"bits\": 4,\n  \"dynamic\": {\n    \"-:.mtp.\": {}\n  },\n  \"group_size\": 32\n}\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  EXPECT_EQ(nlohmann::ordered_json::parse(read("quantize_config.json"))["dynamic"].dump(),
            k_both_engines_dynamic);
  // Without a quantization_config in config.json, vLLM reads quantize_config.json.
  write("config.json", "{\n  \"architectures\": [\n    \"Qwen3NextForCausalLM\"\n  ]\n}\n");
  fs::remove(dir() / "quantize_config.json.bak");
  write("quantize_config.json",
        "{\n  \"bits\": 4,\n  \"dynamic\": {\n    \"+:.*mtp.*\": {}\n  },\n"
        "  \"modules_in_block_to_quantize\": [\n    \"mlp\"\n  ]\n}\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("DIR: gptq, judged for"), std::string::npos) << out;
}

// failures.md F17: a community AutoRound->GPTQ export declared its BF16 head quantized with
// positive rules, and the widely shared fix appends "-:.*mtp.*" after them, where it never wins.
TEST_F(GptqTest, PositiveMtpRulesShadowALaterExclusion) {
  const std::string config =
      gptq_config("Qwen3NextForCausalLM",
                  "    \"dynamic\": {\n      \"+:.*mtp.*\": {\n        \"bits\": 4,\n"
                  "        \"group_size\": 64\n      },\n      \"-:.*mtp.*\": {}\n    },\n"
                  "    \"modules_in_block_to_quantize\": [\n      \"self_attn.q_proj\",\n"
                  "      \"self_attn.k_proj\",\n      \"self_attn.v_proj\",\n"
                  "      \"self_attn.o_proj\",\n      \"mlp.gate_proj\",\n"
                  "      \"mlp.up_proj\",\n      \"mlp.down_proj\"\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17) and SGLang\n  mtp head    8 linears BF16, 4 "
      "norms in model_extra_tensors.safetensors\n  note        dynamic rule \"+:.*mtp.*\" "
      "(dynamic[0]) matches 5 layers before \"-:.*mtp.*\" (dynamic[1]) is tried: the first match "
      "wins, so that exclusion never applies to them\n  lint        dynamic: 2 entries; 1 dead (no "
      "verdict changes without them, in any version judged), 0 duplicates, 0 over-broad (a layer "
      "stored quantized is built dense by them); qpatch --prune DIR removes the dead and duplicate "
      "ones\n" +
          std::string(k_unexcluded_qwen3_next_head));
  EXPECT_EQ(run_qpatch({}).first, 0);
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// GPTQ is judged at every version of vLLM whose rules or naming differ (versions.hpp), as every
// method is: the Qwen3.5 MTP special case exists only since #48816 (2026-07-23).
TEST_F(GptqTest, EveryVersionIsJudgedAndTheFindingSaysWhichHoldFor) {
  const std::string config = gptq_config("Qwen3_5ForConditionalGeneration",
                                         "    \"dynamic\": {\n      \"-:.*mtp.*\": {}\n    },\n");
  test::write_mini(dir(), {Head::packed_fc_dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm"});
  EXPECT_EQ(code, 1);
  // Before #48816 the rule itself makes the decoder layers dense; since, the special case does
  // (and the rule no longer reaches them by re.match alone): one finding each, one patch.
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for " +
          test::judged_for(engine::Engine::vllm, "Qwen3_5ForConditionalGeneration", "gptq") +
          "\n"
          "  mtp head    1 linear BF16, 4 norms, 7 linears gptq in "
          "model_extra_tensors.safetensors\n"
          "  fixable     mtp.layers.0: 7 modules stored gptq but made dense by dynamic rule "
          "\"-:.*mtp.*\" (dynamic[0]) (vLLM before 2026-07-23 (0.25 and older) only)\n"
          "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
          "\"ValueError: There is no module or parameter named "
          "'layers.0.self_attn.q_proj.qweight' in ...\"\n"
          "  fixable     mtp.layers.0: 7 modules stored gptq but made dense by vLLM's Qwen3.5 "
          "MTP special case (a \"-:\" dynamic key containing \"mtp\") (vLLM from 2026-07-23 "
          "(0.26 and newer) only)\n"
          "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
          "\"ValueError: There is no module or parameter named "
          "'layers.0.self_attn.q_proj.qweight' in ...\"\n"
          "  would patch config.json -1: -:.*mtp.*\n"
          "  status      needs-patch\n"
          "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"--engine", "vllm"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm"}).first, 0);
}

// A positive rule overriding bits to 3 under a 4-bit Marlin config: vLLM and SGLang raise while
// they build the overridden layers (override_config), which no config patch can change.
TEST_F(GptqTest, OverrideMarlinCannotServeIsReportedAsARefusal) {
  const std::string config = gptq_config(
      "Qwen3_5ForCausalLM", "    \"dynamic\": {\n      \"+:.*down_proj\": {\"bits\": 3}\n    },\n");
  test::write_mini(dir(), {Head::packed_fc_dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto before = test::snapshot_tree(dir());
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: gptq, judged for vLLM (main, 2026-08-17) and SGLang\n"
            "  mtp head    1 linear BF16, 4 norms, 7 linears gptq in "
            "model_extra_tensors.safetensors\n"
            "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
            "names (the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
            "  not fixable m: 2 modules are overridden by dynamic rule \"+:.*down_proj\" to what "
            "the kernel serving the config cannot take, and vLLM raises while it builds them "
            "(\"ValueError: Unsupported quantization config: bits=3, sym=True\"): not fixable by "
            "a config patch [vllm]\n"
            "  breaks      vLLM: start-up fails: it refuses the quantization config\n"
            "  not fixable m: 2 modules are overridden by dynamic rule \"+:.*down_proj\" to what "
            "the kernel serving the config cannot take, and SGLang raises while it builds them "
            "(\"ValueError: Unsupported quantization config: bits=3, sym=True\"): not fixable by "
            "a config patch [sglang]\n"
            "  breaks      SGLang: start-up fails: it refuses the quantization config\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR model.language_model.layers.0.mlp.down_proj\n");
  EXPECT_EQ(run_qpatch({}).first, 1); // nothing it can write
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

} // namespace
} // namespace qpatch::cli
