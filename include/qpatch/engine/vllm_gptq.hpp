// SPDX-License-Identifier: Apache-2.0
// How vLLM decides whether a layer is quantized under a GPTQ config (AutoGPTQConfig,
// layers/quantization/auto_gptq.py and utils/gptq_utils.py, vLLM main 017e9f4; engines.md §4):
//   - `dynamic` keys are tried in file order and the first re.match decides: a "-:" key makes
//     the layer dense at once; any other key ("+:" or bare) stops the scan and only overrides
//     fields, so an earlier positive rule shadows a later negative one. Keys are matched against
//     vLLM's fused names (qkv_proj, gate_up_proj, mlp.experts) and are never renamed.
//   - otherwise a Linear is quantized iff some `modules_in_block_to_quantize` entry is a
//     substring of its name (each shard of a fused layer; shards must agree). Absent, the list
//     is derived from the headers of every *.safetensors file: modules with a non-float tensor.
//   - MoE experts consult `dynamic` only; lm_head is quantized only with "lm_head": true.
//   - Qwen3.5 MTP (since 2026-07-23, #48816): a "-:" key containing the text "mtp" makes the
//     MTP decoder layers dense; mtp.fc is not covered.
// SGLang (layers/quantization/gptq/gptq.py and the get_linear_quant_method it calls; sglang
// 0cdfa2f): `dynamic` as above (first re.match wins, "-:" dense), but nothing else is read: every
// Linear no negative rule matches is quantized, whatever modules_in_block_to_quantize says (and
// nothing is derived from the headers); GPTQ Marlin quantizes every FusedMoE layer without
// reading `dynamic`; no Qwen3.5 special case; its Qwen3.5 draft builds mtp.fc as a plain
// nn.Linear.
#pragma once

#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/engine/vllm_compressed_tensors.hpp>
#include <qpatch/quant/gptq.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qpatch::engine {

class VllmGptq {
public:
  // `derived` is the module list vLLM derives from the headers when the config has none.
  VllmGptq(const quant::GptqConfig& config,
           const ModelInfo& model,
           std::vector<std::string> derived,
           Engine engine = Engine::vllm);

  Decision decide(const Layer& layer) const;
  // Return every rule that bears on `layer`, in the order vLLM tries them, as (label, text).
  std::vector<std::pair<std::string, std::string>> trace(const Layer& layer) const;
  // Return the index of the dynamic rule that first matches `prefix`, if any.
  std::optional<size_t> first_dynamic(const std::string& prefix, bool& undecidable) const;
  const quant::GptqConfig& config() const { return m_config; }
  // True when the Qwen3.5 MTP special case applies (a "-:" key containing "mtp").
  bool mtp_special_case() const;

private:
  bool in_list(const std::string& name) const;

  quant::GptqConfig m_config;
  ModelInfo m_model;
  Engine m_engine = Engine::vllm;
  std::vector<std::string> m_list; // renamed like layers
  std::vector<std::optional<Pattern>> m_patterns;
};

} // namespace qpatch::engine
