// SPDX-License-Identifier: Apache-2.0
// Draft heads stored as an extra decoder layer, model.layers.{num_hidden_layers} (issue 23 item
// 1), judged under vLLM's naming: GLM-5 (GlmMoeDsaForCausalLM) is DeepseekV2ForCausalLM and
// drafts through DeepSeekMTP (config/speculative.py hf_config_override, 017e9f4). Tensor names
// are GLM-5's (zai-org/GLM-5 model.safetensors.index.json: self_attn.q_a_proj ... indexer.wk,
// indexer.weights_proj, mlp.experts.{e}, mlp.shared_experts, and the nextn layer's eh_proj,
// enorm, hnorm, shared_head.{norm,head}, embed_tokens), two main layers instead of 78.
#include "support/cli_run.hpp"
#include "support/engine_labels.hpp"
#include "support/fixtures.hpp"
#include "support/report_lines.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace qpatch::cli {
namespace {

constexpr uint64_t k_hidden = 64;
constexpr uint64_t k_vocab = 128;

void decoder_layer(std::vector<synth::TensorSpec>& out, const std::string& p, bool quantized) {
  out.push_back({p + ".input_layernorm.weight", "BF16", {k_hidden}});
  out.push_back({p + ".post_attention_layernorm.weight", "BF16", {k_hidden}});
  test::ct_linear(out, p + ".self_attn.q_a_proj", 32, k_hidden, quantized);
  test::ct_linear(out, p + ".self_attn.q_b_proj", 64, 32, quantized);
  test::ct_linear(out, p + ".self_attn.kv_a_proj_with_mqa", 32, k_hidden, quantized);
  test::ct_linear(out, p + ".self_attn.kv_b_proj", 64, 32, quantized);
  test::ct_linear(out, p + ".self_attn.o_proj", k_hidden, 64, quantized);
  out.push_back({p + ".self_attn.q_a_layernorm.weight", "BF16", {32}});
  out.push_back({p + ".self_attn.kv_a_layernorm.weight", "BF16", {32}});
  test::ct_linear(out, p + ".self_attn.indexer.wq_b", 64, 32, quantized);
  // Stored dense whatever the recipe: vLLM builds the fused wk_weights_proj unquantized.
  test::ct_linear(out, p + ".self_attn.indexer.wk", 32, k_hidden, false);
  test::ct_linear(out, p + ".self_attn.indexer.weights_proj", 32, k_hidden, false);
  out.push_back({p + ".self_attn.indexer.k_norm.weight", "BF16", {32}});
  out.push_back({p + ".self_attn.indexer.k_norm.bias", "BF16", {32}});
  out.push_back({p + ".mlp.gate.weight", "BF16", {2, k_hidden}});
  out.push_back({p + ".mlp.gate.e_score_correction_bias", "F32", {2}});
  for (const std::string expert : {"experts.0", "experts.1", "shared_experts"}) {
    test::ct_linear(out, p + ".mlp." + expert + ".gate_proj", 32, k_hidden, quantized);
    test::ct_linear(out, p + ".mlp." + expert + ".up_proj", 32, k_hidden, quantized);
    test::ct_linear(out, p + ".mlp." + expert + ".down_proj", k_hidden, 32, quantized);
  }
}

std::string glm5_config(const std::string& ignore) {
  return R"({
  "architectures": [
    "GlmMoeDsaForCausalLM"
  ],
  "model_type": "glm_moe_dsa",
  "num_hidden_layers": 2,
  "num_nextn_predict_layers": 1,
  "q_lora_rank": 32,
  "index_topk": 4,
  "quantization_config": {
    "config_groups": {
      "group_0": {
        "format": "pack-quantized",
        "targets": [
          "Linear"
        ],
        "weights": {
          "group_size": 32,
          "num_bits": 4,
          "strategy": "group",
          "symmetric": true,
          "type": "int"
        }
      }
    },
    "format": "pack-quantized",
    "ignore": )" +
         ignore +
         R"(,
    "quant_method": "compressed-tensors"
  }
}
)";
}

