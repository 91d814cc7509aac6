// SPDX-License-Identifier: Apache-2.0
// auto-round verdicts against vLLM's INC resolution (inc/inc.py get_quant_method,
// inc/config_parser.py _resolve_raw, base_config.py get_from_keys_or; vLLM main 017e9f4), one
// test per rule, on a small Qwen3.5 layout with a linear-attention (GDN) layer 0, a
// full-attention layer 1 and optionally an MTP head, each module stored GPTQ (auto_round:
// auto_gptq) or BF16 as the test says.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace qpatch::cli {
namespace {

using synth::TensorSpec;

constexpr const char* k_gdn = "model.language_model.layers.0.linear_attn.";
constexpr const char* k_attn = "model.language_model.layers.1.self_attn.";
constexpr const char* k_mlp = "model.language_model.layers.1.mlp.";

struct Layout {
  std::set<std::string> dense; // linear modules stored BF16 (the rest GPTQ int4)
  bool mtp = false;            // an MTP head (mtp.fc and one decoder layer)
  std::string architecture = "Qwen3_5ForCausalLM";
};

void linear(std::vector<TensorSpec>& out,
            const Layout& layout,
            const std::string& module,
            uint64_t rows,
            uint64_t cols) {
  if (layout.dense.count(module) > 0) {
    out.push_back({module + ".weight", "BF16", {rows, cols}});
    return;
  }
  // GPTQ int4, group 32: qweight [in/8, out], qzeros [groups, out/8], scales [groups, out].
  out.push_back({module + ".qweight", "I32", {cols / 8, rows}});
  out.push_back({module + ".qzeros", "I32", {cols / 32, rows / 8}});
  out.push_back({module + ".scales", "F16", {cols / 32, rows}});
  out.push_back({module + ".g_idx", "I32", {cols}});
}

void attention_layer(std::vector<TensorSpec>& out, const Layout& layout, const std::string& p) {
  out.push_back({p + ".input_layernorm.weight", "BF16", {64}});
  linear(out, layout, p + ".self_attn.q_proj", 128, 64);
  linear(out, layout, p + ".self_attn.k_proj", 32, 64);
  linear(out, layout, p + ".self_attn.v_proj", 32, 64);
  linear(out, layout, p + ".self_attn.o_proj", 64, 64);
  out.push_back({p + ".self_attn.q_norm.weight", "BF16", {32}});
  linear(out, layout, p + ".mlp.gate_proj", 128, 64);
  linear(out, layout, p + ".mlp.up_proj", 128, 64);
  linear(out, layout, p + ".mlp.down_proj", 64, 128);
  out.push_back({p + ".post_attention_layernorm.weight", "BF16", {64}});
}

std::string config_json(const std::string& architecture, const std::string& extra_members) {
  return "{\n  \"architectures\": [\n    \"" + architecture +
         "\"\n  ],\n  \"quantization_config\": {\n    \"bits\": 4,\n"
         "    \"data_type\": \"int\",\n" +
         extra_members +
         "    \"group_size\": 128,\n    \"packing_format\": \"auto_round:auto_gptq\",\n"
         "    \"quant_method\": \"auto-round\",\n    \"sym\": true\n  }\n}\n";
}

class AutoRoundRulesTest : public test::CheckpointCliTest {
public:
  // vLLM main's INC rules; what earlier versions do differently: engine_versions_test.cpp.
  AutoRoundRulesTest() { m_engine = "vllm@main"; }

protected:
  // Write the layout with `extra_members` (JSON members, each line indented by 4 and ending in
  // ",\n") inside quantization_config.
  void write(const Layout& layout, const std::string& extra_members) {
    synth::CheckpointSpec spec;
    spec.config_json = config_json(layout.architecture, extra_members);
    synth::ShardSpec main{"model-00001-of-00001.safetensors", {}, true};
    auto& t = main.tensors;
    t.push_back({"model.language_model.embed_tokens.weight", "BF16", {256, 64}});
    const std::string gdn = k_gdn;
    t.push_back({"model.language_model.layers.0.input_layernorm.weight", "BF16", {64}});
    linear(t, layout, gdn + "in_proj_qkv", 256, 64);
    linear(t, layout, gdn + "in_proj_z", 64, 64);
    linear(t, layout, gdn + "in_proj_b", 32, 64);
    linear(t, layout, gdn + "in_proj_a", 32, 64);
    linear(t, layout, gdn + "out_proj", 64, 64);
    t.push_back({gdn + "norm.weight", "BF16", {32}});
    attention_layer(t, layout, "model.language_model.layers.1");
    t.push_back({"model.language_model.norm.weight", "BF16", {64}});
    t.push_back({"lm_head.weight", "BF16", {256, 64}});
    spec.shards.push_back(std::move(main));
    if (layout.mtp) {
      synth::ShardSpec head{"model_extra_tensors.safetensors", {}, true};
      linear(head.tensors, layout, "mtp.fc", 64, 128);
      head.tensors.push_back({"mtp.norm.weight", "BF16", {64}});
      attention_layer(head.tensors, layout, "mtp.layers.0");
      spec.shards.push_back(std::move(head));
    }
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
  std::string config() { return test::read_bytes(dir() / "config.json"); }
};

// Every MTP module name, for layouts whose head is stored BF16.
std::set<std::string> dense_head() {
  std::set<std::string> names{"mtp.fc"};
  for (const char* m : {"self_attn.q_proj",
                        "self_attn.k_proj",
                        "self_attn.v_proj",
                        "self_attn.o_proj",
                        "mlp.gate_proj",
                        "mlp.up_proj",
                        "mlp.down_proj"}) {
    names.insert(std::string("mtp.layers.0.") + m);
  }
  return names;
}

// Item 1: vLLM builds one layer (one quant method) for in_proj_b and in_proj_a.
TEST_F(AutoRoundRulesTest, FusedShardsStoredDifferentlyAreReported) {
  write({{std::string(k_gdn) + "in_proj_b"}}, "");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  not fixable model.language_model.layers.0.linear_attn: 2 modules are shards of "
      "model.language_model.layers.0.linear_attn.in_proj_ba but stored partly quantized, partly "
      "dense: vLLM builds one layer for them, so no config can load it\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.0.linear_attn.in_proj_b\n");
}

// Item 2: a 16-bit key for in_proj_b and none for in_proj_a, both stored BF16: vLLM raises; the
// fix adds in_proj_a's key only (in_proj_b's already reads as dense).
TEST_F(AutoRoundRulesTest, ExistingShardKeyIsNotWrittenTwice) {
  const std::string gdn = k_gdn;
  write({{gdn + "in_proj_b", gdn + "in_proj_a"}},
        "    \"extra_config\": {\n      \"" + gdn +
            "in_proj_b\": {\n        \"bits\": 16,\n        \"data_type\": \"fp\"\n      }\n"
            "    },\n");
  const std::string before = config();
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  fixable     model.language_model.layers.0.linear_attn: 2 modules are judged as one layer "
      "(model.language_model.layers.0.linear_attn.in_proj_ba); vLLM: ValueError: Fused module "
      "'model.layers.0.linear_attn.in_proj_ba' requires consistent quant config for "
      "['model.layers.0.linear_attn.in_proj_b', 'model.layers.0.linear_attn.in_proj_a']\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  would patch config.json +1: model.language_model.layers.0.linear_attn.in_proj_a\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  std::string expected = before;
  const std::string tail = "\"data_type\": \"fp\"\n      }";
  expected.insert(expected.find(tail) + tail.size(),
                  ",\n      \"" + gdn + "in_proj_a\": {\"bits\": 16, \"data_type\": \"fp\"}");
  EXPECT_EQ(config(), expected);
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// Item 2, shards stored quantized: the key that makes in_proj_b dense is removed.
TEST_F(AutoRoundRulesTest, ShardKeyThatSplitsAQuantizedFusedLayerIsRemoved) {
  const std::string gdn = k_gdn;
  write({},
        "    \"extra_config\": {\n      \"" + gdn +
            "in_proj_b\": {\n        \"bits\": 16\n"
            "      }\n    },\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  fixable     model.language_model.layers.0.linear_attn: 2 modules are judged as one layer "
      "(model.language_model.layers.0.linear_attn.in_proj_ba); vLLM: ValueError: Fused module "
      "'model.layers.0.linear_attn.in_proj_ba' requires consistent quant config for "
      "['model.layers.0.linear_attn.in_proj_b', 'model.layers.0.linear_attn.in_proj_a']\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  would patch config.json -1: model.language_model.layers.0.linear_attn.in_proj_b\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(config(), config_json("Qwen3_5ForCausalLM", "    \"extra_config\": {},\n"));
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// Item 3: a regex key without "bits" outside the block list gives cfg.get("bits", 16): vLLM
// builds the packed MTP head dense.
TEST_F(AutoRoundRulesTest, KeyWithoutBitsOutsideTheBlockListIsSixteenBits) {
  Layout layout;
  layout.mtp = true;
  layout.dense = {"mtp.fc"};
  write(layout,
        "    \"block_name_to_quantize\": [\n      \"model.language_model.layers\"\n    ],\n"
        "    \"extra_config\": {\n      \"^mtp\\\\.\": {}\n    },\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  mtp head    1 linear BF16, 4 norms, 7 linears gptq in model_extra_tensors.safetensors\n"
      "  not fixable mtp.layers.0: 7 modules stored gptq but made dense by "
      "extra_config[\"^mtp\\.\"], and without that key still dense (block_name_to_quantize (no "
      "entry is a prefix)): list its block in the block list by hand\n"
      "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
      "\"ValueError: There is no module or parameter named 'layers.0.self_attn.q_proj.qweight' in "
      "...\"\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR mtp.layers.0.self_attn.q_proj\n");
}

// Item 4: Qwen3_5ForConditionalGeneration's packed_modules_mapping has Qwen3-VL's
// "qkv": ["qkv"] before "in_proj_qkvz": a key that reaches the fused name decides it whole.
TEST_F(AutoRoundRulesTest, VlmQkvMappingReachesInProjQkvzFirst) {
  // The key also makes layer 1's qkv_proj dense (through "qkv" as well): stored BF16 here.
  const std::string gdn = k_gdn;
  const std::string attn = k_attn;
  Layout layout;
  layout.architecture = "Qwen3_5ForConditionalGeneration";
  layout.dense = {
      gdn + "in_proj_qkv", gdn + "in_proj_z", attn + "q_proj", attn + "k_proj", attn + "v_proj"};
  write(layout,
        "    \"extra_config\": {\n      \".*qkv.*\": {\n        \"bits\": 16\n"
        "      }\n    },\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0) << out;
}

// Item 4, the fix: a 4-bit regex reaches the fused name through "qkv", so the shards' exact
// keys are never read; the fused layer's own exact key (the early exit) makes it dense.
TEST_F(AutoRoundRulesTest, RegexOnTheFusedNameIsOverriddenByTheFusedLayersKey) {
  const std::string gdn = k_gdn;
  Layout layout;
  layout.architecture = "Qwen3_5ForConditionalGeneration";
  layout.dense = {gdn + "in_proj_qkv", gdn + "in_proj_z"};
  write(layout,
        "    \"extra_config\": {\n      \".*layers\\\\.0\\\\..*\": {\n"
        "        \"bits\": 4\n      }\n    },\n");
  const std::string before = config();
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
            "  fixable     model.language_model.layers.0.linear_attn: 2 modules stored BF16 but "
            "quantized (4 bits) by extra_config[\".*layers\\.0\\..*\"]; no extra_config key of 16 "
            "bits names them\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'model.language_model.layers.0.linear_attn.in_proj_qkv.weight' in ...\"\n"
            "  would patch config.json +3: model.language_model.layers.0.linear_attn.in_proj_qkv, "
            "model.language_model.layers.0.linear_attn.in_proj_z, "
            "model.language_model.layers.0.linear_attn.in_proj_qkvz\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  std::string expected = before;
  const std::string tail = "\"bits\": 4\n      }";
  std::string added;
  for (const char* m : {"in_proj_qkv", "in_proj_z", "in_proj_qkvz"}) {
    added += ",\n      \"" + gdn + m + "\": {\"bits\": 16, \"data_type\": \"fp\"}";
  }
  expected.insert(expected.find(tail) + tail.size(), added);
  EXPECT_EQ(config(), expected);
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// explain names the packed_modules_mapping entry that decided, and each name's tuple.
TEST_F(AutoRoundRulesTest, ExplainShowsThePackedMappingEntryThatDecides) {
  const std::string gdn = k_gdn;
  Layout layout;
  layout.architecture = "Qwen3_5ForConditionalGeneration";
  layout.dense = {gdn + "in_proj_qkv", gdn + "in_proj_z"};
  write(layout,
        "    \"extra_config\": {\n      \".*layers\\\\.0\\\\..*\": {\n"
        "        \"bits\": 4\n      }\n    },\n");
  // vLLM's packed mapping and transformers' unfused modules (SGLang's Qwen3.5 auto-round config
  // has no mapping: auto_round_sglang.cpp).
  const test::CliOutcome explained =
      test::run_cli({"explain", "--engine", "vllm,transformers", "DIR", gdn + "in_proj_z"}, dir());
  EXPECT_EQ(explained.code, 1);
  EXPECT_EQ(
      explained.out + explained.err,
      "model.language_model.layers.0.linear_attn.in_proj_z\n"
      "  stored       dense BF16 [64, 64] in model-00001-of-00001.safetensors\n"
      "  layer        language_model.model.layers.0.linear_attn.in_proj_qkvz "
      "(MergedColumnParallelLinear), renamed from "
      "model.language_model.layers.0.linear_attn.in_proj_qkvz, 2 modules\n"
      "  config       config.json /quantization_config (auto-round), judged as " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForConditionalGeneration", "auto-round") +
          " and " +
          test::traced_as(
              engine::Engine::transformers, "Qwen3_5ForConditionalGeneration", "auto-round") +
          " load it\n" + "  engine       " +
          test::traced_as(engine::Engine::vllm, "Qwen3_5ForConditionalGeneration", "auto-round") +
          "\n" +
          "  extra_config[0] \".*layers\\.0\\..*\" is a regex key and re.search finds it in "
          "language_model.model.layers.0.linear_attn.in_proj_qkvz\n"
          "  default      no block_name_to_quantize: every layer but lm_head defaults to 4 bits\n"
          "  packed       \"qkv\" occurs once in "
          "language_model.model.layers.0.linear_attn.in_proj_qkvz, and a name it stands for is "
          "configured: language_model.model.layers.0.linear_attn.in_proj_qkvz (4, 128, True)\n"
          "  verdict      quantized (extra_config[\".*layers\\.0\\..*\"])\n"
          "  engine       " +
          test::traced_as(
              engine::Engine::transformers, "Qwen3_5ForConditionalGeneration", "auto-round") +
          "\n"
          "  blocks       [\"model.language_model.layers\"]: "
          "model.language_model.layers.0.linear_attn.in_proj_z starts with one\n"
          "  dict         {\"bits\":4} (extra_config key \".*layers\\.0\\..*\")\n"
          "  verdict      quantized (target_name)\n"
          "  on disk      dense (BF16)\n"
          "  status       inconsistent for vllm, transformers: run `qpatch --dry-run DIR` to see "
          "the fix\n");
}

// Item 4 without the VLM mapping: the text-only class has no "qkv" entry, so the same key
// configures in_proj_qkv alone and vLLM raises.
TEST_F(AutoRoundRulesTest, TextModelHasNoQkvMappingAndTheShardsDisagree) {
  const std::string gdn = k_gdn;
  const std::string attn = k_attn;
  Layout layout;
  layout.dense = {
      gdn + "in_proj_qkv", gdn + "in_proj_z", attn + "q_proj", attn + "k_proj", attn + "v_proj"};
  write(layout,
        "    \"extra_config\": {\n      \".*qkv.*\": {\n        \"bits\": 16\n"
        "      }\n    },\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  fixable     model.language_model.layers.0.linear_attn: 2 modules are judged as one layer "
      "(model.language_model.layers.0.linear_attn.in_proj_qkvz); vLLM: ValueError: Fused module "
      "'model.layers.0.linear_attn.in_proj_qkvz' requires consistent quant config for "
      "['model.layers.0.linear_attn.in_proj_qkv', 'model.layers.0.linear_attn.in_proj_z']\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  would patch config.json +2: model.language_model.layers.0.linear_attn.in_proj_qkv, "
      "model.language_model.layers.0.linear_attn.in_proj_z\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// Item 5: shards quantized alike on disk but configured with different group sizes: vLLM
// compares (bits, group_size, sym) and raises.
TEST_F(AutoRoundRulesTest, ShardsWithDifferentGroupSizesAreALoadError) {
  write({},
        "    \"extra_config\": {\n      \"" + std::string(k_attn) +
            "q_proj\": {\n        \"bits\": 4,\n        \"group_size\": 64\n      }\n"
            "    },\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  not fixable model.language_model.layers.1.self_attn: 3 modules are judged as one layer "
      "(model.language_model.layers.1.self_attn.qkv_proj); vLLM: ValueError: Fused module "
      "'model.layers.1.self_attn.qkv_proj' requires consistent quant config for "
      "['model.layers.1.self_attn.q_proj', 'model.layers.1.self_attn.k_proj', "
      "'model.layers.1.self_attn.v_proj']\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.1.self_attn.q_proj\n");
}

// Item 5, stored BF16: the shard key with its own group size is rewritten to read as dense, and
// the other shards get theirs.
TEST_F(AutoRoundRulesTest, ShardKeyWithOtherSettingsIsRewrittenForADenseLayer) {
  const std::string attn = k_attn;
  write({{attn + "q_proj", attn + "k_proj", attn + "v_proj"}},
        "    \"extra_config\": {\n      \"" + attn +
            "q_proj\": {\n        \"bits\": 16,\n        \"group_size\": -1\n      }\n    },\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
      "  fixable     model.language_model.layers.1.self_attn: 3 modules are judged as one layer "
      "(model.language_model.layers.1.self_attn.qkv_proj); vLLM: ValueError: Fused module "
      "'model.layers.1.self_attn.qkv_proj' requires consistent quant config for "
      "['model.layers.1.self_attn.q_proj', 'model.layers.1.self_attn.k_proj', "
      "'model.layers.1.self_attn.v_proj']\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  would patch config.json +3: model.language_model.layers.1.self_attn.k_proj, "
      "model.language_model.layers.1.self_attn.v_proj, "
      "model.language_model.layers.1.self_attn.q_proj; -1: "
      "model.language_model.layers.1.self_attn.q_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(config(),
            config_json("Qwen3_5ForCausalLM",
                        "    \"extra_config\": {\n      \"" + attn +
                            "k_proj\": {\"bits\": 16, \"data_type\": \"fp\"},\n      \"" + attn +
                            "v_proj\": {\"bits\": 16, \"data_type\": \"fp\"},\n      \"" + attn +
                            "q_proj\": {\"bits\": 16, \"data_type\": \"fp\"}\n    },\n"));
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// Item 6: get_from_keys_or takes block_name_to_quantize although it is null: no block list,
// every layer (the MTP head too) is quantized.
TEST_F(AutoRoundRulesTest, NullBlockNameToQuantizeHidesToQuantBlockNames) {
  Layout layout;
  layout.mtp = true;
  layout.dense = dense_head();
  write(layout,
        "    \"block_name_to_quantize\": null,\n"
        "    \"to_quant_block_names\": [\n      \"model.language_model.layers\"\n    ],\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  fixable     mtp: 8 modules stored BF16 but quantized (4 bits) by the global bits "
            "(no block list); no extra_config key of 16 bits names them\n"
            "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
            "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"\n"
            "  would patch config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, "
            "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
            "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
            "mtp.layers.0.mlp.down_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// INCConfig.__init__ splits a string block list with str.split(","): a trailing comma leaves
// "", a prefix of every name, so lm_head is quantized too.
TEST_F(AutoRoundRulesTest, EmptyBlockNameFromATrailingCommaQuantizesLmHead) {
  write({}, "    \"block_name_to_quantize\": \"model.language_model.layers,\",\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for vLLM (main, 2026-08-17)\n"
            "  fixable     lm_head: 1 module stored BF16 but quantized (4 bits) by "
            "block_name_to_quantize (prefix match); no extra_config key of 16 bits names them\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'lm_head.weight' in ...\"\n"
            "  would patch config.json +1: lm_head\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto [again, again_out] = run_qpatch({"--check"});
  EXPECT_EQ(again, 0) << again_out;
}

// `if self._config.block_name_to_quantize:` — an empty list is no block list: the packed MTP
// head is quantized by default.
TEST_F(AutoRoundRulesTest, EmptyBlockListQuantizesEveryLayerButLmHead) {
  Layout layout;
  layout.mtp = true;
  write(layout, "    \"block_name_to_quantize\": [],\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0) << out;
}

// apply_vllm_mapper renames regex keys as well: "model.language_model." becomes "model." in
// this key, which then finds layer 1's (vLLM-named) MLP layers.
TEST_F(AutoRoundRulesTest, RegexKeysAreRenamedByTheModelsMapper) {
  const std::string mlp = k_mlp;
  write({{mlp + "gate_proj", mlp + "up_proj", mlp + "down_proj"}},
        "    \"extra_config\": {\n      \"model.language_model.layers.1.mlp.*\": {\n"
        "        \"bits\": 16\n      }\n    },\n");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0) << out;
}

} // namespace
} // namespace qpatch::cli
