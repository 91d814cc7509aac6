// SPDX-License-Identifier: Apache-2.0
// The per-module verdicts ask the method's row for its rules over each engine's newest view
// (the same rules and layers as the judges and explain), so the table and `qpatch explain
// MODULE` cannot disagree.
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/diagnose/module_verdicts.hpp>

#include <map>

namespace qpatch::diagnose {

using engine::Layer;

std::string_view to_string(Built built) {
  switch (built) {
  case Built::not_a_layer:
    return "—";
  case Built::dense:
    return "dense";
  case Built::quantized:
    return "quant";
  case Built::load_error:
    return "error";
  }
  return "?";
}

namespace {

Built built_of(const engine::Decision& decision) {
  switch (decision.verdict) {
  case engine::Verdict::dense:
    return Built::dense;
  case engine::Verdict::quantized:
    return Built::quantized;
  case engine::Verdict::load_error:
    return Built::load_error;
  }
  return Built::load_error;
}

// Fill column `column` of `out` from `decide(layer)` for every layer the engine builds; the
// modules of no layer keep "not a layer".
template <class DecideFn>
void fill(const std::vector<Layer>& layers,
          const std::vector<detail::LayerView>& views,
          size_t column,
          DecideFn&& decide,
          ModuleVerdicts& out) {
  std::map<const Layer*, const detail::LayerView*> view_of;
  for (const detail::LayerView& view : views) {
    view_of[view.layer] = &view;
  }
  for (const Layer& layer : layers) {
    if (layer.draft) {
      continue; // the target's layer over the same modules is the one shown, as in explain
    }
    const engine::Decision decision = decide(layer);
    const auto view = view_of.find(&layer);
    const bool matches = view != view_of.end() && detail::consistent(*view->second, decision);
    for (const uint32_t m : layer.modules) {
      out.of[m][column] = {built_of(decision), matches};
    }
  }
}

} // namespace

Result<ModuleVerdicts> module_verdicts(const checkpoint::Inventory& inventory,
                                       const checkpoint::ModuleList& modules,
                                       const quant::ConfigSet& configs,
                                       engine::EngineSet engines) {
  ModuleVerdicts out;
  const quant::ConfigFile* active = configs.active();
  const std::string method = active != nullptr ? quant::declared_method(*active) : "";
  const Method* row = active != nullptr ? find_method(method) : nullptr;
  if (active != nullptr && row == nullptr) {
    return out; // a method qpatch does not judge: no column rather than a guess
  }
  const engine::EngineSet judged = active != nullptr ? modelled_engines(row, engines) : engines;
  // One column per engine, judged at its newest version on the layers it builds (its own names;
  // transformers never builds the MTP head, whose modules keep "not a layer").
  DiagnoseOptions options;
  for (const engine::Engine engine : judged.list()) {
    options.pins.of(engine) = std::string(engine::history(engine).newest_date);
  }
  const quant::ConfigFile* config_json = configs.find("config.json");
  const auto head = config_json != nullptr
                        ? checkpoint::find_mtp_head(config_json->doc, modules, inventory)
                        : checkpoint::MtpHead{};
  const engine::ModelInfo model =
      engine::model_info_for(configs.architecture, configs.num_hidden_layers);
  const auto views = detail::engine_views(judged,
                                          model,
                                          {modules, inventory, head.modules, options},
                                          row != nullptr ? row->name : std::string_view());
  out.engines = judged.list();
  out.of.assign(modules.size(), std::vector<BuiltAs>(out.engines.size()));
  for (size_t column = 0; column < views.size(); ++column) {
    const detail::EngineView& view = *views[column];
    if (active == nullptr) {
      fill(
          *view.layers, *view.views, column, [](const Layer&) { return engine::Decision{}; }, out);
      continue;
    }
    QP_TRY_ASSIGN(const auto rules, row->rules({*active, configs, modules, inventory, view}));
    fill(
        *view.layers,
        *view.views,
        column,
        [&](const Layer& layer) { return rules->decide(layer); },
        out);
  }
  return out;
}

} // namespace qpatch::diagnose
