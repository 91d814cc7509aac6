// SPDX-License-Identifier: Apache-2.0
// Verdicts and fixes that vLLM main (017e9f4) decides through its model classes and the
// skip-list and compressed-tensors matchers: shards stored differently (fp8.py, auto_awq.py,
// modelopt.py get_quant_method build one fused layer), the Qwen3.5 VLM's head named
// language_model.lm_head (qwen3_5.py), embeddings built without a quant config (Qwen3_5Model),
// a sidecar with no list (FP8 `ignored_layers: []`), AWQ's empty list and `lm_head` flag, and
// ModelOpt's exclusion order (is_layer_excluded).
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <qpatch/engine/skip_list_rules.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;

using test::required_fields;

std::string skip_config(const std::string& method,
                        const std::string& fields,
                        const std::string& architecture = "Qwen3_5ForCausalLM") {
  return "{\n  \"architectures\": [\n    \"" + architecture +
         "\"\n  ],\n"
         "  \"quantization_config\": {\n" +
         required_fields(method, fields) + fields + "    \"quant_method\": \"" + method +
         "\"\n  }\n}\n";
}

class VllmRulesTest : public test::CheckpointCliTest {
public:
  // The newest version of each engine; what earlier versions do differently:
  // engine_versions_test.cpp.
  VllmRulesTest() { m_engine = "vllm@main,sglang@main,transformers"; }

protected:
  std::string list(const std::string& key, const std::string& file = "config.json") {
    const auto doc = nlohmann::ordered_json::parse(read(file));
    return (file == "config.json" ? doc["quantization_config"] : doc)[key].dump();
  }
  // One Gated-DeltaNet layer whose in_proj_b is BF16 and in_proj_a quantized (`quantized`
  // writes one module's tensors), beside a quantized out_proj.
  template <class Quantized> void write_split_gdn(const std::string& config, Quantized quantized) {
    synth::CheckpointSpec spec;
    spec.config_json = config;
    synth::ShardSpec shard{"model.safetensors", {}, true};
    const std::string p = "model.layers.0.linear_attn.";
    shard.tensors.push_back({"model.embed_tokens.weight", "BF16", {256, 64}});
    shard.tensors.push_back({p + "in_proj_b.weight", "BF16", {32, 64}});
    quantized(shard.tensors, p + "in_proj_a");
    quantized(shard.tensors, p + "out_proj");
    shard.tensors.push_back({"lm_head.weight", "BF16", {256, 64}});
    spec.shards.push_back(std::move(shard));
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
};

void fp8_module(std::vector<synth::TensorSpec>& out, const std::string& module) {
  out.push_back({module + ".weight", "F8_E4M3", {64, 64}});
  out.push_back({module + ".weight_scale_inv", "F32", {1, 1}});
}

void awq_module(std::vector<synth::TensorSpec>& out, const std::string& module) {
  out.push_back({module + ".qweight", "I32", {64, 8}});
  out.push_back({module + ".qzeros", "I32", {2, 8}});
  out.push_back({module + ".scales", "F16", {2, 64}});
}

// Issue #11 item 1: fp8.py Fp8Config.get_quant_method asks is_layer_skipped about one fused
// in_proj_ba, which gets one quant method for both shards: no config loads them as stored.
TEST_F(VllmRulesTest, Fp8ShardsStoredDifferentlyAreReported) {
  // SGLang's FP8 is judged in sglang_diff_regressions_test.cpp.
  m_engine = "vllm@main,transformers";
  write_split_gdn(skip_config("fp8", "    \"activation_scheme\": \"dynamic\",\n"), fp8_module);
  const std::string expected =
      "DIR: fp8, judged for vLLM (main, 2026-08-17)\n"
      "  not fixable model.layers.0.linear_attn: 2 modules are shards of "
      "model.layers.0.linear_attn.in_proj_ba but stored partly quantized, partly dense: vLLM "
      "builds one layer for them, so no config can load it\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.layers.0.linear_attn.in_proj_b\n";
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out, expected);
  const std::string before = read("config.json");
  const auto [fix_code, fix_out] = run_qpatch({"--engine", "vllm@main"});
  EXPECT_EQ(fix_code, 1);
  EXPECT_EQ(read("config.json"), before);
  // transformers builds the two shards apart: the BF16 one needs listing, and a given list
  // drops transformers' default "lm_head", so the head is listed too. vLLM stays unloadable.
  const auto [all_code, all_out] = run_qpatch({});
  EXPECT_EQ(all_code, 1);
  EXPECT_EQ(all_out,
            "DIR: fp8, judged for vLLM (main, 2026-08-17) and transformers (no one release: files "
            "of several commits)\n"
            "  not fixable model.layers.0.linear_attn: 2 modules are shards of "
            "model.layers.0.linear_attn.in_proj_ba but stored partly quantized, partly dense: "
            "vLLM builds one layer for them, so no config can load it [vllm]\n"
            "  breaks      vLLM: start-up fails while building the fused layer (its shards must "
            "agree)\n"
            "  fixed       model.layers.0.linear_attn.in_proj_b: 1 module stored BF16 but "
            "quantized by fp8 (not in modules_to_not_convert) [transformers]\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  patched     config.json +2: model.layers.0.linear_attn.in_proj_b, lm_head\n"
            "  backup      config.json.bak\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR model.layers.0.linear_attn.in_proj_b\n");
}

