// SPDX-License-Identifier: Apache-2.0
// The judge for compressed-tensors under vLLM's rules, and the inventory's findings.
//
// The fix is found as a fixpoint rather than by special cases: starting from the ignore list as
// written, re-judge every layer; a dense-on-disk layer the engine would quantize gets its exact
// checkpoint module names appended; an ignore entry that makes a quantized-on-disk layer dense is
// removed. Removing a blanket entry (the reverse trap, re:^mtp.*) makes the dense modules it
// covered quantized in the next round, which appends their exact names, so no other module's
// verdict changes. Nothing else is touched.
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/vllm_compressed_tensors.hpp>
#include <qpatch/engine/vllm_config_checks.hpp>
#include <qpatch/quant/compressed_tensors.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

namespace qpatch::diagnose {

using checkpoint::Inventory;
using checkpoint::Module;
using checkpoint::ModuleList;
using checkpoint::StorageFormat;
using engine::DecidedBy;
using engine::Decision;
using engine::Layer;
using engine::LayerKind;
using engine::Verdict;

std::string_view to_string(FindingKind kind) {
  switch (kind) {
  case FindingKind::dense_quantized_by_config:
    return "dense_quantized_by_config";
  case FindingKind::quantized_made_dense:
    return "quantized_made_dense";
  case FindingKind::fused_shards_disagree:
    return "fused_shards_disagree";
  case FindingKind::quantized_untargeted:
    return "quantized_untargeted";
  case FindingKind::engine_builds_dense:
    return "engine_builds_dense";
  case FindingKind::engine_quantizes:
    return "engine_quantizes";
  case FindingKind::disk_shards_disagree:
    return "disk_shards_disagree";
  case FindingKind::inconsistent_storage:
    return "inconsistent_storage";
  case FindingKind::configs_disagree:
    return "configs_disagree";
  case FindingKind::unindexed_tensors:
    return "unindexed_tensors";
  case FindingKind::missing_file:
    return "missing_file";
  case FindingKind::duplicate_tensor:
    return "duplicate_tensor";
  case FindingKind::undecidable:
    return "undecidable";
  case FindingKind::unsupported_method:
    return "unsupported_method";
  case FindingKind::config_rejected:
    return "config_rejected";
  }
  return "unknown";
}

bool Diagnosis::has_unfixable() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return !f.fixable; });
}

bool Diagnosis::has_fixable() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.fixable; });
}

