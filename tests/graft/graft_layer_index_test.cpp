// SPDX-License-Identifier: Apache-2.0
// qpatch graft on a head stored as an extra decoder layer (issue 23 item 5): DeepSeek-V3's
// nextn layer model.layers.{num_hidden_layers} (eh_proj, enorm/hnorm, shared_head, a decoder
// block), with real tensor bytes. A quantized head is replaced whole from the BF16 base, and a
// dropped one is put back with its config key; restore gives every byte back.
#include "run.hpp"
#include "support/fixtures.hpp"
#include "support/real_data.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <qpatch/util/names.hpp>

#include <gtest/gtest.h>

#include <sstream>

namespace qpatch::test {
namespace {

namespace fs = std::filesystem;
using synth::ShardSpec;
using synth::TensorSpec;

constexpr uint64_t k_hidden = 64;

void decoder(std::vector<TensorSpec>& out, const std::string& p, bool quantized) {
  out.push_back({p + ".input_layernorm.weight", "BF16", {k_hidden}});
  ct_linear(out, p + ".self_attn.q_a_proj", 32, k_hidden, quantized);
  ct_linear(out, p + ".self_attn.q_b_proj", 64, 32, quantized);
  ct_linear(out, p + ".self_attn.kv_a_proj_with_mqa", 32, k_hidden, quantized);
  ct_linear(out, p + ".self_attn.kv_b_proj", 64, 32, quantized);
  ct_linear(out, p + ".self_attn.o_proj", k_hidden, 64, quantized);
  out.push_back({p + ".post_attention_layernorm.weight", "BF16", {k_hidden}});
  ct_linear(out, p + ".mlp.gate_proj", 128, k_hidden, quantized);
  ct_linear(out, p + ".mlp.up_proj", 128, k_hidden, quantized);
  ct_linear(out, p + ".mlp.down_proj", k_hidden, 128, quantized);
}

// The nextn layer's own tensors besides its decoder block.
void nextn(std::vector<TensorSpec>& out, const std::string& p) {
  out.push_back({p + ".enorm.weight", "BF16", {k_hidden}});
  out.push_back({p + ".hnorm.weight", "BF16", {k_hidden}});
  out.push_back({p + ".eh_proj.weight", "BF16", {k_hidden, 2 * k_hidden}});
  out.push_back({p + ".shared_head.norm.weight", "BF16", {k_hidden}});
  out.push_back({p + ".shared_head.head.weight", "BF16", {256, k_hidden}});
}

std::string config(bool quantized, bool declares_head) {
  std::string text = "{\n  \"architectures\": [\n    \"DeepseekV3ForCausalLM\"\n  ],\n"
                     "  \"hidden_size\": 64,\n  \"model_type\": \"deepseek_v3\",\n"
                     "  \"layer_types\": [\n    \"full_attention\"";
  // One entry per layer, the nextn layer's too: an exporter that drops the layer cuts the list.
  text += declares_head ? ",\n    \"full_attention\"\n  ],\n" : "\n  ],\n";
  text += "  \"num_hidden_layers\": 1,\n";
  if (declares_head) {
    text += "  \"num_nextn_predict_layers\": 1,\n";
  }
  if (quantized) {
    text += "  \"quantization_config\": {\n    \"config_groups\": {\n      \"group_0\": {\n"
            "        \"format\": \"pack-quantized\",\n        \"targets\": [\n"
            "          \"Linear\"\n        ],\n        \"weights\": {\n"
            "          \"group_size\": 32,\n          \"num_bits\": 4,\n"
            "          \"strategy\": \"group\",\n          \"symmetric\": true,\n"
            "          \"type\": \"int\"\n        }\n      }\n    },\n"
            "    \"format\": \"pack-quantized\",\n    \"ignore\": [\n      \"lm_head\"\n    ],\n"
            "    \"quant_method\": \"compressed-tensors\"\n  },\n";
  }
  return text + "  \"q_lora_rank\": 32,\n  \"tie_word_embeddings\": false\n}\n";
}

class GraftLayerIndexTest : public TempDirTest {
protected:
  fs::path ck() const { return dir() / "ck"; }
  fs::path base() const { return dir() / "base"; }

  void write(const fs::path& where, bool quantized, bool with_head, const std::string& salt) {
    synth::CheckpointSpec spec;
    spec.config_json = config(quantized, with_head);
    ShardSpec main{"model-00001-of-00002.safetensors", {}, true};
    main.tensors.push_back({"model.embed_tokens.weight", "BF16", {256, k_hidden}});
    decoder(main.tensors, "model.layers.0", quantized);
    main.tensors.push_back({"model.norm.weight", "BF16", {k_hidden}});
    main.tensors.push_back({"lm_head.weight", "BF16", {256, k_hidden}});
    spec.shards.push_back(std::move(main));
    if (with_head) {
      ShardSpec head{"model-00002-of-00002.safetensors", {}, true};
      decoder(head.tensors, "model.layers.1", quantized);
      nextn(head.tensors, "model.layers.1");
      spec.shards.push_back(std::move(head));
    }
    ASSERT_TRUE(synth::write_checkpoint(where, spec).ok());
    fill_real_data(where, salt);
  }

