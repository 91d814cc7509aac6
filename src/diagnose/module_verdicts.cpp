// SPDX-License-Identifier: Apache-2.0
// The per-module verdicts dispatch by method exactly as explain.cpp does (the same judges over
// the same layers), so the table and `qpatch explain MODULE` cannot disagree.
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/diagnose/module_verdicts.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/gptq_rules.hpp>
#include <qpatch/engine/auto_round_rules.hpp>
#include <qpatch/quant/auto_round.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/quant/gptq.hpp>

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
template <class Decide>
void fill(const std::vector<Layer>& layers,
          const std::vector<detail::LayerView>& views,
          size_t column,
          Decide&& decide,
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
  const engine::ModelInfo vllm_model =
      engine::model_info_for(configs.architecture, configs.num_hidden_layers);
  const std::vector<Layer> vllm_layers = engine::build_layers(modules, vllm_model);
  const DiagnoseOptions options;
  const std::vector<detail::LayerView> vllm_views =
      detail::layer_views(vllm_layers, modules, inventory, options);
  ModuleVerdicts out;
  const quant::ConfigFile* active = configs.active();
  const std::string method = active != nullptr ? quant::declared_method(*active) : "";
  const Method* row = active != nullptr ? find_method(method) : nullptr;
  if (active != nullptr && row == nullptr) {
    return out; // a method qpatch does not judge: no column rather than a guess
  }
  const std::string_view name = row != nullptr ? row->name : std::string_view();
  const bool ct = name == "compressed-tensors";
  const engine::EngineSet judged = active != nullptr ? modelled_engines(row, engines) : engines;
  // SGLang builds layers of its own names (sglang_model_info.cpp): its column is judged on them.
  const engine::ModelInfo sglang_model =
      engine::sglang_model_info(configs.architecture, configs.num_hidden_layers);
  const std::vector<Layer> sglang_layers = judged.has(engine::Engine::sglang)
                                               ? engine::build_layers(modules, sglang_model)
                                               : std::vector<Layer>{};
  const std::vector<detail::LayerView> sglang_views =
      detail::layer_views(sglang_layers, modules, inventory, options);
  out.engines = judged.list();
  out.of.assign(modules.size(), std::vector<BuiltAs>(out.engines.size()));
  for (size_t column = 0; column < out.engines.size(); ++column) {
    const engine::Engine engine = out.engines[column];
    const bool sglang = engine == engine::Engine::sglang;
    const auto& layers = sglang ? sglang_layers : vllm_layers;
    const auto& views = sglang ? sglang_views : vllm_views;
    const engine::ModelInfo& model = sglang ? sglang_model : vllm_model;
    if (active == nullptr) {
      fill(
          layers, views, column, [](const Layer&) { return engine::Decision{}; }, out);
    } else if (ct) {
      QP_TRY_ASSIGN(const quant::CtConfig config, quant::read_compressed_tensors(*active));
      if (engine != engine::Engine::transformers) {
        const engine::CompressedTensorsRules judge(config, model, engine::newest_version(engine));
        fill(
            layers, views, column, [&](const Layer& layer) { return judge.decide(layer); }, out);
        continue;
      }
      // transformers builds its own layers (one nn.Linear per module) and never the MTP head,
      // whose modules keep "not a layer".
      const quant::ConfigFile* config_json = configs.find("config.json");
      const auto head = config_json != nullptr
                            ? checkpoint::find_mtp_head(config_json->doc, modules, inventory)
                            : checkpoint::MtpHead{};
      const auto plain = std::move(detail::engine_views(engine::EngineSet::only(engine),
                                                        vllm_model,
                                                        modules,
                                                        inventory,
                                                        head.modules,
                                                        options,
                                                        "compressed-tensors")
                                       .front());
      const engine::CompressedTensorsRules judge(
          config, plain->model, engine::newest_version(engine));
      fill(
          *plain->layers,
          *plain->views,
          column,
          [&](const Layer& layer) { return judge.decide(layer); },
          out);
    } else if (row->skip_list) {
      QP_TRY_ASSIGN(const detail::SkipListSetting setting,
                    detail::skip_list_setting(*active, configs, modules, inventory));
      const engine::SkipListRules judge =
          setting.judge(engine::newest_version(engine), setting.read_by(engine), model);
      fill(
          layers, views, column, [&](const Layer& layer) { return judge.decide(layer); }, out);
    } else if (name == "gptq") {
      QP_TRY_ASSIGN(const quant::GptqConfig config, quant::read_gptq(*active));
      const engine::GptqRules judge(
          config, model, engine::derived_gptq_list(inventory), engine::newest_version(engine));
      fill(
          layers, views, column, [&](const Layer& layer) { return judge.decide(layer); }, out);
    } else {
      QP_TRY_ASSIGN(const quant::IncConfig config, quant::read_auto_round(*active));
      const engine::AutoRoundRules judge(config, model);
      fill(
          layers, views, column, [&](const Layer& layer) { return judge.decide(layer); }, out);
    }
  }
  return out;
}

} // namespace qpatch::diagnose