// Main layers W4A16, the nextn layer (model.layers.2) BF16 in a shard of its own, or absent.
void write_glm5(const std::filesystem::path& dir, const std::string& config, bool with_head) {
  synth::CheckpointSpec spec;
  spec.config_json = config;
  synth::ShardSpec main{"model-00001-of-00002.safetensors", {}, true};
  main.tensors.push_back({"model.embed_tokens.weight", "BF16", {k_vocab, k_hidden}});
  decoder_layer(main.tensors, "model.layers.0", true);
  decoder_layer(main.tensors, "model.layers.1", true);
  main.tensors.push_back({"model.norm.weight", "BF16", {k_hidden}});
  main.tensors.push_back({"lm_head.weight", "BF16", {k_vocab, k_hidden}});
  spec.shards.push_back(std::move(main));
  if (with_head) {
    synth::ShardSpec head{"model-00002-of-00002.safetensors", {}, true};
    const std::string p = "model.layers.2";
    decoder_layer(head.tensors, p, false);
    head.tensors.push_back({p + ".embed_tokens.weight", "BF16", {k_vocab, k_hidden}});
    head.tensors.push_back({p + ".enorm.weight", "BF16", {k_hidden}});
    head.tensors.push_back({p + ".hnorm.weight", "BF16", {k_hidden}});
    head.tensors.push_back({p + ".eh_proj.weight", "BF16", {k_hidden, 2 * k_hidden}});
    head.tensors.push_back({p + ".shared_head.norm.weight", "BF16", {k_hidden}});
    head.tensors.push_back({p + ".shared_head.head.weight", "BF16", {k_vocab, k_hidden}});
    spec.shards.push_back(std::move(head));
  }
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

// Under vLLM "lm_head" decides nothing here: the head is a ParallelLMHead, which a "Linear" class
// target does not name, so it is dense with or without the entry (the lint's dead entry).
std::string lm_head_dead(size_t entries) {
  return test::lint_line("ignore", entries, 1);
}

class LayerIndexHeadTest : public test::CheckpointCliTest {
protected:
  LayerIndexHeadTest() { m_engine = "vllm"; }
};

// eh_proj is a plain nn.Linear, shared_head.head a ParallelLMHead no "Linear" target names, and
// the indexer's wk_weights_proj is built with quant_config=None: none of them needs an entry.
// The nextn layer's own decoder linears and experts do.
TEST_F(LayerIndexHeadTest, Glm5NextnLayerNeedsOnlyItsDecoderLinearsIgnoredInVllm) {
  write_glm5(dir(), glm5_config(R"(["lm_head"])"), true);
  // --dry-run: the diff on stdout, the report on stderr.
  const test::CliOutcome dry = test::run_cli({"--dry-run", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(dry.code, 1);
  const std::string judged = test::judged_for(engine::Engine::vllm, "GlmMoeDsaForCausalLM");
  EXPECT_EQ(dry.err,
            "DIR: compressed-tensors, judged for " + judged +
                "\n"
                "  mtp head    8 norms, 19 linears BF16, 1 router, 1 embedding in "
                "model-00002-of-00002.safetensors (num_nextn_predict_layers: 1)\n" +
                lm_head_dead(1) +
                "  fixable     model.layers.2: 9 modules stored BF16 but quantized by targets "
                "[\"Linear\"] (group_0, class name); not in ignore\n"
                "  breaks      vLLM: start-up fails: \"ValueError: There is no module or "
                "parameter named 'model.layers.2.self_attn.q_a_proj.weight' in ...\"\n"
                "  fixable     model.layers.2.mlp.experts: 6 modules stored BF16 but quantized "
                "by targets [\"RoutedExperts\"] (group_0, class name); not in ignore\n"
                "  breaks      vLLM: start-up fails: \"ValueError: There is no module or "
                "parameter named 'model.layers.2.mlp.experts.0.gate_proj.weight' in ...\"\n"
                "  would patch config.json +15: model.layers.2.self_attn.q_a_proj, "
                "model.layers.2.self_attn.kv_a_proj_with_mqa, model.layers.2.self_attn.q_b_proj, "
                "model.layers.2.self_attn.kv_b_proj, model.layers.2.self_attn.o_proj, "
                "model.layers.2.self_attn.indexer.wq_b, model.layers.2.mlp.experts.0.gate_proj, "
                "model.layers.2.mlp.experts.0.up_proj, model.layers.2.mlp.experts.0.down_proj, "
                "model.layers.2.mlp.experts.1.gate_proj, model.layers.2.mlp.experts.1.up_proj, "
                "model.layers.2.mlp.experts.1.down_proj, "
                "model.layers.2.mlp.shared_experts.gate_proj, "
                "model.layers.2.mlp.shared_experts.up_proj, "
                "model.layers.2.mlp.shared_experts.down_proj\n"
                "  status      needs-patch\n"
                "  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check", "-q"}).first, 0);
}

// The main layers' indexer is stored dense and listed nowhere: vLLM builds it unquantized, so a
// config that ignores only lm_head is clean there once the head is right.
TEST_F(LayerIndexHeadTest, Glm5IndexerBuiltWithoutQuantConfigNeedsNoEntry) {
  write_glm5(dir(), glm5_config(R"(["lm_head", "re:^model\\.layers\\.2\\..*"])"), true);
  EXPECT_EQ(run_qpatch({"--check"}),
            std::pair(0,
                      "DIR: compressed-tensors, judged for " +
                          test::judged_for(engine::Engine::vllm, "GlmMoeDsaForCausalLM") +
                          "\n"
                          "  mtp head    8 norms, 19 linears BF16, 1 router, 1 embedding in "
                          "model-00002-of-00002.safetensors (num_nextn_predict_layers: 1)\n" +
                          lm_head_dead(2) + "  status      clean\n"));
}

// DeepSeekMTP raises for a declared layer with no weights (deepseek_mtp.py load_weights, #35548).
TEST_F(LayerIndexHeadTest, Glm5WithoutItsNextnLayerFailsInVllmAndNeedsAGraft) {
  write_glm5(dir(), glm5_config(R"(["lm_head"])"), false);
  EXPECT_EQ(run_qpatch({"--check"}),
            std::pair(1,
                      "DIR: compressed-tensors, judged for " +
                          test::judged_for(engine::Engine::vllm, "GlmMoeDsaForCausalLM") + "\n" +
                          lm_head_dead(1) +
                          "  not fixable config.json declares num_nextn_predict_layers: 1 but no "
                          "file stores the MTP head (model.layers.2): no config patch can help; "
                          "graft the head from the base model\n"
                          "  breaks      vLLM: start-up fails once speculative decoding loads the "
                          "MTP head: \"ValueError: MTP speculative decoding layer 2 weights "
                          "missing from checkpoint. The checkpoint may have been quantized "
                          "without including the MTP layers. Use a checkpoint that includes MTP "
                          "layer weights, or disable speculative decoding.\"\n"
                          "  status      unfixable\n"
                          "  graft       qpatch graft --from BASE DIR  (BASE: the unquantized "
                          "model, a directory or Hub id)\n"));
}

// The error a user posts leads to the finding and to the command that deals with it.
TEST_F(LayerIndexHeadTest, ExplainErrorLeadsFromDeepSeekMtpsMessageToTheGraft) {
  write_glm5(dir(), glm5_config(R"(["lm_head"])"), false);
  const test::CliOutcome outcome = test::run_cli(
      {"explain",
       "DIR",
       "--engine",
       "vllm",
       "--error",
       "ValueError: MTP speculative decoding layer 2 weights missing from checkpoint. The "
       "checkpoint may have been quantized without including the MTP layers."},
      dir());
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.out,
            "error       mtp-layer-missing: vLLM's DeepSeekMTP loaded no weight for a draft layer "
            "config.json declares\n"
            "cause       not fixable: config.json declares num_nextn_predict_layers: 1 but no "
            "file stores the MTP head (model.layers.2): no config patch can help; graft the head "
            "from the base model\n"
            "breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
            "\"ValueError: MTP speculative decoding layer 2 weights missing from checkpoint. The "
            "checkpoint may have been quantized without including the MTP layers. Use a "
            "checkpoint that includes MTP layer weights, or disable speculative decoding.\"\n"
            "next        qpatch graft --from BASE DIR\n");
  EXPECT_EQ(outcome.err, "");
}

