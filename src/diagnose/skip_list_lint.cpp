// SPDX-License-Identifier: Apache-2.0
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/diagnose/skip_list_lint.hpp>
#include <qpatch/engine/model_info.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace qpatch::diagnose {
namespace {

// What a verdict is made of, as far as removing an entry could change it (which entry decided
// is not: a shadowed entry's removal leaves the verdict to the entry shadowing it).
struct Signature {
  engine::Verdict verdict{};
  engine::DecidedBy by{};
  std::string group;
  std::vector<bool> shard_ignored;
  bool operator==(const Signature&) const = default;
};

Signature signature_of(const engine::Decision& decision) {
  return {decision.verdict, decision.by, decision.group, decision.shard_ignored};
}

class Linter {
public:
  Linter(const quant::ConfigFile& active,
         const quant::ConfigSet& configs,
         const checkpoint::ModuleList& modules,
         const checkpoint::Inventory& inventory,
         const Method& method,
         const std::vector<std::unique_ptr<detail::EngineView>>& views)
      : m_active(active), m_configs(configs), m_modules(modules), m_inventory(inventory),
        m_method(method), m_views(views) {}

  // The verdicts of every layer in every version under `file`.
  Result<std::vector<Signature>> verdicts(const quant::ConfigFile& file,
                                          bool record = false) const {
    std::vector<Signature> out;
    for (const auto& view : m_views) {
      QP_TRY_ASSIGN(const auto rules,
                    m_method.rules({file, m_configs, m_modules, m_inventory, *view}));
      std::unordered_map<const engine::Layer*, const detail::LayerView*> disk;
      for (const detail::LayerView& layer_view : *view->views) {
        disk.emplace(layer_view.layer, &layer_view);
      }
      for (const engine::Layer& layer : *view->layers) {
        const engine::Decision decision = rules->decide(layer);
        out.push_back(signature_of(decision));
        if (record && decision.ignore_index) {
          m_live.insert(*decision.ignore_index);
          const auto stored = disk.find(&layer);
          if (decision.by == engine::DecidedBy::ignore_entry && stored != disk.end() &&
              stored->second->disk == detail::Disk::quantized) {
            m_over_broad.insert(*decision.ignore_index);
          }
        }
      }
    }
    return out;
  }

  // The active file with the entries of `removed` taken out of the list at `pointer`.
  quant::ConfigFile without(const std::vector<size_t>& removed) const {
    quant::ConfigFile copy = m_active;
    json::Json* list = &copy.doc;
    for (const std::string& key : m_active.pointer) {
      list = &(*list)[key];
    }
    list = &(*list)["ignore"];
    json::Json kept = json::Json::array();
    for (size_t i = 0; i < list->size(); ++i) {
      if (!std::binary_search(removed.begin(), removed.end(), i)) {
        kept.push_back((*list)[i]);
      }
    }
    *list = std::move(kept);
    return copy;
  }

  // The entries of `candidates` whose removal, together, changes no verdict: halves of a set
  // that changes something are tried apart, so a list with few live candidates costs few runs.
  Status find_dead(const std::vector<size_t>& candidates,
                   const std::vector<Signature>& baseline,
                   std::vector<size_t>& dead) const {
    if (candidates.empty()) {
      return ok_status();
    }
    QP_TRY_ASSIGN(const auto changed, verdicts(without(candidates)));
    if (changed == baseline) {
      dead.insert(dead.end(), candidates.begin(), candidates.end());
      return ok_status();
    }
    if (candidates.size() == 1) {
      return ok_status();
    }
    const auto middle = candidates.begin() + static_cast<std::ptrdiff_t>(candidates.size() / 2);
    if (auto left = find_dead({candidates.begin(), middle}, baseline, dead); !left) {
      return left;
    }
    return find_dead({middle, candidates.end()}, baseline, dead);
  }

