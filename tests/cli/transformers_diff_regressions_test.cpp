// SPDX-License-Identifier: Apache-2.0
// Disagreements between qpatch and transformers' own quantizers (tools/transformers_diff
// executes them; issue 22), each as its minimal case on a Qwen3.5 VLM: one AWQ or bitsandbytes
// projection, a vision linear and lm_head stored BF16, and an MTP head transformers never loads.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qpatch::cli {
namespace {

using synth::TensorSpec;

class TransformersDiffRegressionTest : public test::CheckpointCliTest {
public:
  TransformersDiffRegressionTest() { m_engine = "transformers"; }

protected:
  void write(const std::string& quantization_config, bool bnb = false) {
    std::vector<TensorSpec> tensors = {{"lm_head.weight", "BF16", {256, 64}},
                                       {"model.visual.blocks.0.attn.qkv.weight", "BF16", {192, 64}},
                                       {"mtp.fc.weight", "BF16", {64, 128}}};
    const std::string module = "model.language_model.layers.0.mlp.down_proj";
    if (bnb) {
      tensors.push_back({module + ".weight", "U8", {2048, 1}});
      tensors.push_back({module + ".weight.absmax", "F32", {64}});
      tensors.push_back({module + ".weight.quant_map", "F32", {16}});
      tensors.push_back({module + ".weight.quant_state.bitsandbytes__nf4", "U8", {64}});
    } else {
      tensors.push_back({module + ".qweight", "I32", {64, 8}});
      tensors.push_back({module + ".qzeros", "I32", {2, 8}});
      tensors.push_back({module + ".scales", "F16", {2, 64}});
    }
    synth::CheckpointSpec spec;
    spec.config_json = "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
                       "  \"quantization_config\": " +
                       quantization_config + "\n}\n";
    spec.shards.push_back({"model.safetensors", tensors, true});
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
  // GPTQ: mlp.down_proj packed, linear_attn.in_proj_a kept BF16 (as GPTQModel exports leave
  // the GDN gates), beside the BF16 vision linear, head and MTP head.
  void write_gptq(const std::string& quantization_config) {
    const std::string packed = "model.language_model.layers.0.mlp.down_proj";
    std::vector<TensorSpec> tensors = {
        {"lm_head.weight", "BF16", {256, 64}},
        {"model.visual.blocks.0.attn.qkv.weight", "BF16", {192, 64}},
        {"mtp.fc.weight", "BF16", {64, 128}},
        {"model.language_model.layers.0.linear_attn.in_proj_a.weight", "BF16", {16, 64}},
        {packed + ".qweight", "I32", {8, 64}},
        {packed + ".qzeros", "I32", {2, 8}},
        {packed + ".scales", "F16", {2, 64}},
        {packed + ".g_idx", "I32", {64}}};
    synth::CheckpointSpec spec;
    spec.config_json = "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
                       "  \"quantization_config\": " +
                       quantization_config + "\n}\n";
    spec.shards.push_back({"model.safetensors", tensors, true});
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
  // auto-round: mlp.down_proj packed (GPTQ layout), a vision block linear, the merger, lm_head
  // and the MTP head stored BF16.
  void write_auto_round(const std::string& quantization_config) {
    const std::string packed = "model.language_model.layers.0.mlp.down_proj";
    std::vector<TensorSpec> tensors = {{"lm_head.weight", "BF16", {256, 64}},
                                       {"model.visual.blocks.0.attn.qkv.weight", "BF16", {192, 64}},
                                       {"model.visual.merger.linear_fc1.weight", "BF16", {64, 64}},
                                       {"mtp.fc.weight", "BF16", {64, 128}},
                                       {packed + ".qweight", "I32", {8, 64}},
                                       {packed + ".qzeros", "I32", {2, 8}},
                                       {packed + ".scales", "F16", {2, 64}},
                                       {packed + ".g_idx", "I32", {64}}};
    synth::CheckpointSpec spec;
    spec.config_json = "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
                       "  \"quantization_config\": " +
                       quantization_config + "\n}\n";
    spec.shards.push_back({"model.safetensors", tensors, true});
    ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  }
  std::string list(const char* key) {
    return nlohmann::ordered_json::parse(read("config.json"))["quantization_config"][key].dump();
  }
};

// AWQ: transformers derives no list from the headers and matches entries by
// should_convert_module (re.match at the start, or endswith): "visual.blocks" skips nothing
// (the name starts with "model."), so the BF16 vision linear is built AWQ; lm_head is always
// skipped, and the MTP head is never loaded (no finding for mtp.fc).
TEST_F(TransformersDiffRegressionTest, AwqMatchesFromTheStartAndAlwaysSkipsTheHead) {
  write(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true,
    "modules_to_not_convert": ["visual.blocks"]})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: awq, judged for transformers (no one release: files of several commits)\n"
      "  mtp head    1 linear BF16 in model.safetensors\n"
      "  lint        modules_to_not_convert: 1 entry; 1 dead (no verdict changes without them, in "
      "any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense by "
      "them); qpatch --prune DIR removes the dead and duplicate ones\n"
      "  fixable     model.visual.blocks.0.attn.qkv: 1 module stored BF16 but quantized by "
      "awq (not in modules_to_not_convert)\n"
      "  breaks      transformers: loads with \"Some weights ... were not used\" and initialises "
      "the layer at random\n"
      "  would patch config.json +1: model.visual.blocks.0.attn.qkv\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("modules_to_not_convert"),
            R"(["visual.blocks","model.visual.blocks.0.attn.qkv"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// A glob is no Python regex: re.match raises while the model is prepared.
TEST_F(TransformersDiffRegressionTest, AwqGlobEntryRefusesTheConfig) {
  write(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true,
    "modules_to_not_convert": ["*mtp*", "model.visual"]})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: awq, judged for transformers (no one release: files of several commits)\n"
      "  mtp head    1 linear BF16 in model.safetensors\n"
      "  not fixable config.json /quantization_config: transformers refuses this quantization "
      "config before it builds any layer: re.error: modules_to_not_convert entry \"*mtp*\" is "
      "not a Python regex (cannot compile at character 0: quantifier does not follow a "
      "repeatable item)\n"
      "  status      unfixable\n");
}

// bitsandbytes: a given llm_int8_skip_modules is the whole list (no default lm_head), matched
// on checkpoint names: [] quantizes the BF16 head; "model.visual" (entry + "." contained)
// keeps the vision tower dense.
TEST_F(TransformersDiffRegressionTest, BitsandbytesGivenListDropsTheDefaultHead) {
  write(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
    "bnb_4bit_quant_type": "nf4", "llm_int8_skip_modules": ["model.visual"]})",
        true);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: bitsandbytes, judged for transformers (no one release: files of several commits)\n"
      "  mtp head    1 linear BF16 in model.safetensors\n"
      "  fixable     lm_head: 1 module stored BF16 but quantized by bitsandbytes (not in "
      "llm_int8_skip_modules)\n"
      "  breaks      transformers: loads with \"Some weights ... were not used\" and initialises "
      "the layer at random\n"
      "  would patch config.json +1: lm_head\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("llm_int8_skip_modules"), R"(["model.visual","lm_head"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// Fine-grained FP8: modules_to_not_convert is the list whenever it is not None (even []), and
// ignored_layers, which vLLM reads first, only otherwise; a given list drops the default
// "lm_head". The patch makes the two lists one.
TEST_F(TransformersDiffRegressionTest, Fp8ReadsModulesToNotConvertBeforeIgnoredLayers) {
  write(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
    "weight_block_size": [128, 128], "modules_to_not_convert": [],
    "ignored_layers": ["model.visual.blocks.0.attn.qkv", "lm_head"]})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: fp8, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  fixable     2 modules stored BF16 but quantized by fp8 (not in "
            "modules_to_not_convert)\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  would patch config.json +2: lm_head, model.visual.blocks.0.attn.qkv\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("modules_to_not_convert"), R"(["lm_head","model.visual.blocks.0.attn.qkv"])");
  EXPECT_EQ(list("ignored_layers"), R"(["model.visual.blocks.0.attn.qkv","lm_head"])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// ModelOpt: transformers has no quantizer for it and skips the whole config. Named, it refuses;
// by default it is left out, and said so.
TEST_F(TransformersDiffRegressionTest, ModelOptIsSkippedByTransformers) {
  write(R"({"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head"]})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: modelopt, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  not fixable config.json /quantization_config: transformers refuses this "
            "quantization config before it builds any layer: Unknown quantization type, got "
            "modelopt ... Hence, we will skip the quantization (no ModelOpt quantizer: every "
            "quantized module loads as a plain nn.Linear)\n"
            "  status      unfixable\n");
  m_engine.clear();
  const auto [default_code, default_out] = run_qpatch({"--check"});
  EXPECT_NE(default_out.find("\n  note        transformers: not judged: it has no ModelOpt "
                             "quantizer (quantizers/auto.py 6ed74f1: \"Unknown quantization "
                             "type, got modelopt ... Hence, we will skip the quantization\") and "
                             "loads every quantized module as a plain nn.Linear (--engine "
                             "transformers judges it)\n"),
            std::string::npos)
      << default_out;
  EXPECT_EQ(default_out.find("[transformers]"), std::string::npos) << default_out;
}

// GPTQ through optimum: no list means every Linear of the block (model.language_model.layers,
// the first BLOCK_PATTERNS hit) is quantized, and `dynamic` is never read, so the "-:" rule that
// keeps in_proj_a dense for vLLM does nothing here. The patch writes the list optimum reads.
TEST_F(TransformersDiffRegressionTest, GptqWithoutListQuantizesTheWholeBlock) {
  write_gptq(R"({"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": false,
    "sym": true, "dynamic": {"-:.*in_proj_a": {}}})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: gptq, judged for transformers (no one release: files of several commits)\n  mtp "
            "head    1 linear BF16 in "
            "model.safetensors\n  lint        dynamic: 1 entry; 1 dead (no verdict changes without "
            "them, in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is "
            "built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n  "
            "fixable     model.language_model.layers.0.linear_attn.in_proj_a: 1 module stored BF16 "
            "but transformers (optimum's convert_model) replaces them with QuantLinear: with no "
            "modules_in_block_to_quantize every Linear under model.language_model.layers is "
            "quantized (dynamic is not read)\n  breaks      transformers: loads with \"Some "
            "weights ... were not used\" and initialises the layer at random\n  would patch "
            "config.json +1: mlp.down_proj\n  status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(read("config.json"),
            "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
            "  \"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4, "
            "\"group_size\": 32, \"desc_act\": false,\n"
            "    \"sym\": true, \"dynamic\": {\"-:.*in_proj_a\": {}}, "
            "\"modules_in_block_to_quantize\": [\n"
            "      [\n"
            "        \"mlp.down_proj\"\n"
            "      ]\n"
            "    ]}\n"
            "}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// A flat list is what vLLM flattens happily, but optimum's sum(list, []) raises; [] quantizes
// nothing. Both are written anew as one nested list.
TEST_F(TransformersDiffRegressionTest, GptqFlatListRaisesAndIsNested) {
  write_gptq(R"({"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": false,
    "sym": true, "modules_in_block_to_quantize": ["mlp.down_proj"]})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: gptq, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  fixable     config.json /quantization_config: transformers refuses this "
            "quantization config before it builds any layer: TypeError: can only concatenate "
            "list (not \"str\") to list\n"
            "  would patch config.json\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("modules_in_block_to_quantize"), R"([["mlp.down_proj"]])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

TEST_F(TransformersDiffRegressionTest, GptqEmptyListQuantizesNothing) {
  write_gptq(R"({"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": false,
    "sym": true, "modules_in_block_to_quantize": []})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: gptq, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  fixable     model.language_model.layers.0.mlp.down_proj: 1 module stored gptq but "
            "no entry of modules_in_block_to_quantize ends their names, so transformers builds "
            "them dense\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  would patch config.json +1: mlp.down_proj\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(list("modules_in_block_to_quantize"), R"([["mlp.down_proj"]])");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// auto-round through the auto_round library: with no block list get_block_names makes every
// nn.ModuleList a block, the vision tower's blocks included (the merger is no block, and
// lm_head is skipped by default), so the BF16 vision linear is quantized; vLLM quantizes the
// merger too. The patch names it by its exact name, which every engine reads as dense.
TEST_F(TransformersDiffRegressionTest, AutoRoundWithoutBlockListQuantizesTheVisionBlocks) {
  write_auto_round(R"({"quant_method": "auto-round", "bits": 4, "group_size": 32, "sym": true,
    "packing_format": "auto_round:auto_gptq"})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  fixable     model.visual.blocks.0.attn.qkv: 1 module stored BF16 but transformers "
            "(auto_round's convert_hf_model) quantizes them (every block get_block_names finds, "
            "no block list given); no extra_config key of 16 bits names them\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  would patch config.json +1: model.visual.blocks.0.attn.qkv\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(read("config.json"),
            "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
            "  \"quantization_config\": {\"quant_method\": \"auto-round\", \"bits\": 4, "
            "\"group_size\": 32, \"sym\": true,\n"
            "    \"packing_format\": \"auto_round:auto_gptq\",\n"
            "    \"extra_config\": {\n"
            "      \"model.visual.blocks.0.attn.qkv\": {\"bits\": 16, \"data_type\": \"fp\"}\n"
            "    }}\n"
            "}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// An exact extra_config key naming an nn.Linear joins the layers whatever the block list, its
// dict over the defaults: {} quantizes lm_head (vLLM reads the same key as 16 bits, dense).
// The key is rewritten as the dense entry.
TEST_F(TransformersDiffRegressionTest, AutoRoundExactKeyJoinsTheLayers) {
  write_auto_round(R"({"quant_method": "auto-round", "bits": 4, "group_size": 32, "sym": true,
    "block_name_to_quantize": "model.language_model.layers", "extra_config": {"lm_head": {}}})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  fixable     lm_head: 1 module stored BF16 but transformers (auto_round's "
            "convert_hf_model) quantizes them (extra_config[\"lm_head\"]); no extra_config key "
            "of 16 bits names them\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  would patch config.json +1: lm_head; -1: lm_head\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(read("config.json"),
            "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
            "  \"quantization_config\": {\"quant_method\": \"auto-round\", \"bits\": 4, "
            "\"group_size\": 32, \"sym\": true,\n"
            "    \"block_name_to_quantize\": \"model.language_model.layers\", \"extra_config\": "
            "{\"lm_head\": {\"bits\": 16, \"data_type\": \"fp\"}}}\n"
            "}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// Every key that is not an nn.Linear's name is a regex (_expand_regex_config, re.search, the
// block layers first): the parent "...layers.0.mlp" reaches down_proj and makes it dense (vLLM
// reads it as a literal name that no layer has). The key goes.
TEST_F(TransformersDiffRegressionTest, AutoRoundNonLayerKeyIsARegex) {
  write_auto_round(R"({"quant_method": "auto-round", "bits": 4, "group_size": 32, "sym": true,
    "block_name_to_quantize": "model.language_model.layers",
    "extra_config": {"model.language_model.layers.0.mlp": {"bits": 16, "data_type": "fp"}}})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  fixable     model.language_model.layers.0.mlp.down_proj: 1 module stored gptq but "
            "transformers (auto_round's convert_hf_model) makes them dense by "
            "extra_config[\"model.language_model.layers.0.mlp\"]\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  would patch config.json -1: model.language_model.layers.0.mlp\n"
            "  status      needs-patch\n"
            "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(read("config.json"),
            "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n"
            "  \"quantization_config\": {\"quant_method\": \"auto-round\", \"bits\": 4, "
            "\"group_size\": 32, \"sym\": true,\n"
            "    \"block_name_to_quantize\": \"model.language_model.layers\",\n"
            "    \"extra_config\": {}}\n"
            "}\n");
  EXPECT_EQ(run_qpatch({"--check"}).first, 0);
}

// A packing format no backend of BackendInfos takes refuses the load only when some layer is
// quantized (_replace_by_quant_layers); with a block list that reaches nothing it loads, every
// layer dense. Neither is patched.
TEST_F(TransformersDiffRegressionTest, AutoRoundNoBackendRefusesOnlyAQuantizedLayer) {
  write_auto_round(R"({"quant_method": "auto-round", "bits": 4, "group_size": 32, "sym": true,
    "packing_format": "auto_round:gguf", "block_name_to_quantize": "model.language_model.layers"})");
  const std::string before = read("config.json");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out,
            "DIR: auto-round, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  not fixable config.json /quantization_config: transformers refuses this "
            "quantization config while auto_round converts the model: ValueError: No compatible "
            "backend found for layer model.language_model.layers.0.mlp.down_proj with config "
            "QuantizationScheme(bits=4, group_size=32, sym=True, data_type='int', act_bits=None, "
            "...)\n"
            "  status      unfixable\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 1);
  EXPECT_EQ(read("config.json"), before);
  write_auto_round(R"({"quant_method": "auto-round", "bits": 4, "group_size": 32, "sym": true,
    "packing_format": "auto_round:gguf", "block_name_to_quantize": "mtp.layers"})");
  const auto [code2, out2] = run_qpatch({"--check"});
  EXPECT_EQ(code2, 1);
  EXPECT_EQ(out2,
            "DIR: auto-round, judged for transformers (no one release: files of several commits)\n"
            "  mtp head    1 linear BF16 in model.safetensors\n"
            "  not fixable model.language_model.layers.0.mlp.down_proj: 1 module stored gptq but "
            "transformers (auto_round's convert_hf_model) builds them dense (no "
            "block_name_to_quantize entry starts the name and no extra_config key names it): "
            "not fixable by a config patch\n"
            "  breaks      transformers: loads with \"Some weights ... were not used\" and "
            "initialises the layer at random\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR model.language_model.layers.0.mlp.down_proj\n");
}

// AutoRoundConfig.post_init refuses bits outside [2,3,4,8] before any layer is built.
TEST_F(TransformersDiffRegressionTest, AutoRoundBitsOutsideTheListRefuseTheConfig) {
  write_auto_round(R"({"quant_method": "auto-round", "bits": 5, "group_size": 32, "sym": true})");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("transformers refuses this quantization config before it builds any layer: "
                     "ValueError: Only support quantization to [2,3,4,8] bits but found 5\n"),
            std::string::npos)
      << out;
}

