// SPDX-License-Identifier: Apache-2.0
// How vLLM decides whether a layer is quantized under a GPTQ config (AutoGPTQConfig,
// layers/quantization/auto_gptq.py and utils/gptq_utils.py, vLLM main 017e9f4; engines.md §4):
//   - a Linear (and the head when "lm_head" is truthy) is first tested against
//     `modules_in_block_to_quantize` (is_layer_gptq_quantized, called before dynamic by
//     get_linear_quant_method): an entry that is a substring of its name lists it; each shard of
//     a fused layer is tested, and shards that disagree make vLLM raise before `dynamic` is
//     read. A falsy list (absent, null, []) is derived from the headers of every *.safetensors
//     file (maybe_update_config): the modules of every tensor not F16, BF16 or F32.
//   - then `dynamic` keys are tried in file order and the first re.match decides: a "-:" key
//     makes the layer dense; any other key ("+:" or bare) stops the scan and only overrides
//     fields, so an earlier positive rule shadows a later negative one. Keys are matched against
//     vLLM's fused names (qkv_proj, gate_up_proj, mlp.experts) and are never renamed. The layer
//     is quantized when it is listed and no negative key matched.
//   - MoE experts consult `dynamic` only (get_moe_quant_method); with "lm_head" falsy the head
//     gets no quant method at all.
//   - Qwen3.5 MTP (since 2026-07-23, #48816): a "-:" key containing the text "mtp" makes the
//     MTP decoder layers dense; mtp.fc is not covered.
// SGLang (layers/quantization/gptq/gptq.py and the get_linear_quant_method it calls; sglang
// 0cdfa2f): `dynamic` as above (first re.match wins, "-:" dense), but nothing else is read: every
// Linear no negative rule matches is quantized, whatever modules_in_block_to_quantize says (and
// nothing is derived from the headers); GPTQ Marlin quantizes every FusedMoE layer without
// reading `dynamic`; no Qwen3.5 special case; its Qwen3.5 draft builds mtp.fc as a plain
// nn.Linear.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/dialect.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/engine/versions.hpp>
#include <qpatch/quant/gptq.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qpatch::engine {

// Return the module list vLLM derives when the config's is falsy (maybe_update_config,
// auto_gptq.py): for every tensor of every *.safetensors file whose dtype is not F16, BF16 or
// F32, its name up to the last dot (the whole name when it has none).
std::vector<std::string> derived_gptq_list(const checkpoint::Inventory& inventory);

// What the rules read from the headers: the module list vLLM derives, and the block optimum
// finds (get_block_name_with_pattern: the first BLOCK_PATTERNS entry some module name starts
// with; "" when none does, and optimum raises).
struct GptqHeaders {
  std::vector<std::string> derived;
  std::string optimum_block;
};
GptqHeaders gptq_headers(const checkpoint::Inventory& inventory);

class GptqRules {
public:
  // `headers`: the module list vLLM derives when the config has none, and optimum's block.
  // `version`: vLLM before #48816 has no Qwen3.5 MTP special case.
  GptqRules(const quant::GptqConfig& config,
            const ModelInfo& model,
            GptqHeaders headers,
            const EngineVersion& version = newest_version(Engine::vllm));

  Decision decide(const Layer& layer) const;
  // Return every rule that bears on `layer`, in the order vLLM tries them, as (label, text).
  std::vector<std::pair<std::string, std::string>> trace(const Layer& layer) const;
  // Return the index of the dynamic rule that first matches `prefix`, if any.
  std::optional<size_t> first_dynamic(const std::string& prefix, bool& undecidable) const;
  const quant::GptqConfig& config() const { return m_config; }
  // True when the Qwen3.5 MTP special case applies (a "-:" key containing "mtp").
  bool mtp_special_case() const;
  // Return the names is_layer_gptq_quantized tests for `layer`: each shard of a fused layer
  // (its prefix with the fused name replaced), else the prefix itself.
  std::vector<std::string> tested_names(const Layer& layer) const;
  // True when an entry of the list, as vLLM reads it, is a substring of `name`.
  bool listed(const std::string& name) const;
  // Return `entry` as vLLM reads it after apply_vllm_mapper (dotted entries are renamed).
  std::string as_read(const std::string& entry) const;
  // optimum (transformers): the block whose nn.Linear are candidates, and whether `prefix` is
  // in it (str.startswith, no dot required).
  const std::string& optimum_block() const { return m_block; }
  bool in_optimum_block(const std::string& prefix) const;
  // The first summed list entry `prefix` ends with, if any.
  std::optional<std::string> optimum_entry(const std::string& prefix) const;

private:
  using TraceLines = std::vector<std::pair<std::string, std::string>>;
  // trace(): how optimum's convert_model reads the layer (block, list; never dynamic).
  void trace_optimum(const Layer& layer, TraceLines& lines) const;
  // trace(): each dynamic rule tried on the layer, up to the first that matches.
  void trace_dynamic(const Layer& layer, TraceLines& lines) const;
  std::optional<Decision> decide_dynamic(const Layer& layer) const;
  // The first matching rule of a layer built quantized, and what override_config raises for
  // it, when it overrides bits or sym to what the kernel serving the config cannot take.
  std::optional<std::pair<size_t, std::string>> refused_override(const Layer& layer) const;
  Decision checked(const Layer& layer, Decision decision) const;
  Decision decide_unchecked(const Layer& layer) const;
  Decision decide_optimum(const Layer& layer) const;

  quant::GptqConfig m_config;
  ModelInfo m_model;
  Dialect m_dialect;
  GptqDialect m_gptq;              // m_dialect.gptq
  std::vector<std::string> m_list; // renamed like layers
  std::string m_block;             // optimum's block (transformers)
  std::vector<std::optional<Pattern>> m_patterns;
};

} // namespace qpatch::engine
