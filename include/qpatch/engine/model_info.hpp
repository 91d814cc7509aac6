// SPDX-License-Identifier: Apache-2.0
// What vLLM's model class contributes to quantization decisions: how it renames checkpoint
// names (hf_to_vllm_mapper, engines.md §3.3) and which checkpoint shards it fuses into one
// layer (packed_modules_mapping, quant-formats.md §4). Keyed by config.json's architecture.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::engine {

struct ModelInfo {
  std::string architecture;
  // orig_to_new_prefix renames, each tried in order on the name as renamed so far.
  std::vector<std::pair<std::string, std::string>> prefix_renames;
  // fused layer name -> checkpoint shard names
  std::vector<std::pair<std::string, std::vector<std::string>>> packed;
  bool known = false; // false: generic rules (no renames, q/k/v and gate/up fusion)
  // false: vLLM builds embed_tokens with no quant config, so no rule can quantize it.
  bool embedding_quant_config = true;
  // The model class has an hf_to_vllm_mapper, so vLLM calls the quant config's
  // apply_vllm_mapper (model_loader/utils.py configure_quant_config).
  bool has_mapper = false;
  // MiMo: the draft's layers model.mtp_layers.{i} are built as model.layers.{base + i}, and the
  // per-instance name mapper is not applied to the quant config (engines.md §10.2).
  std::string renumbered_from; // "model.mtp_layers." or ""
  uint64_t renumber_base = 0;  // num_hidden_layers
  // Where the MTP draft's layers start in checkpoint naming ("model.mtp_layers." for MiMo,
  // "model.layers.61." for DeepSeek-V3), and the last name components of its projections vLLM
  // builds as a plain nn.Linear (never quantized: MiMo input_proj, DeepSeek/GLM eh_proj).
  std::string draft_prefix;
  std::vector<std::string> plain_linears;
  // The name under which the MTP draft builds a ParallelLMHead of its own over the checkpoint's
  // `lm_head`, judged by the same quant config ("" when the draft has none): vLLM's Qwen3.5
  // draft builds "lm_head" while the Qwen3.5 VLM's own head is "language_model.lm_head".
  std::string draft_lm_head;
  // false: the transformers view of a checkpoint, one nn.Linear per module (no fusion, class
  // "Linear" everywhere, no renames; per-expert modules are judged through expert 0).
  bool engine_layers = true;
  // transformers view only: the engine's fused layers, by which the compressed-tensors library
  // also matches a shard ("...qkv_proj" covers q_proj, k_proj and v_proj).
  std::vector<std::pair<std::string, std::vector<std::string>>> fused_aliases;
  // Return the fused name `name` is a shard of in fused_aliases, or "".
  std::string fused_alias(std::string_view name) const;

  // Return the fused layer name `shard` belongs to ("q_proj" -> "qkv_proj"), or "".
  std::string_view fused_for(std::string_view shard) const;
  // Return the shards of fused layer name `fused`, or nullptr.
  const std::vector<std::string>* shards_of(std::string_view fused) const;
  // Return the name vLLM uses for checkpoint name `name` (prefix renames only): how plain
  // config entries are renamed.
  std::string to_vllm(std::string_view name) const;
  // Return the prefix vLLM asks the quant config about for checkpoint layer `name`: the renames
  // applied to it as to its weights ("lm_head" -> "language_model.lm_head" on the Qwen3.5 VLM),
  // and MiMo's renumbering of its MTP layers.
  std::string layer_prefix(std::string_view name) const;
  // True when vLLM builds layer `name` (checkpoint naming) as a plain nn.Linear.
  bool is_plain_linear(std::string_view name) const;
};

// `num_hidden_layers` (config.json) places renumbered MTP layers; 0 when unknown.
ModelInfo model_info_for(const std::string& architecture, uint64_t num_hidden_layers = 0);
// The same model as transformers builds it (see ModelInfo::engine_layers).
ModelInfo transformers_view(const ModelInfo& model);

} // namespace qpatch::engine