  int run_args(const std::vector<std::string>& args, std::string* text = nullptr) const {
    std::ostringstream out;
    std::ostringstream err;
    const int code = cli::run(args, out, err, cli::Terminal{});
    if (text != nullptr) {
      *text = out.str() + err.str();
    }
    return code;
  }
};

// Every tensor of the nextn layer ends up the donor's, byte for byte (its quantized linears and
// its norms, eh_proj and shared_head, whose bytes differ), the main layer keeps its own, the
// checkpoint checks clean for every engine, and restore gives every byte back.
TEST_F(GraftLayerIndexTest, AQuantizedNextnLayerIsReplacedWholeAndRestoreUndoesIt) {
  write(base(), false, true, "base");
  write(ck(), true, true, "quantized");
  const auto tree = snapshot_tree(ck());
  const auto before = all_tensors(ck());
  const auto donor = all_tensors(base());
  std::string text;
  ASSERT_EQ(run_args({"graft", "--from", base().string(), ck().string()}, &text), 0) << text;
  const auto after = all_tensors(ck());
  size_t head_tensors = 0;
  for (const auto& [name, where] : after) {
    if (name.rfind("model.layers.1.", 0) == 0) {
      ASSERT_EQ(donor.count(name), 1U) << name;
      EXPECT_EQ(where.second, donor.at(name).second) << name;
      ++head_tensors;
    } else {
      ASSERT_EQ(before.count(name), 1U) << name;
      EXPECT_EQ(where.second, before.at(name).second) << name;
    }
  }
  EXPECT_EQ(head_tensors, 15U); // 8 linears, 2 layer norms, enorm, hnorm, eh_proj, shared_head x2
  ASSERT_EQ(run_args({"--check", "-q", ck().string()}, &text), 0) << text;
  ASSERT_EQ(run_args({"restore", ck().string()}, &text), 0) << text;
  EXPECT_EQ(snapshot_tree(ck()), tree);
}

// An export that lost the nextn layer, num_nextn_predict_layers and the layer's entry in
// layer_types: the graft puts back the layer's tensors, its index entries, the config key and
// the list as DONOR writes it, every other byte of config.json as it was; restore takes all of
// it out again.
TEST_F(GraftLayerIndexTest, ADroppedNextnLayerComesBackWithItsConfigKey) {
  write(base(), false, true, "base");
  write(ck(), true, false, "dropped");
  const auto tree = snapshot_tree(ck());
  std::string text;
  ASSERT_EQ(run_args({"graft", "--from", base().string(), ck().string()}, &text), 0) << text;
  const auto after = all_tensors(ck());
  const auto donor = all_tensors(base());
  size_t head_tensors = 0;
  for (const auto& [name, where] : donor) {
    if (name.rfind("model.layers.1.", 0) == 0) {
      ASSERT_EQ(after.count(name), 1U) << name;
      EXPECT_EQ(after.at(name).second, where.second) << name;
      ++head_tensors;
    }
  }
  EXPECT_EQ(head_tensors, 15U);
  const std::string index = read_bytes(ck() / "model.safetensors.index.json");
  EXPECT_NE(index.find("\"model.layers.1.shared_head.head.weight\""), std::string::npos);
  std::string repaired = config(true, true);
  repaired.erase(repaired.find("  \"num_nextn_predict_layers\": 1,\n"), 33);
  // The grafted dense layer listed in `ignore` as vLLM and transformers name it and as SGLang
  // builds DeepSeek's nextn layer (model.decoder, fused gate_up_proj).
  const std::string ignore = "\"ignore\": [\n      \"lm_head\"";
  std::string listed;
  for (const char* name : {"model.layers.1.self_attn.q_a_proj",
                           "model.layers.1.self_attn.kv_a_proj_with_mqa",
                           "model.decoder.self_attn.q_a_proj",
                           "model.decoder.self_attn.kv_a_proj_with_mqa",
                           "model.layers.1.self_attn.q_b_proj",
                           "model.decoder.self_attn.q_b_proj",
                           "model.layers.1.self_attn.kv_b_proj",
                           "model.decoder.self_attn.kv_b_proj",
                           "model.layers.1.self_attn.o_proj",
                           "model.decoder.self_attn.o_proj",
                           "model.layers.1.mlp.gate_proj",
                           "model.layers.1.mlp.up_proj",
                           "model.decoder.mlp.gate_up_proj",
                           "model.layers.1.mlp.down_proj",
                           "model.decoder.mlp.down_proj"}) {
    listed += ",\n      \"" + std::string(name) + "\"";
  }
  repaired.insert(repaired.find(ignore) + ignore.size(), listed);
  repaired.insert(repaired.rfind('\n', repaired.size() - 3),
                  ",\n  \"num_nextn_predict_layers\": 1");
  EXPECT_EQ(read_bytes(ck() / "config.json"), repaired);
  EXPECT_NE(text.find("layer_types: 1 -> 2 items"), std::string::npos) << text;
  ASSERT_EQ(run_args({"--check", "-q", ck().string()}, &text), 0) << text;
  ASSERT_EQ(run_args({"restore", ck().string()}, &text), 0) << text;
  EXPECT_EQ(snapshot_tree(ck()), tree);
}

} // namespace
} // namespace qpatch::test
