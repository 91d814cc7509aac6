// SPDX-License-Identifier: Apache-2.0
// Each engine's view of a checkpoint: the layers it builds from the modules, and how each is
// stored.
#include "diagnose/judge_common.hpp"

#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/model_info.hpp>

#include <algorithm>
#include <future>
#include <memory>
#include <set>

namespace qpatch::diagnose::detail {

using checkpoint::Inventory;
using checkpoint::Module;
using checkpoint::ModuleList;
using checkpoint::StorageFormat;
using engine::Layer;

namespace {

Disk disk_of(const Layer& layer, const ModuleList& modules) {
  size_t quantized = 0;
  for (const uint32_t m : layer.modules) {
    if (modules[m].format == StorageFormat::inconsistent) {
      return Disk::inconsistent;
    }
    quantized += checkpoint::is_quantized(modules[m].format) ? 1U : 0U;
  }
  if (quantized == 0) {
    return Disk::dense;
  }
  return quantized == layer.modules.size() ? Disk::quantized : Disk::mixed;
}

std::string stored_as(const Layer& layer, const ModuleList& modules, const Inventory& inventory) {
  const Module& first = modules[layer.modules.front()];
  if (checkpoint::is_quantized(first.format)) {
    return std::string(to_string(first.format));
  }
  return std::string(to_string(inventory.tensors[first.primary].dtype));
}

} // namespace

std::vector<LayerView> layer_views(const std::vector<Layer>& layers,
                                   const ModuleList& modules,
                                   const Inventory& inventory,
                                   const DiagnoseOptions& options) {
  std::vector<LayerView> views;
  for (const Layer& layer : layers) {
    if (options.only) {
      const bool any = std::any_of(layer.modules.begin(), layer.modules.end(), [&](uint32_t m) {
        return options.only->matches(std::string(modules[m].name), engine::MatchMode::search)
            .value_or(false);
      });
      if (!any) {
        continue;
      }
    }
    views.push_back({&layer,
                     disk_of(layer, modules),
                     stored_as(layer, modules, inventory),
                     layer.modules.front()});
  }
  return views;
}

VllmSetting vllm_setting(const Inventory& inventory,
                         const ModuleList& modules,
                         const quant::ConfigSet& configs,
                         const DiagnoseOptions& options,
                         engine::Engine engine) {
  VllmSetting setting;
  setting.model = engine == engine::Engine::sglang
                      ? engine::sglang_model_info(configs.architecture, configs.num_hidden_layers)
                      : engine::model_info_for(configs.architecture, configs.num_hidden_layers);
  setting.layers = engine::build_layers(modules, setting.model);
  setting.views = layer_views(setting.layers, modules, inventory, options);
  return setting;
}

std::vector<std::unique_ptr<EngineView>> engine_views(engine::EngineSet engines,
                                                      const engine::ModelInfo& model,
                                                      const ModuleList& modules,
                                                      const Inventory& inventory,
                                                      const std::vector<uint32_t>& mtp_head,
                                                      const DiagnoseOptions& options) {
  // Each engine builds layers of its own from the same modules (vLLM's and SGLang's names
  // differ, transformers does not fuse): with more than one to build, the others are built on
  // threads of their own (each is a pass over ~70k modules on a 1T-parameter MoE; all only
  // read the modules).
  const auto build_transformers = [&] {
    auto view = std::make_unique<EngineView>();
    view->engine = engine::Engine::transformers;
    view->model = engine::transformers_view(model);
    const std::set<uint32_t> head(mtp_head.begin(), mtp_head.end());
    std::vector<Layer> layers;
    for (Layer& layer : engine::build_layers(modules, view->model)) {
      const bool in_head = std::all_of(layer.modules.begin(), layer.modules.end(), [&](uint32_t m) {
        return head.count(m) > 0;
      });
      (in_head ? view->not_built : layers).push_back(std::move(layer));
    }
    view->layers = std::make_shared<const std::vector<Layer>>(std::move(layers));
    view->views = std::make_shared<const std::vector<LayerView>>(
        layer_views(*view->layers, modules, inventory, options));
    return view;
  };
  // SGLang: one view per modelled version whose verdicts can differ; versions share the layers
  // (they differ in the draft's quant config mapping only).
  const auto build_sglang = [&] {
    std::vector<std::unique_ptr<EngineView>> out;
    auto view = std::make_unique<EngineView>();
    view->engine = engine::Engine::sglang;
    view->model = engine::sglang_model_info(model.architecture, model.num_hidden_layers);
    view->layers =
        std::make_shared<const std::vector<Layer>>(engine::build_layers(modules, view->model));
    view->views = std::make_shared<const std::vector<LayerView>>(
        layer_views(*view->layers, modules, inventory, options));
    const bool versions = engine::sglang_versions_differ(model.architecture) && !mtp_head.empty();
    if (versions) {
      auto later = std::make_unique<EngineView>();
      later->engine = engine::Engine::sglang;
      later->model = engine::sglang_model_info(model.architecture, model.num_hidden_layers, true);
      later->layers = view->layers;
      later->views = view->views;
      out.push_back(std::move(view));
      out.push_back(std::move(later));
    } else {
      view->model.version.clear();
      out.push_back(std::move(view));
    }
    return out;
  };
  const auto list = engines.list();
  const bool with_vllm = engines.has(engine::Engine::vllm);
  const bool with_sglang = engines.has(engine::Engine::sglang);
  const bool with_transformers = engines.has(engine::Engine::transformers);
  std::future<std::unique_ptr<EngineView>> transformers_job;
  if (with_transformers && (with_vllm || with_sglang)) {
    transformers_job = std::async(std::launch::async, build_transformers);
  }
  std::future<std::vector<std::unique_ptr<EngineView>>> sglang_job;
  if (with_sglang && with_vllm) {
    sglang_job = std::async(std::launch::async, build_sglang);
  }
  std::vector<std::unique_ptr<EngineView>> out;
  for (const engine::Engine engine : list) {
    if (engine == engine::Engine::transformers) {
      out.push_back(transformers_job.valid() ? transformers_job.get() : build_transformers());
      continue;
    }
    if (engine == engine::Engine::sglang) {
      for (auto& view : sglang_job.valid() ? sglang_job.get() : build_sglang()) {
        out.push_back(std::move(view));
      }
      continue;
    }
    auto view = std::make_unique<EngineView>();
    view->engine = engine;
    view->model = model;
    view->layers = std::make_shared<const std::vector<Layer>>(engine::build_layers(modules, model));
    view->views = std::make_shared<const std::vector<LayerView>>(
        layer_views(*view->layers, modules, inventory, options));
    out.push_back(std::move(view));
  }
  return out;
}

} // namespace qpatch::diagnose::detail
