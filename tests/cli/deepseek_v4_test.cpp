// SPDX-License-Identifier: Apache-2.0
// DeepSeek-V4 (issue 23): vLLM loads DeepseekV4ForCausalLM through a quant config of its own,
// deepseek_v4_fp8 (vllm/models/deepseek_v4/quant_config.py, 017e9f4), whatever quant_method the
// checkpoint declares, so qpatch does not judge vLLM by Fp8Config's rules and says why; and its
// draft layers are stored as mtp.{i}.* (checkpoint naming), which the missing-head check reads.
// Tensor names are DeepSeek-V4's (layers.N.attn.wq_a, ffn.shared_experts.w1, mtp.0.e_proj, head),
// one main layer.
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

namespace qpatch::cli {
namespace {

std::string dsv4_config(int nextn_layers) {
  return R"({
  "architectures": [
    "DeepseekV4ForCausalLM"
  ],
  "model_type": "deepseek_v4",
  "num_hidden_layers": 1,
  "num_nextn_predict_layers": )" +
         std::to_string(nextn_layers) + R"(,
  "quantization_config": {
    "activation_scheme": "dynamic",
    "fmt": "e4m3",
    "quant_method": "fp8",
    "scale_fmt": "ue8m0",
    "weight_block_size": [
      128,
      128
    ]
  }
}
)";
}

void write_dsv4(const std::filesystem::path& dir, int nextn_layers, bool with_head) {
  synth::CheckpointSpec spec;
  spec.config_json = dsv4_config(nextn_layers);
  synth::ShardSpec shard{"model.safetensors", {}, true};
  shard.tensors.push_back({"embed.weight", "BF16", {128, 64}});
  shard.tensors.push_back({"layers.0.attn_norm.weight", "BF16", {64}});
  shard.tensors.push_back({"layers.0.ffn.gate.weight", "BF16", {2, 64}});
  shard.tensors.push_back({"norm.weight", "BF16", {64}});
  shard.tensors.push_back({"head.weight", "BF16", {128, 64}});
  if (with_head) {
    for (const std::string linear : {"e_proj", "h_proj", "attn.wq_a", "ffn.shared_experts.w1"}) {
      shard.tensors.push_back({"mtp.0." + linear + ".weight", "BF16", {64, 64}});
    }
    shard.tensors.push_back({"mtp.0.enorm.weight", "BF16", {64}});
  }
  spec.shards.push_back(std::move(shard));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

class DeepseekV4Test : public test::TempDirTest {};

TEST_F(DeepseekV4Test, VllmIsNotJudgedByFp8RulesAndSaysWhy) {
  write_dsv4(dir(), 1, true);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  EXPECT_EQ(check.out,
            "DIR: fp8, judged for no engine\n"
            "  mtp head    4 linears BF16, 1 norm in model.safetensors; DeepSeek-V4 mtp.{i} "
            "layout: engine layer names assumed (num_nextn_predict_layers: 1)\n"
            "  note        vLLM: not judged: DeepseekV4ForCausalLM loads a \"fp8\" config through "
            "its own deepseek_v4_fp8 quant config, which qpatch has not modelled\n"
            "  status      clean\n");
}

// The draft's layers are mtp.0, mtp.1 in the checkpoint: the one stored is found, the one
// missing is named, and vLLM's DeepSeekV4MTP.load_weights raises for it whatever the quant config,
// numbering it from num_hidden_layers (mtp.1 of a 1-layer model is its layer 2).
TEST_F(DeepseekV4Test, AMissingDraftLayerIsNamedInTheMtpDotILayout) {
  write_dsv4(dir(), 2, true);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(check.out,
            "DIR: fp8, judged for no engine\n"
            "  mtp head    4 linears BF16, 1 norm in model.safetensors; DeepSeek-V4 mtp.{i} "
            "layout: engine layer names assumed (num_nextn_predict_layers: 2)\n"
            "  note        vLLM: not judged: DeepseekV4ForCausalLM loads a \"fp8\" config through "
            "its own deepseek_v4_fp8 quant config, which qpatch has not modelled\n"
            "  not fixable config.json declares num_nextn_predict_layers: 2 but no file stores 1 "
            "of its layers (mtp.1): no config patch can help; graft the head from the base model "
            "[vllm]\n"
            "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
            "\"ValueError: MTP speculative decoding layer 2 weights missing from checkpoint. The "
            "checkpoint may have been quantized without including the MTP layers. Use a "
            "checkpoint that includes MTP layer weights, or disable speculative decoding.\"\n"
            "  status      unfixable\n"
            "  graft       qpatch graft --from BASE DIR  (BASE: the unquantized model, a directory "
            "or Hub id)\n");
}

} // namespace
} // namespace qpatch::cli