namespace detail {

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

// The exact names that put `layer` in ignore: its checkpoint modules, or, for experts stored as
// fused 3-D tensors, the expert-0 projections vLLM asks about (engines.md §3.2).
std::vector<std::string>
ignore_names(const Layer& layer, const ModuleList& modules, const engine::ModelInfo& model) {
  std::vector<std::string> names;
  if (layer.kind == LayerKind::experts && layer.modules.size() == 1 &&
      modules[layer.modules[0]].experts_name.empty()) {
    for (const char* projection : {"gate_proj", "up_proj", "down_proj"}) {
      names.push_back(layer.name + ".0." + projection);
    }
  } else {
    for (const uint32_t m : layer.modules) {
      names.emplace_back(modules[m].name);
    }
  }
  const size_t checkpoint_names = names.size();
  for (size_t i = 0; i < checkpoint_names; ++i) {
    if (std::string renamed = model.layer_prefix(names[i]); renamed != model.to_vllm(names[i])) {
      names.push_back(std::move(renamed));
    }
  }
  return names;
}

// The longest dot-bounded prefix shared by `names` ("mtp" for the MTP head).
std::string common_label(const std::vector<std::string>& names) {
  if (names.empty()) {
    return "";
  }
  std::string prefix = names.front();
  for (const std::string& name : names) {
    size_t n = 0;
    while (n < prefix.size() && n < name.size() && prefix[n] == name[n]) {
      ++n;
    }
    prefix.resize(n);
  }
  if (names.size() == 1) {
    return prefix;
  }
  const size_t dot = prefix.rfind('.');
  bool whole = std::all_of(names.begin(), names.end(), [&](const std::string& name) {
    return name.size() == prefix.size() || name[prefix.size()] == '.';
  });
  if (whole && !prefix.empty()) {
    return prefix;
  }
  return dot == std::string::npos ? prefix : prefix.substr(0, dot);
}

std::string quoted(const std::string& text) {
  return "\"" + text + "\"";
}

std::string rule_text(const Decision& decision, const quant::CtConfig& config) {
  switch (decision.by) {
  case DecidedBy::target_class:
    return "targets [" + quoted(decision.target) + "] (" + decision.group + ", class name)";
  case DecidedBy::target_name:
    return "target " + quoted(decision.target) + " (" + decision.group + ")";
  case DecidedBy::target_fused:
    return "target " + quoted(decision.target) + " (" + decision.group + ", every shard)";
  case DecidedBy::ignore_entry:
    return "ignore entry " + quoted(config.ignore.at(*decision.ignore_index)) + " (ignore[" +
           std::to_string(*decision.ignore_index) + "])";
  default:
    return std::string(engine::to_string(decision.by));
  }
}

// Group problems by (kind, key) in checkpoint order and word them.
void add_grouped(std::vector<LayerProblem>& problems,
                 std::vector<Finding>& findings,
                 const std::set<FindingKind>& fixed_kinds) {
  std::stable_sort(problems.begin(),
                   problems.end(),
                   [](const LayerProblem& a, const LayerProblem& b) { return a.order < b.order; });
  std::vector<std::pair<std::pair<FindingKind, std::string>, Finding>> groups;
  for (const LayerProblem& problem : problems) {
    const auto key = std::pair(problem.kind, problem.key);
    auto it = std::find_if(
        groups.begin(), groups.end(), [&](const auto& group) { return group.first == key; });
    if (it == groups.end()) {
      Finding finding;
      finding.kind = problem.kind;
      finding.fixable = fixed_kinds.count(problem.kind) > 0;
      groups.push_back({key, finding});
      it = groups.end() - 1;
    }
    for (const std::string& name : problem.names) {
      // Two engines with the same problem on one layer name its modules once.
      if (std::find(it->second.modules.begin(), it->second.modules.end(), name) ==
          it->second.modules.end()) {
        it->second.modules.push_back(name);
      }
    }
    for (const std::string& engine : problem.engines) {
      if (std::find(it->second.engines.begin(), it->second.engines.end(), engine) ==
          it->second.engines.end()) {
        it->second.engines.push_back(engine);
      }
    }
  }
  // Engines in their canonical order, whatever order the problems came in.
  for (auto& [key, finding] : groups) {
    std::vector<std::string> ordered;
    for (const char* engine : {"vllm", "sglang", "transformers"}) {
      if (std::find(finding.engines.begin(), finding.engines.end(), engine) !=
          finding.engines.end()) {
        ordered.emplace_back(engine);
      }
    }
    finding.engines = std::move(ordered);
  }
  for (auto& [key, finding] : groups) {
    finding.label = common_label(finding.modules);
    const size_t n = finding.modules.size();
    std::string count = std::to_string(n) + (n == 1 ? " module" : " modules");
    finding.detail = finding.label + ": " + count + " " + key.second;
    findings.push_back(std::move(finding));
  }
}

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
                         const DiagnoseOptions& options) {
  VllmSetting setting;
  setting.model = engine::model_info_for(configs.architecture, configs.num_hidden_layers);
  setting.layers = engine::build_layers(modules, setting.model);
  setting.views = layer_views(setting.layers, modules, inventory, options);
  return setting;
}

std::vector<std::string> derived_module_list(const checkpoint::Inventory& inventory) {
  std::set<std::string> names;
  for (const auto& tensor : inventory.tensors) {
    if (!safetensors::is_floating(tensor.dtype)) {
      names.insert(std::string(checkpoint::split_tensor_name(tensor.name).first));
    }
  }
  return {names.begin(), names.end()};
}

bool consistent(const LayerView& view, const Decision& decision) {
  if (decision.verdict == Verdict::load_error || decision.by == DecidedBy::undecidable) {
    return false;
  }
  return (view.disk == Disk::dense) == (decision.verdict == Verdict::dense);
}

