// SPDX-License-Identifier: Apache-2.0
// The method table (methods.hpp has the recipe for adding a row). Each row's judge and explain
// read the method's config view, then hand it to the method's own functions; `row` writes that
// once for every method.
#include "diagnose/judge_common.hpp"

#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/auto_round_rules.hpp>
#include <qpatch/engine/gptq_rules.hpp>

#include <algorithm>
#include <memory>
#include <type_traits>

namespace qpatch::diagnose {

namespace {

using detail::ExplainContext;
using detail::JudgeInput;
using engine::Engine;
using engine::EngineSet;
using engine::SkipListMethod;

// The engines whose folders model `name`'s rules (each engine's history lists its methods).
EngineSet engines_modelling(std::string_view name) {
  EngineSet out = EngineSet::none();
  for (const Engine engine : engine::all_engines()) {
    if (engine::models_method(engine, name)) {
      out.add(engine);
    }
  }
  return out;
}

// Each method's rules over one engine version's view, behind LayerRules.
template <typename Rules> class RulesOf final : public LayerRules {
public:
  explicit RulesOf(Rules rules, std::string key = "")
      : m_rules(std::move(rules)), m_key(std::move(key)) {}
  engine::Decision decide(const engine::Layer& layer) const override {
    return m_rules.decide(layer);
  }
  std::vector<std::pair<std::string, std::string>>
  trace(const engine::Layer& layer) const override {
    if constexpr (std::is_same_v<Rules, engine::SkipListRules>) {
      return m_rules.trace(layer, m_key); // the list's key names its entries
    } else {
      return m_rules.trace(layer);
    }
  }

private:
  Rules m_rules;
  std::string m_key;
};
using SharedRules = std::shared_ptr<const LayerRules>;

// A row whose judge and explain read the view with `Read(active file, input)` first; a config
// that cannot be read as its method is the error they return.
template <auto Read, auto Judge, auto Explain, auto MakeRules>
Method row(std::string_view name,
           std::vector<std::string_view> aliases,
           std::string_view packed_tensor,
           std::optional<SkipListMethod> skip_list = std::nullopt) {
  Method method;
  method.name = name;
  method.aliases = std::move(aliases);
  method.engines = engines_modelling(name);
  method.skip_list = skip_list;
  method.packed_tensor = packed_tensor;
  method.judge = [](const JudgeInput& in, Diagnosis& diagnosis) -> Status {
    QP_TRY_ASSIGN(const auto view, Read(in.active, in.configs, in.modules, in.inventory));
    return Judge(in, view, diagnosis);
  };
  method.explain = [](ExplainContext& context) -> Status {
    QP_TRY_ASSIGN(const auto view,
                  Read(context.active, context.configs, context.modules, context.inventory));
    return Explain(context, view);
  };
  method.rules = [](const detail::DecideInput& in) -> Result<SharedRules> {
    QP_TRY_ASSIGN(const auto view, Read(in.active, in.configs, in.modules, in.inventory));
    return MakeRules(in, view);
  };
  return method;
}

// The config views, with the reader signature `row` calls.
Result<quant::CtConfig> read_ct(const quant::ConfigFile& active,
                                const quant::ConfigSet& /*configs*/,
                                const checkpoint::ModuleList& /*modules*/,
                                const checkpoint::Inventory& /*inventory*/) {
  return quant::read_compressed_tensors(active);
}
Result<quant::GptqConfig> read_gptq(const quant::ConfigFile& active,
                                    const quant::ConfigSet& /*configs*/,
                                    const checkpoint::ModuleList& /*modules*/,
                                    const checkpoint::Inventory& /*inventory*/) {
  return quant::read_gptq(active);
}
Result<quant::IncConfig> read_inc(const quant::ConfigFile& active,
                                  const quant::ConfigSet& /*configs*/,
                                  const checkpoint::ModuleList& /*modules*/,
                                  const checkpoint::Inventory& /*inventory*/) {
  return quant::read_auto_round(active);
}

SharedRules rules_ct(const detail::DecideInput& in, const quant::CtConfig& config) {
  return std::make_shared<const RulesOf<engine::CompressedTensorsRules>>(
      engine::CompressedTensorsRules(config, in.view.model, in.view.version));
}
SharedRules rules_gptq(const detail::DecideInput& in, const quant::GptqConfig& config) {
  return std::make_shared<const RulesOf<engine::GptqRules>>(engine::GptqRules(
      config, in.view.model, engine::gptq_headers(in.inventory), in.view.version));
}
SharedRules rules_auto_round(const detail::DecideInput& in, const quant::IncConfig& config) {
  return std::make_shared<const RulesOf<engine::AutoRoundRules>>(
      engine::AutoRoundRules(config, in.view.model, in.view.version, in.view.layers.get()));
}
SharedRules rules_skip_list(const detail::DecideInput& in, const detail::SkipListSetting& setting) {
  return std::make_shared<const RulesOf<engine::SkipListRules>>(
      setting.judge(
          in.view.version, setting.read_by(in.view.version, in.view.model), in.view.model),
      setting.list.key);
}

Status judge_ct(const JudgeInput& in, const quant::CtConfig& config, Diagnosis& diagnosis) {
  detail::judge_compressed_tensors(in, config, diagnosis);
  return ok_status();
}

const std::vector<Method>& table() {
  // vLLM renames "compressed_tensors" to "compressed-tensors" and a ModelOpt NVFP4 config to
  // "modelopt_fp4" (vllm/config/model.py ModelConfig._normalize_quantization_config); the
  // latter is judged by ModelOpt's rules with its NVFP4 cases (skip_list_rules.cpp).
  static const std::vector<Method> rows{
      row<read_ct, judge_ct, detail::explain_compressed_tensors, rules_ct>(
          "compressed-tensors", {"compressed_tensors"}, "weight_packed"),
      row<read_gptq, detail::judge_gptq, detail::explain_gptq, rules_gptq>("gptq", {}, "qweight"),
      row<read_inc, detail::judge_auto_round, detail::explain_auto_round, rules_auto_round>(
          "auto-round", {}, "qweight"),
      row<detail::skip_list_setting,
          detail::judge_skip_list,
          detail::explain_skip_list,
          rules_skip_list>("awq", {}, "qweight", SkipListMethod::awq),
      row<detail::skip_list_setting,
          detail::judge_skip_list,
          detail::explain_skip_list,
          rules_skip_list>("fp8", {}, "weight_scale", SkipListMethod::fp8),
      row<detail::skip_list_setting,
          detail::judge_skip_list,
          detail::explain_skip_list,
          rules_skip_list>("modelopt", {"modelopt_fp4"}, "weight_scale", SkipListMethod::modelopt),
      row<detail::skip_list_setting,
          detail::judge_skip_list,
          detail::explain_skip_list,
          rules_skip_list>("bitsandbytes", {}, "weight_scale", SkipListMethod::bitsandbytes),
      row<detail::skip_list_setting,
          detail::judge_skip_list,
          detail::explain_skip_list,
          rules_skip_list>("quark", {}, "weight_scale", SkipListMethod::quark),
  };
  return rows;
}

} // namespace

bool Method::answers_to(std::string_view quant_method) const {
  return quant_method == name ||
         std::find(aliases.begin(), aliases.end(), quant_method) != aliases.end();
}

const std::vector<Method>& methods() {
  return table();
}

const Method* find_method(std::string_view quant_method) {
  for (const Method& method : table()) {
    if (method.answers_to(quant_method)) {
      return &method;
    }
  }
  return nullptr;
}

engine::Engine reference_engine() {
  return engine::all_engines().front();
}

EngineSet modelled_engines(const Method* method, EngineSet requested) {
  EngineSet modelled = EngineSet::none();
  for (const Engine engine : requested.list()) {
    if (method != nullptr ? method->engines.has(engine) : engine == reference_engine()) {
      modelled.add(engine);
    }
  }
  return modelled.empty() ? EngineSet::only(reference_engine()) : modelled;
}

std::string judged_methods_text() {
  std::string out;
  const auto& rows = table();
  for (size_t i = 0; i < rows.size(); ++i) {
    out += std::string(i == 0                 ? ""
                       : i + 1 == rows.size() ? " and "
                                              : ", ") +
           std::string(rows[i].name);
  }
  return out;
}

namespace detail {

bool same_method(const std::string& a, const std::string& b) {
  const Method* method = find_method(a);
  return method != nullptr ? method == find_method(b) : a == b;
}

} // namespace detail

} // namespace qpatch::diagnose
