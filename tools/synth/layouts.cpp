// SPDX-License-Identifier: Apache-2.0
// Real-shape layouts (shared/reference/quant-formats.md §2.1, §6.1) for synthetic checkpoints.
#include "synth/layout_configs.hpp"
#include "synth/synthetic_checkpoint.hpp"

namespace qpatch::synth {
namespace {

using Tensors = std::vector<TensorSpec>;

void dense(Tensors& out,
           const std::string& name,
           std::vector<uint64_t> shape,
           const std::string& dtype = "BF16") {
  out.push_back({name, dtype, std::move(shape)});
}

// compressed-tensors pack-quantized int4, symmetric, group 128: I32 [out, in/8] codes,
// BF16 [out, in/128] scales, I64 [2] original shape.
void packed_w4(Tensors& out, const std::string& module, uint64_t rows, uint64_t cols) {
  out.push_back({module + ".weight_packed", "I32", {rows, cols / 8}});
  out.push_back({module + ".weight_scale", "BF16", {rows, cols / 128}});
  out.push_back({module + ".weight_shape", "I64", {2}});
}

constexpr uint64_t k_hidden = 5120;
constexpr uint64_t k_intermediate = 17408;
constexpr uint64_t k_vocab = 248320;

void qwen35_layer(Tensors& out, int layer) {
  const std::string p = "model.language_model.layers." + std::to_string(layer);
  dense(out, p + ".input_layernorm.weight", {k_hidden});
  if (layer % 4 == 3) { // full_attention_interval 4: layers 3, 7, ..., 63
    packed_w4(out, p + ".self_attn.q_proj", 12288, k_hidden); // 24 heads x 256 x 2 (gated)
    packed_w4(out, p + ".self_attn.k_proj", 1024, k_hidden);
    packed_w4(out, p + ".self_attn.v_proj", 1024, k_hidden);
    packed_w4(out, p + ".self_attn.o_proj", k_hidden, 6144);
    dense(out, p + ".self_attn.q_norm.weight", {256});
    dense(out, p + ".self_attn.k_norm.weight", {256});
  } else { // Gated DeltaNet: 16 key heads x 128 (q and k), 48 value heads x 128
    dense(out, p + ".linear_attn.A_log", {48}, "F32");
    dense(out, p + ".linear_attn.conv1d.weight", {10240, 1, 4});
    dense(out, p + ".linear_attn.dt_bias", {48});
    dense(out, p + ".linear_attn.in_proj_a.weight", {48, k_hidden});
    dense(out, p + ".linear_attn.in_proj_b.weight", {48, k_hidden});
    packed_w4(out, p + ".linear_attn.in_proj_qkv", 10240, k_hidden);
    packed_w4(out, p + ".linear_attn.in_proj_z", 6144, k_hidden);
    dense(out, p + ".linear_attn.norm.weight", {128}, "F32");
    packed_w4(out, p + ".linear_attn.out_proj", k_hidden, 6144);
  }
  packed_w4(out, p + ".mlp.gate_proj", k_intermediate, k_hidden);
  packed_w4(out, p + ".mlp.up_proj", k_intermediate, k_hidden);
  packed_w4(out, p + ".mlp.down_proj", k_hidden, k_intermediate);
  dense(out, p + ".post_attention_layernorm.weight", {k_hidden});
}

void qwen35_vision(Tensors& out) {
  constexpr uint64_t h = 1152;
  constexpr uint64_t i = 4304;
  for (int b = 0; b < 27; ++b) {
    const std::string p = "model.visual.blocks." + std::to_string(b);
    dense(out, p + ".attn.proj.bias", {h});
    dense(out, p + ".attn.proj.weight", {h, h});
    dense(out, p + ".attn.qkv.bias", {3 * h});
    dense(out, p + ".attn.qkv.weight", {3 * h, h});
    dense(out, p + ".mlp.linear_fc1.bias", {i});
    dense(out, p + ".mlp.linear_fc1.weight", {i, h});
    dense(out, p + ".mlp.linear_fc2.bias", {h});
    dense(out, p + ".mlp.linear_fc2.weight", {h, i});
    dense(out, p + ".norm1.bias", {h});
    dense(out, p + ".norm1.weight", {h});
    dense(out, p + ".norm2.bias", {h});
    dense(out, p + ".norm2.weight", {h});
  }
  dense(out, "model.visual.merger.linear_fc1.bias", {4 * h});
  dense(out, "model.visual.merger.linear_fc1.weight", {4 * h, 4 * h});
  dense(out, "model.visual.merger.linear_fc2.bias", {k_hidden});
  dense(out, "model.visual.merger.linear_fc2.weight", {k_hidden, 4 * h});
  dense(out, "model.visual.merger.norm.bias", {h});
  dense(out, "model.visual.merger.norm.weight", {h});
  dense(out, "model.visual.patch_embed.proj.bias", {h});
  dense(out, "model.visual.patch_embed.proj.weight", {h, 3, 2, 16, 16});
  dense(out, "model.visual.pos_embed.weight", {2304, h});
}

// The BF16 head: exactly the 15 tensors of quant-formats.md §6.1, in that order.
void qwen35_mtp_bf16(Tensors& out) {
  dense(out, "mtp.fc.weight", {k_hidden, 2 * k_hidden});
  dense(out, "mtp.norm.weight", {k_hidden});
  dense(out, "mtp.pre_fc_norm_embedding.weight", {k_hidden});
  dense(out, "mtp.pre_fc_norm_hidden.weight", {k_hidden});
  dense(out, "mtp.layers.0.input_layernorm.weight", {k_hidden});
  dense(out, "mtp.layers.0.post_attention_layernorm.weight", {k_hidden});
  dense(out, "mtp.layers.0.self_attn.q_proj.weight", {12288, k_hidden});
  dense(out, "mtp.layers.0.self_attn.k_proj.weight", {1024, k_hidden});
  dense(out, "mtp.layers.0.self_attn.v_proj.weight", {1024, k_hidden});
  dense(out, "mtp.layers.0.self_attn.o_proj.weight", {k_hidden, 6144});
  dense(out, "mtp.layers.0.self_attn.q_norm.weight", {256});
  dense(out, "mtp.layers.0.self_attn.k_norm.weight", {256});
  dense(out, "mtp.layers.0.mlp.gate_proj.weight", {k_intermediate, k_hidden});
  dense(out, "mtp.layers.0.mlp.up_proj.weight", {k_intermediate, k_hidden});
  dense(out, "mtp.layers.0.mlp.down_proj.weight", {k_hidden, k_intermediate});
}

// The real packed head: projections W4A16 asymmetric group 32 (weight_zero_point), fc and norms
// plain: 36 tensors.
void qwen35_mtp_packed(Tensors& out) {
  const auto packed_asym = [&](const std::string& module, uint64_t rows, uint64_t cols) {
    out.push_back({module + ".weight_packed", "I32", {rows, cols / 8}});
    out.push_back({module + ".weight_scale", "BF16", {rows, cols / 32}});
    out.push_back({module + ".weight_shape", "I64", {2}});
    out.push_back({module + ".weight_zero_point", "I32", {rows / 8, cols / 32}});
  };
  dense(out, "mtp.fc.weight", {k_hidden, 2 * k_hidden});
  dense(out, "mtp.norm.weight", {k_hidden});
  dense(out, "mtp.pre_fc_norm_embedding.weight", {k_hidden});
  dense(out, "mtp.pre_fc_norm_hidden.weight", {k_hidden});
  dense(out, "mtp.layers.0.input_layernorm.weight", {k_hidden});
  dense(out, "mtp.layers.0.post_attention_layernorm.weight", {k_hidden});
  packed_asym("mtp.layers.0.self_attn.q_proj", 12288, k_hidden);
  packed_asym("mtp.layers.0.self_attn.k_proj", 1024, k_hidden);
  packed_asym("mtp.layers.0.self_attn.v_proj", 1024, k_hidden);
  packed_asym("mtp.layers.0.self_attn.o_proj", k_hidden, 6144);
  dense(out, "mtp.layers.0.self_attn.q_norm.weight", {256});
  dense(out, "mtp.layers.0.self_attn.k_norm.weight", {256});
  packed_asym("mtp.layers.0.mlp.gate_proj", k_intermediate, k_hidden);
  packed_asym("mtp.layers.0.mlp.up_proj", k_intermediate, k_hidden);
  packed_asym("mtp.layers.0.mlp.down_proj", k_hidden, k_intermediate);
}

std::string shard_name(size_t index, size_t count) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return buffer;
}

} // namespace