std::vector<std::unique_ptr<EngineView>> engine_views(engine::EngineSet engines,
                                                      const engine::ModelInfo& model,
                                                      const ModuleList& modules,
                                                      const Inventory& inventory,
                                                      const std::vector<uint32_t>& mtp_head,
                                                      const DiagnoseOptions& options) {
  // transformers' layers differ from the engines' (vLLM's, shared with SGLang): with both to
  // build, transformers' are built on a thread of their own (each is a pass over ~70k modules on
  // a 1T-parameter MoE; both only read the modules).
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
  const auto list = engines.list();
  const bool with_transformers =
      std::find(list.begin(), list.end(), engine::Engine::transformers) != list.end();
  const bool with_engines = std::any_of(list.begin(), list.end(), [](engine::Engine engine) {
    return engine != engine::Engine::transformers;
  });
  std::future<std::unique_ptr<EngineView>> transformers_job;
  if (with_transformers && with_engines) {
    transformers_job = std::async(std::launch::async, build_transformers);
  }
  std::shared_ptr<const std::vector<Layer>> engine_layers;
  std::shared_ptr<const std::vector<LayerView>> engine_views;
  if (with_engines) {
    engine_layers =
        std::make_shared<const std::vector<Layer>>(engine::build_layers(modules, model));
    engine_views = std::make_shared<const std::vector<LayerView>>(
        layer_views(*engine_layers, modules, inventory, options));
  }
  std::vector<std::unique_ptr<EngineView>> out;
  for (const engine::Engine engine : list) {
    if (engine == engine::Engine::transformers) {
      out.push_back(transformers_job.valid() ? transformers_job.get() : build_transformers());
      continue;
    }
    auto view = std::make_unique<EngineView>();
    view->engine = engine;
    view->model = model;
    view->layers = engine_layers;
    view->views = engine_views;
    out.push_back(std::move(view));
  }
  return out;
}

std::pair<FindingKind, std::string> shards_disagree(const LayerView& view,
                                                    const engine::Decision& decision) {
  return {FindingKind::fused_shards_disagree,
          "are judged as one layer (" + view.layer->name + "); vLLM: " + decision.error};
}

engine::EngineSet modelled_engines(const std::string& quant_method, engine::EngineSet requested) {
  if (quant_method == "compressed-tensors" || quant_method == "compressed_tensors") {
    return requested;
  }
  engine::EngineSet modelled = engine::EngineSet::none();
  for (const engine::Engine engine : requested.list()) {
    if (engine == engine::Engine::vllm ||
        (engine == engine::Engine::sglang && (quant_method == "awq" || quant_method == "gptq"))) {
      modelled.add(engine);
    }
  }
  return modelled.empty() ? engine::EngineSet::only(engine::Engine::vllm) : modelled;
}

} // namespace detail

namespace {

using namespace detail; // NOLINT: the shared judging vocabulary

struct IgnoreItem {
  std::string text;
  std::optional<size_t> original; // index in the file's list; nothing for appended names
};

class Fixer {
public:
  Fixer(const quant::CtConfig& config,
        const std::vector<std::unique_ptr<EngineView>>& engines,
        const ModuleList& modules)
      : m_config(config), m_engines(engines), m_modules(modules) {}

  // Iterate to the fixpoint; return the final judge.
  void run() {
    for (int round = 0; round < 16; ++round) {
      if (!step()) {
        return;
      }
    }
  }
  std::vector<IgnoreItem> items() const {
    std::vector<IgnoreItem> out;
    for (size_t i = 0; i < m_config.ignore.size(); ++i) {
      if (m_removed.count(i) == 0) {
        out.push_back({m_config.ignore[i], i});
      }
    }
    for (const auto& [name, order] : m_appended) {
      out.push_back({name, std::nullopt});
    }
    return out;
  }
  quant::CtConfig patched_config() const {
    quant::CtConfig config = m_config;
    config.ignore.clear();
    for (const IgnoreItem& item : items()) {
      config.ignore.push_back(item.text);
    }
    return config;
  }
  // What the unpatched config makes of view `v` of engine `e`, as the first round decided it;
  // null for a view that round did not decide. The report asks the same question of every
  // view: on a 1T-parameter MoE, deciding each layer twice was a fifth of the judging.
  const Decision* first_decision(size_t e, size_t v) const {
    return e < m_first.size() && v < m_first[e].size() && m_first[e][v] ? &*m_first[e][v] : nullptr;
  }
  const std::set<size_t>& removed() const { return m_removed; }
  // Appended names in checkpoint order.
  std::vector<std::string> appended() const {
    std::vector<std::pair<std::string, size_t>> sorted = m_appended;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second < b.second;
    });
    std::vector<std::string> out;
    for (const auto& [name, order] : sorted) {
      out.push_back(name);
    }
    return out;
  }

