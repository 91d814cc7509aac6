// SPDX-License-Identifier: Apache-2.0
#include "engine/registry.hpp"

#include <qpatch/engine/config_checks.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/model_info.hpp>

namespace qpatch::engine {

namespace {

// One row per engine: its folder's history (identity, methods, versions), naming and dialect.
// Adding an engine is a folder and a row here.
struct EngineRow {
  Engine engine;
  const History& (*history)();
  ModelInfo (*naming)(const EngineVersion&, const std::string& architecture, uint64_t layers);
  Dialect (*dialect)(const EngineVersion&, const ModelInfo&);
  std::string (*effect)(Mismatch, const MismatchContext&);
  // Whole-config checks (null: the engine runs none that qpatch models).
  std::optional<std::string> (*config_rejection)(std::string_view method,
                                                 const json::Json& config,
                                                 const EngineVersion& version);
  // The method a config is read as where not its own (null: always its own).
  std::optional<ConfigReading> (*config_read_as)(std::string_view method,
                                                 const json::Json& config,
                                                 std::string_view architecture,
                                                 const EngineVersion& version) = nullptr;
};

ModelInfo vllm_naming(const EngineVersion& version, const std::string& arch, uint64_t layers) {
  return model_info_for(arch, layers, version);
}
ModelInfo sglang_naming(const EngineVersion& version, const std::string& arch, uint64_t layers) {
  return sglang_model_info(arch, layers, version);
}
ModelInfo
transformers_naming(const EngineVersion& /*version*/, const std::string& arch, uint64_t layers) {
  return transformers_view(model_info_for(arch, layers));
}

const std::vector<EngineRow>& rows() {
  static const std::vector<EngineRow> table{
      {Engine::vllm, vllm_history, vllm_naming, vllm_dialect, vllm_effect, vllm_config_rejection},
      {Engine::sglang,
       sglang_history,
       sglang_naming,
       sglang_dialect,
       sglang_effect,
       sglang_config_rejection,
       sglang_config_read_as},
      {Engine::transformers,
       transformers_history,
       transformers_naming,
       transformers_dialect,
       transformers_effect,
       transformers_config_rejection},
  };
  return table;
}

const EngineRow& row(Engine engine) {
  for (const EngineRow& r : rows()) {
    if (r.engine == engine) {
      return r;
    }
  }
  return rows().front();
}

} // namespace

std::vector<Engine> all_engines() {
  std::vector<Engine> out;
  for (const EngineRow& r : rows()) {
    out.push_back(r.engine);
  }
  return out;
}

std::vector<std::string> engine_choices() {
  std::vector<std::string> out;
  for (const Engine engine : all_engines()) {
    out.emplace_back(to_string(engine));
  }
  out.emplace_back("all");
  return out;
}

std::string_view to_string(Engine engine) {
  return row(engine).history().name;
}

std::string_view display_name(Engine engine) {
  return row(engine).history().display_name;
}

std::string_view rules_of(Engine engine, std::string_view quant_method) {
  const History& h = row(engine).history();
  for (const auto& [method, rules] : h.method_rules) {
    if (method == quant_method) {
      return rules;
    }
  }
  return h.rules;
}

bool models_method(Engine engine, std::string_view quant_method) {
  return row(engine).history().models(quant_method);
}

const History& history(Engine engine) {
  return row(engine).history();
}

ModelInfo naming_of(const EngineVersion& version,
                    const std::string& architecture,
                    uint64_t num_hidden_layers) {
  return row(version.engine).naming(version, architecture, num_hidden_layers);
}

Dialect dialect_of(const EngineVersion& version, const ModelInfo& model) {
  return row(version.engine).dialect(version, model);
}

std::optional<std::string> config_rejection(const EngineVersion& version,
                                            std::string_view quant_method,
                                            const json::Json& config) {
  const auto check = row(version.engine).config_rejection;
  return check != nullptr ? check(quant_method, config, version) : std::nullopt;
}

std::optional<ConfigReading> config_read_as(const EngineVersion& version,
                                            std::string_view quant_method,
                                            const json::Json& config,
                                            std::string_view architecture) {
  const auto read_as = row(version.engine).config_read_as;
  return read_as != nullptr ? read_as(quant_method, config, architecture, version) : std::nullopt;
}

std::string refuses_config(const std::string& engine_error) {
  return engine_error.empty()
             ? "start-up fails: it refuses the quantization config"
             : "start-up fails: it refuses the quantization config: \"" + engine_error + "\"";
}

std::string untargeted_raise() {
  return "start-up fails while it builds the model: \"ValueError: Unable to find matching "
         "target for ... in the compressed-tensors config.\"";
}

std::string effect_of(Engine engine, Mismatch mismatch, const MismatchContext& context) {
  return row(engine).effect(mismatch, context);
}

std::optional<EngineSet> EngineSet::parse(std::string_view text) {
  if (text == "all") {
    return all();
  }
  for (const Engine engine : all_engines()) {
    if (text == to_string(engine)) {
      return only(engine);
    }
  }
  return std::nullopt;
}

std::vector<Engine> EngineSet::list() const {
  std::vector<Engine> out;
  for (const Engine engine : all_engines()) {
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
