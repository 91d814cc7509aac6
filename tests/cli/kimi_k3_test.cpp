// SPDX-License-Identifier: Apache-2.0
// Kimi-K3 (issue 23) under vLLM: KimiK3ForConditionalGeneration builds its text layers at
// language_model.model.layers.N (the checkpoint's names: language_model.model.layers.0.
// block_sparse_moe.experts.0.w1.weight_packed), fuses the KDA input projections into
// in_proj_qkvgfab and the MLA q_a/kv_a into fused_qkv_a_proj, and builds its MTP draft
// (KimiK3MTP) at model.layers.{N+i}, with the target's quant config: an ignore entry in the
// checkpoint's naming never reaches a draft layer (vllm/models/kimi_k3/nvidia/, 017e9f4).
// One KDA layer (0), one MLA + MoE layer (1), the draft at layer 2, the vision tower.
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

namespace qpatch::cli {
namespace {

constexpr const char* k_prefix = "language_model.model.layers.";

void nvfp4(std::vector<synth::TensorSpec>& t, const std::string& module) {
  t.push_back({module + ".weight_packed", "U8", {64, 32}});
  t.push_back({module + ".weight_scale", "F8_E4M3", {64, 4}});
  t.push_back({module + ".weight_global_scale", "F32", {1}});
  t.push_back({module + ".input_global_scale", "F32", {1}});
}

void bf16(std::vector<synth::TensorSpec>& t, const std::string& module) {
  t.push_back({module + ".weight", "BF16", {64, 64}});
}

// `draft_quantized`: the draft stored NVFP4 like the rest; otherwise BF16 (an export that kept
// it dense). `ignore` is the config's ignore list, JSON.
void write_kimi_k3(const std::filesystem::path& dir,
                   const std::string& ignore,
                   bool draft_quantized) {
  synth::CheckpointSpec spec;
  spec.config_json = R"({
  "architectures": [
    "KimiK3ForConditionalGeneration"
  ],
  "model_type": "kimi_k3",
  "text_config": {
    "model_type": "kimi_k3_text",
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 1,
    "linear_attn_config": {"kda_layers": [1], "use_full_rank_gate": true}
  },
  "quantization_config": {
    "config_groups": {
      "group_0": {
        "targets": ["Linear"],
        "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
        "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "dynamic": "local"}
      }
    },
    "format": "nvfp4-pack-quantized",
    "ignore": )" + ignore +
                     R"(,
    "quant_method": "compressed-tensors"
  }
}
)";
  synth::ShardSpec shard{"model.safetensors", {}, true};
  auto& t = shard.tensors;
  t.push_back({"language_model.model.embed_tokens.weight", "BF16", {128, 64}});
  t.push_back({"language_model.lm_head.weight", "BF16", {128, 64}});
  t.push_back({"language_model.model.norm.weight", "BF16", {64}});
  bf16(t, "vision_tower.encoder.blocks.0.wqkv");
  bf16(t, "mm_projector.proj.0");
  const std::string l0 = std::string(k_prefix) + "0.";
  for (const char* p :
       {"q_proj", "k_proj", "v_proj", "g_proj", "b_proj", "f_a_proj", "f_b_proj", "o_proj"}) {
    nvfp4(t, l0 + "self_attn." + p);
  }
  for (const char* c : {"q_conv1d", "k_conv1d", "v_conv1d"}) {
    t.push_back({l0 + "self_attn." + c + ".weight", "BF16", {64, 1, 4}});
  }
  t.push_back({l0 + "self_attn.A_log", "F32", {1, 1, 4, 1}});
  for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
    nvfp4(t, l0 + "mlp." + p);
  }
  for (const int layer : {1, 2}) {
    const std::string l = std::string(k_prefix) + std::to_string(layer) + ".";
    const bool quantized = layer == 1 || draft_quantized;
    const auto linear = [&](const std::string& module) {
      quantized ? nvfp4(t, module) : bf16(t, module);
    };
    for (const char* p :
         {"q_a_proj", "kv_a_proj_with_mqa", "q_b_proj", "kv_b_proj", "g_proj", "o_proj"}) {
      linear(l + "self_attn." + p);
    }
    t.push_back({l + "block_sparse_moe.gate.weight", "BF16", {2, 64}});
    for (const char* e : {"0", "1"}) {
      for (const char* w : {"w1", "w2", "w3"}) {
        linear(l + "block_sparse_moe.experts." + e + "." + w);
      }
    }
    for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
      linear(l + "block_sparse_moe.shared_experts." + p);
    }
  }
  const std::string d = std::string(k_prefix) + "2.";
  bf16(t, d + "eh_proj");
  t.push_back({d + "enorm.weight", "BF16", {64}});
  t.push_back({d + "hnorm.weight", "BF16", {64}});
  t.push_back({d + "shared_head.head.weight", "BF16", {128, 64}});
  spec.shards.push_back(std::move(shard));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