private:
  bool in_ignore(const std::string& name) const {
    for (const IgnoreItem& item : items()) {
      if (item.text == name) {
        return true;
      }
    }
    return false;
  }
  bool append_layer(const LayerView& view, const engine::ModelInfo& model) {
    bool changed = false;
    for (const std::string& name : ignore_names(*view.layer, m_modules, model)) {
      if (!in_ignore(name)) {
        m_appended.emplace_back(name, view.order);
        changed = true;
      }
    }
    return changed;
  }
  bool remove_entry(const std::vector<IgnoreItem>& current, size_t index) {
    if (const auto original = current.at(index).original) {
      return m_removed.insert(*original).second;
    }
    return false;
  }
  // One round over every engine: a patch must satisfy all of them at once.
  bool step() {
    const std::vector<IgnoreItem> current = items();
    const quant::CtConfig config = patched_config();
    const bool first = m_first.empty(); // nothing appended or removed yet: config is the file's
    bool changed = false;
    for (const auto& engine_view : m_engines) {
      const engine::VllmCompressedTensors judge(config, engine_view->model, engine_view->engine);
      if (first) {
        m_first.emplace_back(engine_view->views->size());
      }
      for (size_t v = 0; v < engine_view->views->size(); ++v) {
        const LayerView& view = (*engine_view->views)[v];
        if (view.disk != Disk::dense && view.disk != Disk::quantized) {
          continue;
        }
        const Decision decision = judge.decide(*view.layer);
        if (first) {
          m_first.back()[v] = decision;
        }
        const bool error = decision.verdict == Verdict::load_error;
        if (view.disk == Disk::dense && (decision.verdict == Verdict::quantized || error)) {
          changed = append_layer(view, engine_view->model) || changed;
        } else if (view.disk == Disk::quantized && decision.by == DecidedBy::ignore_entry) {
          changed = remove_entry(current, *decision.ignore_index) || changed;
        } else if (view.disk == Disk::quantized && error) {
          for (const std::string& shard : decision.shards) {
            bool undecidable = false;
            if (const auto hit = judge.match_ignore(shard, undecidable)) {
              changed = remove_entry(current, *hit) || changed;
            }
          }
        }
      }
    }
    return changed;
  }

  const quant::CtConfig& m_config;
  const std::vector<std::unique_ptr<EngineView>>& m_engines;
  const ModuleList& m_modules;
  std::set<size_t> m_removed;
  std::vector<std::pair<std::string, size_t>> m_appended;
  std::vector<std::vector<std::optional<Decision>>> m_first; // by engine, then view
};

std::string disagreement(const std::vector<std::string>& mine,
                         const std::vector<std::string>& theirs,
                         const std::string& what,
                         const std::string& other) {
  const std::set<std::string> a(mine.begin(), mine.end());
  const std::set<std::string> b(theirs.begin(), theirs.end());
  size_t only_a = 0;
  size_t only_b = 0;
  for (const auto& x : a) {
    only_a += b.count(x) ? 0U : 1U;
  }
  for (const auto& x : b) {
    only_b += a.count(x) ? 0U : 1U;
  }
  if (only_a == 0 && only_b == 0) {
    return "";
  }
  return what + " differs from config.json's (vLLM reads config.json): " + std::to_string(only_b) +
         " entr" + (only_b == 1 ? "y" : "ies") + " only in config.json, " + std::to_string(only_a) +
         " only in " + other;
}

// Keep a sidecar's list equal (as a set, in config.json's order for additions) to `wanted`.
std::optional<ArrayChange> sync_list(const std::string& file,
                                     std::vector<std::string> pointer,
                                     const std::vector<std::string>& present,
                                     bool exists,
                                     const std::vector<std::string>& wanted) {
  ArrayChange change;
  change.file = file;
  change.pointer = std::move(pointer);
  change.create = !exists;
  const std::set<std::string> want(wanted.begin(), wanted.end());
  const std::set<std::string> have(present.begin(), present.end());
  for (size_t i = 0; i < present.size(); ++i) {
    if (want.count(present[i]) == 0) {
      change.remove.push_back(i);
      change.removed_values.push_back(present[i]);
    }
  }
  for (const std::string& name : wanted) {
    if (have.count(name) == 0) {
      change.append.push_back(name);
    }
  }
  if (change.remove.empty() && change.append.empty()) {
    return std::nullopt;
  }
  return change;
}

