// SPDX-License-Identifier: Apache-2.0
// vLLM's Qwen3.5 MTP special case (qwen3_5_mtp.py, since 2026-07-23, #48816; engines.md §10.4):
// when the quantization_config has a `dynamic` dict with a key that starts with "-:" and contains
// the text "mtp" (a substring test on the key, not a regex match), the draft's decoder layers are
// built with no quant config, whatever the method. It runs after fc is built: mtp.fc is not
// covered. GPTQ and auto-round judges share it; Qwen3-Next has no such case.
#pragma once

#include <qpatch/engine/model_info.hpp>
#include <qpatch/quant/gptq.hpp>

#include <string_view>
#include <vector>

namespace qpatch::engine {

inline bool is_qwen35(const ModelInfo& model) {
  return model.architecture.rfind("Qwen3_5", 0) == 0;
}

// True when the special case applies to `model` with these `dynamic` rules.
inline bool qwen35_dynamic_builds_mtp_dense(const ModelInfo& model,
                                            const std::vector<quant::GptqRule>& dynamic) {
  if (!is_qwen35(model)) {
    return false;
  }
  for (const quant::GptqRule& rule : dynamic) {
    if (rule.negative && rule.key.find("mtp") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// True for the layers the special case builds dense: the draft's decoder layers, not mtp.fc.
inline bool is_qwen35_mtp_decoder_layer(std::string_view prefix) {
  return prefix.rfind("mtp.layers.", 0) == 0;
}

// The line `explain` shows when the special case applies.
inline constexpr std::string_view k_qwen35_dynamic_mtp_trace =
    "a \"-:\" dynamic key contains \"mtp\": vLLM builds the Qwen3.5 MTP decoder layers (not "
    "mtp.fc) without a quant config";

} // namespace qpatch::engine
