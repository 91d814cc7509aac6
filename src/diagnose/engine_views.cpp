// SPDX-License-Identifier: Apache-2.0
// Each engine's view of a checkpoint: the layers it builds from the modules, and how each is
// stored.
#include "diagnose/decision_memo.hpp"
#include "diagnose/judge_common.hpp"

#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/model_info.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

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

NamingSetting naming_setting(const Inventory& inventory,
                             const ModuleList& modules,
                             const quant::ConfigSet& configs,
                             const DiagnoseOptions& options,
                             engine::Engine engine,
                             const engine::EngineVersion* version) {
  NamingSetting setting;
  setting.model = engine::naming_of(version != nullptr ? *version : engine::newest_version(engine),
                                    configs.architecture,
                                    configs.num_hidden_layers);
  setting.layers = engine::build_layers(modules, setting.model);
  setting.views = layer_views(setting.layers, modules, inventory, options);
  return setting;
}

} // namespace qpatch::diagnose::detail

namespace qpatch::diagnose {

// What engine_views built for one engine version's naming row, by the checkpoint it was built
// from (the inventory's and module list's addresses, the MTP head): the judgement and the plan's
// re-judgement of one checkpoint share it (DiagnoseOptions::layer_cache). Engines are built on
// threads of their own, hence the lock.
class LayerCache {
public:
  struct Key {
    const void* inventory;
    const void* modules;
    std::vector<uint32_t> mtp_head;
    engine::Engine engine;
    std::string naming; // ModelInfo::naming, ::row, ::architecture, ::num_hidden_layers
    std::string row;
    std::string architecture;
    uint64_t num_hidden_layers = 0;
    bool operator<(const Key& other) const {
      return std::tie(inventory,
                      modules,
                      mtp_head,
                      engine,
                      naming,
                      row,
                      architecture,
                      num_hidden_layers) < std::tie(other.inventory,
                                                    other.modules,
                                                    other.mtp_head,
                                                    other.engine,
                                                    other.naming,
                                                    other.row,
                                                    other.architecture,
                                                    other.num_hidden_layers);
    }
  };
  struct Built {
    std::shared_ptr<const std::vector<engine::Layer>> layers;
    std::shared_ptr<const std::vector<detail::LayerView>> views;
    std::vector<engine::Layer> not_built;
  };
  std::optional<Built> find(const Key& key) const {
    const std::lock_guard<std::mutex> lock(m_mutex);
    const auto it = m_built.find(key);
    return it == m_built.end() ? std::nullopt : std::optional<Built>(it->second);
  }
  void store(Key key, Built built) {
    const std::lock_guard<std::mutex> lock(m_mutex);
    m_built.emplace(std::move(key), std::move(built));
  }

  // Decisions under the configs judged: the plan's re-judgement asks again of the list the
  // judgement settled on.
  detail::DecisionMemo& decisions() { return m_decisions; }

private:
  mutable std::mutex m_mutex;
  std::map<Key, Built> m_built;
  detail::DecisionMemo m_decisions;
};

std::shared_ptr<LayerCache> make_layer_cache() {
  return std::make_shared<LayerCache>();
}

namespace detail {

DecisionMemo& decision_memo(const DiagnoseOptions& options, DecisionMemo& local) {
  return options.layer_cache ? options.layer_cache->decisions() : local;
}

} // namespace detail

} // namespace qpatch::diagnose

