// SPDX-License-Identifier: Apache-2.0
// Qwen3-VL's own classes under vLLM (main 017e9f4, src/engine/vllm/naming.cpp qwen3_vl_rows):
// the class mapper renames config entries (model.language_model. -> language_model.model.,
// model.visual. -> visual.), the vision tower is built with the quant config, and the MoE class
// builds its router `gate` as a ReplicatedLinear with the quant config (qwen3_moe.py). Measured
// against vLLM's own functions by tools/vllm_diff/qwen3_vl_diff.py.
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

#include <set>

namespace qpatch::cli {
namespace {

enum class Storage { ct_int4, fp8_block };

// Two text layers (dense MLP or two experts and a router), one vision block with the merger
// and one deepstack merger, lm_head. Text linears are stored quantized except those in
// `dense_text`; the vision tower, routers and lm_head BF16.
void write_qwen3_vl(const std::filesystem::path& dir,
                    bool moe,
                    Storage storage,
                    const std::string& quantization_config,
                    const std::set<std::string>& dense_text = {}) {
  synth::CheckpointSpec spec;
  spec.config_json = std::string(R"({
  "architectures": [
    ")") + (moe ? "Qwen3VLMoeForConditionalGeneration" : "Qwen3VLForConditionalGeneration") +
                     R"("
  ],
  "model_type": ")" + (moe ? "qwen3_vl_moe" : "qwen3_vl") +
                     R"(",
  "quantization_config": )" +
                     quantization_config +
                     R"(,
  "text_config": {
    "num_hidden_layers": 2,
    "tie_word_embeddings": false
  }
}
)";
  synth::ShardSpec shard{"model.safetensors", {}, true};
  auto& t = shard.tensors;
  const auto linear = [&](const std::string& module, bool quantized) {
    if (!quantized || storage == Storage::ct_int4) {
      test::ct_linear(t, module, 64, 64, quantized);
    } else {
      t.push_back({module + ".weight", "F8_E4M3", {64, 64}});
      t.push_back({module + ".weight_scale_inv", "F32", {1, 1}});
    }
  };
  t.push_back({"model.language_model.embed_tokens.weight", "BF16", {128, 64}});
  t.push_back({"model.language_model.norm.weight", "BF16", {64}});
  t.push_back({"lm_head.weight", "BF16", {128, 64}});
  t.push_back({"model.visual.patch_embed.proj.weight", "BF16", {64, 3, 2, 16, 16}});
  for (const char* m : {"blocks.0.attn.qkv",
                        "blocks.0.attn.proj",
                        "blocks.0.mlp.linear_fc1",
                        "blocks.0.mlp.linear_fc2",
                        "merger.linear_fc1",
                        "merger.linear_fc2",
                        "deepstack_merger_list.0.linear_fc1",
                        "deepstack_merger_list.0.linear_fc2"}) {
    linear(std::string("model.visual.") + m, false);
  }
  for (const char* layer : {"0", "1"}) {
    const std::string l = std::string("model.language_model.layers.") + layer + ".";
    const auto text = [&](const std::string& module) {
      linear(module, dense_text.count(module) == 0);
    };
    for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
      text(l + "self_attn." + p);
    }
    if (moe) {
      t.push_back({l + "mlp.gate.weight", "BF16", {2, 64}});
      for (const char* e : {"0", "1"}) {
        for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
          text(l + "mlp.experts." + e + "." + p);
        }
      }
    } else {
      for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
        text(l + "mlp." + p);
      }
    }
  }
  spec.shards.push_back(std::move(shard));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

