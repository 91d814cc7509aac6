// SPDX-License-Identifier: Apache-2.0
// Small Qwen3.5-style checkpoints for judge/patch tests: one full-attention decoder layer stored
// compressed-tensors pack-quantized, and an MTP head stored dense, packed, or packed with a
// dense mtp.fc (the real Qwen3.6-27B W4A16 layout). Shapes are small; data are sparse holes.
#pragma once

#include "synth/synthetic_checkpoint.hpp"

#include <array>
#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::test {

enum class Head { dense, packed, packed_fc_dense, absent };
enum class HeadFile { indexed_shard, unindexed_sidecar };

enum class Packing { compressed_tensors, gptq, awq, fp8, bnb_4bit };

struct MiniCheckpoint {
  Head head = Head::dense;
  HeadFile head_file = HeadFile::indexed_shard;
  std::string config_json; // written as config.json
  Packing packing = Packing::compressed_tensors;
};

// The linears of one dense decoder layer, below the layer's prefix: attention and MLP.
inline constexpr std::array<const char*, 7> k_decoder_linears = {"self_attn.q_proj",
                                                                 "self_attn.k_proj",
                                                                 "self_attn.v_proj",
                                                                 "self_attn.o_proj",
                                                                 "mlp.gate_proj",
                                                                 "mlp.up_proj",
                                                                 "mlp.down_proj"};

// Write `checkpoint` into `dir`.
void write_mini(const std::filesystem::path& dir, const MiniCheckpoint& checkpoint);

// A MiMo-style checkpoint (model.mtp_layers.0.*, with input_proj and the extra norms of the real
// MiMo-7B index): one compressed-tensors packed decoder layer, the MTP layer stored dense.
void write_mimo(const std::filesystem::path& dir, const std::string& config_json);

// `config` (ct_config_json's) without its "mtp_num_hidden_layers" line: a checkpoint with no MTP
// head whose config does not declare one, for tests about something else (a declared head
// that no file stores is a finding of its own, missing_draft_head).
std::string without_head_declaration(std::string config);

// Append linear `module` [rows, cols]: compressed-tensors pack-quantized int4 (weight_packed,
// weight_scale group 32, weight_shape) when `quantized`, else a BF16 weight.
void ct_linear(std::vector<synth::TensorSpec>& out,
               const std::string& module,
               uint64_t rows,
               uint64_t cols,
               bool quantized);

// A config.json in transformers' layout (indent 2, sorted keys) with a compressed-tensors
// quantization_config whose ignore and group_0 targets are the given JSON arrays.
std::string ct_config_json(const std::string& ignore_array,
                           const std::string& targets_array,
                           const std::string& architecture = "Qwen3_5ForCausalLM");

// config.json of `architecture` with a GPTQ quantization_config (4 bits, group 32, sym, no
// act-order) and `extra` members (indented lines ending in ",\n").
std::string gptq_config(const std::string& architecture, const std::string& extra);

// The members vLLM requires of every `method` config (from_config reads them with
// get_from_keys and refuses a config without them), as indented lines, less those `fields`
// already sets: AWQ's bits, group_size and zero_point; FP8's activation_scheme; ModelOpt's
// quant_algo.
std::string required_fields(const std::string& method, const std::string& fields);

} // namespace qpatch::test
