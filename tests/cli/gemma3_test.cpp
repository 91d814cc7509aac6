// SPDX-License-Identifier: Apache-2.0
// Gemma 3 under vLLM (main 017e9f4, src/engine/vllm/naming.cpp gemma3_row): the class mapper
// renames config entries, and the SigLIP vision tower's MLP (fc1/fc2) is built without a quant
// config unless the method is bitsandbytes (siglip.py SiglipMLP: Gemma 3's intermediate size 4304
// is not a multiple of 64). Measured against vLLM's own functions by
// tools/vllm_diff/qwen3_vl_diff.py.
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

namespace qpatch::cli {
namespace {

// Two text layers and one SigLIP encoder layer in transformers' names from 4.52; the text
// linears stored FP8 block or bitsandbytes nf4, the vision tower BF16; lm_head tied (absent).
void write_gemma3(const std::filesystem::path& dir,
                  const std::string& quantization_config,
                  bool bitsandbytes) {
  synth::CheckpointSpec spec;
  spec.config_json = R"({
  "architectures": [
    "Gemma3ForConditionalGeneration"
  ],
  "model_type": "gemma3",
  "quantization_config": )" +
                     quantization_config +
                     R"(,
  "text_config": {
    "num_hidden_layers": 2
  },
  "vision_config": {
    "hidden_size": 1152,
    "intermediate_size": 4304
  }
}
)";
  synth::ShardSpec shard{"model.safetensors", {}, true};
  auto& t = shard.tensors;
  t.push_back({"model.language_model.embed_tokens.weight", "BF16", {128, 64}});
  const std::string vision = "model.vision_tower.vision_model.encoder.layers.0.";
  for (const char* m : {"self_attn.q_proj",
                        "self_attn.k_proj",
                        "self_attn.v_proj",
                        "self_attn.out_proj",
                        "mlp.fc1",
                        "mlp.fc2"}) {
    t.push_back({vision + m + ".weight", "BF16", {64, 64}});
  }
  for (const char* layer : {"0", "1"}) {
    for (const char* m : test::k_decoder_linears) {
      const std::string module = std::string("model.language_model.layers.") + layer + "." + m;
      if (bitsandbytes) {
        t.push_back({module + ".weight", "U8", {2048, 1}});
        t.push_back({module + ".weight.absmax", "F32", {64}});
        t.push_back({module + ".weight.quant_map", "F32", {16}});
        t.push_back({module + ".weight.quant_state.bitsandbytes__nf4", "U8", {64}});
      } else {
        t.push_back({module + ".weight", "F8_E4M3", {64, 64}});
        t.push_back({module + ".weight_scale_inv", "F32", {1, 1}});
      }
    }
  }
  spec.shards.push_back(std::move(shard));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

class Gemma3Test : public test::TempDirTest {};

// An FP8 list that names the vision attention but not its MLP: vLLM builds fc1/fc2 dense
// anyway, so the checkpoint loads; before Gemma 3 had a row, qpatch called them quantized.
TEST_F(Gemma3Test, VllmBuildsTheSiglipMlpDenseUnderFp8) {
  write_gemma3(
      dir(),
      R"({"activation_scheme": "dynamic", "ignored_layers": ["model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj", "model.vision_tower.vision_model.encoder.layers.0.self_attn.k_proj", "model.vision_tower.vision_model.encoder.layers.0.self_attn.v_proj", "model.vision_tower.vision_model.encoder.layers.0.self_attn.out_proj"], "quant_method": "fp8", "weight_block_size": [128, 128]})",
      false);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_EQ(check.out,
            "DIR: fp8, judged for vLLM (main 2026-02-28..2026-08-17)\n"
            "  note        vLLM main 2026-02-28..2026-08-17: judged with the SigLIP of every "
            "Gemma 3 release (intermediate_size 4304, not a multiple of 64: its MLP fc1/fc2 built "
            "without a quant config except under bitsandbytes)\n"
            "  status      clean\n");
}

// Under bitsandbytes the SigLIP MLP takes the quant config: a BF16 fc1/fc2 that
// llm_int8_skip_modules does not name is built 4-bit, so the patch names them.
TEST_F(Gemma3Test, VllmQuantizesTheSiglipMlpUnderBitsandbytes) {
  write_gemma3(
      dir(),
      R"({"bnb_4bit_quant_type": "nf4", "llm_int8_skip_modules": ["lm_head"], "load_in_4bit": true, "quant_method": "bitsandbytes"})",
      true);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  // Six modules: the attention's four and the MLP's two.
  EXPECT_EQ(
      check.out,
      "DIR: bitsandbytes, judged for vLLM (main, 2026-08-17) with vllm-bnb-plugin\n"
      "  note        vLLM main 2026-08-09..2026-08-17: judged with the SigLIP of every Gemma 3 "
      "release (intermediate_size 4304, not a multiple of 64: its MLP fc1/fc2 built without a "
      "quant config except under bitsandbytes)\n"
      "  lint        llm_int8_skip_modules: 1 entry; 1 dead (no verdict changes without them, in "
      "any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense "
      "by them); qpatch --prune DIR removes the dead and duplicate ones\n"
      "  fixable     model.vision_tower.vision_model.encoder.layers.0: 6 modules stored BF16 but "
      "quantized by bitsandbytes (not in llm_int8_skip_modules)\n"
      "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter named "
      "'model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight' in ...\"\n"
      "  would patch config.json +8: "
      "model.vision_tower.vision_model.encoder.layers.0.self_attn.qkv_proj, "
      "vision_tower.vision_model.encoder.layers.0.self_attn.qkv_proj, "
      "model.vision_tower.vision_model.encoder.layers.0.self_attn.out_proj, "
      "vision_tower.vision_model.encoder.layers.0.self_attn.out_proj, "
      "model.vision_tower.vision_model.encoder.layers.0.mlp.fc1, "
      "vision_tower.vision_model.encoder.layers.0.mlp.fc1, "
      "model.vision_tower.vision_model.encoder.layers.0.mlp.fc2, "
      "vision_tower.vision_model.encoder.layers.0.mlp.fc2\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(test::run_cli({"-q", "--engine", "vllm", "DIR"}, dir()).code, 0);
  const test::CliOutcome after = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(after.code, 0) << after.out;
}

} // namespace
} // namespace qpatch::cli
