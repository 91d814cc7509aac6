// SPDX-License-Identifier: Apache-2.0
#include "support/fixtures.hpp"

#include "synth/synthetic_checkpoint.hpp"

#include <gtest/gtest.h>

namespace qpatch::test {
namespace {

using synth::TensorSpec;

void packed(std::vector<TensorSpec>& out, const std::string& module, uint64_t rows, uint64_t cols) {
  out.push_back({module + ".weight_packed", "I32", {rows, cols / 8}});
  out.push_back({module + ".weight_scale", "BF16", {rows, cols / 32}});
  out.push_back({module + ".weight_shape", "I64", {2}});
}

// GPTQ int4, group 32: qweight [in/8, out], qzeros [groups, out/8], scales [groups, out].
void gptq(std::vector<TensorSpec>& out, const std::string& module, uint64_t rows, uint64_t cols) {
  out.push_back({module + ".qweight", "I32", {cols / 8, rows}});
  out.push_back({module + ".qzeros", "I32", {cols / 32, rows / 8}});
  out.push_back({module + ".scales", "F16", {cols / 32, rows}});
  out.push_back({module + ".g_idx", "I32", {cols}});
}

// AWQ int4, group 32: qweight [in, out/8], qzeros [groups, out/8], scales [groups, out].
void awq(std::vector<TensorSpec>& out, const std::string& module, uint64_t rows, uint64_t cols) {
  out.push_back({module + ".qweight", "I32", {cols, rows / 8}});
  out.push_back({module + ".qzeros", "I32", {cols / 32, rows / 8}});
  out.push_back({module + ".scales", "F16", {cols / 32, rows}});
}

// Block FP8 (DeepSeek style): weight F8_E4M3, weight_scale_inv F32 per 128x128 block.
void fp8(std::vector<TensorSpec>& out, const std::string& module, uint64_t rows, uint64_t cols) {
  out.push_back({module + ".weight", "F8_E4M3", {rows, cols}});
  out.push_back({module + ".weight_scale_inv", "F32", {(rows + 127) / 128, (cols + 127) / 128}});
}

// bitsandbytes NF4: weight U8 [rows*cols/2, 1] plus its quant state below `weight`.
void bnb_4bit(std::vector<TensorSpec>& out,
              const std::string& module,
              uint64_t rows,
              uint64_t cols) {
  out.push_back({module + ".weight", "U8", {rows * cols / 2, 1}});
  out.push_back({module + ".weight.absmax", "F32", {rows * cols / 64}});
  out.push_back({module + ".weight.quant_map", "F32", {16}});
  out.push_back({module + ".weight.quant_state.bitsandbytes__nf4", "U8", {64}});
}

Packing g_packing = Packing::compressed_tensors;

void quantized_linear(std::vector<TensorSpec>& out,
                      const std::string& module,
                      uint64_t rows,
                      uint64_t cols) {
  switch (g_packing) {
  case Packing::gptq:
    gptq(out, module, rows, cols);
    break;
  case Packing::awq:
    awq(out, module, rows, cols);
    break;
  case Packing::fp8:
    fp8(out, module, rows, cols);
    break;
  case Packing::bnb_4bit:
    bnb_4bit(out, module, rows, cols);
    break;
  case Packing::compressed_tensors:
    packed(out, module, rows, cols);
    break;
  }
}

void dense(std::vector<TensorSpec>& out, const std::string& name, std::vector<uint64_t> shape) {
  out.push_back({name, "BF16", std::move(shape)});
}

void layer(std::vector<TensorSpec>& out, const std::string& p, bool quantized) {
  const auto linear = [&](const std::string& module, uint64_t rows, uint64_t cols) {
    if (quantized) {
      quantized_linear(out, module, rows, cols);
    } else {
      dense(out, module + ".weight", {rows, cols});
    }
  };
  dense(out, p + ".input_layernorm.weight", {64});
  linear(p + ".self_attn.q_proj", 128, 64);
  linear(p + ".self_attn.k_proj", 32, 64);
  linear(p + ".self_attn.v_proj", 32, 64);
  linear(p + ".self_attn.o_proj", 64, 64);
  dense(out, p + ".self_attn.q_norm.weight", {32});
  linear(p + ".mlp.gate_proj", 128, 64);
  linear(p + ".mlp.up_proj", 128, 64);
  linear(p + ".mlp.down_proj", 64, 128);
  dense(out, p + ".post_attention_layernorm.weight", {64});
}

} // namespace

void write_mini(const std::filesystem::path& dir, const MiniCheckpoint& checkpoint) {
  synth::CheckpointSpec spec;
  spec.config_json = checkpoint.config_json;
  g_packing = checkpoint.packing;
  synth::ShardSpec main{"model-00001-of-00001.safetensors", {}, true};
  dense(main.tensors, "model.language_model.embed_tokens.weight", {256, 64});
  layer(main.tensors, "model.language_model.layers.0", true);
  dense(main.tensors, "model.language_model.norm.weight", {64});
  dense(main.tensors, "lm_head.weight", {256, 64});
  spec.shards.push_back(std::move(main));
  if (checkpoint.head != Head::absent) {
    synth::ShardSpec head{
        "model_extra_tensors.safetensors", {}, checkpoint.head_file == HeadFile::indexed_shard};
    if (checkpoint.head == Head::dense) {
      dense(head.tensors, "mtp.fc.weight", {64, 128});
    } else if (checkpoint.head == Head::packed) {
      quantized_linear(head.tensors, "mtp.fc", 64, 128);
    } else {
      dense(head.tensors, "mtp.fc.weight", {64, 128});
    }
    dense(head.tensors, "mtp.norm.weight", {64});
    layer(head.tensors, "mtp.layers.0", checkpoint.head != Head::dense);
    spec.shards.push_back(std::move(head));
  }
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

void write_mimo(const std::filesystem::path& dir, const std::string& config_json) {
  synth::CheckpointSpec spec;
  spec.config_json = config_json;
  g_packing = Packing::compressed_tensors;
  synth::ShardSpec main{"model-00001-of-00002.safetensors", {}, true};
  dense(main.tensors, "model.embed_tokens.weight", {256, 64});
  layer(main.tensors, "model.layers.0", true);
  dense(main.tensors, "model.norm.weight", {64});
  dense(main.tensors, "lm_head.weight", {256, 64});
  spec.shards.push_back(std::move(main));
  synth::ShardSpec head{"model-00002-of-00002.safetensors", {}, true};
  const std::string p = "model.mtp_layers.0";
  dense(head.tensors, p + ".final_layernorm.weight", {64});
  dense(head.tensors, p + ".hidden_layernorm.weight", {64});
  dense(head.tensors, p + ".input_proj.weight", {64, 128});
  layer(head.tensors, p, false);
  dense(head.tensors, p + ".token_layernorm.weight", {64});
  spec.shards.push_back(std::move(head));
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

void ct_linear(std::vector<synth::TensorSpec>& out,
               const std::string& module,
               uint64_t rows,
               uint64_t cols,
               bool quantized) {
  if (quantized) {
    packed(out, module, rows, cols);
  } else {
    dense(out, module + ".weight", {rows, cols});
  }
}

std::string without_head_declaration(std::string config) {
  const std::string line = "  \"mtp_num_hidden_layers\": 1,\n";
  const size_t at = config.find(line);
  return at == std::string::npos ? config : config.erase(at, line.size());
}

std::string ct_config_json(const std::string& ignore_array,
                           const std::string& targets_array,
                           const std::string& architecture) {
  return "{\n  \"architectures\": [\n    \"" + architecture +
         "\"\n  ],\n  \"model_type\": \"qwen3_5_text\",\n  \"mtp_num_hidden_layers\": 1,\n"
         "  \"quantization_config\": {\n    \"config_groups\": {\n      \"group_0\": {\n"
         "        \"format\": \"pack-quantized\",\n        \"targets\": " +
         targets_array +
         ",\n        \"weights\": {\n          \"group_size\": 32,\n          \"num_bits\": 4,\n"
         "          \"strategy\": \"group\",\n          \"symmetric\": true,\n"
         "          \"type\": \"int\"\n        }\n      }\n    },\n"
         "    \"format\": \"pack-quantized\",\n    \"ignore\": " +
         ignore_array +
         ",\n    \"quant_method\": \"compressed-tensors\"\n  },\n"
         "  \"tie_word_embeddings\": false\n}\n";
}

std::string gptq_config(const std::string& architecture, const std::string& extra) {
  return "{\n  \"architectures\": [\n    \"" + architecture +
         "\"\n  ],\n  \"quantization_config\": {\n    \"bits\": 4,\n    \"desc_act\": false,\n" +
         extra +
         "    \"group_size\": 32,\n    \"quant_method\": \"gptq\",\n    \"sym\": true\n  }\n}\n";
}

std::string required_fields(const std::string& method, const std::string& fields) {
  const auto absent = [&](const char* key) {
    return fields.find("\"" + std::string(key) + "\"") == std::string::npos;
  };
  std::string out;
  if (method == "awq") {
    out += absent("bits") ? "    \"bits\": 4,\n" : "";
    out += absent("group_size") ? "    \"group_size\": 32,\n" : "";
    out += absent("zero_point") ? "    \"zero_point\": true,\n" : "";
  } else if (method == "fp8" && absent("activation_scheme")) {
    out += "    \"activation_scheme\": \"dynamic\",\n";
  } else if (method == "modelopt" && absent("quant_algo")) {
    out += "    \"quant_algo\": \"FP8\",\n";
  }
  return out;
}

} // namespace qpatch::test
