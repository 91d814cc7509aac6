// SPDX-License-Identifier: Apache-2.0
// The skip-list lint (README "Skip-list lint") for the methods whose config is one list of
// module names: AWQ `modules_to_not_convert`, FP8 `ignored_layers`, ModelOpt `ignore`. Dead
// entries (no verdict changes without them in any version judged), duplicates and over-broad
// entries are counted; --prune removes the dead and duplicate ones as an ordinary patch.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;

std::string skip_config(const std::string& method, const std::string& fields) {
  return "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
         "  \"mtp_num_hidden_layers\": 1,\n"
         "  \"quantization_config\": {\n" +
         test::required_fields(method, fields) + fields + "    \"quant_method\": \"" + method +
         "\"\n  }\n}\n";
}

// The over-broad `down_proj` entry's finding, as every engine words it.
constexpr const char* k_down_proj_finding =
    "  fixable     model.language_model.layers.0.mlp.down_proj: 1 module stored awq but "
    "made dense by modules_to_not_convert entry \"down_proj\"\n"
    "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
    "named 'model.language_model.layers.0.mlp.down_proj.qweight' in ...\"; SGLang: loads, "
    "and drops the stored weights silently; transformers: loads with \"Some weights ... "
    "were not used\" and initialises the layer at random\n";

class SkipListLintTest : public test::CheckpointCliTest {
public:
  SkipListLintTest() { m_engine = "all"; }

protected:
  // --prune writes its patch, after which the checkpoint is clean and a second --prune run
  // changes no byte of config.json.
  void expect_prune_patches_once() {
    EXPECT_EQ(run_qpatch({"--prune", "-q"}).first, 0);
    const std::string patched = read("config.json");
    EXPECT_EQ(run_qpatch({"--check", "--prune"}).first, 0);
    EXPECT_EQ(run_qpatch({"--prune", "-q"}).first, 0);
    EXPECT_EQ(read("config.json"), patched);
  }
};