namespace qpatch::diagnose::detail {

namespace {

// Whether two versions' naming rows build the same layers and say the same of them: a span
// whose names are assumed stays a version of its own, so the report can say so.
bool same_naming(const engine::ModelInfo& a, const engine::ModelInfo& b) {
  return a.row == b.row && a.assumed_because == b.assumed_because && a.assumes == b.assumes;
}

} // namespace

std::vector<std::unique_ptr<EngineView>> engine_views(engine::EngineSet engines,
                                                      const engine::ModelInfo& model,
                                                      const ViewedCheckpoint& checkpoint,
                                                      std::string_view method,
                                                      const RulesKey& rules_key) {
  const ModuleList& modules = checkpoint.modules;
  const Inventory& inventory = checkpoint.inventory;
  const std::vector<uint32_t>& mtp_head = checkpoint.mtp_head;
  const DiagnoseOptions& options = checkpoint.options;
  // One view per version of each engine whose verdicts can differ (versions.hpp). Versions whose
  // naming rows are equal build the same layers, so they share them and their storage views.
  const std::set<uint32_t> head(mtp_head.begin(), mtp_head.end());
  const auto build_layers_of = [&](EngineView& view) {
    const LayerCache::Key key{&inventory,
                              &modules,
                              mtp_head,
                              view.engine,
                              view.model.naming,
                              view.model.row,
                              view.model.architecture,
                              view.model.num_hidden_layers};
    if (options.layer_cache) {
      if (auto built = options.layer_cache->find(key)) {
        view.layers = std::move(built->layers);
        view.views = std::move(built->views);
        view.not_built = std::move(built->not_built);
        return;
      }
    }
    std::vector<Layer> layers;
    for (Layer& layer : engine::build_layers(modules, view.model)) {
      // An engine that builds a layer per module never builds the MTP head (transformers:
      // modeling_qwen3_5.py drops ^mtp.* on load).
      const bool in_head = !view.model.engine_layers &&
                           std::all_of(layer.modules.begin(), layer.modules.end(), [&](uint32_t m) {
                             return head.count(m) > 0;
                           });
      (in_head ? view.not_built : layers).push_back(std::move(layer));
    }
    view.layers = std::make_shared<const std::vector<Layer>>(std::move(layers));
    view.views = std::make_shared<const std::vector<LayerView>>(
        layer_views(*view.layers, modules, inventory, options));
    if (options.layer_cache) {
      options.layer_cache->store(key, {view.layers, view.views, view.not_built});
    }
  };
  const auto build_engine = [&](engine::Engine engine) {
    std::vector<std::unique_ptr<EngineView>> out;
    std::string previous_key;
    for (engine::EngineVersion& version :
         engine::versions_to_judge(engine, method, model.architecture, options.pins)) {
      const std::string key = rules_key ? rules_key(version) : std::string();
      if (rules_key && !out.empty() && key == previous_key &&
          out.back()->version.with == version.with) {
        if (same_naming(engine::naming_of(version, model.architecture, model.num_hidden_layers),
                        out.back()->model)) {
          out.back()->version.until = version.until; // one version for both eras
          out.back()->version.spans_eras = true;
          continue;
        }
      }
      previous_key = key;
      auto view = std::make_unique<EngineView>();
      view->engine = engine;
      view->model = engine::naming_of(version, model.architecture, model.num_hidden_layers);
      view->dialect = engine::dialect_of(version, view->model);
      view->version = std::move(version);
      for (const auto& earlier : out) {
        if (earlier->model.row == view->model.row) {
          view->layers = earlier->layers;
          view->views = earlier->views;
          view->not_built = earlier->not_built;
          break;
        }
      }
      if (!view->layers) {
        build_layers_of(*view);
      }
      out.push_back(std::move(view));
    }
    return out;
  };
  // Each engine builds layers of its own from the same modules (vLLM's and SGLang's names
  // differ, transformers does not fuse): the engines after the first are built on threads of
  // their own (each is a pass over ~70k modules on a 1T-parameter MoE; all only read them).
  const auto list = engines.list();
  std::vector<std::future<std::vector<std::unique_ptr<EngineView>>>> jobs;
  for (size_t i = 1; i < list.size(); ++i) {
    jobs.push_back(std::async(std::launch::async, build_engine, list[i]));
  }
  std::vector<std::unique_ptr<EngineView>> out;
  for (size_t i = 0; i < list.size(); ++i) {
    for (auto& view : i == 0 ? build_engine(list[0]) : jobs[i - 1].get()) {
      out.push_back(std::move(view));
    }
  }
  return out;
}

std::vector<engine::EngineVersion>
versions_of(const std::vector<std::unique_ptr<EngineView>>& views, engine::Engine engine) {
  std::vector<engine::EngineVersion> out;
  for (const auto& view : views) {
    if (view->engine == engine) {
      out.push_back(view->version);
    }
  }
  return out;
}

} // namespace qpatch::diagnose::detail