// Qwen2.5-VL in the names checkpoints had before transformers 4.52 (model.layers.N, visual.*):
// two text layers stored compressed-tensors int4 except `dense_text`, one vision block (its MLP
// gate/up/down) and the merger BF16.
void write_qwen2_5_vl(const std::filesystem::path& dir,
                      const std::string& quantization_config,
                      const std::set<std::string>& dense_text) {
  synth::CheckpointSpec spec;
  spec.config_json = R"({
  "architectures": [
    "Qwen2_5_VLForConditionalGeneration"
  ],
  "model_type": "qwen2_5_vl",
  "num_hidden_layers": 2,
  "quantization_config": )" +
                     quantization_config +
                     R"(,
  "tie_word_embeddings": false
}
)";
  synth::ShardSpec shard{"model.safetensors", {}, true};
  auto& t = shard.tensors;
  const auto linear = [&](const std::string& module) {
    const bool dense =
        module.rfind("visual.", 0) == 0 || module == "lm_head" || dense_text.count(module) > 0;
    test::ct_linear(t, module, 64, 64, !dense);
  };
  t.push_back({"model.embed_tokens.weight", "BF16", {128, 64}});
  t.push_back({"visual.patch_embed.proj.weight", "BF16", {64, 3, 2, 14, 14}});
  for (const char* m : {"lm_head",
                        "visual.blocks.0.attn.qkv",
                        "visual.blocks.0.attn.proj",
                        "visual.blocks.0.mlp.gate_proj",
                        "visual.blocks.0.mlp.up_proj",
                        "visual.blocks.0.mlp.down_proj",
                        "visual.merger.mlp.0",
                        "visual.merger.mlp.2"}) {
    linear(m);
  }
  for (const char* layer : {"0", "1"}) {
    for (const char* p : test::k_decoder_linears) {
      linear(std::string("model.layers.") + layer + "." + p);
    }
  }
  spec.shards.push_back(std::move(shard));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

std::string ct_config(const std::string& ignore) {
  return R"({
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"group_size": 32, "num_bits": 4, "strategy": "group", "symmetric": true, "type": "int"}}},
    "format": "pack-quantized",
    "ignore": )" +
         ignore + R"(,
    "quant_method": "compressed-tensors"
  })";
}

constexpr const char* k_vision_by_checkpoint_names =
    R"(["lm_head", "model.visual.blocks.0.attn.qkv", "model.visual.blocks.0.attn.proj",
        "model.visual.blocks.0.mlp.linear_fc1", "model.visual.blocks.0.mlp.linear_fc2",
        "model.visual.merger.linear_fc1", "model.visual.merger.linear_fc2",
        "model.visual.deepstack_merger_list.0.linear_fc1",
        "model.visual.deepstack_merger_list.0.linear_fc2"])";

class Qwen3VlTest : public test::TempDirTest {};