TEST_F(SkipListLintTest, AwqDeadDuplicateAndOverBroadEntries) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    skip_config("awq",
                                "    \"modules_to_not_convert\": [\"visual\", \"mtp\", \"mtp\", "
                                "\"down_proj\"],\n"),
                    Packing::awq});
  const auto [code, out] = run_qpatch({"--check", "-v"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: awq, judged for vLLM (main 2026-07-29..2026-08-17), SGLang (main "
            "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n"
            "  rules       vLLM main 2026-07-29..017e9f4 (2026-08-17), 2 versions, SGLang main "
            "2026-02-09..a5ea6158 (2026-08-31), 3 versions and transformers quantizer_awq.py + "
            "quantizers_utils.py 0eb492c\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors "
            "(mtp_num_hidden_layers: 1)\n"
            "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
            "names (the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
            "  lint        modules_to_not_convert: 4 entries; 1 dead (no verdict changes without "
            "them, in any version judged), 1 duplicate, 1 over-broad (a layer stored quantized is "
            "built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n"
            "              dead: visual\n"
            "              duplicate: mtp\n"
            "              over-broad: down_proj\n" +
                std::string(k_down_proj_finding) +
                "              model.language_model.layers.0.mlp.down_proj\n"
                "  would patch config.json -1: down_proj\n"
                "  status      needs-patch\n"
                "  apply       qpatch DIR\n");
  const auto [dry_code, dry] = run_qpatch({"--dry-run", "--prune"});
  EXPECT_EQ(dry_code, 1);
  EXPECT_EQ(dry,
            "--- a/config.json\n+++ b/config.json\n@@ -7,7 +7,7 @@\n     \"bits\": 4,\n"
            "     \"group_size\": 32,\n     \"zero_point\": true,\n"
            "-    \"modules_to_not_convert\": [\"visual\", \"mtp\", \"mtp\", \"down_proj\"],\n"
            "+    \"modules_to_not_convert\": [\"mtp\"],\n"
            "     \"quant_method\": \"awq\"\n   }\n }\n"
            "DIR: awq, judged for vLLM (main 2026-07-29..2026-08-17), SGLang (main "
            "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors "
            "(mtp_num_hidden_layers: 1)\n"
            "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed "
            "names (the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
            "  fixable     modules_to_not_convert: 1 dead and 1 duplicate entries (--prune): no "
            "verdict changes without them, in any version judged\n" +
                std::string(k_down_proj_finding) +
                "  would patch config.json -3: visual, mtp, down_proj\n"
                "  status      needs-patch\n"
                "  apply       qpatch DIR\n");
  // Applied, the list is clean and has nothing left to lint away; a second run writes nothing.
  EXPECT_EQ(run_qpatch({"-q", "--prune"}).first, 0);
  EXPECT_EQ(nlohmann::ordered_json::parse(
                read("config.json"))["quantization_config"]["modules_to_not_convert"]
                .dump(),
            R"(["mtp"])");
  const auto tree = test::snapshot_tree(dir());
  EXPECT_EQ(run_qpatch({"--check"}).second.find("lint"), std::string::npos);
  EXPECT_EQ(run_qpatch({"-q", "--prune"}).first, 0);
  EXPECT_EQ(test::snapshot_tree(dir()), tree);
}

// FP8 with both lists: vLLM and SGLang read `ignored_layers`, transformers
// `modules_to_not_convert` (fp8.py, quantizer_finegrained_fp8.py): `ignored_layers` is linted
// by the versions that read it, and an entry only transformers' list needs is not its concern.
// "mlp.gate" is no dead entry for SGLang: its is_layer_skipped read it as a substring until #23467
// (2026-04-22), of mlp.gate_up_proj (no fused mapping before #18742) and then of the gate_proj
// shard alone (the shards disagree: ValueError).
TEST_F(SkipListLintTest, Fp8LintsTheListTheReadersOfItJudge) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    skip_config("fp8",
                                "    \"activation_scheme\": \"dynamic\",\n"
                                "    \"ignored_layers\": [\"lm_head\", \"mtp.fc\", \"mlp.gate\"],\n"
                                "    \"modules_to_not_convert\": [\"lm_head\", \"mtp\"],\n"),
                    Packing::fp8});
  const auto [code, out] = run_qpatch({"--check", "-v"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: fp8, judged for vLLM (main 2026-07-29..2026-08-17), SGLang (main "
      "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n  "
      "rules       vLLM main 2026-07-29..017e9f4 (2026-08-17), 2 versions, SGLang main "
      "2026-02-09..a5ea6158 (2026-08-31), 7 versions and transformers quantizer_finegrained_fp8.py "
      "+ quantizers_utils.py 0eb492c\n  mtp head    8 linears BF16, 4 norms in "
      "model_extra_tensors.safetensors (mtp_num_hidden_layers: 1)\n  note        SGLang: no naming "
      "table for Qwen3_5ForCausalLM; judged under assumed names (the checkpoint's, q/k/v and "
      "gate/up fused and judged through their shards)\n  fixable     "
      "model.language_model.layers.0.mlp: 2 modules stored fp8-block but made dense by "
      "ignored_layers entry \"mlp.gate\" (SGLang before 2026-03-01 only) [sglang]\n  breaks      "
      "SGLang: loads, and drops the stored weights silently\n              "
      "model.language_model.layers.0.mlp.gate_proj\n              "
      "model.language_model.layers.0.mlp.up_proj\n  fixable     model.language_model.layers.0.mlp: "
      "2 modules are judged as one layer (model.language_model.layers.0.mlp.gate_up_proj); SGLang: "
      "ValueError: Detected some but not all shards of model.layers.0.mlp.gate_up_proj are "
      "quantized. All shards of fused layers to have the same precision. (SGLang "
      "2026-03-01..2026-04-21 only) [sglang]\n  breaks      SGLang: start-up fails while building "
      "the fused layer (its shards must agree)\n              "
      "model.language_model.layers.0.mlp.gate_proj\n              "
      "model.language_model.layers.0.mlp.up_proj\n  fixable     mtp.layers.0: 7 modules stored "
      "BF16 but quantized by fp8 (not in ignored_layers) [vllm, sglang]\n  breaks      vLLM: loads "
      "without an error: the stored BF16 weight of mtp.layers.0.self_attn.q_proj is cast into its "
      "FP8 `weight` parameter and the weight scale is never loaded, so the layer computes garbage "
      "and the draft's acceptance collapses; SGLang: loads, and drops the stored weights "
      "silently\n              mtp.layers.0.self_attn.q_proj\n              "
      "mtp.layers.0.self_attn.k_proj\n              mtp.layers.0.self_attn.v_proj\n              "
      "mtp.layers.0.self_attn.o_proj\n              mtp.layers.0.mlp.gate_proj\n              "
      "mtp.layers.0.mlp.up_proj\n              mtp.layers.0.mlp.down_proj\n  fixable     "
      "mtp.layers.0.mlp: 2 modules are judged as one layer (mtp.layers.0.mlp.gate_up_proj); "
      "SGLang: ValueError: Detected some but not all shards of mtp.layers.0.mlp.gate_up_proj are "
      "quantized. All shards of fused layers to have the same precision. (SGLang "
      "2026-03-01..2026-04-21 only) [sglang]\n  breaks      SGLang: start-up fails with "
      "speculative decoding while building the fused layer (its shards must agree)\n              "
      "mtp.layers.0.mlp.gate_proj\n              mtp.layers.0.mlp.up_proj\n  fixable     "
      "mtp.layers.0.mlp: 2 modules stored BF16 but quantized by fp8 (not in ignored_layers) "
      "(SGLang from 2026-04-22 only) [sglang]\n  breaks      SGLang: loads, and drops the stored "
      "weights silently\n              mtp.layers.0.mlp.gate_proj\n              "
      "mtp.layers.0.mlp.up_proj\n  would patch config.json +18: lm_head, mtp.fc, "
      "mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.qkv_proj, "
      "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
      "mtp.layers.0.mlp.down_proj, mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.qkv_proj, "
      "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
      "mtp.layers.0.mlp.down_proj; -3: lm_head, mtp, mlp.gate\n  status      needs-patch\n  apply  "
      "     qpatch DIR\n");
  const auto [prune_code, pruned] = run_qpatch({"--prune"});
  EXPECT_EQ(prune_code, 0) << pruned;
  const auto [check_code, checked] = run_qpatch({"--check"});
  EXPECT_EQ(check_code, 0) << checked;
  EXPECT_EQ(
      read("config.json"),
      "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n  \"mtp_num_hidden_layers\": "
      "1,\n  \"quantization_config\": {\n    \"activation_scheme\": \"dynamic\",\n    "
      "\"ignored_layers\": [\"lm_head\", \"mtp.fc\", \"mtp.layers.0.self_attn.q_proj\", "
      "\"mtp.layers.0.self_attn.k_proj\", \"mtp.layers.0.self_attn.v_proj\", "
      "\"mtp.layers.0.self_attn.qkv_proj\", \"mtp.layers.0.self_attn.o_proj\", "
      "\"mtp.layers.0.mlp.gate_proj\", \"mtp.layers.0.mlp.up_proj\", "
      "\"mtp.layers.0.mlp.down_proj\"],\n    \"modules_to_not_convert\": [\"lm_head\", \"mtp.fc\", "
      "\"mtp.layers.0.self_attn.q_proj\", \"mtp.layers.0.self_attn.k_proj\", "
      "\"mtp.layers.0.self_attn.v_proj\", \"mtp.layers.0.self_attn.qkv_proj\", "
      "\"mtp.layers.0.self_attn.o_proj\", \"mtp.layers.0.mlp.gate_proj\", "
      "\"mtp.layers.0.mlp.up_proj\", \"mtp.layers.0.mlp.down_proj\"],\n    \"quant_method\": "
      "\"fp8\"\n  }\n}\n");
}

// An entry dead beside an over-broad regex the fix removes is the one that then keeps its layer
// dense: --prune lints the patched list, not the file's (it used to prune the entry first and
// stop with an internal error, exit 70; vllm_diff --prune, seed 112,000,048).
TEST_F(SkipListLintTest, AnEntryARemovedRegexShadowedIsKept) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    test::ct_config_json("[\"mtp.layers.0.self_attn.k_proj\", "
                                         "\"re:.*layers\\\\.0\\\\..*\", \"visual\"]",
                                         "[\"Linear\"]"),
                    Packing::compressed_tensors});
  const auto [code, out] = run_qpatch({"--prune", "-q"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(
      nlohmann::ordered_json::parse(read("config.json"))["quantization_config"]["ignore"].dump(),
      "[\"mtp.layers.0.self_attn.k_proj\",\"lm_head\",\"mtp.fc\",\"mtp.layers.0.self_attn.q_proj\","
      "\"mtp.layers.0.self_attn.v_proj\",\"mtp.layers.0.self_attn.o_proj\",\"mtp.layers.0.mlp.gate_"
      "proj\",\"mtp.layers.0.mlp.up_proj\",\"mtp.layers.0.mlp.down_proj\"]");
  const auto tree = test::snapshot_tree(dir());
  EXPECT_EQ(run_qpatch({"--prune", "--check"}).first, 0);
  EXPECT_EQ(run_qpatch({"--prune", "-q"}).first, 0);
  EXPECT_EQ(test::snapshot_tree(dir()), tree); // a second run writes nothing
}

// GPTQ's dynamic rules are linted too: a negative rule that excludes no layer (a stale name, one
// a positive rule shadows) is dead; positive rules never are (their bits and group_size shape the
// weights). --prune removes the dead ones with the fix, and a second run writes nothing.
TEST_F(SkipListLintTest, GptqDeadDynamicRulesArePruned) {
  const std::string config = test::gptq_config(
      "Qwen3NextForCausalLM",
      "    \"dynamic\": {\n      \"-:.*visual.*\": {},\n      \"+:.*mtp.*\": {\n        "
      "\"group_size\": 64\n      },\n      \"-:.*mtp\\\\.fc.*\": {}\n    },\n"
      "    \"modules_in_block_to_quantize\": [\n      \"self_attn.q_proj\",\n"
      "      \"self_attn.k_proj\",\n      \"self_attn.v_proj\",\n"
      "      \"self_attn.o_proj\",\n      \"mlp.gate_proj\",\n"
      "      \"mlp.up_proj\",\n      \"mlp.down_proj\"\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  m_engine = "vllm";
  const auto [code, out] = run_qpatch({"--check", "-v"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main 2026-02-28..2026-08-17)\n  rules       vLLM main "
      "2026-02-28..017e9f4 (2026-08-17), 2 versions\n  mtp head    8 linears BF16, 4 norms in "
      "model_extra_tensors.safetensors\n  note        dynamic rule \"+:.*mtp.*\" (dynamic[1]) "
      "matches 1 layer before \"-:.*mtp\\.fc.*\" (dynamic[2]) is tried: the first match wins, so "
      "that exclusion never applies to them\n  lint        dynamic: 3 entries; 2 dead (no verdict "
      "changes without them, in any version judged), 0 duplicates, 0 over-broad (a layer stored "
      "quantized is built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n "
      "             dead: -:.*visual.*\n              dead: -:.*mtp\\.fc.*\n  fixable     "
      "mtp.layers.0: 7 modules stored BF16 but quantized by modules_in_block_to_quantize; no "
      "negative dynamic rule excludes them\n  breaks      vLLM: start-up fails once speculative "
      "decoding loads the MTP head: \"ValueError: There is no module or parameter named "
      "'layers.0.self_attn.q_proj.weight' in ...\"\n              mtp.layers.0.self_attn.q_proj\n  "
      "            mtp.layers.0.self_attn.k_proj\n              mtp.layers.0.self_attn.v_proj\n    "
      "          mtp.layers.0.self_attn.o_proj\n              mtp.layers.0.mlp.gate_proj\n         "
      "     mtp.layers.0.mlp.up_proj\n              mtp.layers.0.mlp.down_proj\n  would patch "
      "config.json +1: -:^mtp\\.\n  status      needs-patch\n  apply       qpatch DIR\n");
  const auto [dry_code, diff] = run_qpatch({"--dry-run", "--prune", "-q"});
  EXPECT_EQ(dry_code, 1);
  EXPECT_EQ(diff,
            "--- a/config.json\n+++ b/config.json\n@@ -6,11 +6,10 @@\n     \"bits\": 4,\n     "
            "\"desc_act\": false,\n     \"dynamic\": {\n-      \"-:.*visual.*\": {},\n+      "
            "\"-:^mtp\\\\.\": {},\n       \"+:.*mtp.*\": {\n         \"group_size\": 64\n-      "
            "},\n-      \"-:.*mtp\\\\.fc.*\": {}\n+      }\n     },\n     "
            "\"modules_in_block_to_quantize\": [\n       \"self_attn.q_proj\",\n");
  expect_prune_patches_once();
}

// auto-round's extra_config is linted as GPTQ's dynamic: a 16-bit key (a module kept dense) that
// reaches no layer is dead; a key that sets other bits is never called dead, here one that
// reaches nothing either. --prune removes the dead ones with the fix.
TEST_F(SkipListLintTest, AutoRoundDeadExtraConfigKeysArePruned) {
  const std::string config =
      "{\n  \"architectures\": [\n    \"Qwen3_5ForConditionalGeneration\"\n  ],\n"
      "  \"quantization_config\": {\n    \"bits\": 4,\n    \"data_type\": \"int\",\n"
      "    \"extra_config\": {\n      \".mtp.\": {\n        \"bits\": 16,\n"
      "        \"data_type\": \"fp\"\n      },\n      \"model.visual.blocks.0.attn.qkv\": "
      "{\n        \"bits\": 8\n      }\n    },\n    \"group_size\": 128,\n"
      "    \"packing_format\": \"auto_round:auto_gptq\",\n    \"quant_method\": \"auto-round\",\n"
      "    \"sym\": true\n  }\n}\n";
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  m_engine = "vllm@main";
  const auto [code, out] = run_qpatch({"--check", "-v"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n  rules       vllm main 017e9f4 "
      "(2026-08-17)\n  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n  "
      "note        extra_config key \".mtp.\" has no regex metacharacter, so vLLM reads it as a "
      "literal module name, and no layer of this checkpoint has that name: it has no effect (write "
      "exact names, or a regex key such as \"^mtp\\\\.\")\n  note        extra_config key "
      "\"model.visual.blocks.0.attn.qkv\" has no regex metacharacter, so vLLM reads it as a "
      "literal module name, and no layer of this checkpoint has that name: it has no effect (write "
      "exact names, or a regex key such as \"^mtp\\\\.\")\n  lint        extra_config: 2 entries; "
      "1 dead (no verdict changes without them, in any version judged), 0 duplicates, 0 over-broad "
      "(a layer stored quantized is built dense by them); qpatch --prune DIR removes the dead and "
      "duplicate ones\n              dead: .mtp.\n  fixable     mtp: 8 modules stored BF16 but "
      "quantized (4 bits) by the global bits (no block list); no extra_config key of 16 bits names "
      "them\n  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
      "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"\n              "
      "mtp.fc\n              mtp.layers.0.self_attn.q_proj\n              "
      "mtp.layers.0.self_attn.k_proj\n              mtp.layers.0.self_attn.v_proj\n              "
      "mtp.layers.0.self_attn.o_proj\n              mtp.layers.0.mlp.gate_proj\n              "
      "mtp.layers.0.mlp.up_proj\n              mtp.layers.0.mlp.down_proj\n  would patch "
      "config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, "
      "mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.down_proj\n  status      needs-patch\n  apply    "
      "   qpatch DIR\n");
  const auto [dry_code, diff] = run_qpatch({"--dry-run", "--prune", "-q"});
  EXPECT_EQ(dry_code, 1);
  EXPECT_EQ(
      diff,
      "--- a/config.json\n+++ b/config.json\n@@ -6,13 +6,17 @@\n     \"bits\": 4,\n     "
      "\"data_type\": \"int\",\n     \"extra_config\": {\n-      \".mtp.\": {\n-        \"bits\": "
      "16,\n-        \"data_type\": \"fp\"\n-      },\n       \"model.visual.blocks.0.attn.qkv\": "
      "{\n         \"bits\": 8\n-      }\n+      },\n+      \"mtp.fc\": {\"bits\": 16, "
      "\"data_type\": \"fp\"},\n+      \"mtp.layers.0.self_attn.q_proj\": {\"bits\": 16, "
      "\"data_type\": \"fp\"},\n+      \"mtp.layers.0.self_attn.k_proj\": {\"bits\": 16, "
      "\"data_type\": \"fp\"},\n+      \"mtp.layers.0.self_attn.v_proj\": {\"bits\": 16, "
      "\"data_type\": \"fp\"},\n+      \"mtp.layers.0.self_attn.o_proj\": {\"bits\": 16, "
      "\"data_type\": \"fp\"},\n+      \"mtp.layers.0.mlp.gate_proj\": {\"bits\": 16, "
      "\"data_type\": \"fp\"},\n+      \"mtp.layers.0.mlp.up_proj\": {\"bits\": 16, \"data_type\": "
      "\"fp\"},\n+      \"mtp.layers.0.mlp.down_proj\": {\"bits\": 16, \"data_type\": \"fp\"}\n    "
      " },\n     \"group_size\": 128,\n     \"packing_format\": \"auto_round:auto_gptq\",\n");
  expect_prune_patches_once();
}

} // namespace
} // namespace qpatch::cli