CheckpointSpec qwen35_27b_w4a16_mtp(bool packed_head) {
  CheckpointSpec spec;
  spec.config_json =
      packed_head ? k_qwen36_27b_w4a16_packed_mtp_config : k_qwen35_27b_w4a16_mtp_config;
  constexpr size_t k_shards = 4;
  for (size_t s = 0; s < k_shards; ++s) {
    spec.shards.push_back({shard_name(s, k_shards), {}, true});
  }
  Tensors& first = spec.shards[0].tensors;
  dense(first, "model.language_model.embed_tokens.weight", {k_vocab, k_hidden});
  qwen35_vision(first);
  for (int layer = 0; layer < 64; ++layer) {
    qwen35_layer(spec.shards[static_cast<size_t>(layer / 16)].tensors, layer);
  }
  dense(spec.shards[3].tensors, "model.language_model.norm.weight", {k_hidden});
  dense(spec.shards[3].tensors, "lm_head.weight", {k_vocab, k_hidden});
  ShardSpec mtp{
      packed_head ? "model-mtp.safetensors" : "model_extra_tensors.safetensors", {}, true};
  if (packed_head) {
    qwen35_mtp_packed(mtp.tensors);
  } else {
    qwen35_mtp_bf16(mtp.tensors);
  }
  spec.shards.push_back(std::move(mtp));
  return spec;
}