void judge_compressed_tensors(const Inventory& inventory,
                              const ModuleList& modules,
                              const quant::ConfigSet& configs,
                              const quant::ConfigFile& active,
                              const quant::CtConfig& config,
                              const std::vector<uint32_t>& mtp_head,
                              const DiagnoseOptions& options,
                              Diagnosis& diagnosis) {
  const engine::ModelInfo model =
      engine::model_info_for(configs.architecture, configs.num_hidden_layers);
  const auto engines = engine_views(options.engines, model, modules, inventory, mtp_head, options);
  Fixer fixer(config, engines, modules);
  fixer.run();
  const quant::CtConfig patched = fixer.patched_config();

  std::vector<LayerProblem> problems;
  std::set<FindingKind> fixed;
  std::set<FindingKind> unfixed;
  const std::vector<std::string> all_engines = options.engines.names();
  for (const std::string& entry : config.ignore) {
    if (entry.rfind("re:", 0) == 0) {
      auto pattern = engine::Pattern::compile(entry.substr(3), active.name);
      if (!pattern) {
        problems.push_back({FindingKind::undecidable,
                            "ignore entry " + quoted(entry) + " is not a valid regex (" +
                                pattern.error().message + "): the engines raise re.error",
                            {entry},
                            0,
                            all_engines});
        unfixed.insert(FindingKind::undecidable);
      }
    }
  }
  // Modules an earlier engine already reported with the same kind only add the engine to that
  // problem (engines build different layers from the same modules: vLLM fuses, transformers
  // does not); the rest form a problem of their own.
  const auto add_problem = [&](LayerProblem problem) {
    std::vector<std::string> remaining;
    for (const std::string& name : problem.names) {
      bool known = false;
      for (LayerProblem& existing : problems) {
        if (existing.kind == problem.kind &&
            std::find(existing.names.begin(), existing.names.end(), name) != existing.names.end()) {
          if (std::find(existing.engines.begin(),
                        existing.engines.end(),
                        problem.engines.front()) == existing.engines.end()) {
            existing.engines.push_back(problem.engines.front());
          }
          known = true;
          break;
        }
      }
      if (!known) {
        remaining.push_back(name);
      }
    }
    if (!remaining.empty()) {
      problem.names = std::move(remaining);
      problems.push_back(std::move(problem));
    }
  };
  for (size_t e = 0; e < engines.size(); ++e) {
    const auto& engine_view = engines[e];
    const engine::Engine engine = engine_view->engine;
    const std::string engine_name(engine::to_string(engine));
    const std::string who(engine::display_name(engine));
    const engine::VllmCompressedTensors before(config, engine_view->model, engine);
    const engine::VllmCompressedTensors after(patched, engine_view->model, engine);
    for (size_t v = 0; v < engine_view->views->size(); ++v) {
      const LayerView& view = (*engine_view->views)[v];
      const Layer& layer = *view.layer;
      // Findings name checkpoint modules only, never the names an engine asks about. Built
      // only for a problem: an experts layer of a 1T MoE has over a thousand modules.
      const auto module_names = [&] {
        std::vector<std::string> names;
        for (const uint32_t m : layer.modules) {
          names.emplace_back(modules[m].name);
        }
        return names;
      };
      if (view.disk == Disk::inconsistent) {
        for (const uint32_t m : layer.modules) {
          if (modules[m].format == StorageFormat::inconsistent) {
            add_problem({FindingKind::inconsistent_storage,
                         "stored inconsistently (" + modules[m].detail +
                             "): no config can load it; re-export the module",
                         {std::string(modules[m].name)},
                         view.order,
                         {engine_name}});
          }
        }
        continue;
      }
      if (view.disk == Disk::mixed) {
        add_problem({FindingKind::disk_shards_disagree,
                     "are shards of " + layer.name +
                         " but stored partly quantized, partly dense: " + who +
                         " builds one layer for them, so no config can load it",
                     module_names(),
                     view.order,
                     {engine_name}});
        continue;
      }
      const Decision* first = fixer.first_decision(e, v);
      const Decision decision = first != nullptr ? *first : before.decide(layer);
      if (consistent(view, decision)) {
        continue;
      }
      const bool resolved = consistent(view, after.decide(layer));
      FindingKind kind{};
      std::string key;
      if (decision.by == DecidedBy::undecidable) {
        kind = FindingKind::undecidable;
        std::string entries;
        for (const std::string& entry : before.exhausted_entries()) {
          entries += (entries.empty() ? "" : ", ") + quoted(entry);
        }
        key = "could not be judged: " +
              (entries.empty() ? std::string("a regex") : "the regex entry " + entries) +
              " gave up (match limit), and is not tried again";
      } else if (decision.verdict == Verdict::load_error) {
        kind = FindingKind::fused_shards_disagree;
        key = "are judged as one layer (" + layer.name + ") but " +
              (decision.by == DecidedBy::experts_disagree ? std::string("expert 0's projections")
                                                          : std::string("its shards")) +
              " disagree in the config; " + who + ": " + decision.error;
      } else if (view.disk == Disk::dense) {
        kind = FindingKind::dense_quantized_by_config;
        key = "stored " + view.stored + " but quantized by " + rule_text(decision, config) +
              "; not in ignore";
      } else if (decision.by == DecidedBy::ignore_entry) {
        kind = FindingKind::quantized_made_dense;
        const std::string& entry = config.ignore.at(*decision.ignore_index);
        bool undecidable = false;
        const engine::VllmCompressedTensors exact(config, engine_view->model);
        if (engine == engine::Engine::sglang &&
            !exact.match_ignore(layer.prefix, undecidable).has_value() &&
            entry.rfind("re:", 0) != 0) {
          // One line for every module a short or parent-module entry catches.
          key = "stored " + view.stored +
                " but made dense by plain ignore entries that name a parent module or part of "
                "a name (SGLang reads plain entries as case-insensitive substrings)";
        } else {
          key = "stored " + view.stored + " but made dense by " + rule_text(decision, config);
        }
      } else if (decision.by == DecidedBy::built_dense) {
        kind = FindingKind::engine_builds_dense;
        key = "stored " + view.stored + " but " + who +
              " builds this layer without a quant config: it cannot load these "
              "tensors; graft dense weights from the base model";
      } else {
        kind = FindingKind::quantized_untargeted;
        key = "stored " + view.stored + " but no target matches them, so " + who +
              " builds them dense: not fixable by a config patch (qpatch does not invent "
              "targets)";
      }
      add_problem({kind, key, module_names(), view.order, {engine_name}});
      (resolved ? fixed : unfixed).insert(kind);
    }
  }
  for (const FindingKind kind : unfixed) {
    fixed.erase(kind);
  }
  add_grouped(problems, diagnosis.findings, fixed);

  // The edit of the config vLLM reads.
  const std::vector<std::string> appended = fixer.appended();
  std::vector<std::string> ignore_pointer = active.pointer;
  ignore_pointer.push_back("ignore");
  if (!fixer.removed().empty() || !appended.empty()) {
    ArrayChange change;
    change.file = active.name;
    change.pointer = ignore_pointer;
    change.create = !config.has_ignore;
    change.remove.assign(fixer.removed().begin(), fixer.removed().end());
    for (const size_t i : change.remove) {
      change.removed_values.push_back(config.ignore[i]);
    }
    change.append = appended;
    diagnosis.array_changes.push_back(std::move(change));
  }
  // Sidecars follow config.json.
  for (const quant::ConfigFile& file : configs.files) {
    if (&file == &active || !file.has_config()) {
      continue;
    }
    const std::string method = quant::quant_method(file.config());
    if (method != "compressed-tensors" && method != "compressed_tensors") {
      continue;
    }
    auto side = quant::read_compressed_tensors(file);
    if (!side) {
      continue;
    }
    std::vector<std::string> side_pointer = file.pointer;
    side_pointer.push_back("ignore");
    const std::string differs = disagreement(side->ignore, config.ignore, "ignore", file.name);
    if (auto change =
            sync_list(file.name, side_pointer, side->ignore, side->has_ignore, patched.ignore)) {
      diagnosis.array_changes.push_back(std::move(*change));
    }
    std::string target_differs;
    for (const quant::CtGroup& group : config.groups) {
      for (const quant::CtGroup& other : side->groups) {
        if (other.name != group.name) {
          continue;
        }
        const std::string d =
            disagreement(other.targets, group.targets, group.name + " targets", file.name);
        if (!d.empty()) {
          target_differs = d;
          std::vector<std::string> pointer = file.pointer;
          pointer.insert(pointer.end(), {"config_groups", group.name, "targets"});
          if (auto change = sync_list(file.name, pointer, other.targets, true, group.targets)) {
            diagnosis.array_changes.push_back(std::move(*change));
          }
        }
      }
    }
    for (const std::string& d : {differs, target_differs}) {
      if (!d.empty()) {
        Finding finding;
        finding.kind = FindingKind::configs_disagree;
        finding.label = file.name;
        finding.detail = file.name + ": " + d;
        finding.fixable = true;
        diagnosis.findings.push_back(std::move(finding));
      }
    }
  }
}

