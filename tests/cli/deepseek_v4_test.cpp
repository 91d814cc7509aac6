// SPDX-License-Identifier: Apache-2.0
// DeepSeek-V4 (issue 23) under vLLM: DeepseekV4FP8Config (vllm/models/deepseek_v4/quant_config.py,
// 017e9f4) takes over an "fp8" config and skips layers by Fp8Config's is_layer_skipped under the
// model's own mapper (layers. -> model.layers., mtp. -> model.mtp.) and fused names, with the draft
// built at model.layers.{N+i} (nvidia/mtp.py DeepSeekV4MTP). Tensor names and dtypes are
// DeepSeek-V4-Flash's (layers.N.attn.wq_a F8_E4M3 + .scale F8_E8M0, experts I8 + F8_E8M0,
// embed/head BF16, mtp.0.e_proj), one main layer.
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <vector>

namespace qpatch::cli {
namespace {

// DeepSeek-V4-Flash's quantization_config.
constexpr const char* k_dsv4_fp8 = R"({
    "activation_scheme": "dynamic",
    "fmt": "e4m3",
    "quant_method": "fp8",
    "scale_fmt": "ue8m0",
    "weight_block_size": [
      128,
      128
    ]
  })";

std::string dsv4_config(int nextn_layers) {
  return R"({
  "architectures": [
    "DeepseekV4ForCausalLM"
  ],
  "model_type": "deepseek_v4",
  "num_hidden_layers": 1,
  "num_nextn_predict_layers": )" +
         std::to_string(nextn_layers) + R"(,
  "quantization_config": )" +
         std::string(k_dsv4_fp8) + "\n}\n";
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

// The linears of one DeepSeek-V4 decoder block, as its checkpoints name them.
constexpr const char* k_block_linears[] = {"attn.wq_a",
                                           "attn.wkv",
                                           "attn.wq_b",
                                           "attn.wo_a",
                                           "attn.wo_b",
                                           "ffn.shared_experts.w1",
                                           "ffn.shared_experts.w2",
                                           "ffn.shared_experts.w3"};

// One main layer as DeepSeek-V4-Flash stores it (dtypes as its headers give them: FP8 linears with
// F8_E8M0 block scales, I8-packed MXFP4 experts, BF16 compressor, gate, embed and head) and a draft
// mtp.0 whose linears an export left BF16.
void write_dsv4_flash(const std::filesystem::path& dir,
                      const std::string& quantization,
                      bool draft_wo_a_fp8 = false) {
  synth::CheckpointSpec spec;
  spec.config_json = R"({
  "architectures": [
    "DeepseekV4ForCausalLM"
  ],
  "model_type": "deepseek_v4",
  "num_hidden_layers": 1,
  "num_nextn_predict_layers": 1,
  "quantization_config": )" +
                     quantization + "\n}\n";
  synth::ShardSpec shard{"model.safetensors", {}, true};
  auto& t = shard.tensors;
  t.push_back({"embed.weight", "BF16", {128, 64}});
  t.push_back({"head.weight", "BF16", {128, 64}});
  t.push_back({"norm.weight", "BF16", {64}});
  t.push_back({"layers.0.attn_norm.weight", "BF16", {64}});
  for (const std::string linear : k_block_linears) {
    t.push_back({"layers.0." + linear + ".weight", "F8_E4M3", {64, 64}});
    t.push_back({"layers.0." + linear + ".scale", "F8_E8M0", {1, 1}});
  }
  t.push_back({"layers.0.attn.compressor.wkv.weight", "BF16", {64, 64}});
  t.push_back({"layers.0.attn.compressor.wgate.weight", "BF16", {64, 64}});
  t.push_back({"layers.0.attn.compressor.ape", "F32", {4, 64}});
  t.push_back({"layers.0.ffn.gate.weight", "BF16", {2, 64}});
  for (const std::string expert : {"0", "1"}) {
    for (const std::string w : {"w1", "w2", "w3"}) {
      const std::string name = "layers.0.ffn.experts." + expert + "." + w;
      t.push_back({name + ".weight", "I8", {64, 32}});
      t.push_back({name + ".scale", "F8_E8M0", {64, 2}});
    }
  }
  std::vector<std::string> draft_linears{"e_proj", "h_proj"};
  draft_linears.insert(draft_linears.end(), std::begin(k_block_linears), std::end(k_block_linears));
  for (const std::string& linear : draft_linears) {
    if (linear == "attn.wo_a" && draft_wo_a_fp8) {
      t.push_back({"mtp.0." + linear + ".weight", "F8_E4M3", {64, 64}});
      t.push_back({"mtp.0." + linear + ".scale", "F8_E8M0", {1, 1}});
    } else {
      t.push_back({"mtp.0." + linear + ".weight", "BF16", {64, 64}});
    }
  }
  t.push_back({"mtp.0.enorm.weight", "BF16", {64}});
  t.push_back({"mtp.0.hnorm.weight", "BF16", {64}});
  spec.shards.push_back(std::move(shard));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

