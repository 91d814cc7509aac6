// SPDX-License-Identifier: Apache-2.0
#include "diagnose/missing_head.hpp"

#include <qpatch/engine/model_info.hpp>
#include <qpatch/engine/versions.hpp>

#include <algorithm>

namespace qpatch::diagnose {
namespace {

// Where the draft's layer i lives in checkpoint naming: after the main layers (DeepSeek, GLM,
// Step: model.layers.{N+i}), under model.mtp_layers.{i} (MiMo), mtp.{i} (DeepSeek-V4), or
// mtp.layers.{i} (Qwen3.5, Qwen3-Next). A stored head tells; without one, vLLM's naming row for the
// architecture does.
std::string layer_name(const checkpoint::MtpHead& head,
                       const checkpoint::ModuleList& modules,
                       const engine::ModelInfo& vllm,
                       uint64_t main_layers,
                       uint64_t i) {
  std::string_view stored =
      head.modules.empty() ? std::string_view(vllm.draft_prefix) : modules[head.modules[0]].name;
  if (stored.substr(0, 17) == "model.mtp_layers.") {
    return "model.mtp_layers." + std::to_string(i);
  }
  if (stored.substr(0, 13) == "model.layers." && main_layers > 0) {
    return "model.layers." + std::to_string(main_layers + i);
  }
  if (stored.substr(0, 28) == "language_model.model.layers." && main_layers > 0) {
    return "language_model.model.layers." + std::to_string(main_layers + i); // Kimi-K3
  }
  if (stored.size() > 4 && stored.substr(0, 4) == "mtp." && stored[4] >= '0' && stored[4] <= '9') {
    return "mtp." + std::to_string(i); // DeepSeek-V4: mtp.{i}.e_proj, ...
  }
  return "mtp.layers." + std::to_string(i);
}

bool stores_layer(const checkpoint::MtpHead& head,
                  const checkpoint::ModuleList& modules,
                  const std::string& layer) {
  return std::any_of(head.modules.begin(), head.modules.end(), [&](uint32_t m) {
    const std::string_view name = modules[m].name;
    return name.size() > layer.size() && name.substr(0, layer.size()) == layer &&
           name[layer.size()] == '.';
  });
}

std::string replace_placeholder(std::string text, const std::string& value) {
  const size_t at = text.find("{}");
  return at == std::string::npos ? text : text.replace(at, 2, value);
}

} // namespace

void missing_head_finding(const checkpoint::MtpHead& head,
                          const checkpoint::ModuleList& modules,
                          const std::string& architecture,
                          bool quantized,
                          engine::EngineSet engines,
                          Diagnosis& diagnosis) {
  if (head.declared == 0 || head.declared > 64) {
    return;
  }
  const uint64_t main_layers = head.main_layers;
  const engine::ModelInfo vllm = engine::model_info_for(architecture, main_layers);
  std::vector<std::string> missing;
  std::string first_missing_index;
  for (uint64_t i = 0; i < head.declared; ++i) {
    const std::string layer = layer_name(head, modules, vllm, main_layers, i);
    if (!stores_layer(head, modules, layer)) {
      if (missing.empty()) {
        // vLLM numbers draft layers from num_hidden_layers whatever the checkpoint calls them
        // (deepseek_mtp.py and deepseek_v4/nvidia/mtp.py: mtp_start_layer_idx =
        // config.num_hidden_layers, 017e9f4): DeepSeek-V4's mtp.1 is layer N + 1.
        first_missing_index =
            main_layers > 0 ? std::to_string(main_layers + i) : layer.substr(layer.rfind('.') + 1);
      }
      missing.push_back(layer);
    }
  }
  if (missing.empty()) {
    return;
  }
  Finding finding;
  finding.kind = FindingKind::missing_draft_head;
  finding.label = "mtp";
  finding.modules = missing;
  const std::string declared = head.declared_by + ": " + std::to_string(head.declared);
  finding.detail = (missing.size() == head.declared
                        ? "config.json declares " + declared + " but no file stores the MTP head"
                        : "config.json declares " + declared + " but no file stores " +
                              std::to_string(missing.size()) + " of its layers") +
                   " (" + missing.front() + (missing.size() > 1 ? ", ..." : "") +
                   "): no config patch can help; graft the head from the base model";
  if (engines.has(engine::Engine::vllm)) {
    finding.engines.emplace_back("vllm");
    std::string effect;
    if (!vllm.draft_missing_error.empty()) {
      effect = "start-up fails once speculative decoding loads the MTP head: \"" +
               replace_placeholder(vllm.draft_missing_error, first_missing_index) + "\"";
    } else if (quantized) {
      // qwen3_5_mtp.py Qwen3_5MTP.load_weights (and Glm4MoeMTP's, MiMoMTP's) checks nothing,
      // and DefaultModelLoader.load_weights tracks unloaded weights only when
      // model_config.quantization is None (model_loader/default_loader.py, 017e9f4).
      effect = "starts with the draft's weights uninitialised: its drafts are rejected, so "
               "speculative decoding only slows serving down";
    } else {
      effect = "start-up fails once speculative decoding loads the MTP head: \"ValueError: "
               "Following weights were not initialized from checkpoint: {...}\"";
    }
    finding.engine_effects.emplace_back("vllm", effect);
  }
  if (engines.has(engine::Engine::sglang)) {
    // qwen3_5_mtp.py Qwen3_5ForCausalLMMTP.load_weights (008b79d2), deepseek_nextn.py via
    // deepseek_weight_loader.py do_load_weights (29bd4e85), glm4_moe_nextn.py via glm4_moe.py
    // load_weights (005ffc65): none compares what it loaded with its parameters, and
    // model_loader/loader.py verifies only models that set verify_weights_on_load.
    finding.engines.emplace_back("sglang");
    finding.engine_effects.emplace_back(
        "sglang",
        "starts with the draft's weights as built, never loaded: its drafts are rejected "
        "(\"accept len 1.000\", SGLang #35797), so speculative decoding only slows serving down");
  }
  if (finding.engines.empty()) {
    return;
  }
  diagnosis.findings.push_back(std::move(finding));
}

} // namespace qpatch::diagnose
