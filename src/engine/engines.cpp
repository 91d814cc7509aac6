// SPDX-License-Identifier: Apache-2.0
#include "engine/registry.hpp"

#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/model_info.hpp>

namespace qpatch::engine {

std::string_view to_string(Engine engine) {
  switch (engine) {
  case Engine::vllm:
    return "vllm";
  case Engine::sglang:
    return "sglang";
  case Engine::transformers:
    return "transformers";
  }
  return "unknown";
}

std::string_view rules_of(Engine engine, std::string_view quant_method) {
  if (engine == Engine::vllm && quant_method == "bitsandbytes") {
    // bitsandbytes left vLLM's tree in #43529 (073c510c9); main loads it only with the
    // vllm-bnb-plugin package installed, whose rules (v0.0.2, 85de847) are the ones judged.
    return "vllm main 017e9f4 (2026-08-17) with vllm-bnb-plugin 85de847";
  }
  if (engine == Engine::sglang && quant_method == "awq") {
    return "sglang 01f67c3 (awq/awq.py)";
  }
  if (engine == Engine::sglang && quant_method == "gptq") {
    return "sglang 0cdfa2f (gptq/gptq.py)";
  }
  switch (engine) {
  case Engine::vllm:
    return "vllm main 017e9f4 (2026-08-17)";
  case Engine::sglang:
    return "sglang 2026 (008b79d; MTP draft without and with #35887)";
  case Engine::transformers:
    return "transformers + compressed-tensors ac8e2ba";
  }
  return "unknown";
}

std::string_view display_name(Engine engine) {
  switch (engine) {
  case Engine::vllm:
    return "vLLM";
  case Engine::sglang:
    return "SGLang";
  case Engine::transformers:
    return "transformers";
  }
  return "unknown";
}

const History& history(Engine engine) {
  switch (engine) {
  case Engine::sglang:
    return sglang_history();
  case Engine::transformers:
    return transformers_history();
  case Engine::vllm:
    break;
  }
  return vllm_history();
}

ModelInfo naming_of(const EngineVersion& version,
                    const std::string& architecture,
                    uint64_t num_hidden_layers) {
  switch (version.engine) {
  case Engine::sglang:
    return sglang_model_info(architecture, num_hidden_layers, version);
  case Engine::transformers:
    return transformers_view(model_info_for(architecture, num_hidden_layers));
  case Engine::vllm:
    break;
  }
  return model_info_for(architecture, num_hidden_layers, version);
}

Dialect dialect_of(const EngineVersion& version, const ModelInfo& model) {
  switch (version.engine) {
  case Engine::sglang:
    return sglang_dialect(version, model);
  case Engine::transformers:
    return transformers_dialect(version, model);
  case Engine::vllm:
    break;
  }
  return vllm_dialect(version, model);
}

std::optional<EngineSet> EngineSet::parse(std::string_view text) {
  if (text == "all") {
    return all();
  }
  for (const Engine engine : {Engine::vllm, Engine::sglang, Engine::transformers}) {
    if (text == to_string(engine)) {
      return only(engine);
    }
  }
  return std::nullopt;
}

std::vector<Engine> EngineSet::list() const {
  std::vector<Engine> out;
  for (const Engine engine : {Engine::vllm, Engine::sglang, Engine::transformers}) {
    if (has(engine)) {
      out.push_back(engine);
    }
  }
  return out;
}

std::vector<std::string> EngineSet::names() const {
  std::vector<std::string> out;
  for (const Engine engine : list()) {
    out.emplace_back(to_string(engine));
  }
  return out;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
}

std::string rules_of(const EngineSet& engines, std::string_view quant_method) {
  std::vector<std::string> rules;
  for (const Engine engine : engines.list()) {
    rules.emplace_back(rules_of(engine, quant_method));
  }
  return join_names(rules);
}

} // namespace qpatch::engine