// vLLM judges an "fp8" DeepSeek-V4 config as DeepseekV4FP8Config does: Fp8Config's exact
// ignored_layers under the model's mapper, the fused names of the NVIDIA class, the draft at
// model.layers.{N+i}. A draft stored BF16 is quantized; the patch names its layers as vLLM builds
// them, but its attention's wo_a cannot run dense in vLLM (the FP8 o_proj kernel reads its
// scale), so only a graft helps there.
TEST_F(DeepseekV4Test, VllmJudgesFp8UnderTheModelsOwnNames) {
  write_dsv4_flash(dir(), k_dsv4_fp8);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(
      check.out,
      "DIR: fp8, judged for vLLM (main 2026-06-10..2026-08-17)\n  mtp head    10 linears BF16, 2 "
      "norms in model.safetensors (num_nextn_predict_layers: 1)\n  fixable     mtp.0: 9 modules "
      "stored BF16 but quantized by fp8 (not in modules_to_not_convert)\n  breaks      vLLM: loads "
      "without an error: the stored BF16 weight of mtp.0.e_proj is cast into its FP8 `weight` "
      "parameter and the weight scale is never loaded, so the layer computes garbage and the "
      "draft's acceptance collapses\n  not fixable mtp.0.attn.wo_a: 1 module stored BF16 but vLLM "
      "cannot run them dense: its NVIDIA attention reads wo_a's FP8 weight scale on every forward "
      "(nvidia/ops/o_proj.py), so a dense wo_a raises AttributeError at the first one (not fixable "
      "by a config patch)\n  breaks      vLLM: loads without an error: the stored BF16 weight of "
      "mtp.0.attn.wo_a is cast into its FP8 `weight` parameter and the weight scale is never "
      "loaded, so the layer computes garbage and the draft's acceptance collapses\n  would patch "
      "config.json +16: mtp.0.e_proj, model.layers.1.e_proj, mtp.0.h_proj, model.layers.1.h_proj, "
      "mtp.0.attn.wq_a, mtp.0.attn.wkv, model.layers.1.attn.fused_wqa_wkv, mtp.0.attn.wq_b, "
      "model.layers.1.attn.wq_b, mtp.0.attn.wo_b, model.layers.1.attn.wo_b, "
      "mtp.0.ffn.shared_experts.w1, mtp.0.ffn.shared_experts.w3, "
      "model.layers.1.ffn.shared_experts.gate_up_proj, mtp.0.ffn.shared_experts.w2, "
      "model.layers.1.ffn.shared_experts.down_proj\n  status      unfixable\n  why         qpatch "
      "explain DIR mtp.0.attn.wo_a\n");
}

