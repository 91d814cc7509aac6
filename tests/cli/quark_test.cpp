// SPDX-License-Identifier: Apache-2.0
// A Quark FP8 checkpoint (quant_method "quark", `exclude`) whose BF16 MTP head the list does
// not name, as amd/Qwen3.5-397B-A17B-MXFP4-AttnFP8-V2 ships it (none of its 172 entries
// mentions mtp): judged by vLLM's rules, patched in Quark's own language (exact names, a fused
// layer through its shards), clean after; SGLang and transformers are said not to be judged.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;

// Quark's export: global_quant_config FP8 per tensor, lm_head excluded (the exporter's default).
std::string quark_config(const std::string& exclude) {
  return "{\n  \"architectures\": [\n    \"Qwen3_5ForCausalLM\"\n  ],\n"
         "  \"quantization_config\": {\n"
         "    \"exclude\": [\n" +
         exclude +
         "\n    ],\n"
         "    \"export\": {\n      \"kv_cache_group\": [],\n      \"pack_method\": \"reorder\",\n"
         "      \"weight_format\": \"real_quantized\"\n    },\n"
         "    \"global_quant_config\": {\n"
         "      \"input_tensors\": {\n        \"dtype\": \"fp8_e4m3\",\n"
         "        \"is_dynamic\": false,\n        \"qscheme\": \"per_tensor\"\n      },\n"
         "      \"weight\": {\n        \"dtype\": \"fp8_e4m3\",\n"
         "        \"is_dynamic\": false,\n        \"qscheme\": \"per_tensor\"\n      }\n"
         "    },\n"
         "    \"layer_quant_config\": {},\n"
         "    \"layer_type_quant_config\": {},\n"
         "    \"quant_method\": \"quark\"\n  }\n}\n";
}

class QuarkTest : public test::CheckpointCliTest {
public:
  QuarkTest() { m_engine = "vllm@main"; }
};