// A text whose cause qpatch does not find in this checkpoint says so, and exits 0.
TEST_F(LayerIndexHeadTest, ExplainErrorWithNoCauseInTheCheckpointSaysSo) {
  write_glm5(dir(), glm5_config(R"(["lm_head", "re:^model\\.layers\\.2\\..*"])"), true);
  const test::CliOutcome outcome =
      test::run_cli({"explain",
                     "DIR",
                     "--engine",
                     "vllm",
                     "--error",
                     "ValueError: There is no module or parameter named 'eh_proj.weight' in "
                     "DeepSeekMultiTokenPredictorLayer"},
                    dir());
  EXPECT_EQ(outcome.code, 0);
  EXPECT_EQ(outcome.out,
            "error       vllm-no-parameter: vLLM found a stored tensor its built layer has no "
            "parameter for: the layer is built quantized over dense weights, or dense over "
            "quantized ones\n"
            "names       eh_proj\n"
            "cause       none in DIR: qpatch finds no mismatch of these kinds for the engines "
            "judged, so the message comes from something qpatch does not model (another engine "
            "version, a flag, a kernel)\n");
}

// What one patch for SGLang (and vLLM) adds on write_glm5's layout: the checkpoint names, then
// SGLang's (model.decoder.*, the fused names it judges without a mapping, the indexer's wk).
const std::string k_sglang_glm5_patch =
    "model.layers.0.self_attn.indexer.wk, model.layers.1.self_attn.indexer.wk, "
    "model.layers.2.self_attn.q_a_proj, model.layers.2.self_attn.kv_a_proj_with_mqa, "
    "model.decoder.self_attn.q_a_proj, model.decoder.self_attn.kv_a_proj_with_mqa, "
    "model.layers.2.self_attn.q_b_proj, model.decoder.self_attn.q_b_proj, "
    "model.layers.2.self_attn.kv_b_proj, model.decoder.self_attn.kv_b_proj, "
    "model.layers.2.self_attn.o_proj, model.decoder.self_attn.o_proj, "
    "model.layers.2.self_attn.indexer.wq_b, model.decoder.self_attn.indexer.wq_b, "
    "model.layers.2.self_attn.indexer.wk, model.decoder.self_attn.indexer.wk, "
    "model.layers.2.mlp.experts.0.gate_proj, model.layers.2.mlp.experts.0.up_proj, "
    "model.layers.2.mlp.experts.0.down_proj, model.layers.2.mlp.experts.1.gate_proj, "
    "model.layers.2.mlp.experts.1.up_proj, model.layers.2.mlp.experts.1.down_proj, "
    "model.decoder.mlp.experts.0.gate_proj, model.decoder.mlp.experts.0.up_proj, "
    "model.decoder.mlp.experts.0.down_proj, "
    "model.layers.2.mlp.shared_experts.gate_proj, "
    "model.layers.2.mlp.shared_experts.up_proj, "
    "model.decoder.mlp.shared_experts.gate_up_proj, "
    "model.layers.2.mlp.shared_experts.down_proj, "
    "model.decoder.mlp.shared_experts.down_proj";