TEST_F(VllmRulesTest, AwqAndModelOptShardsStoredDifferentlyAreReported) {
  // vLLM's ModelOpt rules (SGLang's: skip_list_rules.cpp, tools/sglang_diff). transformers,
  // named, refuses every ModelOpt config: judged in transformers_diff_regressions_test.cpp.
  m_engine = "vllm@main";
  write_split_gdn(skip_config("awq", "    \"modules_to_not_convert\": [\"lm_head\"],\n"),
                  awq_module);
  auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: awq, judged for vLLM (main, 2026-08-17)\n"
      "  lint        modules_to_not_convert: 1 entry; 1 dead (no verdict changes without them, in "
      "any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense by "
      "them); qpatch --prune DIR removes the dead and duplicate ones\n"
      "  not fixable model.layers.0.linear_attn: 2 modules are shards of "
      "model.layers.0.linear_attn.in_proj_ba but stored partly quantized, partly dense: vLLM "
      "builds one layer for them, so no config can load it\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.layers.0.linear_attn.in_proj_b\n");
  write_split_gdn(
      skip_config("modelopt", "    \"ignore\": [\"lm_head\"],\n    \"quant_algo\": \"FP8\",\n"),
      fp8_module);
  std::tie(code, out) = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: modelopt, judged for vLLM (main, 2026-08-17)\n"
      "  not fixable model.layers.0.linear_attn: 2 modules are shards of "
      "model.layers.0.linear_attn.in_proj_ba but stored partly quantized, partly dense: vLLM "
      "builds one layer for them, so no config can load it\n"
      "  breaks      vLLM: start-up fails while building the fused layer (its shards must agree)\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.layers.0.linear_attn.in_proj_b\n");
}