TEST_F(QuarkTest, DenseMtpHeadIsAddedToExcludeAndIsCleanAfter) {
  test::write_mini(
      dir(),
      {Head::dense, HeadFile::indexed_shard, quark_config("      \"lm_head\""), Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: quark, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  lint        exclude: 1 entry; 1 dead (no verdict changes without them, in any "
            "version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense "
            "by them); qpatch --prune DIR removes the dead and duplicate ones\n"
            "  fixable     mtp: 8 modules stored BF16 but quantized by quark (not in exclude)\n"
            "  breaks      vLLM: loads without an error: the stored BF16 weight of mtp.fc is cast "
            "into its FP8 `weight` parameter and the weight scale is never loaded, so the layer "
            "computes garbage and the draft's acceptance collapses\n"
            "  would patch config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, "
            "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj, "
            "mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, mtp.layers.0.mlp.up_proj, "
            "mtp.layers.0.mlp.down_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  // The shards of the fused qkv_proj and gate_up_proj by name (vLLM tests those, never the
  // fused name), appended after the exporter's entry.
  EXPECT_EQ(
      nlohmann::ordered_json::parse(read("config.json"))["quantization_config"]["exclude"].dump(),
      "[\"lm_head\",\"mtp.fc\",\"mtp.layers.0.self_attn.q_proj\","
      "\"mtp.layers.0.self_attn.k_proj\",\"mtp.layers.0.self_attn.v_proj\","
      "\"mtp.layers.0.self_attn.o_proj\",\"mtp.layers.0.mlp.gate_proj\","
      "\"mtp.layers.0.mlp.up_proj\",\"mtp.layers.0.mlp.down_proj\"]");
  const auto [after, text] = run_qpatch({"--check"});
  EXPECT_EQ(after, 0) << text;
}

// Listing the fused name, as a person reading vLLM's module tree would, excludes nothing there
// (vLLM #54547): the head stays a finding, and the patch adds the shard names.
TEST_F(QuarkTest, AFusedNameInExcludeIsNotEnough) {
  test::write_mini(
      dir(),
      {Head::dense,
       HeadFile::indexed_shard,
       quark_config(
           "      \"lm_head\",\n      \"re:mtp\\\\.fc\",\n"
           "      \"mtp.layers.0.self_attn.qkv_proj\",\n"
           "      \"re:mtp\\\\.layers\\\\.0\\\\.(self_attn\\\\.o|mlp\\\\.[a-z_]+)_proj$\""),
       Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: quark, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
            "  lint        exclude: 4 entries; 2 dead (no verdict changes without them, in any "
            "version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense "
            "by them); qpatch --prune DIR removes the dead and duplicate ones\n"
            "  fixable     mtp.layers.0.self_attn: 3 modules stored BF16 but quantized by quark "
            "(not in exclude)\n"
            "  breaks      vLLM: loads without an error: the stored BF16 weight of "
            "mtp.layers.0.self_attn.q_proj is cast into its FP8 `weight` parameter and the weight "
            "scale is never loaded, so the layer computes garbage and the draft's acceptance "
            "collapses\n"
            "  would patch config.json +3: mtp.layers.0.self_attn.q_proj, "
            "mtp.layers.0.self_attn.k_proj, mtp.layers.0.self_attn.v_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto [after, text] = run_qpatch({"--check"});
  EXPECT_EQ(after, 0) << text;
}

// By default every engine is asked for, and each judges Quark by its own loader: SGLang's
// (quark/utils.py @382abd60, exact names, fused layers through the quant config's mapping) and
// transformers' (amd-quark's fnmatch over the module names). One patch serves all three.
TEST_F(QuarkTest, EveryEngineJudgesTheHeadAndOnePatchServesThemAll) {
  m_engine = "all";
  test::write_mini(
      dir(),
      {Head::dense, HeadFile::indexed_shard, quark_config("      \"lm_head\""), Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for vLLM (main 2026-07-29..2026-08-17), SGLang (main "
      "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n  mtp "
      "head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n  note        SGLang: "
      "no naming table for Qwen3_5ForCausalLM; judged under assumed names (the checkpoint's, q/k/v "
      "and gate/up fused and judged through their shards)\n  fixable     mtp: 8 modules stored "
      "BF16 but quantized by quark (not in exclude) [vllm, sglang]\n  breaks      vLLM: loads "
      "without an error: the stored BF16 weight of mtp.fc is cast into its FP8 `weight` parameter "
      "and the weight scale is never loaded, so the layer computes garbage and the draft's "
      "acceptance collapses; SGLang: loads, and drops the stored weights silently\n  would patch "
      "config.json +8: mtp.fc, mtp.layers.0.self_attn.q_proj, mtp.layers.0.self_attn.k_proj, "
      "mtp.layers.0.self_attn.v_proj, mtp.layers.0.self_attn.o_proj, mtp.layers.0.mlp.gate_proj, "
      "mtp.layers.0.mlp.up_proj, mtp.layers.0.mlp.down_proj\n  status      needs-patch\n  apply    "
      "   qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(
      nlohmann::ordered_json::parse(read("config.json"))["quantization_config"]["exclude"].dump(),
      "[\"lm_head\",\"mtp.fc\",\"mtp.layers.0.self_attn.q_proj\",\"mtp.layers.0.self_attn.k_proj\","
      "\"mtp.layers.0.self_attn.v_proj\",\"mtp.layers.0.self_attn.o_proj\",\"mtp.layers.0.mlp.gate_"
      "proj\",\"mtp.layers.0.mlp.up_proj\",\"mtp.layers.0.mlp.down_proj\"]");
  const auto [after, text] = run_qpatch({"--check"});
  EXPECT_EQ(after, 0) << text;
  expect_rerun_writes_nothing({}, 0);
}

// transformers hands the whole config to amd-quark's Config.from_dict, which indexes
// layer_type_quant_config (and the three other keys) directly: a config without it never loads
// there, and no edit of `exclude` helps.
TEST_F(QuarkTest, TransformersRefusesAConfigWithoutLayerTypeQuantConfig) {
  m_engine = "transformers";
  std::string config = quark_config("      \"lm_head\"");
  config.erase(config.find("    \"layer_type_quant_config\": {},\n"),
               std::string("    \"layer_type_quant_config\": {},\n").size());
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, config, Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for transformers (no one release: files of several commits)\n  mtp head  "
      "  8 linears BF16, 4 norms in model_extra_tensors.safetensors\n  not fixable config.json "
      "/quantization_config: transformers refuses this quantization config before it builds any "
      "layer: KeyError: 'layer_type_quant_config'\n  status      unfixable\n");
}

// transformers' Quark quantizes lm_head like any nn.Linear unless an exclude glob names it
// (no default skip, unlike its AWQ and FP8): a BF16 head with no "lm_head" entry is a finding
// there only, and "*" globs are read as fnmatch reads them.
TEST_F(QuarkTest, TransformersQuantizesLmHeadUnlessAGlobExcludesIt) {
  m_engine = "transformers";
  test::write_mini(
      dir(), {Head::dense, HeadFile::indexed_shard, quark_config("      \"mtp.*\""), Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for transformers (no one release: files of several commits)\n  mtp head  "
      "  8 linears BF16, 4 norms in model_extra_tensors.safetensors\n  lint        exclude: 1 "
      "entry; 1 dead (no verdict changes without them, in any version judged), 0 duplicates, 0 "
      "over-broad (a layer stored quantized is built dense by them); qpatch --prune DIR removes "
      "the dead and duplicate ones\n  fixable     lm_head: 1 module stored BF16 but quantized by "
      "quark (not in exclude)\n  breaks      transformers: loads with \"Some weights ... were not "
      "used\" and initialises the layer at random\n  would patch config.json +1: lm_head\n  status "
      "     needs-patch\n  apply       qpatch DIR\n");
}

// SGLang's draft gate (#23146) the other way, as AMD's partial-MTP exports hit it
// (sgl-project/sglang#38870, #40597): the draft's layers stored FP8, its fc BF16 and listed.
// vLLM builds each as stored; SGLang from 2026-04-20 reads the "mtp." entry as "the draft is
// BF16" and builds every draft layer dense. Unlisting mtp.fc would break vLLM instead, so no
// patch serves both: nothing is written.
TEST_F(QuarkTest, OneMtpEntryBuildsAQuantizedDraftDenseInSglang) {
  m_engine = "vllm,sglang";
  std::vector<synth::TensorSpec> tensors = {{"lm_head.weight", "BF16", {256, 64}},
                                            {"mtp.fc.weight", "BF16", {64, 128}}};
  for (const std::string module : {"model.language_model.layers.0.mlp.down_proj",
                                   "mtp.layers.0.self_attn.o_proj",
                                   "mtp.layers.0.mlp.down_proj"}) {
    tensors.push_back({module + ".weight", "F8_E4M3", {64, 64}});
    tensors.push_back({module + ".weight_scale", "F32", {}});
    tensors.push_back({module + ".input_scale", "F32", {}});
  }
  std::string config = quark_config("      \"lm_head\",\n      \"mtp.fc\"");
  config.replace(config.find("Qwen3_5ForCausalLM"),
                 std::string("Qwen3_5ForCausalLM").size(),
                 "Qwen3_5ForConditionalGeneration");
  synth::CheckpointSpec spec;
  spec.config_json = config;
  spec.shards.push_back({"model.safetensors", tensors, true});
  ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for vLLM (main 2026-02-28..2026-08-17) and SGLang (main "
      "2026-02-09..2026-08-31)\n  mtp head    1 linear BF16, 2 linears fp8 in model.safetensors\n" +
          std::string(test::k_sglang_qwen35_assumed_note) +
          "  note        SGLang main 2026-02-26..2026-04-27: judged with the CUDA build: from "
          "2026-03-30 (#21234) on gfx95 and from 2026-04-08 (#21692) on NPU too, the Qwen3.5 "
          "classes have no mapper and declare the packed mapping, as #23471 (2026-04-28) made "
          "them everywhere\n  note        some versions judged cannot load this "
          "checkpoint whatever the config says (the findings marked \"only\" say which); the patch "
          "satisfies the others; --engine ENGINE@REF (main, YYYY-MM-DD, a release) judges the "
          "version "
          "you run alone\n  lint        exclude: 2 entries; 1 dead (no verdict changes without "
          "them, "
          "in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built "
          "dense "
          "by them); qpatch --prune DIR removes the dead and duplicate ones\n  not fixable "
          "mtp.layers.0: 2 modules stored fp8 but SGLang builds this layer dense: not fixable by a "
          "config patch (SGLang from 2026-04-20 only) [sglang]\n  breaks      SGLang: loads, and "
          "drops "
          "the stored weights silently\n  status      unfixable\n  why         qpatch explain DIR "
          "mtp.layers.0.self_attn.o_proj\n");
  expect_rerun_writes_nothing({}, 1);
}

// explain reads transformers' Quark as amd-quark does: one glob over the module's whole name.
TEST_F(QuarkTest, ExplainShowsTheGlobTransformersMatches) {
  test::write_mini(
      dir(),
      {Head::dense, HeadFile::indexed_shard, quark_config("      \"lm_hea?\""), Packing::fp8});
  const test::CliOutcome explained =
      test::run_cli({"explain", "--engine", "transformers", "DIR", "lm_head"}, dir());
  EXPECT_EQ(explained.code, 0);
  EXPECT_EQ(explained.out + explained.err,
            "lm_head\n  stored       dense BF16 [256, 64] in model-00001-of-00001.safetensors\n  "
            "layer        lm_head (ParallelLMHead)\n  config       config.json "
            "/quantization_config (quark), judged as transformers quantizer_quark.py 10cc83c + "
            "amd-quark 0.12 quant_config_parser.py (fnmatch) loads it\n  exclude[0]   \"lm_hea?\" "
            "fnmatch-es lm_head\n  verdict      dense (ignore_entry)\n  on disk      dense "
            "(BF16)\n  status       consistent: every engine builds what is stored\n");
}

// quark/utils.py check_equal_or_regex_match (vLLM 017e9f4) is any() over the targets in order:
// a "re:" target that does not compile raises re.error for every layer no earlier target
// matched. It used to be taken as matching nothing, and the checkpoint reported loadable.
TEST_F(QuarkTest, ARegexThatDoesNotCompileRaisesForTheLayersThatReachIt) {
  test::write_mini(dir(),
                   {Head::packed,
                    HeadFile::indexed_shard,
                    quark_config("      \"lm_head\",\n      \"re:mtp.*\",\n      \"re:model.(\""),
                    Packing::fp8});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: quark, judged for vLLM (main, 2026-08-17)\n  mtp head    8 linears fp8-block, 4 norms "
      "in model_extra_tensors.safetensors\n  lint        exclude: 3 entries; 1 dead (no verdict "
      "changes without them, in any version judged), 0 duplicates, 1 over-broad (a layer stored "
      "quantized is built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n "
      " not fixable model.language_model.layers.0: 7 modules reach an exclude entry that is no "
      "Python regex before any entry matches them: vLLM raises while it builds the model: "
      "re.error: exclude entry \"re:model.(\" is not a Python regex (cannot compile at character "
      "7: missing closing parenthesis)\n  not fixable mtp: 8 modules stored fp8-block but made "
      "dense by exclude entry \"re:mtp.*\"\n  breaks      vLLM: start-up fails once speculative "
      "decoding loads the MTP head: \"ValueError: There is no module or parameter named "
      "'fc.weight_scale' in ...\"\n  status      unfixable\n  why         qpatch explain DIR "
      "model.language_model.layers.0.self_attn.q_proj\n");
}

} // namespace
} // namespace qpatch::cli