void inventory_findings(const Inventory& inventory, Diagnosis& diagnosis) {
  for (const auto& problem : inventory.problems) {
    Finding finding;
    finding.label = problem.path;
    if (problem.code == checkpoint::ProblemCode::missing_file) {
      finding.kind = FindingKind::missing_file;
      finding.detail = problem.path + ": " + problem.message;
    } else if (problem.code == checkpoint::ProblemCode::duplicate_tensor) {
      finding.kind = FindingKind::duplicate_tensor;
      finding.modules = {problem.subject};
      finding.detail = problem.path + ": tensor '" + problem.subject + "': " + problem.message;
    } else if (problem.code == checkpoint::ProblemCode::unindexed_file) {
      const auto file = std::find_if(inventory.files.begin(),
                                     inventory.files.end(),
                                     [&](const auto& f) { return f.name == problem.path; });
      const auto f = static_cast<uint32_t>(file - inventory.files.begin());
      finding.kind = FindingKind::unindexed_tensors;
      finding.fixable = file->duplicate_count == 0;
      std::vector<std::string> tensors;
      for (const auto& tensor : inventory.tensors) {
        if (tensor.file == f && !tensor.shadowed) {
          tensors.emplace_back(tensor.name);
        }
      }
      finding.modules = tensors;
      finding.detail = problem.path + ": " + std::to_string(file->tensor_count) + " tensors (" +
                       common_label(tensors) +
                       ") that the index does not list: vLLM and transformers never load them";
      if (finding.fixable) {
        for (const std::string& tensor : tensors) {
          diagnosis.index_additions.emplace_back(tensor, file->name);
        }
      } else {
        finding.detail += "; " + std::to_string(file->duplicate_count) +
                          " of them duplicate tensors in indexed files, so qpatch will not "
                          "add them (remove the file or the duplicates)";
      }
    } else {
      continue;
    }
    diagnosis.findings.push_back(std::move(finding));
  }
}

} // namespace