class KimiK3Test : public test::TempDirTest {};

// As published: the draft quantized like the rest, vision and router dense, ignore naming them.
TEST_F(KimiK3Test, APublishedLayoutIsCleanUnderVllmsNames) {
  write_kimi_k3(
      dir(), R"(["language_model.lm_head", "re:vision_tower.*", "re:mm_projector.*"])", true);
  const test::CliOutcome check = test::run_cli({"--check", "-v", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_EQ(
      check.out,
      "DIR: compressed-tensors, judged for vLLM (main 2026-07-31..2026-08-17)\n  rules       vLLM "
      "main 2026-07-31..017e9f4 (2026-08-17), 2 versions\n  mtp head    15 linears ct-nvfp4, 1 "
      "router, 2 linears BF16, 2 norms in model.safetensors (num_nextn_predict_layers: 1)\n  lint  "
      "      ignore: 3 entries; 2 dead (no verdict changes without them, in any version judged), 0 "
      "duplicates, 0 over-broad (a layer stored quantized is built dense by them); qpatch --prune "
      "DIR removes the dead and duplicate ones\n              dead: re:vision_tower.*\n            "
      "  dead: re:mm_projector.*\n  status      clean\n");
}

// The draft left BF16 and named in ignore by its checkpoint names: vLLM's draft layers are
// model.layers.2.*, which those names never reach, so it quantizes them; the patch adds the
// names vLLM asks about (its experts through expert 0's gate/up/down_proj).
TEST_F(KimiK3Test, ADenseDraftNamedByItsCheckpointNamesIsQuantizedAndPatched) {
  std::string ignore = R"(["language_model.lm_head", "re:vision_tower.*", "re:mm_projector.*")";
  for (const char* p :
       {"q_a_proj", "kv_a_proj_with_mqa", "q_b_proj", "kv_b_proj", "g_proj", "o_proj"}) {
    ignore += std::string(", \"") + k_prefix + "2.self_attn." + p + "\"";
  }
  ignore += "]";
  write_kimi_k3(dir(), ignore, false);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(
      check.out,
      "DIR: compressed-tensors, judged for vLLM (main 2026-07-31..2026-08-17)\n  mtp head    17 "
      "linears BF16, 1 router, 2 norms in model.safetensors (num_nextn_predict_layers: 1)\n  lint  "
      "      ignore: 9 entries; 8 dead (no verdict changes without them, in any version judged), 0 "
      "duplicates, 0 over-broad (a layer stored quantized is built dense by them); qpatch --prune "
      "DIR removes the dead and duplicate ones\n  fixable     "
      "language_model.model.layers.2.self_attn: 6 modules stored BF16 but quantized by targets "
      "[\"Linear\"] (group_0, class name); ignore lists their checkpoint names, but vLLM matches "
      "its own layer names, which differ (explain shows them)\n  breaks      vLLM: start-up fails: "
      "\"ValueError: There is no module or parameter named "
      "'language_model.model.layers.2.self_attn.q_a_proj.weight' in ...\"\n  fixable     "
      "language_model.model.layers.2.block_sparse_moe.experts: 6 modules stored BF16 but quantized "
      "by targets [\"RoutedExperts\"] (group_0, class name); not in ignore\n  breaks      vLLM: "
      "start-up fails: \"ValueError: There is no module or parameter named "
      "'language_model.model.layers.2.block_sparse_moe.experts.0.w1.weight' in ...\"\n  fixable    "
      " language_model.model.layers.2.block_sparse_moe.shared_experts: 3 modules stored BF16 but "
      "quantized by targets [\"Linear\"] (group_0, class name); not in ignore\n  breaks      vLLM: "
      "start-up fails: \"ValueError: There is no module or parameter named "
      "'language_model.model.layers.2.block_sparse_moe.shared_experts.gate_proj.weight' in ...\"\n "
      " would patch config.json +10: re:^model\\., "
      "language_model.model.layers.2.block_sparse_moe.experts.0.w1, "
      "language_model.model.layers.2.block_sparse_moe.experts.0.w2, "
      "language_model.model.layers.2.block_sparse_moe.experts.0.w3, "
      "language_model.model.layers.2.block_sparse_moe.experts.1.w1, "
      "language_model.model.layers.2.block_sparse_moe.experts.1.w2, "
      "language_model.model.layers.2.block_sparse_moe.experts.1.w3, "
      "language_model.model.layers.2.block_sparse_moe.shared_experts.gate_proj, "
      "language_model.model.layers.2.block_sparse_moe.shared_experts.up_proj, "
      "language_model.model.layers.2.block_sparse_moe.shared_experts.down_proj\n  status      "
      "needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(test::run_cli({"-q", "--engine", "vllm", "DIR"}, dir()).code, 0);
  const std::string patched = test::read_bytes(dir() / "config.json");
  EXPECT_EQ(test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir()).code, 0);
  EXPECT_EQ(test::run_cli({"-q", "--engine", "vllm", "DIR"}, dir()).code, 0);
  EXPECT_EQ(test::read_bytes(dir() / "config.json"), patched);
}

// g_proj is shard 3 of a KDA layer's in_proj_qkvgfab (beside q_proj) but its own layer in an
// MLA layer; the quant config checks in_proj_qkvgfab through q, k, v, b and f_a only.
TEST_F(KimiK3Test, GProjIsAKdaShardAndAnMlaLayer) {
  write_kimi_k3(dir(), R"(["language_model.lm_head"])", true);
  const test::CliOutcome kda = test::run_cli(
      {"explain", "--engine", "vllm", "DIR", "language_model.model.layers.0.self_attn.g_proj"},
      dir());
  EXPECT_EQ(
      kda.out,
      "language_model.model.layers.0.self_attn.g_proj\n  stored       ct-nvfp4 U8 [64, 32], "
      "F8_E4M3 scales in model.safetensors\n  layer        "
      "language_model.model.layers.0.self_attn.in_proj_qkvgfab "
      "(_KimiGDNMergedColumnParallelLinear), 6 modules\n  config       config.json "
      "/quantization_config (compressed-tensors), judged as vLLM main 2026-07-31..017e9f4 "
      "(2026-08-17), 2 versions loads it\n  fused        "
      "language_model.model.layers.0.self_attn.in_proj_qkvgfab = "
      "language_model.model.layers.0.self_attn.q_proj + "
      "language_model.model.layers.0.self_attn.k_proj + "
      "language_model.model.layers.0.self_attn.v_proj + "
      "language_model.model.layers.0.self_attn.b_proj + "
      "language_model.model.layers.0.self_attn.f_a_proj (each shard is checked; they must agree)\n "
      " ignore       1 entries checked, none matches "
      "language_model.model.layers.0.self_attn.q_proj\n  ignore       1 entries checked, none "
      "matches language_model.model.layers.0.self_attn.k_proj\n  ignore       1 entries checked, "
      "none matches language_model.model.layers.0.self_attn.v_proj\n  ignore       1 entries "
      "checked, none matches language_model.model.layers.0.self_attn.b_proj\n  ignore       1 "
      "entries checked, none matches language_model.model.layers.0.self_attn.f_a_proj\n  target    "
      "   group_0 \"Linear\" matches class _KimiGDNMergedColumnParallelLinear (case-insensitive "
      "substring)\n  verdict      quantized (target_class, group_0)\n  on disk      quantized "
      "(ct-nvfp4)\n  status       consistent: every engine builds what is stored\n");
  const test::CliOutcome mla = test::run_cli(
      {"explain", "--engine", "vllm", "DIR", "language_model.model.layers.1.self_attn.g_proj"},
      dir());
  EXPECT_EQ(mla.out,
            "language_model.model.layers.1.self_attn.g_proj\n  stored       ct-nvfp4 U8 [64, 32], "
            "F8_E4M3 scales in model.safetensors\n  layer        "
            "language_model.model.layers.1.self_attn.g_proj (ColumnParallelLinear)\n  config       "
            "config.json /quantization_config (compressed-tensors), judged as vLLM main "
            "2026-07-31..017e9f4 (2026-08-17), 2 versions loads it\n  ignore       1 entries "
            "checked, none matches language_model.model.layers.1.self_attn.g_proj\n  target       "
            "group_0 \"Linear\" matches class ColumnParallelLinear (case-insensitive substring)\n  "
            "verdict      quantized (target_class, group_0)\n  on disk      quantized (ct-nvfp4)\n "
            " status       consistent: every engine builds what is stored\n");
}

// The official checkpoint's routed experts are compressed-tensors mxfp4-pack-quantized, which
// vLLM reroutes to Mxfp4Config (models/config.py KimiK3ForConditionalGenerationConfig).
TEST_F(KimiK3Test, AnMxfp4ConfigIsNotJudgedAndSaysWhy) {
  write_kimi_k3(dir(), R"(["language_model.lm_head"])", true);
  std::string config = test::read_bytes(dir() / "config.json");
  config.replace(config.find("nvfp4-pack-quantized"), 20, "mxfp4-pack-quantized");
  write("config.json", config);
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.out,
            "DIR: compressed-tensors, judged for no engine\n  mtp head    15 linears ct-nvfp4, 1 "
            "router, 2 linears BF16, 2 norms in model.safetensors (num_nextn_predict_layers: 1)\n  "
            "note        vLLM: not judged: KimiK3ForConditionalGeneration loads a "
            "\"compressed-tensors\" (mxfp4-pack-quantized) config through its own mxfp4 quant "
            "config, which qpatch has not modelled\n  status      clean\n");
}

} // namespace
} // namespace qpatch::cli
