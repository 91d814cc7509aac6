// SPDX-License-Identifier: Apache-2.0
// Quantized tensors on disk while the engines read no quantization config (issue 12 item 5):
// reported, and fixed by copying the sidecar that holds the config into config.json; a
// quantization_config that is not an object is an error naming its JSON path.
#include "run.hpp"
#include "support/builder.hpp"
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace qpatch::cli {
namespace {

using test::Head;
using test::HeadFile;
using test::Packing;

const std::string k_bare_config = "{\n  \"architectures\": [\n    \"Qwen3NextForCausalLM\"\n  ],\n "
                                  " \"num_hidden_layers\": 1\n}\n";

class QuantizedWithoutConfigTest : public test::CheckpointCliTest {};

TEST_F(QuantizedWithoutConfigTest, PackedTensorsWithNoConfigAnywhereAreReportedNotFixable) {
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, k_bare_config});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(
      out,
      "DIR: stored quantized, no quantization config\n"
      "  mtp head    8 linears BF16, 4 norms in model_extra_tensors.safetensors\n"
      "  not fixable config.json: 7 modules stored quantized (ct-pack-quantized) but no "
      "quantization_config the engines read, so they build every layer dense; no sidecar holds a "
      "config to copy\n"
      "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter named "
      "'model.language_model.layers.0.self_attn.q_proj.weight_packed' in ...\"; SGLang: builds "
      "every layer dense and drops the quantized weights silently; transformers: loads with "
      "\"Some weights ... were not used\" and initialises the layer at random\n"
      "  status      unfixable\n"
      "  why         qpatch explain DIR model.language_model.layers.0.self_attn.q_proj\n");
}

TEST_F(QuantizedWithoutConfigTest, QuantizeConfigJsonIsCopiedIntoConfigJsonWithItsMethod) {
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, k_bare_config, Packing::gptq});
  write("quantize_config.json",
        "{\n  \"bits\": 4,\n  \"desc_act\": false,\n  \"dynamic\": {\n    \"-:.*mtp.*\": {}\n"
        "  },\n  \"group_size\": 32,\n  \"sym\": true\n}\n");
  const auto [code, out] = run_qpatch({"--check", "--engine", "vllm@main"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(
      out,
      "DIR: gptq, judged for vLLM (main, 2026-08-17)\n  mtp head    8 linears BF16, 4 norms in "
      "model_extra_tensors.safetensors\n  lint        dynamic: 1 entry; 1 dead (no verdict changes "
      "without them, in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized "
      "is built dense by them); qpatch --prune DIR removes the dead and duplicate ones\n  fixable  "
      "   config.json: 7 modules stored quantized (gptq) but no quantization_config the engines "
      "read, so they build every layer dense; quantize_config.json holds it: copy it into "
      "config.json\n  breaks      vLLM: start-up fails: \"ValueError: There is no module or "
      "parameter named 'model.language_model.layers.0.self_attn.q_proj.qweight' in ...\"\n  would "
      "patch config.json +1: quantization_config\n  status      needs-patch\n  apply       qpatch "
      "DIR\n");
  EXPECT_EQ(run_qpatch({"--engine", "vllm@main"}).first, 0);
  // The sidecar's bytes one indent in, and the method AutoGPTQ's file leaves implicit.
  EXPECT_EQ(
      read("config.json"),
      "{\n  \"architectures\": [\n    \"Qwen3NextForCausalLM\"\n  ],\n"
      "  \"num_hidden_layers\": 1,\n  \"quantization_config\": {\n    \"bits\": 4,\n"
      "    \"desc_act\": false,\n    \"dynamic\": {\n      \"-:.*mtp.*\": {}\n    },\n"
      "    \"group_size\": 32,\n    \"sym\": true,\n    \"quant_method\": \"gptq\"\n  }\n}\n");
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

TEST_F(QuantizedWithoutConfigTest, DenseCheckpointWithAStrayQuantizeConfigJsonIsNotQuantized) {
  // vLLM never opens quantize_config.json without --quantization, so the dense disk loads.
  uint64_t size = 0;
  const std::string header =
      test::header_json({{"model.layers.0.mlp.down_proj.weight", "BF16", {8, 8}}}, size);
  write("model.safetensors", test::shard_bytes(header, size));
  write("config.json", k_bare_config);
  write("quantize_config.json", "{\"bits\": 4, \"group_size\": 32}");
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "DIR: not quantized\n  status      clean\n");
}

TEST_F(QuantizedWithoutConfigTest, QuantizationConfigThatIsNotAnObjectNamesItsPath) {
  test::write_mini(dir(),
                   {Head::dense,
                    HeadFile::indexed_shard,
                    "{\"architectures\": [\"Qwen3NextForCausalLM\"], \"text_config\": "
                    "{\"quantization_config\": \"gptq\"}}"});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_EQ(out,
            "DIR: could not be judged (see the error)\n"
            "  status      error\n"
            "qpatch: error: DIR/config.json: at /text_config/quantization_config: "
            "quantization_config must be a JSON object, not string\n");
}

TEST_F(QuantizedWithoutConfigTest, OneLineConfigJsonGetsTheSidecarConfigOnOneLine) {
  test::write_mini(
      dir(),
      {Head::dense, HeadFile::indexed_shard, "{\"architectures\": [\"Qwen3_5ForCausalLM\"]}"});
  write(
      "quantization_config.json",
      "{\n  \"config_groups\": {\n    \"group_0\": {\n      \"format\": \"pack-quantized\",\n"
      "      \"targets\": [\"Linear\"],\n      \"weights\": {\"group_size\": 32, \"num_bits\": 4, "
      "\"strategy\": \"group\", \"symmetric\": true, \"type\": \"int\"}\n    }\n  },\n"
      "  \"format\": \"pack-quantized\",\n  \"ignore\": [\"re:^mtp.*\"],\n"
      "  \"quant_method\": \"compressed-tensors\"\n}\n");
  EXPECT_EQ(run_qpatch({"--engine", "vllm@main"}).first, 0);
  EXPECT_EQ(read("config.json"),
            "{\"architectures\": [\"Qwen3_5ForCausalLM\"], \"quantization_config\": "
            "{\"config_groups\": {\"group_0\": {\"format\": \"pack-quantized\", "
            "\"targets\": [\"Linear\"], \"weights\": {\"group_size\": 32, \"num_bits\": 4, "
            "\"strategy\": \"group\", \"symmetric\": true, \"type\": \"int\"}}}, "
            "\"format\": \"pack-quantized\", \"ignore\": [\"re:^mtp.*\"], "
            "\"quant_method\": \"compressed-tensors\"}}");
  EXPECT_EQ(run_qpatch({"--check", "--engine", "vllm@main"}).first, 0);
}

TEST_F(QuantizedWithoutConfigTest, QuantizationConfigArrayAtTheTopLevelNamesItsPath) {
  test::write_mini(dir(), {Head::dense, HeadFile::indexed_shard, "{\"quantization_config\": []}"});
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("qpatch: error: DIR/config.json: at /quantization_config: "
                     "quantization_config must be a JSON object, not array\n"),
            std::string::npos)
      << out;
}

} // namespace
} // namespace qpatch::cli