// Issue #11 item 10: vLLM builds the Qwen3.5 VLM's head as language_model.lm_head, and a dotless
// ignore entry "lm_head" is never renamed (compressed_tensors.py apply_vllm_mapper), so a
// target re:.*lm_head$ quantizes the BF16 head. The fix writes the name vLLM asks about.
TEST_F(VllmRulesTest, CompressedTensorsVlmHeadIsLanguageModelLmHead) {
  test::write_mini(dir(),
                   {Head::packed,
                    HeadFile::indexed_shard,
                    test::ct_config_json(R"(["lm_head"])",
                                         R"(["Linear", "re:.*lm_head$"])",
                                         "Qwen3_5ForConditionalGeneration"),
                    Packing::compressed_tensors});
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: compressed-tensors, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears ct-pack-quantized, 4 norms in model_extra_tensors.safetensors "
            "(mtp_num_hidden_layers: 1)\n"
            "  fixable     lm_head: 1 module stored BF16 but quantized by target \"re:.*lm_head$\" "
            "(group_0); ignore lists their checkpoint names, but vLLM matches its own layer names, "
            "which differ (explain shows them)\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'lm_head.weight' in ...\"\n"
            "  would patch config.json +1: language_model.lm_head\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  const test::CliOutcome explained =
      test::run_cli({"explain", "DIR", "lm_head", "--engine", "vllm@main"}, dir());
  EXPECT_EQ(explained.code, 1);
  EXPECT_EQ(explained.out + explained.err,
            "lm_head\n"
            "  stored       dense BF16 [256, 64] in model-00001-of-00001.safetensors\n"
            "  layer        language_model.lm_head (ParallelLMHead), renamed from lm_head\n"
            "  config       config.json /quantization_config (compressed-tensors), judged as "
            "vllm main 017e9f4 (2026-08-17) loads it\n"
            "  ignore       1 entries checked, none matches language_model.lm_head\n"
            "  target       group_0 \"Linear\" does not match\n"
            "  target       group_0 \"re:.*lm_head$\" matches by name\n"
            "  verdict      quantized (target_name, group_0)\n"
            "  on disk      dense (BF16)\n"
            "  status       inconsistent for vllm: run `qpatch --dry-run DIR` to see the fix\n");
  const std::string before = read("config.json");
  EXPECT_EQ(run_qpatch({"-q", "--engine", "vllm@main"}).first, 0);
  std::string expected = before;
  const std::string old_list = "\"ignore\": [\"lm_head\"]";
  expected.replace(expected.find(old_list),
                   old_list.size(),
                   "\"ignore\": [\"lm_head\", \"language_model.lm_head\"]");
  EXPECT_EQ(read("config.json"), expected);
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

// Issue #11 item 11: Qwen3_5Model builds VocabParallelEmbedding without a quant config, so a
// target naming embed_tokens never reaches it in vLLM (transformers' library does quantize it).
TEST_F(VllmRulesTest, Qwen35EmbeddingIsBuiltWithoutAQuantConfig) {
  test::write_mini(dir(),
                   {Head::packed,
                    HeadFile::indexed_shard,
                    test::ct_config_json(R"(["lm_head"])", R"(["Linear", "re:.*embed_tokens"])"),
                    Packing::compressed_tensors});
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
  const test::CliOutcome explained = test::run_cli(
      {"explain", "DIR", "model.language_model.embed_tokens", "--engine", "vllm@main"}, dir());
  EXPECT_EQ(explained.code, 0);
  EXPECT_EQ(explained.out + explained.err,
            "model.language_model.embed_tokens\n"
            "  stored       dense BF16 [256, 64] in model-00001-of-00001.safetensors\n"
            "  layer        model.embed_tokens (VocabParallelEmbedding), renamed from "
            "model.language_model.embed_tokens\n"
            "  config       config.json /quantization_config (compressed-tensors), judged as "
            "vllm main 017e9f4 (2026-08-17) loads it\n"
            "  built        without a quant config: dense whatever the config says\n"
            "  on disk      dense (BF16)\n"
            "  status       consistent: every engine builds what is stored\n");
  // transformers' compressed-tensors library does quantize an nn.Embedding a target names.
  const auto [code, out] = run_qpatch({"--check", "--engine", "transformers"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: compressed-tensors, judged for transformers (no one release: files of several "
            "commits)\n"
            "  mtp head    8 linears ct-pack-quantized, 4 norms in model_extra_tensors.safetensors "
            "(mtp_num_hidden_layers: 1)\n"
            "  fixable     model.language_model.embed_tokens: 1 module stored BF16 but quantized "
            "by target \"re:.*embed_tokens\" (group_0); not in ignore\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  would patch config.json +1: model.language_model.embed_tokens\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
}

// Issue #11 item 12: `ignored_layers: []` reads as no list in vLLM, so the fix creates
// modules_to_not_convert; the sidecar, which reads the same, gets the same list. transformers
// reads the [] as a given list (ignored_layers, modules_to_not_convert being None), which drops
// its default "lm_head": the BF16 head would be built FP8, so the list gains it (issue 22 #8).
TEST_F(VllmRulesTest, Fp8EmptyIgnoredLayersSidecarGetsTheSameList) {
  // SGLang reads the empty ignored_layers itself (the first key present): judged in
  // sglang_diff_regressions_test.cpp.
  m_engine = "vllm@main,transformers";
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    skip_config("fp8", "    \"ignored_layers\": [],\n"),
                    Packing::fp8});
  const std::string sidecar = "{\n  \"ignored_layers\": [],\n  \"quant_method\": \"fp8\"\n}\n";
  write("quantization_config.json", sidecar);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: fp8, judged for vLLM (main, 2026-08-17) and transformers (no one release: files "
            "of several commits)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  fixable     lm_head: 1 module stored BF16 but quantized by fp8 (not in "
            "ignored_layers) [transformers]\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  fixable     mtp: 8 modules stored BF16 but quantized by fp8 (not in "
            "modules_to_not_convert) [vllm]\n"
            "  breaks      vLLM: loads without an error: the stored BF16 weight of mtp.fc is cast "
            "into its FP8 `weight` parameter and the weight scale is never loaded, so the layer "
            "computes garbage and the draft's acceptance collapses\n"
            "  would patch config.json +9: lm_head, mtp.fc, mtp.layers.0.self_attn.q_proj, "
            "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
            "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
            "mtp.layers.0.mlp.down_proj\n"
            "  would patch quantization_config.json +9: lm_head, mtp.fc, "
            "mtp.layers.0.self_attn.q_proj, "
            "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
            "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
            "mtp.layers.0.mlp.down_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const std::string names =
      R"(["lm_head","mtp.fc","mtp.layers.0.self_attn.q_proj","mtp.layers.0.self_attn.k_proj",)"
      R"("mtp.layers.0.self_attn.v_proj","mtp.layers.0.self_attn.o_proj",)"
      R"("mtp.layers.0.mlp.gate_proj","mtp.layers.0.mlp.up_proj","mtp.layers.0.mlp.down_proj"])";
  EXPECT_EQ(list("modules_to_not_convert"), names);
  EXPECT_EQ(read("quantization_config.json"),
            "{\n  \"ignored_layers\": [],\n  \"quant_method\": \"fp8\",\n"
            "  \"modules_to_not_convert\": [\n    \"lm_head\",\n    \"mtp.fc\",\n"
            "    \"mtp.layers.0.self_attn.q_proj\",\n    \"mtp.layers.0.self_attn.k_proj\",\n"
            "    \"mtp.layers.0.self_attn.v_proj\",\n    \"mtp.layers.0.self_attn.o_proj\",\n"
            "    \"mtp.layers.0.mlp.gate_proj\",\n    \"mtp.layers.0.mlp.up_proj\",\n"
            "    \"mtp.layers.0.mlp.down_proj\"\n  ]\n}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
  // A sidecar left behind (config.json already patched) is reported and brought in step.
  write("quantization_config.json", sidecar);
  const auto [stale_code, stale_out] = run_qpatch({"--check"});
  EXPECT_EQ(stale_code, 1);
  EXPECT_EQ(stale_out,
            "DIR: fp8, judged for vLLM (main, 2026-08-17) and transformers (no one release: files "
            "of several commits)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  fixable     quantization_config.json: has no modules_to_not_convert list, "
            "config.json's has 9 entries (vLLM reads config.json)\n"
            "  would patch quantization_config.json +9: lm_head, mtp.fc, "
            "mtp.layers.0.self_attn.q_proj, "
            "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
            "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
            "mtp.layers.0.mlp.down_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("modules_to_not_convert", "quantization_config.json"), names);
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// auto_awq.py AutoAWQConfig.maybe_update_config derives an empty list from the headers, as an
// absent one (it tests truthiness).
TEST_F(VllmRulesTest, AwqEmptyListIsDerived) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    skip_config("awq", "    \"modules_to_not_convert\": [],\n"),
                    Packing::awq});
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out,
            "DIR: awq, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  status      clean\n");
}

// auto_awq.py AutoAWQConfig.get_quant_method: with `lm_head: true` the ParallelLMHead is
// quantized unless an entry is a substring of its name; "lm_head" reaches the VLM's
// language_model.lm_head, so that is all the fix writes.
TEST_F(VllmRulesTest, AwqLmHeadFlagQuantizesTheHead) {
  test::write_mini(
      dir(),
      {Head::packed,
       HeadFile::indexed_shard,
       skip_config("awq",
                   "    \"lm_head\": true,\n    \"modules_to_not_convert\": [\"visual\"],\n",
                   "Qwen3_5ForConditionalGeneration"),
       Packing::awq});
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: awq, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears awq, 4 norms in model_extra_tensors.safetensors\n"
            "  lint        modules_to_not_convert: 1 entry; 1 dead (no verdict changes without "
            "them, in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is "
            "built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n"
            "  fixable     lm_head: 1 module stored BF16 but quantized by awq (not in "
            "modules_to_not_convert)\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'lm_head.weight' in ...\"\n"
            "  would patch config.json +1: lm_head\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q", "--engine", "vllm@main"}).first, 0);
  EXPECT_EQ(list("modules_to_not_convert"), R"(["visual","lm_head"])");
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