// compressed-tensors with a packed lm_head that "ignore" lists: transformers builds it dense
// (removing the entry fixes it there), while vLLM and SGLang build the head without a quant
// method whatever the list says. The finding is two, one per fixability, and the patch removes
// the entry; it had merged them as one unfixable finding and written nothing
// (tools/transformers_diff --fix-engine all, seed 139,701,750).
TEST_F(TransformersDiffRegressionTest, AnEntryOneEngineNeedsGoneIsRemovedWhereAnotherCannotLoad) {
  std::vector<TensorSpec> tensors = {{"model.embed_tokens.weight", "BF16", {256, 64}}};
  for (const std::string module : {"lm_head", "model.layers.3.self_attn.o_proj"}) {
    tensors.push_back({module + ".weight_packed", "I32", {64, 8}});
    tensors.push_back({module + ".weight_scale", "BF16", {64, 2}});
    tensors.push_back({module + ".weight_shape", "I64", {2}});
  }
  synth::CheckpointSpec spec;
  spec.config_json = R"({
  "architectures": ["Qwen3_5ForCausalLM"],
  "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"],
      "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
                  "group_size": 32}}},
    "ignore": ["lm_head"]}
}
)";
  spec.shards.push_back({"model.safetensors", tensors, true});
  ASSERT_TRUE(synth::write_checkpoint(dir(), spec).ok());
  const auto [code, out] = run_qpatch({"--engine", "all", "--no-backup"});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(
      out,
      "DIR: compressed-tensors, judged for vLLM (main 2026-07-29..2026-08-17), SGLang (main "
      "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n  note "
      "       SGLang: no naming table for Qwen3_5ForCausalLM; judged under assumed names (the "
      "checkpoint's, q/k/v and gate/up fused and judged through their shards)\n  not fixable "
      "lm_head: 1 module stored ct-pack-quantized but made dense by ignore entry \"lm_head\" "
      "(ignore[0]) [vllm]\n  breaks      vLLM: start-up fails: \"ValueError: There is no module or "
      "parameter named 'lm_head.weight_packed' in ...\"\n  not fixable lm_head: 1 module stored "
      "ct-pack-quantized but SGLang builds this layer without a quant config: it cannot load these "
      "tensors; graft dense weights from the base model [sglang]\n  breaks      SGLang: loads, and "
      "drops the stored weights silently\n  fixed       lm_head: 1 module stored ct-pack-quantized "
      "but made dense by ignore entry \"lm_head\" (ignore[0]) [transformers]\n  breaks      "
      "transformers: loads with \"Some weights ... were not used\" and initialises the layer at "
      "random\n  patched     config.json -1: lm_head\n  status      unfixable\n  why         "
      "qpatch explain DIR lm_head\n");
  EXPECT_EQ(
      nlohmann::ordered_json::parse(read("config.json"))["quantization_config"]["ignore"].dump(),
      "[]");
  expect_rerun_writes_nothing({"--engine", "all", "-q"}, 1);
}

} // namespace
} // namespace qpatch::cli