// vLLM renames the checkpoint's names in the config (model.visual. -> visual.) as in its layer
// names, so a list in either naming skips the layer; before Qwen3-VL had a row, qpatch compared
// checkpoint names with entries as written and called vLLM's own names unmatched.
TEST_F(Qwen3VlTest, VllmReadsEntriesInItsOwnNamesAndInTheCheckpoints) {
  write_qwen3_vl(
      dir(),
      false,
      Storage::ct_int4,
      ct_config(R"(["lm_head", "re:visual.*", "language_model.model.layers.1.mlp.down_proj"])"),
      {"model.language_model.layers.1.mlp.down_proj"});
  const test::CliOutcome check = test::run_cli({"--check", "-v", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 0) << check.out;
  // The dense class asks about its head as "lm_head" (written in), a ParallelLMHead that
  // compressed-tensors gives no quant method: the entry decides nothing.
  EXPECT_EQ(check.out,
            "DIR: compressed-tensors, judged for vLLM (main 2026-02-28..2026-08-17)\n"
            "  rules       vLLM main 2026-02-28..017e9f4 (2026-08-17)\n"
            "  lint        ignore: 3 entries; 1 dead (no verdict changes without them, in any "
            "version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built dense "
            "by them); qpatch --prune DIR removes the dead and duplicate ones\n"
            "              dead: lm_head\n"
            "  status      clean\n");
  // The vision attention's qkv is one QKVParallelLinear mapped to itself ("qkv": ["qkv"]).
  const test::CliOutcome explain = test::run_cli(
      {"explain", "--engine", "vllm", "DIR", "model.visual.blocks.0.attn.qkv"}, dir());
  EXPECT_EQ(explain.out,
            "model.visual.blocks.0.attn.qkv\n"
            "  stored       dense BF16 [64, 64] in model.safetensors\n"
            "  layer        visual.blocks.0.attn.qkv (QKVParallelLinear), renamed from "
            "model.visual.blocks.0.attn.qkv\n"
            "  config       config.json /quantization_config (compressed-tensors), judged as vLLM "
            "main 2026-02-28..017e9f4 (2026-08-17), 4 versions loads it\n"
            "  ignore[1]    \"re:visual.*\" matches visual.blocks.0.attn.qkv (re.match)\n"
            "  targets      not consulted: ignore is checked first\n"
            "  verdict      dense (ignore_entry)\n"
            "  on disk      dense (BF16)\n"
            "  status       consistent: every engine builds what is stored\n");
}

// The MoE router is a ReplicatedLinear built with the quant config (qwen3_moe.py
// Qwen3MoeSparseMoeBlock): a BF16 router FP8 does not skip is built FP8, its stored weight
// cast and its scale never loaded. Qwen's own FP8 exports list every mlp.gate for this reason.
TEST_F(Qwen3VlTest, VllmQuantizesAnMoeRouterTheListDoesNotName) {
  write_qwen3_vl(
      dir(),
      true,
      Storage::fp8_block,
      std::string(R"({"activation_scheme": "dynamic", "fmt": "e4m3", "modules_to_not_convert": )") +
          k_vision_by_checkpoint_names +
          R"(, "quant_method": "fp8", "weight_block_size": [128, 128]})");
  const test::CliOutcome check = test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(
      check.out,
      "DIR: fp8, judged for vLLM (main 2026-02-28..2026-08-17)\n"
      "  lint        modules_to_not_convert: 9 entries; 1 dead (no verdict changes without them, "
      "in any version judged), 0 duplicates, 0 over-broad (a layer stored quantized is built "
      "dense by them); qpatch --prune DIR removes the dead and duplicate ones\n"
      "  fixable     model.language_model.layers: 2 modules stored BF16 but quantized by fp8 (not "
      "in modules_to_not_convert)\n"
      "  breaks      vLLM: loads without an error: the stored BF16 weight of "
      "model.language_model.layers.0.mlp.gate is cast into its FP8 `weight` parameter and the "
      "weight scale is never loaded, so the layer computes garbage\n"
      "  would patch config.json +2: model.language_model.layers.0.mlp.gate, "
      "model.language_model.layers.1.mlp.gate\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(test::run_cli({"-q", "--engine", "vllm", "DIR"}, dir()).code, 0);
  const std::string patched = test::read_bytes(dir() / "config.json");
  // The two names appended to the list in the file's own layout (minimal diff).
  EXPECT_EQ(
      patched,
      "{\n  \"architectures\": [\n    \"Qwen3VLMoeForConditionalGeneration\"\n  ],\n"
      "  \"model_type\": \"qwen3_vl_moe\",\n"
      "  \"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", "
      "\"modules_to_not_convert\": [\"lm_head\", \"model.visual.blocks.0.attn.qkv\", "
      "\"model.visual.blocks.0.attn.proj\",\n"
      "        \"model.visual.blocks.0.mlp.linear_fc1\", "
      "\"model.visual.blocks.0.mlp.linear_fc2\",\n"
      "        \"model.visual.merger.linear_fc1\", \"model.visual.merger.linear_fc2\",\n"
      "        \"model.visual.deepstack_merger_list.0.linear_fc1\",\n"
      "        \"model.visual.deepstack_merger_list.0.linear_fc2\",\n"
      "        \"model.language_model.layers.0.mlp.gate\",\n"
      "        \"model.language_model.layers.1.mlp.gate\"], \"quant_method\": \"fp8\", "
      "\"weight_block_size\": [128, 128]},\n"
      "  \"text_config\": {\n    \"num_hidden_layers\": 2,\n    \"tie_word_embeddings\": false\n"
      "  }\n}\n");
  EXPECT_EQ(test::run_cli({"--check", "--engine", "vllm", "DIR"}, dir()).code, 0);
  EXPECT_EQ(test::run_cli({"-q", "--engine", "vllm", "DIR"}, dir()).code, 0);
  EXPECT_EQ(test::read_bytes(dir() / "config.json"), patched);
}

// SGLang builds the text layers at model.language_model.layers.N (from #18926) but renames
// the config's entries with Qwen3-VL's hf_to_sglang_mapper (model.language_model. ->
// language_model.model.), which its own classes keep to the newest version read (the Qwen3.5
// classes dropped it with #23471): a dense text layer listed by its checkpoint name is
// quantized. The patch adds a spelling the mapper leaves alone for each SGLang naming era.
TEST_F(Qwen3VlTest, SglangRenamesCheckpointNamesAwayFromTheTextLayers) {
  std::string ignore = k_vision_by_checkpoint_names;
  ignore.insert(ignore.size() - 1, ", \"model.language_model.layers.1.mlp.down_proj\"");
  write_qwen3_vl(dir(),
                 false,
                 Storage::ct_int4,
                 ct_config(ignore),
                 {"model.language_model.layers.1.mlp.down_proj"});
  const test::CliOutcome check = test::run_cli({"--check", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(
      check.out,
      "DIR: compressed-tensors, judged for vLLM (main 2026-02-28..2026-08-17), SGLang (main "
      "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n"
      "  fixable     model.language_model.layers.1.mlp.down_proj: 1 module stored BF16 but "
      "quantized by targets [\"Linear\"] (group_0, class name); ignore lists their checkpoint "
      "names, but Qwen3-VL's hf_to_sglang_mapper (qwen3_vl.py) renames those entries to names no "
      "layer has (explain shows them) [sglang]\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  would patch config.json +2: layers.1.mlp.down_proj, "
      "language_model.layers.1.mlp.down_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(test::run_cli({"-q", "DIR"}, dir()).code, 0);
  const test::CliOutcome after = test::run_cli({"--check", "DIR"}, dir());
  EXPECT_EQ(after.code, 0) << after.out;
  for (const char* engine : {"sglang@2026-02-09", "sglang@2026-03-01", "sglang@2026-08-31"}) {
    EXPECT_EQ(test::run_cli({"--check", "--engine", engine, "DIR"}, dir()).code, 0) << engine;
  }
}

// SGLang's Qwen2.5-VL builds its text layers at model.layers.N but carries Qwen3-VL's mapper,
// which renames every plain text entry (model. -> language_model.model.): a dense layer listed by
// its checkpoint name is quantized, in every version judged. vLLM maps the entry and the layer
// alike, so only SGLang needs the patch's entry, one the mapper leaves alone.
TEST_F(Qwen3VlTest, SglangQwen25VlRenamesEveryPlainTextEntry) {
  write_qwen2_5_vl(dir(),
                   ct_config(R"(["lm_head", "re:visual.*", "model.layers.1.mlp.down_proj"])"),
                   {"model.layers.1.mlp.down_proj"});
  const test::CliOutcome check = test::run_cli({"--check", "DIR"}, dir());
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(
      check.out,
      "DIR: compressed-tensors, judged for vLLM (main 2026-02-28..2026-08-17), SGLang (main "
      "2026-02-09..2026-08-31) and transformers (no one release: files of several commits)\n"
      "  fixable     model.layers.1.mlp.down_proj: 1 module stored BF16 but quantized by targets "
      "[\"Linear\"] (group_0, class name); ignore lists their checkpoint names, but Qwen3-VL's "
      "hf_to_sglang_mapper (qwen2_5_vl.py carries it) renames those entries to names no layer has "
      "(explain shows them) [sglang]\n"
      "  breaks      SGLang: loads, and drops the stored weights silently\n"
      "  would patch config.json +1: layers.1.mlp.down_proj\n"
      "  status      needs-patch\n"
      "  apply       qpatch DIR\n");
  EXPECT_EQ(test::run_cli({"-q", "DIR"}, dir()).code, 0);
  const test::CliOutcome after = test::run_cli({"--check", "DIR"}, dir());
  EXPECT_EQ(after.code, 0) << after.out;
}

} // namespace
} // namespace qpatch::cli