// The same draft with its wo_a stored FP8: the rest of it is fixed by naming its layers as vLLM
// builds them; SGLang and transformers (no DeepSeek-V4 row: their names assumed) get their
// entries in the same patch, after which a second run writes nothing.
TEST_F(DeepseekV4Test, ThePatchNamesTheDraftAtItsLayerIndex) {
  write_dsv4_flash(dir(), k_dsv4_fp8, true);
  const test::CliOutcome fix = test::run_cli({"--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(fix.code, 0) << fix.err;
  EXPECT_EQ(fix.err, "");
  EXPECT_EQ(test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir()).code, 0);
  const test::CliOutcome all = test::run_cli({"--check", "DIR"}, dir());
  EXPECT_EQ(all.out,
            "DIR: fp8, judged for vLLM (main 2026-06-10..2026-08-17), SGLang (main "
            "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n "
            " mtp head    9 linears BF16, 1 linear fp8-block, 2 norms in model.safetensors "
            "(num_nextn_predict_layers: 1)\n  note        SGLang: no naming table for "
            "DeepseekV4ForCausalLM; judged under assumed names (the checkpoint's, q/k/v and "
            "gate/up fused and judged through their shards)\n  fixable     3 modules stored BF16 "
            "but quantized by fp8 (not in modules_to_not_convert) [sglang, transformers]\n  breaks "
            "     SGLang: loads, and drops the stored weights silently; transformers: loads with "
            "\"Some weights ... were not used\" and initialises the layer at random\n  would patch "
            "config.json +3: head, layers.0.attn.compressor.wkv, layers.0.attn.compressor.wgate\n  "
            "status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(test::run_cli({"-q", "DIR"}, dir()).code, 0);
  const std::string patched = test::read_bytes(dir() / "config.json");
  EXPECT_EQ(test::run_cli({"--check", "DIR"}, dir()).code, 0);
  EXPECT_EQ(test::run_cli({"-q", "DIR"}, dir()).code, 0);
  EXPECT_EQ(test::read_bytes(dir() / "config.json"), patched);
}

// An ignored_layers entry in checkpoint naming for the draft, mtp.0.e_proj, is mapped to
// model.mtp.0.e_proj and reaches nothing: the draft's e_proj is still quantized.
TEST_F(DeepseekV4Test, AnMtpEntryReachesNoDraftLayer) {
  std::string config = k_dsv4_fp8;
  config.replace(
      config.find("\"activation_scheme\""), 0, "\"ignored_layers\": [\"mtp.0.e_proj\"],\n    ");
  write_dsv4_flash(dir(), config, true);
  const test::CliOutcome check = test::run_cli({"--check", "-v", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(
      check.out,
      "DIR: fp8, judged for vLLM (main 2026-06-10..2026-08-17)\n  rules       vLLM main "
      "2026-06-10..017e9f4 (2026-08-17), 2 versions\n  mtp head    9 linears BF16, 1 linear "
      "fp8-block, 2 norms in model.safetensors (num_nextn_predict_layers: 1)\n  lint        "
      "ignored_layers: 1 entry; 1 dead (no verdict changes without them, in any version judged), 0 "
      "duplicates, 0 over-broad (a layer stored quantized is built dense by them); qpatch --prune "
      "DIR removes the dead and duplicate ones\n              dead: mtp.0.e_proj\n  fixable     "
      "mtp.0: 9 modules stored BF16 but quantized by fp8 (not in ignored_layers)\n  breaks      "
      "vLLM: loads without an error: the stored BF16 weight of mtp.0.e_proj is cast into its FP8 "
      "`weight` parameter and the weight scale is never loaded, so the layer computes garbage and "
      "the draft's acceptance collapses\n              mtp.0.e_proj\n              mtp.0.h_proj\n  "
      "            mtp.0.attn.wq_a\n              mtp.0.attn.wkv\n              mtp.0.attn.wq_b\n  "
      "            mtp.0.attn.wo_b\n              mtp.0.ffn.shared_experts.w1\n              "
      "mtp.0.ffn.shared_experts.w3\n              mtp.0.ffn.shared_experts.w2\n  would patch "
      "config.json +15: model.layers.1.e_proj, mtp.0.h_proj, model.layers.1.h_proj, "
      "mtp.0.attn.wq_a, mtp.0.attn.wkv, model.layers.1.attn.fused_wqa_wkv, mtp.0.attn.wq_b, "
      "model.layers.1.attn.wq_b, mtp.0.attn.wo_b, model.layers.1.attn.wo_b, "
      "mtp.0.ffn.shared_experts.w1, mtp.0.ffn.shared_experts.w3, "
      "model.layers.1.ffn.shared_experts.gate_up_proj, mtp.0.ffn.shared_experts.w2, "
      "model.layers.1.ffn.shared_experts.down_proj\n  status      needs-patch\n  apply       "
      "qpatch DIR\n");
}

// The draft's layers are mtp.0, mtp.1 in the checkpoint: the one stored is found, the one
// missing is named, and vLLM's DeepSeekV4MTP.load_weights raises for it whatever the quant config,
// numbering it from num_hidden_layers (mtp.1 of a 1-layer model is its layer 2).
TEST_F(DeepseekV4Test, AMissingDraftLayerIsNamedInTheMtpDotILayout) {
  write_dsv4(dir(), 2, true);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(
      check.out,
      "DIR: fp8, judged for vLLM (main 2026-06-10..2026-08-17)\n  mtp head    4 linears BF16, 1 "
      "norm in model.safetensors (num_nextn_predict_layers: 2)\n  fixable     mtp.0: 4 modules "
      "stored BF16 but quantized by fp8 (not in modules_to_not_convert)\n  breaks      vLLM: loads "
      "without an error: the stored BF16 weight of mtp.0.e_proj is cast into its FP8 `weight` "
      "parameter and the weight scale is never loaded, so the layer computes garbage and the "
      "draft's acceptance collapses\n  not fixable config.json declares num_nextn_predict_layers: "
      "2 but no file stores 1 of its layers (mtp.1): no config patch can help; graft the head from "
      "the base model\n  breaks      vLLM: start-up fails once speculative decoding loads the MTP "
      "head: \"ValueError: MTP speculative decoding layer 2 weights missing from checkpoint. The "
      "checkpoint may have been quantized without including the MTP layers. Use a checkpoint that "
      "includes MTP layer weights, or disable speculative decoding.\"\n  would patch config.json "
      "+8: mtp.0.e_proj, model.layers.1.e_proj, mtp.0.h_proj, model.layers.1.h_proj, "
      "mtp.0.attn.wq_a, model.layers.1.attn.fused_wqa_wkv, mtp.0.ffn.shared_experts.w1, "
      "model.layers.1.ffn.shared_experts.gate_up_proj\n  status      unfixable\n  graft       "
      "qpatch graft --from BASE DIR  (BASE: the unquantized model, a directory or Hub id)\n");
}

} // namespace
} // namespace qpatch::cli
