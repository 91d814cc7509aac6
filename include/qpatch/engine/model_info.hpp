// SPDX-License-Identifier: Apache-2.0
// What vLLM's model class contributes to quantization decisions: how it renames checkpoint
// names (hf_to_vllm_mapper, engines.md §3.3) and which checkpoint shards it fuses into one
// layer (packed_modules_mapping, quant-formats.md §4). Keyed by config.json's architecture.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::engine {

struct ModelInfo {
  std::string architecture;
  // orig_to_new_prefix renames, tried in order; the first that matches applies.
  std::vector<std::pair<std::string, std::string>> prefix_renames;
  // fused layer name -> checkpoint shard names
  std::vector<std::pair<std::string, std::vector<std::string>>> packed;
  bool known = false; // false: generic rules (no renames, q/k/v and gate/up fusion)

  // Return the fused layer name `shard` belongs to ("q_proj" -> "qkv_proj"), or "".
  std::string_view fused_for(std::string_view shard) const;
  // Return the shards of fused layer name `fused`, or nullptr.
  const std::vector<std::string>* shards_of(std::string_view fused) const;
  // Return the name vLLM uses for checkpoint name `name` (prefix renames only).
  std::string to_vllm(std::string_view name) const;
};

ModelInfo model_info_for(const std::string& architecture);

} // namespace qpatch::engine
