// SPDX-License-Identifier: Apache-2.0
// GPTQ under vLLM's evaluation order (utils/gptq_utils.py get_linear_quant_method, vLLM main
// 017e9f4): the module list is tested first, and fused shards that disagree on it raise before
// `dynamic` is read; a falsy list is derived from the headers; the head is tested against the
// list like any Linear. Also: fused shards stored differently, and a planned `dynamic` key that
// is already in the file.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>

namespace qpatch::cli {
namespace {

using synth::TensorSpec;
using test::Head;
using test::HeadFile;
using test::Packing;
namespace fs = std::filesystem;

using test::gptq_config;

// The mini layout of fixtures.hpp (decoder layer 0, lm_head, an MTP head in
// model_extra_tensors.safetensors), each linear stored GPTQ int4 when `packed(name)`.
void write_layout(const fs::path& dir,
                  const std::string& config,
                  const std::function<bool(const std::string&)>& packed) {
  const auto linear =
      [&](std::vector<TensorSpec>& out, const std::string& module, uint64_t rows, uint64_t cols) {
        if (packed(module)) {
          out.push_back({module + ".qweight", "I32", {cols / 8, rows}});
          out.push_back({module + ".qzeros", "I32", {cols / 32, rows / 8}});
          out.push_back({module + ".scales", "F16", {cols / 32, rows}});
          out.push_back({module + ".g_idx", "I32", {cols}});
        } else {
          out.push_back({module + ".weight", "BF16", {rows, cols}});
        }
      };
  const auto layer = [&](std::vector<TensorSpec>& out, const std::string& p) {
    out.push_back({p + ".input_layernorm.weight", "BF16", {64}});
    linear(out, p + ".self_attn.q_proj", 128, 64);
    linear(out, p + ".self_attn.k_proj", 32, 64);
    linear(out, p + ".self_attn.v_proj", 32, 64);
    linear(out, p + ".self_attn.o_proj", 64, 64);
    out.push_back({p + ".self_attn.q_norm.weight", "BF16", {32}});
    linear(out, p + ".mlp.gate_proj", 128, 64);
    linear(out, p + ".mlp.up_proj", 128, 64);
    linear(out, p + ".mlp.down_proj", 64, 128);
    out.push_back({p + ".post_attention_layernorm.weight", "BF16", {64}});
  };
  synth::CheckpointSpec spec;
  spec.config_json = config;
  synth::ShardSpec main{"model-00001-of-00001.safetensors", {}, true};
  main.tensors.push_back({"model.language_model.embed_tokens.weight", "BF16", {256, 64}});
  layer(main.tensors, "model.language_model.layers.0");
  main.tensors.push_back({"model.language_model.norm.weight", "BF16", {64}});
  linear(main.tensors, "lm_head", 256, 64);
  spec.shards.push_back(std::move(main));
  synth::ShardSpec head{"model_extra_tensors.safetensors", {}, true};
  linear(head.tensors, "mtp.fc", 64, 128);
  head.tensors.push_back({"mtp.norm.weight", "BF16", {64}});
  layer(head.tensors, "mtp.layers.0");
  spec.shards.push_back(std::move(head));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

bool starts_with(const std::string& name, const std::string& prefix) {
  return name.rfind(prefix, 0) == 0;
}

class GptqVllmOrderTest : public test::CheckpointCliTest {
protected:
  // Main's rules: engine_versions_test.cpp tests what differs between versions.
  // vLLM and SGLang: transformers reads GPTQ through optimum (gptq_transformers_test.cpp).
  GptqVllmOrderTest() { m_engine = "vllm@main,sglang@main"; }
  std::string quantization_config(const std::string& key) {
    return nlohmann::ordered_json::parse(read("config.json"))["quantization_config"][key].dump();
  }
};

// Issue #11 item 1: q_proj of the MTP attention is packed, k_proj and v_proj are BF16. vLLM and
// SGLang build one qkv_proj for them, so no config loads it; with the list derived from the
// headers vLLM raises at once.
TEST_F(GptqVllmOrderTest, FusedShardsStoredDifferentlyAreReported) {
  write_layout(dir(), gptq_config("Qwen3_5ForCausalLM", ""), [](const std::string& name) {
    return starts_with(name, "model.") || name == "mtp.layers.0.self_attn.q_proj";
  });
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
      "  mtp head    7 linears BF16, 4 norms, 1 linear gptq in model_extra_tensors.safetensors\n"
      "  not fixable mtp.layers.0.self_attn: 3 modules are shards of "
      "mtp.layers.0.self_attn.qkv_proj but stored partly quantized, partly dense: vLLM builds one "
      "layer for them, so no config can load it; vLLM: ValueError: Detected some but not all "
      "shards of mtp.layers.0.self_attn.qkv_proj are quantized. All shards of fused layers to have "
      "the same precision.\n"
      "  breaks      vLLM: start-up fails with speculative decoding while building the fused layer "
      "(its shards must agree)\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR mtp.layers.0.self_attn.q_proj\n");
  EXPECT_EQ(run_qpatch({"--engine", "vllm@main"}).first, 1);
  EXPECT_FALSE(fs::exists(dir() / "config.json.bak"));
}

// Issue #11 item 2: the exclusion the fix needs ("-:^mtp\\.") is already in dynamic, behind the
// bare ".*mtp.*" key that wins first. The fix moves it to the front (an object holds a key once).
TEST_F(GptqVllmOrderTest, PlannedKeyAlreadyInDynamicIsMovedToTheFront) {
  const std::string config = gptq_config(
      "Qwen3_5ForCausalLM",
      "    \"dynamic\": {\n      \".*mtp.*\": {},\n      \"-:^mtp\\\\.\": {}\n    },\n"
      "    \"modules_in_block_to_quantize\": [\n      [\n        \"mtp\"\n      ]\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  // [["mtp"]] lists no layer of the main model.
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17) and SGLang\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      "  note        dynamic rule \".*mtp.*\" (dynamic[0]) matches 5 layers before \"-:^mtp\\.\" "
      "(dynamic[1]) is tried: the first match wins, so that exclusion never applies to them\n"
      "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names "
      "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
      "  not fixable model.language_model.layers.0: 7 modules stored gptq but vLLM builds them "
      "dense (not in modules_in_block_to_quantize, or a layer GPTQ never quantizes) [vllm]\n"
      "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter named "
      "'model.language_model.layers.0.self_attn.q_proj.qweight' in ...\"\n"
      "  fixable     mtp.fc: 1 module stored BF16 but quantized by modules_in_block_to_quantize; "
      "no negative dynamic rule excludes them [vllm]\n"
      "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
      "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"\n"
      "  fixable     mtp.layers.0: 7 modules stored BF16 but quantized by .*mtp.*; no negative "
      "dynamic rule excludes them [sglang]\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  would patch config.json +1: -:^mtp\\.; -1: -:^mtp\\.\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
  EXPECT_EQ(run_qpatch({}).first, 1); // the unlisted main layer stays
  EXPECT_EQ(read("config.json"),
            gptq_config("Qwen3_5ForCausalLM",
                        "    \"dynamic\": {\n      \"-:^mtp\\\\.\": {},\n      \".*mtp.*\": {}\n"
                        "    },\n    \"modules_in_block_to_quantize\": [\n      [\n"
                        "        \"mtp\"\n      ]\n    ],\n"));
  EXPECT_EQ(
      run_qpatch({"--check"}).second,
      "DIR: gptq, judged for vLLM (main, 2026-08-17) and SGLang\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      "  note        SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names "
      "(the checkpoint's, q/k/v and gate/up fused and judged through their shards)\n"
      "  not fixable model.language_model.layers.0: 7 modules stored gptq but vLLM builds "
      "them dense (not in modules_in_block_to_quantize, or a layer GPTQ never quantizes) "
      "[vllm]\n"
      "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
      "named 'model.language_model.layers.0.self_attn.q_proj.qweight' in ...\"\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
}

// Issue #11 item 7: maybe_update_config derives the list when it is falsy, so [] means "what the
// headers say", not "nothing"; [[]] is truthy and flattens to nothing.
TEST_F(GptqVllmOrderTest, EmptyListIsDerivedFromTheHeaders) {
  test::write_mini(
      dir(),
      {Head::packed,
       HeadFile::indexed_shard,
       gptq_config("Qwen3_5ForCausalLM", "    \"modules_in_block_to_quantize\": [],\n"),
       Packing::gptq});
  // SGLang builds Qwen3.5's mtp.fc plain whatever the config says: judge vLLM alone.
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out,
            "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears gptq, 4 norms in model_extra_tensors.safetensors\n"
            "  status      clean\n");
  write("config.json",
        gptq_config("Qwen3_5ForCausalLM", "    \"modules_in_block_to_quantize\": [[]],\n"));
  const auto [nested_code, nested_out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(nested_code, 1);
  EXPECT_EQ(nested_out,
            "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears gptq, 4 norms in model_extra_tensors.safetensors\n"
            "  not fixable m: 15 modules stored gptq but vLLM builds them dense (not in "
            "modules_in_block_to_quantize, or a layer GPTQ never quantizes)\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'model.language_model.layers.0.self_attn.q_proj.qweight' in ...\"\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
}

// Issue #11 item 8: the MTP q_proj is listed (short name) but its k_proj and v_proj are not, so
// vLLM raises in is_layer_gptq_quantized before the "-:^mtp\\." rule is read. Only the list can
// change that: the short entry goes, the main layer keeps its q_proj by exact name.
TEST_F(GptqVllmOrderTest, ShardsThatDisagreeOnTheListRaiseBeforeDynamic) {
  const std::string config =
      gptq_config("Qwen3NextForCausalLM",
                  "    \"dynamic\": {\n      \"-:^mtp\\\\.\": {}\n    },\n"
                  "    \"modules_in_block_to_quantize\": [\n      \"self_attn.q_proj\",\n"
                  "      \"model.language_model.layers.0.self_attn.k_proj\",\n"
                  "      \"model.language_model.layers.0.self_attn.v_proj\",\n"
                  "      \"self_attn.o_proj\",\n      \"mlp\"\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: gptq, judged for vLLM (main, 2026-08-17) and SGLang\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  fixable     mtp.layers.0.self_attn: 3 modules are judged as one layer "
            "(mtp.layers.0.self_attn.qkv_proj); vLLM: ValueError: Detected some but not all shards "
            "of mtp.layers.0.self_attn.qkv_proj are quantized. All shards of fused layers to have "
            "the same precision. [vllm]\n"
            "  breaks      vLLM: start-up fails with speculative decoding while building the fused "
            "layer (its shards must agree)\n"
            // SGLang builds the Qwen3-Next draft at model.layers.0 (qwen3_next_mtp.py), which
            // "-:^mtp\\." does not reach.
            "  fixable     mtp.layers.0: 7 modules stored BF16 but quantized by (SGLang's GPTQ "
            "default: every Linear); no negative dynamic rule excludes them [sglang]\n"
            "  breaks      SGLang: loads, and drops the stored weights silently\n"
            "  would patch config.json +5: model.language_model.layers.0.self_attn.q_proj, "
            "-:^(mtp|model)\\.layers\\.0\\.self_attn\\.qkv_proj$, "
            "-:^(mtp|model)\\.layers\\.0\\.self_attn\\.o_proj$, "
            "-:^(mtp|model)\\.layers\\.0\\.mlp\\.gate_up_proj$, "
            "-:^(mtp|model)\\.layers\\.0\\.mlp\\.down_proj$; -1: self_attn.q_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({}).first, 0);
  EXPECT_EQ(
      read("config.json"),
      gptq_config("Qwen3NextForCausalLM",
                  "    \"dynamic\": {\n"
                  "      \"-:^(mtp|model)\\\\.layers\\\\.0\\\\.self_attn\\\\.qkv_proj$\": {},\n"
                  "      \"-:^(mtp|model)\\\\.layers\\\\.0\\\\.self_attn\\\\.o_proj$\": {},\n"
                  "      \"-:^(mtp|model)\\\\.layers\\\\.0\\\\.mlp\\\\.gate_up_proj$\": {},\n"
                  "      \"-:^(mtp|model)\\\\.layers\\\\.0\\\\.mlp\\\\.down_proj$\": {},\n"
                  "      \"-:^mtp\\\\.\": {}\n    },\n"
                  "    \"modules_in_block_to_quantize\": [\n"
                  "      \"model.language_model.layers.0.self_attn.k_proj\",\n"
                  "      \"model.language_model.layers.0.self_attn.v_proj\",\n"
                  "      \"self_attn.o_proj\",\n      \"mlp\",\n"
                  "      \"model.language_model.layers.0.self_attn.q_proj\"\n    ],\n"));
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// Issue #11 item 8, the other way: a packed fused layer listed in part gets its missing shard.
TEST_F(GptqVllmOrderTest, PackedLayerListedInPartGetsItsMissingShard) {
  const std::string config =
      gptq_config("Qwen3NextForCausalLM",
                  "    \"modules_in_block_to_quantize\": [\n      [\n"
                  "        \"model.language_model.layers.0.self_attn.q_proj\",\n"
                  "        \"model.language_model.layers.0.self_attn.k_proj\",\n"
                  "        \"model.language_model.layers.0.self_attn.o_proj\"\n      ],\n"
                  "      [\n        \"model.language_model.layers.0.mlp\"\n      ]\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      "  fixable     model.language_model.layers.0.self_attn: 3 modules are judged as one layer "
      "(model.language_model.layers.0.self_attn.qkv_proj); vLLM: ValueError: Detected some but not "
      "all shards of model.language_model.layers.0.self_attn.qkv_proj are quantized. All shards of "
      "fused layers to have the same precision.\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  would patch config.json +1: model.language_model.layers.0.self_attn.v_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"--engine", "vllm@main"}).first, 0);
  // The new entry goes into the last inner list: a string beside the lists would be cut into
  // its characters (maybe_update_config).
  EXPECT_EQ(read("config.json"),
            gptq_config("Qwen3NextForCausalLM",
                        "    \"modules_in_block_to_quantize\": [\n      [\n"
                        "        \"model.language_model.layers.0.self_attn.q_proj\",\n"
                        "        \"model.language_model.layers.0.self_attn.k_proj\",\n"
                        "        \"model.language_model.layers.0.self_attn.o_proj\"\n      ],\n"
                        "      [\n        \"model.language_model.layers.0.mlp\",\n"
                        "        \"model.language_model.layers.0.self_attn.v_proj\"\n      ]\n"
                        "    ],\n"));
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

// Issue #11 item 9: with "lm_head": true vLLM still tests the head against the list; a BF16 head
// the list does not name is dense, and a packed one must be listed.
TEST_F(GptqVllmOrderTest, HeadIsTestedAgainstTheListToo) {
  const std::string config =
      gptq_config("Qwen3_5ForCausalLM",
                  "    \"dynamic\": {\n      \"-:^mtp\\\\.\": {}\n    },\n"
                  "    \"lm_head\": true,\n"
                  "    \"modules_in_block_to_quantize\": [\n      \"self_attn\",\n"
                  "      \"mlp\"\n    ],\n");
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::gptq});
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 0) << out;
  fs::remove_all(dir());
  fs::create_directories(dir());
  write_layout(dir(), config, [](const std::string& name) { return !starts_with(name, "mtp."); });
  const auto [packed_code, packed_out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(packed_code, 1);
  EXPECT_EQ(packed_out,
            "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  fixable     lm_head: 1 module stored gptq but no entry of "
            "modules_in_block_to_quantize is a substring of lm_head, so vLLM builds the head dense "
            "(\"lm_head\" is true, and the list decides first)\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'lm_head.qweight' in ...\"\n"
            "  would patch config.json +1: lm_head\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"--engine", "vllm@main"}).first, 0);
  EXPECT_EQ(read("config.json"),
            gptq_config("Qwen3_5ForCausalLM",
                        "    \"dynamic\": {\n      \"-:^mtp\\\\.\": {}\n    },\n"
                        "    \"lm_head\": true,\n"
                        "    \"modules_in_block_to_quantize\": [\n      \"self_attn\",\n"
                        "      \"mlp\",\n      \"lm_head\"\n    ],\n"));
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

// With "lm_head" false vLLM gives the head no quant method before dynamic is read: a packed head
// is not "made dense" by a negative rule, and removing the rule would not help.
TEST_F(GptqVllmOrderTest, HeadWithLmHeadFalseIgnoresDynamic) {
  const std::string config = gptq_config("Qwen3NextForCausalLM",
                                         "    \"dynamic\": {\n      \"-:^lm_head$\": {}\n    },\n");
  write_layout(dir(), config, [](const std::string& name) { return !starts_with(name, "mtp."); });
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17)\n  mtp head    8 linears BF16, 4 norms in "
      "model_extra_tensors.safetensors\n  lint        dynamic: 1 entry; 1 dead (no verdict changes "
      "without them, in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized "
      "is built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n  not "
      "fixable lm_head: 1 module stored gptq but \"lm_head\" is not true, so vLLM builds the head "
      "dense: not fixable by a config patch\n  breaks      vLLM: start-up fails: \"ValueError: "
      "There is no module or parameter named 'lm_head.qweight' in ...\"\n  status      unfixable\n "
      " why         qpatch explain DIR lm_head\n");
}

// The Qwen3.5 MTP special case reads hf_config.quantization_config only: rules in
// quantize_config.json (config.json has none; vLLM opens it only with --quantization gptq) never
// switch the MTP decoder layers dense, so "-:.mtp." excludes nothing and the short names list the
// BF16 head. Without --quantization vLLM reads no config at all, so the fix also copies the
// patched rules into config.json (quantized_without_config).
TEST_F(GptqVllmOrderTest, MtpSpecialCaseNeedsTheRulesInConfigJson) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ]\n}\n",
                    Packing::gptq});
  write("quantize_config.json",
        "{\n  \"bits\": 4,\n  \"desc_act\": false,\n  \"dynamic\": {\n    \"-:.mtp.\": {}\n  },\n"
        "  \"group_size\": 32,\n"
        "  \"modules_in_block_to_quantize\": [\n    \"self_attn\",\n    \"mlp\"\n  ],\n"
        "  \"sym\": true\n}\n");
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17)\n  mtp head    8 linears BF16, 4 norms in "
      "model_extra_tensors.safetensors\n  note        dynamic rule \"-:.mtp.\" matches no layer of "
      "this checkpoint under re.match (anchored at the start): it looks like an MTP exclusion but "
      "excludes nothing; on vLLM since 2026-07-23 it only works through the Qwen3.5 special case, "
      "which does not cover mtp.fc\n  lint        dynamic: 1 entry; 1 dead (no verdict changes "
      "without them, in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized "
      "is built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n  fixable  "
      "   mtp.layers.0: 7 modules stored BF16 but quantized by modules_in_block_to_quantize; no "
      "negative dynamic rule excludes them\n  breaks      vLLM: start-up fails once speculative "
      "decoding loads the MTP head: \"ValueError: There is no module or parameter named "
      "'layers.0.self_attn.q_proj.weight' in ...\"\n  fixable     config.json: 7 modules stored "
      "quantized (gptq) but no quantization_config the engines read, so they build every layer "
      "dense; quantize_config.json holds it: copy it into config.json\n  breaks      vLLM: "
      "start-up fails: \"ValueError: There is no module or parameter named "
      "'model.language_model.layers.0.self_attn.q_proj.qweight' in ...\"\n  would patch "
      "config.json +1: quantization_config\n  would patch quantize_config.json +1: -:^mtp\\.\n  "
      "status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"--engine", "vllm@main"}).first, 0);
  EXPECT_EQ(read("config.json"),
            "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
            "  \"quantization_config\": {\n    \"bits\": 4,\n    \"desc_act\": false,\n"
            "    \"dynamic\": {\n      \"-:^mtp\\\\.\": {},\n      \"-:.mtp.\": {}\n    },\n"
            "    \"group_size\": 32,\n    \"modules_in_block_to_quantize\": [\n"
            "      \"self_attn\",\n      \"mlp\"\n    ],\n    \"sym\": true,\n"
            "    \"quant_method\": \"gptq\"\n  }\n}\n");
  EXPECT_EQ(
      read("quantize_config.json"),
      "{\n  \"bits\": 4,\n  \"desc_act\": false,\n  \"dynamic\": {\n    \"-:^mtp\\\\.\": {},\n"
      "    \"-:.mtp.\": {}\n  },\n  \"group_size\": 32,\n  \"modules_in_block_to_quantize\": [\n"
      "    \"self_attn\",\n    \"mlp\"\n  ],\n  \"sym\": true\n}\n");
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

} // namespace
} // namespace qpatch::cli
