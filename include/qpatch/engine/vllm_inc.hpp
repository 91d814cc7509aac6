// SPDX-License-Identifier: Apache-2.0
// How vLLM decides whether a layer is quantized under an auto-round config (INCConfig,
// layers/quantization/inc/config_parser.py, vLLM main 017e9f4; engines.md §5), for vLLM prefix P:
//   0. an extra_config key equal to P (or "model." + P) whose bits, 16 when absent, are >= 16:
//      dense at once;
//   1-2. an exact key P, else a key K with P ending in "." + K, decides with its bits;
//   3. otherwise the default: never for lm_head; with block_name_to_quantize, P must start with
//      an entry (plain string prefix); without it, quantized;
//   5. a fused layer with at least one shard configured explicitly (exact or regex key): shards
//      must agree, else ValueError;
//   6. lookup: exact key, then regex keys (only keys with a regex metacharacter) by re.search in
//      file order, else the default (global bits when quantized, else 16).
// Quantized iff the resolved bits are < 16. Plain keys and block names are renamed by the
// model's hf_to_vllm_mapper; regex keys are not. MoE experts are judged on "...mlp.experts".
#pragma once

#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/engine/vllm_compressed_tensors.hpp>
#include <qpatch/quant/auto_round.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qpatch::engine {

class VllmInc {
public:
  VllmInc(const quant::IncConfig& config, const ModelInfo& model);

  Decision decide(const Layer& layer) const;
  // Return every rule that bears on `layer`, in the order vLLM tries them, as (label, text).
  std::vector<std::pair<std::string, std::string>> trace(const Layer& layer) const;
  // True when the Qwen3.5 MTP special case applies (a "-:" dynamic key containing "mtp").
  bool mtp_special_case() const;
  const quant::IncConfig& config() const { return m_config; }

private:
  // The bits an explicit key gives `name` (exact, then regex keys), with the entry's index.
  struct Explicit {
    size_t index = 0;
    int64_t bits = 16;
  };
  std::optional<Explicit> exact_key(const std::string& name) const;
  std::optional<Explicit> regex_key(const std::string& name, bool& undecidable) const;
  bool default_quantized(const Layer& layer, const std::string& prefix) const;
  // A key without regex metacharacters: a literal module name (m_keys[i] is its renamed form).
  bool plain_key(size_t i) const { return !quant::is_inc_regex_key(m_config.extra_config[i].key); }

  quant::IncConfig m_config;
  ModelInfo m_model;
  std::vector<std::string> m_keys;                // renamed plain keys; regex keys as written
  std::vector<std::optional<Pattern>> m_patterns; // for regex keys
  std::vector<std::string> m_blocks;              // renamed block names
};

} // namespace qpatch::engine