  const std::set<size_t>& live() const { return m_live; }
  const std::set<size_t>& over_broad() const { return m_over_broad; }

private:
  const quant::ConfigFile& m_active;
  const quant::ConfigSet& m_configs;
  const checkpoint::ModuleList& m_modules;
  const checkpoint::Inventory& m_inventory;
  const Method& m_method;
  const std::vector<std::unique_ptr<detail::EngineView>>& m_views;
  mutable std::set<size_t> m_live;
  mutable std::set<size_t> m_over_broad;
};

} // namespace

Result<std::optional<SkipListLint>> lint_skip_list(const checkpoint::Inventory& inventory,
                                                   const checkpoint::ModuleList& modules,
                                                   const quant::ConfigSet& configs,
                                                   engine::EngineSet engines,
                                                   bool asked) {
  const quant::ConfigFile* active = configs.active();
  const Method* method = active != nullptr ? find_method(quant::declared_method(*active)) : nullptr;
  if (method == nullptr || method->name != "compressed-tensors" || method->rules == nullptr) {
    return std::optional<SkipListLint>();
  }
  const auto list = active->config().find("ignore");
  if (list == active->config().end() || !list->is_array() || list->empty() ||
      !std::all_of(list->begin(), list->end(), [](const json::Json& v) { return v.is_string(); })) {
    return std::optional<SkipListLint>();
  }
  // Linting re-judges every layer at least once more; a list this long (a 31 MB config's) is
  // linted only when asked (--prune), so the default check keeps its speed.
  if (list->size() > k_lint_by_default_up_to && !asked) {
    return std::optional<SkipListLint>();
  }
  SkipListLint lint;
  lint.file = active->name;
  lint.pointer = active->pointer;
  lint.pointer.push_back("ignore");
  for (const json::Json& entry : *list) {
    lint.entries.push_back(entry.get<std::string>());
  }
  const quant::ConfigFile* config_json = configs.find("config.json");
  const auto head = config_json != nullptr
                        ? checkpoint::find_mtp_head(config_json->doc, modules, inventory)
                        : checkpoint::MtpHead{};
  const auto views = detail::engine_views(
      modelled_engines(method, engines),
      engine::model_info_for(configs.architecture, configs.num_hidden_layers),
      modules,
      inventory,
      head.modules,
      DiagnoseOptions{},
      method->name);
  lint.versions = views.size();
  const Linter linter(*active, configs, modules, inventory, *method, views);
  QP_TRY_ASSIGN(const auto baseline, linter.verdicts(*active, true));
  std::map<std::string, size_t> first;
  std::vector<size_t> candidates;
  for (size_t i = 0; i < lint.entries.size(); ++i) {
    if (!first.emplace(lint.entries[i], i).second) {
      lint.duplicates.push_back(i); // CT matches the first entry only: a copy never decides
    } else if (linter.live().count(i) == 0) {
      candidates.push_back(i);
    }
  }
  if (auto found = linter.find_dead(candidates, baseline, lint.dead); !found) {
    return found.take_error();
  }
  std::sort(lint.dead.begin(), lint.dead.end());
  lint.over_broad.assign(linter.over_broad().begin(), linter.over_broad().end());
  return std::optional<SkipListLint>(std::move(lint));
}

std::string lint_summary(const SkipListLint& lint) {
  // Over-broad entries alone are findings already (quantized_made_dense): the line is for the
  // dead weight no finding names.
  if (lint.dead.empty() && lint.duplicates.empty()) {
    return "";
  }
  const auto count = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return lint.pointer.back() + ": " + count(lint.entries.size(), "entry", "entries") + "; " +
         std::to_string(lint.dead.size()) + " dead (no verdict changes without them, in " +
         count(lint.versions, "version", "versions") + " judged), " +
         count(lint.duplicates.size(), "duplicate", "duplicates") + ", " +
         std::to_string(lint.over_broad.size()) + " over-broad (a layer stored quantized is built " +
         "dense by them)";
}

} // namespace qpatch::diagnose