namespace {

// Record which engines' rules the verdicts model.
void judged_by(engine::EngineSet engines, Diagnosis& diagnosis) {
  diagnosis.engines = engines.names();
  diagnosis.engine_rules = engine::rules_of(engines, diagnosis.quant_method);
}

// Findings that concern the checkpoint rather than one engine's rules affect every engine judged.
Diagnosis finish(Diagnosis diagnosis) {
  for (Finding& finding : diagnosis.findings) {
    if (finding.engines.empty()) {
      finding.engines = diagnosis.engines;
    }
  }
  return diagnosis;
}

} // namespace

Result<Diagnosis> diagnose(const Inventory& inventory,
                           const ModuleList& modules,
                           const quant::ConfigSet& configs,
                           const DiagnoseOptions& options) {
  Diagnosis diagnosis;
  judged_by(options.engines, diagnosis);
  inventory_findings(inventory, diagnosis);
  checkpoint::MtpHead head;
  if (const quant::ConfigFile* config = configs.find("config.json")) {
    head = checkpoint::find_mtp_head(config->doc, modules, inventory);
    if (!head.modules.empty()) {
      diagnosis.mtp = head.summary;
      if (head.declared > 0) {
        diagnosis.mtp += " (" + head.declared_by + ": " + std::to_string(head.declared) + ")";
      }
    } else if (head.declared > 0) {
      diagnosis.notes.push_back("config.json declares " + head.declared_by + ": " +
                                std::to_string(head.declared) +
                                " but the checkpoint holds no MTP tensors: speculative decoding "
                                "with method \"mtp\" cannot work (nothing to patch)");
    }
  }
  const quant::ConfigFile* active = configs.active();
  if (active == nullptr) {
    return finish(std::move(diagnosis)); // not quantized
  }
  diagnosis.quantized = true;
  diagnosis.quant_method = quant::declared_method(*active);
  if (diagnosis.quant_method == "compressed-tensors" ||
      diagnosis.quant_method == "compressed_tensors") {
    QP_TRY_ASSIGN(const quant::CtConfig config, quant::read_compressed_tensors(*active));
    std::vector<Finding> inventory_part = std::move(diagnosis.findings);
    diagnosis.findings.clear();
    judge_compressed_tensors(
        inventory, modules, configs, *active, config, head.modules, options, diagnosis);
    diagnosis.findings.insert(
        diagnosis.findings.end(), inventory_part.begin(), inventory_part.end());
    return finish(std::move(diagnosis));
  }
  // The other methods model vLLM's rules, and AWQ SGLang's too (engines.md §6 and SGLang's
  // awq.py); engines.md documents no other engine's.
  const engine::EngineSet modelled =
      detail::modelled_engines(diagnosis.quant_method, options.engines);
  judged_by(modelled, diagnosis);
  if (!options.engines.has(engine::Engine::vllm) &&
      !(options.engines.has(engine::Engine::sglang) && modelled.has(engine::Engine::sglang))) {
    diagnosis.notes.push_back("quant_method \"" + diagnosis.quant_method +
                              "\": only vLLM's rules are modelled for this method, so it is "
                              "judged as vLLM loads it");
  }
  if (diagnosis.quant_method == "gptq" || diagnosis.quant_method == "auto-round" ||
      diagnosis.quant_method == "awq" || diagnosis.quant_method == "bitsandbytes" ||
      diagnosis.quant_method == "fp8" || diagnosis.quant_method == "modelopt" ||
      diagnosis.quant_method == "modelopt_fp4") {
    std::vector<Finding> inventory_part = std::move(diagnosis.findings);
    diagnosis.findings.clear();
    if (modelled.has(engine::Engine::vllm)) {
      if (auto rejection =
              engine::vllm_config_rejection(diagnosis.quant_method, active->config())) {
        Finding finding;
        finding.kind = FindingKind::config_rejected;
        finding.label = active->name;
        const std::string where = quant::pointer_text(active->pointer);
        finding.detail =
            active->name + (where.empty() ? "" : " " + where) +
            ": vLLM refuses this quantization config before it builds any layer: " + *rejection;
        finding.engines = {"vllm"};
        finding.engine_error = *rejection;
        diagnosis.findings.push_back(std::move(finding));
      }
    }
    auto status =
        diagnosis.quant_method == "gptq"
            ? detail::judge_gptq(inventory, modules, configs, *active, options, diagnosis)
        : diagnosis.quant_method == "auto-round"
            ? detail::judge_auto_round(inventory, modules, configs, *active, options, diagnosis)
            : detail::judge_skip_list(inventory, modules, configs, *active, options, diagnosis);
    if (!status) {
      return status.take_error();
    }
    diagnosis.findings.insert(
        diagnosis.findings.end(), inventory_part.begin(), inventory_part.end());
    return finish(std::move(diagnosis));
  }
  Finding finding;
  finding.kind = FindingKind::unsupported_method;
  finding.label = active->name;
  finding.detail =
      active->name + ": quant_method \"" + diagnosis.quant_method +
      "\" is not judged by this version of qpatch (compressed-tensors, gptq, auto-round, "
      "awq, fp8, modelopt and bitsandbytes are)";
  diagnosis.findings.push_back(std::move(finding));
  return finish(std::move(diagnosis));
}

} // namespace qpatch::diagnose