// SGLang's GLM-5 (sglang/naming.cpp glm5_row; docs/research/sglang-glm5.md): DeepSeek-V2 names,
// the indexer's wk built with the layer's quant config and weights_proj dense, and the NextN
// layer built at model.decoder / model.eh_proj.
class SglangGlm5Test : public test::CheckpointCliTest {
protected:
  SglangGlm5Test() { m_engine = "sglang"; }
};

// The main layers' indexer wk is stored dense and listed nowhere: vLLM builds it dense, SGLang
// with the layer's quant config. The draft's layers are named by SGLang's names.
TEST_F(SglangGlm5Test, IndexerWkAndTheDraftNeedSglangsOwnEntries) {
  write_glm5(dir(), glm5_config(R"(["lm_head"])"), true);
  const test::CliOutcome dry = test::run_cli({"--dry-run", "--engine", "sglang", "DIR"}, dir());
  EXPECT_EQ(dry.code, 1);
  EXPECT_EQ(dry.err,
            "DIR: compressed-tensors, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head  "
            "  8 norms, 19 linears BF16, 1 router, 1 embedding in model-00002-of-00002.safetensors "
            "(num_nextn_predict_layers: 1)\n  note        SGLang main 2026-06-27..2026-08-31: "
            "judged with the DSA indexer's wk built apart with the layer's quant config, as off "
            "CUDA (on CUDA #27705 fuses it into a dense wk_weights_proj)\n" +
                test::lint_line("ignore", 1, 1) +
                "  fixable     model.layers: 12 modules stored BF16 but quantized by targets "
                "[\"Linear\"] (group_0, class name); not in ignore\n  breaks      SGLang: loads, "
                "and drops the stored weights silently\n  fixable     model.layers.2.mlp.experts: "
                "6 modules stored BF16 but quantized by targets [\"RoutedExperts\"] (group_0, "
                "class name); not in ignore\n  breaks      SGLang: loads, and drops the stored "
                "weights silently\n  would patch config.json +30: " +
                k_sglang_glm5_patch +
                "\n  "
                "status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  const auto [code, out] = run_qpatch({"--check"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out,
            "DIR: compressed-tensors, judged for SGLang (main 2026-02-09..2026-08-31)\n  mtp head  "
            "  8 norms, 19 linears BF16, 1 router, 1 embedding in model-00002-of-00002.safetensors "
            "(num_nextn_predict_layers: 1)\n  note        SGLang main 2026-06-27..2026-08-31: "
            "judged with the DSA indexer's wk built apart with the layer's quant config, as off "
            "CUDA (on CUDA #27705 fuses it into a dense wk_weights_proj)\n" +
                test::lint_line("ignore", 31, 17) + "  status      clean\n");
  expect_rerun_writes_nothing({}, 0);
}