CheckpointSpec kimi_k2_w4a16(size_t shard_count) {
  constexpr int k_layers = 61;
  constexpr int k_experts = 384;
  constexpr uint64_t h = 7168;
  constexpr uint64_t moe_i = 2048;
  CheckpointSpec spec;
  spec.config_json =
      "{\n  \"architectures\": [\"DeepseekV3ForCausalLM\"],\n  \"model_type\": \"kimi_k2\",\n"
      "  \"num_hidden_layers\": 61,\n  \"quantization_config\": {\n"
      "    \"config_groups\": {\"group_0\": {\"format\": \"pack-quantized\", \"targets\": "
      "[\"re:.*mlp\\\\.experts.*\"], \"weights\": {\"num_bits\": 4, \"group_size\": 32, "
      "\"strategy\": \"group\", \"symmetric\": true, \"type\": \"int\"}}},\n"
      "    \"format\": \"pack-quantized\",\n    \"ignore\": [\"lm_head\"],\n"
      "    \"quant_method\": \"compressed-tensors\"\n  }\n}\n";
  for (size_t s = 0; s < shard_count; ++s) {
    spec.shards.push_back({shard_name(s, shard_count), {}, true});
  }
  size_t next = 0;
  const auto shard = [&]() -> Tensors& { return spec.shards[next++ % shard_count].tensors; };
  dense(spec.shards[0].tensors, "model.embed_tokens.weight", {163840, h});
  for (int layer = 0; layer < k_layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer);
    Tensors& attn = shard();
    dense(attn, p + ".input_layernorm.weight", {h});
    dense(attn, p + ".self_attn.q_a_proj.weight", {1536, h});
    dense(attn, p + ".self_attn.q_a_layernorm.weight", {1536});
    dense(attn, p + ".self_attn.q_b_proj.weight", {12288, 1536});
    dense(attn, p + ".self_attn.kv_a_proj_with_mqa.weight", {576, h});
    dense(attn, p + ".self_attn.kv_a_layernorm.weight", {512});
    dense(attn, p + ".self_attn.kv_b_proj.weight", {16384, 512});
    dense(attn, p + ".self_attn.o_proj.weight", {h, 8192});
    dense(attn, p + ".post_attention_layernorm.weight", {h});
    dense(attn, p + ".mlp.gate.weight", {k_experts, h});
    dense(attn, p + ".mlp.gate.e_score_correction_bias", {k_experts}, "F32");
    for (int e = 0; e < k_experts; ++e) {
      Tensors& out = shard();
      const std::string x = p + ".mlp.experts." + std::to_string(e);
      for (const char* proj : {"gate_proj", "up_proj"}) {
        out.push_back({x + "." + proj + ".weight_packed", "I32", {moe_i, h / 8}});
        out.push_back({x + "." + proj + ".weight_scale", "BF16", {moe_i, h / 32}});
        out.push_back({x + "." + proj + ".weight_shape", "I64", {2}});
      }
      out.push_back({x + ".down_proj.weight_packed", "I32", {h, moe_i / 8}});
      out.push_back({x + ".down_proj.weight_scale", "BF16", {h, moe_i / 32}});
      out.push_back({x + ".down_proj.weight_shape", "I64", {2}});
    }
    Tensors& shared = shard();
    for (const char* proj : {"gate_proj", "up_proj"}) {
      dense(shared, p + ".mlp.shared_experts." + proj + ".weight", {moe_i, h});
    }
    dense(shared, p + ".mlp.shared_experts.down_proj.weight", {h, moe_i});
  }
  dense(spec.shards.back().tensors, "model.norm.weight", {h});
  dense(spec.shards.back().tensors, "lm_head.weight", {163840, h});
  return spec;
}

} // namespace qpatch::synth