// modelopt.py get_quant_method quantizes a ParallelLMHead like a Linear; is_layer_excluded
// tests a fused layer's shards exactly, then entries as substrings of the fused name ("v_proj"
// is part of "qkv_proj"), then globs.
TEST_F(VllmRulesTest, ModelOptHeadAndFusedSubstring) {
  // vLLM's ModelOpt rules (SGLang's: skip_list_rules.cpp, tools/sglang_diff). transformers,
  // named, refuses every ModelOpt config: judged in transformers_diff_regressions_test.cpp.
  m_engine = "vllm@main";
  test::write_mini(
      dir(),
      {Head::packed,
       HeadFile::indexed_shard,
       skip_config("modelopt", "    \"ignore\": [\"v_proj\"],\n    \"quant_algo\": \"FP8\",\n"),
       Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: modelopt, judged for vLLM (main, 2026-08-17)\n"
      "  mtp head    8 linears fp8-block, 4 norms in model_extra_tensors.safetensors\n"
      "  fixable     m: 6 modules stored fp8-block but made dense by ignore entry \"v_proj\"\n"
      "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter named "
      "'model.language_model.layers.0.self_attn.q_proj.weight_scale' in ...\"\n"
      "  fixable     lm_head: 1 module stored BF16 but quantized by modelopt (not in ignore)\n"
      "  breaks      vLLM: loads without an error: the stored BF16 weight of lm_head is cast "
      "into its FP8 `weight` parameter and the weight scale is never loaded, so the layer "
      "computes garbage\n"
      "  would patch config.json +1: lm_head; -1: v_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("ignore"), R"(["lm_head"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// ModelOptQuantConfigBase.apply_vllm_mapper splits "lm_head*" into "lm_head" and "lm_head.*"
// for a model class with a mapper: the substring "lm_head" then covers language_model.lm_head,
// which the glob alone does not.
TEST(ModelOptExclusion, GlobSplitReachesTheVlmHead) {
  const engine::ModelInfo vlm = engine::model_info_for("Qwen3_5ForConditionalGeneration");
  engine::Layer head;
  head.kind = engine::LayerKind::lm_head;
  head.name = "lm_head";
  head.prefix = vlm.layer_prefix("lm_head");
  head.cls = "ParallelLMHead";
  EXPECT_EQ(head.prefix, "language_model.lm_head");
  const engine::SkipListRules split(engine::SkipListMethod::modelopt, {"lm_head*"}, vlm);
  EXPECT_EQ(split.decide(head).verdict, engine::Verdict::dense);
  EXPECT_EQ(split.decide(head).ignore_index, std::optional<size_t>(0));
  const engine::ModelInfo next = engine::model_info_for("Qwen3NextForCausalLM");
  head.prefix = "language_model.lm_head"; // no mapper: the glob is matched as written
  const engine::SkipListRules glob(engine::SkipListMethod::modelopt, {"lm_head*"}, next);
  EXPECT_EQ(glob.decide(head).verdict, engine::Verdict::quantized);
}

// fp8.py is_layer_skipped, exact mode: a name holding "experts" that is not fused (DeepSeek's
// shared_experts.down_proj) is skipped when it is part of an entry holding "experts".
TEST(Fp8ExpertsRule, AppliesToLinearsHoldingExperts) {
  const engine::ModelInfo model = engine::model_info_for("DeepseekV3ForCausalLM");
  engine::Layer linear;
  linear.name = linear.prefix = "model.layers.3.mlp.shared_experts.down_proj";
  linear.cls = "RowParallelLinear";
  const engine::SkipListRules list(
      engine::SkipListMethod::fp8, {"model.layers.3.mlp.shared_experts.down_proj.weight"}, model);
  EXPECT_EQ(list.decide(linear).verdict, engine::Verdict::dense);
}

} // namespace
} // namespace qpatch::cli