// A checkpoint for both engines: the patch lists vLLM's names and SGLang's.
TEST_F(SglangGlm5Test, OnePatchSatisfiesVllmAndSglang) {
  write_glm5(dir(), glm5_config(R"(["lm_head"])"), true);
  m_engine = "vllm,sglang";
  const test::CliOutcome dry =
      test::run_cli({"--dry-run", "--engine", "vllm,sglang", "DIR"}, dir());
  EXPECT_EQ(dry.code, 1);
  EXPECT_EQ(
      dry.err,
      "DIR: compressed-tensors, judged for vLLM (main 2026-02-28..2026-08-17) and SGLang (main "
      "2026-02-09..2026-08-31)\n  mtp head    8 norms, 19 linears BF16, 1 router, 1 embedding in "
      "model-00002-of-00002.safetensors (num_nextn_predict_layers: 1)\n  note        SGLang main "
      "2026-06-27..2026-08-31: judged with the DSA indexer's wk built apart with the layer's quant "
      "config, as off CUDA (on CUDA #27705 fuses it into a dense wk_weights_proj)\n" +
          test::lint_line("ignore", 1, 1) +
          "  fixable     model.layers: 3 modules stored BF16 but quantized by targets [\"Linear\"] "
          "(group_0, class name); not in ignore [sglang]\n  breaks      SGLang: loads, and drops "
          "the stored weights silently\n  fixable     model.layers.2: 9 modules stored BF16 but "
          "quantized by targets [\"Linear\"] (group_0, class name); not in ignore\n  breaks      "
          "vLLM: start-up fails: \"ValueError: There is no module or parameter named "
          "'model.layers.2.self_attn.q_a_proj.weight' in ...\"; SGLang: loads, and drops the "
          "stored weights silently\n  fixable     model.layers.2.mlp.experts: 6 modules stored "
          "BF16 but quantized by targets [\"RoutedExperts\"] (group_0, class name); not in "
          "ignore\n  breaks      vLLM: start-up fails: \"ValueError: There is no module or "
          "parameter named 'model.layers.2.mlp.experts.0.gate_proj.weight' in ...\"; SGLang: "
          "loads, and drops the stored weights silently\n  would patch config.json +30: " +
          k_sglang_glm5_patch +
          "\n  "
          "status      needs-patch\n  apply       qpatch DIR\n");
  EXPECT_EQ(run_qpatch({"-q"}).first, 0);
  EXPECT_EQ(run_qpatch({"--check", "-q"}).first, 0);
  expect_rerun_writes_nothing({}, 0);
}

} // namespace
} // namespace qpatch::cli
