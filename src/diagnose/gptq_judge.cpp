// SPDX-License-Identifier: Apache-2.0
// The judge for GPTQ under vLLM's rules (engine/gptq_rules.hpp). The fix inserts negative
// `dynamic` rules at the front (first match wins, so nothing earlier can shadow them) and
// removes a negative rule that makes quantized modules dense, as a fixpoint like the
// compressed-tensors judge. Rules match vLLM's fused names: one "-:^mtp\." when every MTP layer
// is dense on disk; exact anchored rules otherwise. When part of a Qwen3.5 MTP head is packed, a
// rule must not contain the text "mtp" (vLLM's special case would make the packed decoder
// layers dense), so it is written m[t]p.
#include "diagnose/fixpoint.hpp"
#include "diagnose/judge_common.hpp"

#include <qpatch/engine/gptq_rules.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/quant/gptq.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace qpatch::diagnose::detail {

namespace {

struct GptqFix {
  std::set<size_t> removed;         // original dynamic rules to drop
  std::vector<std::string> prepend; // new negative keys, in checkpoint order
  // modules_in_block_to_quantize: the places of entries to drop, and checkpoint names to add.
  std::set<quant::GptqListEntry> list_removed;
  std::vector<std::string> list_added;
  std::vector<size_t> list_added_order; // checkpoint order of each added entry's module
  // The list is written anew as one nested list (the kept entries, then the added ones): it is
  // absent, null or [] (vLLM derives it, optimum reads none or an empty one), or flat (optimum's
  // sum() raises), and transformers needs one.
  bool list_create = false;

  bool empty() const {
    return removed.empty() && prepend.empty() && list_removed.empty() && list_added.empty() &&
           !list_create;
  }
};

quant::GptqConfig patched(const quant::GptqConfig& config, const GptqFix& fix) {
  quant::GptqConfig out = config;
  out.dynamic.clear();
  for (const std::string& key : fix.prepend) {
    out.dynamic.push_back({key, true, key.substr(2)});
  }
  for (size_t i = 0; i < config.dynamic.size(); ++i) {
    if (fix.removed.count(i) == 0) {
      out.dynamic.push_back(config.dynamic[i]);
    }
  }
  out.has_dynamic = true;
  const bool edited = !fix.list_removed.empty() || !fix.list_added.empty();
  if ((config.modules_in_block || fix.list_create) && (edited || fix.list_create)) {
    const std::vector<std::string> created{"modules_in_block_to_quantize", "0"};
    std::vector<std::string> names;
    out.list_entries.clear();
    if (config.modules_in_block) {
      for (size_t i = 0; i < config.modules_in_block->size(); ++i) {
        if (fix.list_removed.count(config.list_entries[i]) == 0) {
          names.push_back((*config.modules_in_block)[i]);
          out.list_entries.push_back(fix.list_create
                                         ? quant::GptqListEntry{created, names.size() - 1}
                                         : config.list_entries[i]);
        }
      }
    }
    for (const std::string& name : fix.list_added) {
      names.push_back(name);
      out.list_entries.push_back({fix.list_create ? created : config.list_append_to, names.size()});
    }
    if (fix.list_create) {
      out.list_append_to = created;
      out.has_list = true;
    }
    // The nested list of strings optimum sums reads the same entries in the same order.
    if (config.optimum.simple) {
      out.optimum.given = true;
      out.optimum.summed = names;
      out.optimum.flat = false;
      out.optimum.error.clear();
    }
    out.modules_in_block = std::move(names);
  }
  return out;
}

bool is_mtp(const LayerView& view) {
  return view.layer->prefix.rfind("mtp.", 0) == 0;
}

// The entry that lists `tested` (a name is_layer_gptq_quantized tests) for the module it comes
// from: its checkpoint name, as GPTQModel writes the list, or vLLM's name where the mapper does
// not carry the checkpoint name onto it. Nothing when neither works.
std::optional<std::pair<std::string, size_t>> list_entry_for(const std::string& tested,
                                                             const Layer& layer,
                                                             const ModuleList& modules,
                                                             const engine::ModelInfo& model,
                                                             const engine::GptqRules& judge) {
  std::vector<std::pair<std::string, size_t>> candidates;
  for (const uint32_t m : layer.modules) {
    const std::string name(modules[m].name);
    if (model.layer_prefix(name) == tested) {
      candidates.emplace_back(name, m);
    }
  }
  candidates.emplace_back(tested, layer.modules.front());
  for (const auto& candidate : candidates) {
    if (tested.find(judge.as_read(candidate.first)) != std::string::npos) {
      return candidate;
    }
  }
  return std::nullopt;
}

// One round of the list fix (vLLM only: SGLang reads no list). vLLM tests the list before
// dynamic, and a fused layer whose shards disagree on it raises there, so no dynamic rule can
// help: the list must change. A quantized layer the list covered in part (or that the fix
// uncovered, or covers in part) gets its missing shards' exact names; a dense layer covered in part
// loses every entry that covers one of its shards. The head, with "lm_head" true, is listed when
// packed.
bool fix_list_round(const quant::GptqConfig& config,
                    const engine::GptqRules& original,
                    const engine::GptqRules& current,
                    const EngineView& engine_view,
                    const ModuleList& modules,
                    GptqFix& fix) {
  const std::vector<LayerView>& views = *engine_view.views;
  const engine::ModelInfo& model = engine_view.model;
  bool changed = false;
  for (const LayerView& view : views) {
    const Layer& layer = *view.layer;
    if ((view.disk != Disk::dense && view.disk != Disk::quantized) ||
        (layer.kind != engine::LayerKind::linear && layer.kind != engine::LayerKind::lm_head) ||
        (layer.kind == engine::LayerKind::lm_head && !config.lm_head) ||
        current.decide(layer).by == DecidedBy::built_dense) {
      continue;
    }
    const std::vector<std::string> names = current.tested_names(layer);
    const auto count = [&](const engine::GptqRules& judge) {
      return static_cast<size_t>(std::count_if(
          names.begin(), names.end(), [&](const auto& n) { return judge.listed(n); }));
    };
    const size_t now = count(current);
    // Covered in part now counts too: another engine's entries (optimum's short "self_attn.q_proj")
    // can reach some shards of a fused layer the original list left out whole.
    if (view.disk == Disk::quantized && now != names.size() &&
        (count(original) != 0 || now != 0 || layer.kind == engine::LayerKind::lm_head)) {
      for (const std::string& name : names) {
        if (current.listed(name)) {
          continue;
        }
        const auto entry = list_entry_for(name, layer, modules, model, current);
        if (entry && std::find(fix.list_added.begin(), fix.list_added.end(), entry->first) ==
                         fix.list_added.end()) {
          fix.list_added.push_back(entry->first);
          fix.list_added_order.push_back(entry->second);
          changed = true;
        }
      }
    } else if (view.disk == Disk::dense && now != 0 && now != names.size()) {
      for (size_t i = 0; config.modules_in_block && i < config.modules_in_block->size(); ++i) {
        const std::string entry = current.as_read((*config.modules_in_block)[i]);
        const bool covers = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
          return n.find(entry) != std::string::npos;
        });
        if (covers) {
          changed = fix.list_removed.insert(config.list_entries[i]).second || changed;
        }
      }
    }
  }
  return changed;
}

// The entry that lists the quantized module `prefix` for optimum: the part of its name after
// the block and the layer index ("mlp.gate_proj", ending the name of that module in every
// layer) when, for every version of every engine that reads the list, it reaches no layer
// stored otherwise than quantized; else the whole name.
std::string optimum_list_entry(const std::string& prefix,
                               const engine::GptqRules& rules,
                               const quant::GptqConfig& current,
                               const engine::GptqHeaders& headers,
                               const std::vector<std::unique_ptr<EngineView>>& judged) {
  const std::string& block = rules.optimum_block();
  size_t at = block.size();
  if (prefix.size() <= at + 1 || prefix[at] != '.') {
    return prefix;
  }
  ++at;
  const size_t digits_end = prefix.find_first_not_of("0123456789", at);
  if (digits_end == at || digits_end == std::string::npos || prefix[digits_end] != '.') {
    return prefix;
  }
  const std::string suffix = prefix.substr(digits_end + 1);
  for (const auto& engine_view : judged) {
    const engine::GptqDialect& gptq = engine_view->dialect.gptq;
    if (!gptq.optimum_convert && !gptq.reads_module_list) {
      continue;
    }
    const engine::GptqRules judge(current, engine_view->model, headers, engine_view->version);
    const std::string read = gptq.optimum_convert ? suffix : judge.as_read(suffix);
    for (const LayerView& view : *engine_view->views) {
      const Layer& layer = *view.layer;
      if (view.disk == Disk::quantized || layer.kind == engine::LayerKind::built_dense ||
          layer.kind == engine::LayerKind::embedding) {
        continue;
      }
      const auto reaches = [&](const std::string& name) {
        return gptq.optimum_convert
                   ? judge.in_optimum_block(name) && name.size() >= read.size() &&
                         name.compare(name.size() - read.size(), read.size(), read) == 0
                   : name.find(read) != std::string::npos;
      };
      const std::vector<std::string> names =
          gptq.optimum_convert ? std::vector<std::string>{layer.prefix} : judge.tested_names(layer);
      if (std::any_of(names.begin(), names.end(), reaches)) {
        return prefix;
      }
    }
  }
  return suffix;
}

// One round of the list fix for optimum (transformers), which reads no dynamic: a dense layer
// of the block it quantizes loses every entry ending its name (or, with no list, gets a list
// that leaves it out), and a quantized layer of the block it leaves dense gets an entry. A list
// optimum cannot sum (flat) is written anew, nested.
bool fix_optimum_round(const quant::GptqConfig& config,
                       const quant::GptqConfig& current,
                       const engine::GptqHeaders& headers,
                       const EngineView& engine_view,
                       const std::vector<std::unique_ptr<EngineView>>& judged,
                       GptqFix& fix) {
  if (!config.optimum.simple) {
    return false; // a list no edit of ours makes readable: reported, not patched
  }
  if (config.optimum.flat && !fix.list_create) {
    fix.list_create = true;
    return true;
  }
  const engine::GptqRules rules(current, engine_view.model, headers, engine_view.version);
  const bool can_append = fix.list_create || config.modules_in_block.has_value();
  bool changed = false;
  std::vector<std::pair<std::string, uint32_t>> wanted; // quantized layers to list, and module
  for (const LayerView& view : *engine_view.views) {
    const Layer& layer = *view.layer;
    if ((view.disk != Disk::dense && view.disk != Disk::quantized) ||
        !rules.in_optimum_block(layer.prefix) || layer.kind == engine::LayerKind::built_dense ||
        layer.kind == engine::LayerKind::embedding) {
      continue;
    }
    const Decision decision = rules.decide(layer);
    if (view.disk == Disk::dense && decision.verdict == Verdict::quantized) {
      if (!current.optimum.given || !can_append) {
        fix.list_create = true;
        return true;
      }
      for (size_t i = 0; config.modules_in_block && i < config.modules_in_block->size(); ++i) {
        const std::string& entry = (*config.modules_in_block)[i];
        if (layer.prefix.size() >= entry.size() &&
            layer.prefix.compare(layer.prefix.size() - entry.size(), entry.size(), entry) == 0) {
          changed = fix.list_removed.insert(config.list_entries[i]).second || changed;
        }
      }
    } else if (view.disk == Disk::quantized && decision.verdict == Verdict::dense) {
      if (!can_append) {
        fix.list_create = true;
        return true;
      }
      wanted.emplace_back(layer.prefix, layer.modules.front());
    }
  }
  if (wanted.empty()) {
    return changed;
  }
  // Short entries where they reach nothing else; but a short entry can cover one shard of a
  // fused layer of a version whose names the whole names miss (vLLM's older Qwen3.5 names),
  // so they are kept only when they leave no more fused layers split than whole names do.
  const auto with = [&](bool short_entries) {
    GptqFix trial = fix;
    for (const auto& [prefix, module] : wanted) {
      const std::string entry =
          short_entries ? optimum_list_entry(prefix, rules, current, headers, judged) : prefix;
      if (std::find(trial.list_added.begin(), trial.list_added.end(), entry) ==
          trial.list_added.end()) {
        trial.list_added.push_back(entry);
        trial.list_added_order.push_back(module);
      }
    }
    return trial;
  };
  const auto split_layers = [&](const GptqFix& trial) {
    const quant::GptqConfig after = patched(config, trial);
    size_t split = 0;
    for (const auto& other : judged) {
      if (!other->dialect.gptq.reads_module_list) {
        continue;
      }
      const engine::GptqRules judge(after, other->model, headers, other->version);
      for (const LayerView& view : *other->views) {
        split += judge.decide(*view.layer).by == DecidedBy::fused_disagree ? 1U : 0U;
      }
    }
    return split;
  };
  GptqFix short_fix = with(true);
  GptqFix long_fix = with(false);
  GptqFix& chosen = split_layers(short_fix) <= split_layers(long_fix) ? short_fix : long_fix;
  changed = changed || chosen.list_added.size() != fix.list_added.size();
  fix = std::move(chosen);
  return changed;
}

// Iterate to the fixpoint: the list first (vLLM tests it before dynamic), then every dense
// layer the engine quantizes gets a negative rule; every negative rule that makes a quantized
// layer dense goes.
// The negative key that excludes the layer whose first module is `first` in every engine: one
// name when the engines agree on it, else a pattern for all of them (vLLM's
// language_model.model.layers.0.linear_attn.in_proj_ba and SGLang's model.layers.0... become
// ^(language_model\.)?model\.layers\.0\.linear_attn\.in_proj_ba$).
std::string negative_key(const std::vector<std::string>& names, bool hide_mtp) {
  std::vector<std::string> unique;
  for (const std::string& name : names) {
    if (std::find(unique.begin(), unique.end(), name) == unique.end()) {
      unique.push_back(name);
    }
  }
  const auto escaped = [&](const std::string& name) {
    std::string out = escape_regex(name);
    if (hide_mtp && out.find("mtp") != std::string::npos) {
      out.replace(out.find("mtp"), 3, "m[t]p");
    }
    return out;
  };
  if (unique.size() == 1) {
    return "-:^" + escaped(unique[0]) + "$";
  }
  // The longest suffix every name shares that starts a name component, and the names' heads
  // before it as alternatives: ^(mtp|model)\.layers\.0\.self_attn\.qkv_proj$.
  size_t common = 0;
  const std::string& first = unique.front();
  while (common < first.size() && std::all_of(unique.begin(), unique.end(), [&](const auto& n) {
           return common < n.size() && n[n.size() - 1 - common] == first[first.size() - 1 - common];
         })) {
    ++common;
  }
  while (common > 0 && !std::all_of(unique.begin(), unique.end(), [&](const std::string& n) {
           return n.size() == common || n[n.size() - common - 1] == '.';
         })) {
    --common;
  }
  if (common == 0) {
    std::string alternatives;
    for (const std::string& name : unique) {
      alternatives += (alternatives.empty() ? "" : "|") + escaped(name);
    }
    return "-:^(" + alternatives + ")$";
  }
  bool bare = false;
  std::string heads;
  for (const std::string& name : unique) {
    if (name.size() == common) {
      bare = true;
      continue;
    }
    heads += (heads.empty() ? "" : "|") + escaped(name.substr(0, name.size() - common - 1));
  }
  const std::string tail = escaped(first.substr(first.size() - common));
  return bare ? "-:^((" + heads + ")\\.)?" + tail + "$" : "-:^(" + heads + ")\\." + tail + "$";
}

// The fix's rounds over every judged engine: optimum's list, the module list, then dynamic.
class GptqFixer {
public:
  GptqFixer(const quant::GptqConfig& config,
            const engine::GptqHeaders& headers,
            const std::vector<std::unique_ptr<EngineView>>& judged,
            const ModuleList& modules)
      : m_config(config), m_headers(headers), m_judged(judged), m_modules(modules) {
    // Each engine's name for the layer holding a module, for keys every engine matches.
    for (const auto& engine_view : judged) {
      if (engine_view->dialect.gptq.optimum_convert) {
        continue; // optimum reads no dynamic
      }
      for (const LayerView& view : *engine_view->views) {
        auto& names = m_names_of[view.layer->modules.front()];
        if (std::find(names.begin(), names.end(), view.layer->prefix) == names.end()) {
          names.push_back(view.layer->prefix);
        }
      }
    }
    const std::vector<LayerView>& views = *judged.front()->views;
    m_mtp_all_dense = std::all_of(views.begin(), views.end(), [](const LayerView& v) {
      return !is_mtp(v) || v.disk == Disk::dense;
    });
  }

  // One round: whether it changed the fix.
  bool step(GptqFix& fix) const {
    const quant::GptqConfig current = patched(m_config, fix);
    return list_round(current, fix) || dynamic_round(current, fix);
  }

private:
  // optimum's list (transformers reads nothing else), then the module list of every version
  // that reads one (dynamic is judged on the list it will see, next round).
  bool list_round(const quant::GptqConfig& current, GptqFix& fix) const {
    for (const auto& engine_view : m_judged) {
      if (engine_view->dialect.gptq.optimum_convert &&
          fix_optimum_round(m_config, current, m_headers, *engine_view, m_judged, fix)) {
        return true;
      }
    }
    if (!current.modules_in_block) {
      return false;
    }
    for (const auto& engine_view : m_judged) {
      if (!engine_view->dialect.gptq.reads_module_list) {
        continue;
      }
      const engine::GptqRules original(
          m_config, engine_view->model, m_headers, engine_view->version);
      if (fix_list_round(
              m_config,
              original,
              engine::GptqRules(current, engine_view->model, m_headers, engine_view->version),
              *engine_view,
              m_modules,
              fix)) {
        return true;
      }
    }
    return false;
  }

  // The negative dynamic key that makes the dense layer `view` dense under every engine.
  std::string dense_key(const LayerView& view) const {
    const auto found = m_names_of.find(view.layer->modules.front());
    const std::vector<std::string> names =
        found != m_names_of.end() ? found->second : std::vector<std::string>{view.layer->prefix};
    // "-:^mtp\." only where every engine names the layer under mtp.: SGLang builds the
    // Qwen3-Next draft at model.layers.0, which target layer 0's rules must not reach.
    const bool every_mtp = std::all_of(names.begin(), names.end(), [](const std::string& name) {
      return name.rfind("mtp.", 0) == 0;
    });
    if (is_mtp(view) && m_mtp_all_dense && every_mtp) {
      return "-:^mtp\\.";
    }
    return negative_key(names, !m_mtp_all_dense);
  }

  // dynamic: prepend a negative key for each dense layer an engine quantizes, remove a rule
  // that makes a quantized layer dense.
  bool dynamic_round(const quant::GptqConfig& current, GptqFix& fix) const {
    // Where each rule of `current` came from: one of ours (nothing) or an original index.
    std::vector<std::optional<size_t>> origin(fix.prepend.size());
    for (size_t i = 0; i < m_config.dynamic.size(); ++i) {
      if (fix.removed.count(i) == 0) {
        origin.emplace_back(i);
      }
    }
    bool changed = false;
    std::vector<std::pair<size_t, std::string>> wanted;
    for (const auto& engine_view : m_judged) {
      if (engine_view->dialect.gptq.optimum_convert) {
        continue; // its list round owns it
      }
      const engine::GptqRules judge(current, engine_view->model, m_headers, engine_view->version);
      each_decided(
          *engine_view->views, judge, [&](const LayerView& view, const Decision& decision) {
            if (decision.by == DecidedBy::built_quantized ||
                decision.verdict == Verdict::load_error) {
              return; // no rule changes it; the list round owns shards that disagree
            }
            if (view.disk == Disk::dense && decision.verdict != Verdict::dense) {
              const std::string key = dense_key(view);
              if (std::find(fix.prepend.begin(), fix.prepend.end(), key) == fix.prepend.end()) {
                wanted.emplace_back(view.order, key);
              }
            } else if (view.disk == Disk::quantized && decision.by == DecidedBy::ignore_entry) {
              // The rule index is into `current`, whose first rules are ours.
              if (const auto original_index = origin.at(*decision.ignore_index)) {
                changed = fix.removed.insert(*original_index).second || changed;
              }
            } else if (view.disk == Disk::quantized && decision.by == DecidedBy::built_dense &&
                       judge.mtp_special_case()) {
              // A "-:...mtp..." rule switched packed MTP decoder layers dense: drop such rules.
              for (size_t i = 0; i < m_config.dynamic.size(); ++i) {
                const auto& rule = m_config.dynamic[i];
                if (rule.negative && rule.key.find("mtp") != std::string::npos) {
                  changed = fix.removed.insert(i).second || changed;
                }
              }
            }
          });
    }
    std::stable_sort(wanted.begin(), wanted.end());
    for (const auto& [order, key] : wanted) {
      if (std::find(fix.prepend.begin(), fix.prepend.end(), key) == fix.prepend.end()) {
        fix.prepend.push_back(key);
        // The key is already in dynamic, behind a rule that wins first: move it to the front
        // (a JSON object holds a key once).
        for (size_t i = 0; i < m_config.dynamic.size(); ++i) {
          if (m_config.dynamic[i].key == key) {
            fix.removed.insert(i);
          }
        }
        changed = true;
      }
    }
    return changed;
  }

  const quant::GptqConfig& m_config;
  const engine::GptqHeaders& m_headers;
  const std::vector<std::unique_ptr<EngineView>>& m_judged;
  const ModuleList& m_modules;
  std::map<uint32_t, std::vector<std::string>> m_names_of;
  bool m_mtp_all_dense = true;
};

GptqFix find_fix(const quant::GptqConfig& config,
                 const engine::GptqHeaders& headers,
                 const std::vector<std::unique_ptr<EngineView>>& judged,
                 const ModuleList& modules) {
  GptqFix fix;
  const GptqFixer fixer(config, headers, judged, modules);
  fix_to_fixpoint([&] { return fixer.step(fix); });
  // New entries in checkpoint order, whatever round found them.
  std::vector<std::pair<size_t, std::string>> added;
  for (size_t i = 0; i < fix.list_added.size(); ++i) {
    added.emplace_back(fix.list_added_order[i], fix.list_added[i]);
  }
  std::stable_sort(
      added.begin(), added.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < added.size(); ++i) {
    fix.list_added_order[i] = added[i].first;
    fix.list_added[i] = added[i].second;
  }
  return fix;
}

std::string rule_text(const Decision& decision) {
  if (decision.by == DecidedBy::ignore_entry) {
    return "dynamic rule " + quoted(decision.target) + " (dynamic[" +
           std::to_string(*decision.ignore_index) + "])";
  }
  if (decision.by == DecidedBy::built_dense) {
    return "vLLM's Qwen3.5 MTP special case (a \"-:\" dynamic key containing \"mtp\")";
  }
  return decision.target;
}

// A config that names only `rule` (the trap notes test one rule at a time).
quant::GptqConfig only_rule(const quant::GptqConfig& config, const quant::GptqRule& rule) {
  quant::GptqConfig one = config;
  one.dynamic = {rule};
  one.has_dynamic = true;
  one.lm_head = false;
  return one;
}

// Layers no config can load: modules stored inconsistently, and shards of one fused layer
// stored partly quantized, partly dense (vLLM and SGLang build one layer for them; with the
// list vLLM derives from the headers it raises at once, naming the layer).
void add_disk_problems(const std::vector<LayerView>& views,
                       const ModuleList& modules,
                       const engine::GptqRules& judge,
                       const std::vector<engine::Engine>& engines,
                       std::vector<Finding>& findings) {
  std::vector<LayerProblem> problems;
  std::vector<std::string> names;
  for (const engine::Engine engine : engines) {
    names.emplace_back(engine::to_string(engine));
  }
  const std::string who(engine::display_name(engines.front()));
  for (const LayerView& view : views) {
    const Layer& layer = *view.layer;
    if (view.disk == Disk::inconsistent) {
      for (const uint32_t m : layer.modules) {
        if (modules[m].format == checkpoint::StorageFormat::inconsistent) {
          problems.push_back(inconsistent_storage(modules[m], view.order, names));
        }
      }
    } else if (view.disk == Disk::mixed) {
      std::vector<std::string> layer_modules;
      for (const uint32_t m : layer.modules) {
        layer_modules.emplace_back(modules[m].name);
      }
      const Decision decision = judge.decide(layer);
      problems.push_back({FindingKind::disk_shards_disagree,
                          "are shards of " + layer.name +
                              " but stored partly quantized, partly dense: " + who +
                              " builds one layer for them, so no config can load it" +
                              (decision.verdict == Verdict::load_error ? "; vLLM: " + decision.error
                                                                       : std::string()),
                          std::move(layer_modules),
                          view.order,
                          names});
    }
  }
  add_grouped(problems, findings, {});
}

// The file's indent unit: the leading whitespace of its first indented line (two spaces when
// it has none).
std::string indent_unit(const std::string& text) {
  for (size_t pos = text.find('\n'); pos != std::string::npos; pos = text.find('\n', pos + 1)) {
    const size_t end = text.find_first_not_of(" \t", pos + 1);
    if (end != std::string::npos && end > pos + 1 && text[end] != '\n') {
      return text.substr(pos + 1, end - pos - 1);
    }
  }
  return "  ";
}

// How optimum (transformers) goes wrong on one layer.
std::pair<FindingKind, std::string> optimum_problem(const LayerView& view,
                                                    const Decision& decision,
                                                    const engine::GptqRules& rules,
                                                    const std::string& who) {
  if (view.disk == Disk::dense) {
    return {FindingKind::dense_quantized_by_config,
            "stored " + view.stored + " but " + who + " (optimum's convert_model) replaces them " +
                "with QuantLinear: " +
                (rules.config().optimum.given
                     ? "they end with modules_in_block_to_quantize entry " + quoted(decision.target)
                     : "with no modules_in_block_to_quantize every Linear under " +
                           rules.optimum_block() + " is quantized (dynamic is not read)")};
  }
  if (decision.by == DecidedBy::built_dense) {
    return {FindingKind::engine_builds_dense,
            "stored " + view.stored + " but " + who + " quantizes only the Linear under " +
                (rules.optimum_block().empty() ? std::string("its block") : rules.optimum_block()) +
                " (optimum's block): not fixable by a config patch"};
  }
  return {FindingKind::quantized_untargeted,
          "stored " + view.stored + " but no entry of modules_in_block_to_quantize ends their " +
              "names, so " + who + " builds them dense"};
}

// The raw string at `entry`'s place in `file` (the whole string vLLM cut characters out of).
std::string written_entry(const quant::ConfigFile& file, const quant::GptqListEntry& entry) {
  const json::Json* value = &file.config();
  for (const std::string& token : entry.array) {
    value = value->is_array() ? &(*value)[std::stoul(token)] : &(*value)[token];
  }
  const json::Json& item = (*value)[entry.index];
  return item.is_string() ? item.get<std::string>() : item.dump();
}

// The edits of `file`'s modules_in_block_to_quantize that drop the entries written as `removed`
// and add `added`, in the layout the file already has (one change per array touched).
void list_changes(const quant::ConfigFile& file,
                  const std::set<std::string>& removed,
                  const std::vector<std::string>& added,
                  Diagnosis& diagnosis) {
  auto config = quant::read_gptq(file);
  if (!config || !config->has_list || !config->modules_in_block) {
    return;
  }
  std::vector<ArrayChange> changes;
  const auto change_for = [&](const std::vector<std::string>& array) -> ArrayChange& {
    std::vector<std::string> pointer = file.pointer;
    pointer.insert(pointer.end(), array.begin(), array.end());
    for (ArrayChange& change : changes) {
      if (change.pointer == pointer) {
        return change;
      }
    }
    ArrayChange& change = changes.emplace_back();
    change.file = file.name;
    change.pointer = std::move(pointer);
    return change;
  };
  std::set<quant::GptqListEntry> seen;
  for (const quant::GptqListEntry& entry : config->list_entries) {
    const std::string written = written_entry(file, entry);
    if (removed.count(written) != 0 && seen.insert(entry).second) {
      ArrayChange& change = change_for(entry.array);
      change.remove.push_back(entry.index);
      change.removed_values.push_back(written);
    }
  }
  if (!added.empty()) {
    ArrayChange& change = change_for(config->list_append_to);
    change.append = added;
  }
  for (ArrayChange& change : changes) {
    std::sort(change.remove.begin(), change.remove.end());
    diagnosis.array_changes.push_back(std::move(change));
  }
}

} // namespace

namespace {

// How one engine's verdict on a layer is worded in a finding.
auto gptq_finding_words(const EngineView& engine_view,
                        const engine::GptqRules& rules,
                        const quant::GptqConfig& config) {
  const std::string who(engine_view.dialect.engine_name);
  const bool reads_list = engine_view.dialect.gptq.reads_module_list;
  const bool optimum = engine_view.dialect.gptq.optimum_convert;
  return
      [&config, &rules, who, reads_list, optimum](const LayerView& view, const Decision& decision) {
        if (optimum) {
          return optimum_problem(view, decision, rules, who);
        }
        if (decision.by == DecidedBy::undecidable) {
          return undecidable_problem("dynamic");
        }
        if (decision.by == DecidedBy::built_quantized) {
          return std::pair(FindingKind::engine_quantizes,
                           "stored " + view.stored + " but " + who +
                               "'s GPTQ Marlin quantizes every FusedMoE layer (dynamic is "
                               "not read for experts): not fixable by a config patch");
        }
        if (decision.by == DecidedBy::override_refused) {
          return std::pair(FindingKind::config_rejected,
                           "are overridden by dynamic rule " + quoted(decision.target) +
                               " to what the kernel serving the config cannot take, and " + who +
                               " raises while it builds them (\"" + decision.error +
                               "\"): not fixable by a config patch");
        }
        if (decision.verdict == Verdict::load_error) {
          return shards_disagree(view, decision);
        }
        if (view.disk == Disk::dense) {
          return std::pair(FindingKind::dense_quantized_by_config,
                           "stored " + view.stored + " but quantized by " + rule_text(decision) +
                               "; no negative dynamic rule excludes them");
        }
        if (decision.by == DecidedBy::ignore_entry ||
            (decision.by == DecidedBy::built_dense && rules.mtp_special_case())) {
          return std::pair(FindingKind::quantized_made_dense,
                           "stored " + view.stored + " but made dense by " + rule_text(decision));
        }
        if (!reads_list) {
          return std::pair(FindingKind::engine_builds_dense,
                           "stored " + view.stored + " but " + who +
                               " builds this layer dense: not fixable by a config patch");
        }
        if (view.layer->kind == engine::LayerKind::lm_head) {
          return std::pair(
              FindingKind::quantized_untargeted,
              "stored " + view.stored +
                  (config.lm_head ? std::string(" but no entry of modules_in_block_to_quantize is "
                                                "a substring of ") +
                                        view.layer->prefix + ", so " + who +
                                        " builds the head dense (\"lm_head\" is true, "
                                        "and the list decides first)"
                                  : " but \"lm_head\" is not true, so " + who +
                                        " builds the head dense: not fixable by a config patch"));
        }
        return std::pair(FindingKind::quantized_untargeted,
                         "stored " + view.stored + " but " + who +
                             " builds them dense (not in modules_in_block_to_quantize, or a "
                             "layer GPTQ never quantizes)");
      };
}

// Traps: negative rules that name MTP but match no layer of this checkpoint (engines.md §11).
void dead_mtp_rule_notes(const quant::GptqConfig& config,
                         const EngineView& first_view,
                         const engine::GptqHeaders& headers,
                         Diagnosis& diagnosis) {
  const engine::ModelInfo& model = first_view.model;
  const std::vector<LayerView>& views = *first_view.views;
  const engine::EngineVersion& first_version = first_view.version;
  for (size_t i = 0; i < config.dynamic.size(); ++i) {
    const auto& rule = config.dynamic[i];
    if (!rule.negative || rule.key.find("mtp") == std::string::npos) {
      continue;
    }
    const engine::GptqRules one(only_rule(config, rule), model, headers, first_version);
    bool matches_any = false;
    for (const LayerView& view : views) {
      bool undecidable = false;
      matches_any = matches_any || one.first_dynamic(view.layer->prefix, undecidable).has_value();
    }
    if (!matches_any) {
      diagnosis.notes.push_back(
          "dynamic rule " + quoted(rule.key) +
          " matches no layer of this checkpoint under re.match (anchored at the start): it "
          "looks like an MTP exclusion but excludes nothing; on vLLM since 2026-07-23 it only "
          "works through the Qwen3.5 special case, which does not cover mtp.fc");
    }
  }
}

// Traps: a positive rule that matches a layer first shadows a later negative rule matching the
// same layer (first match wins): the exclusion never applies to it (failures.md F17).
void shadowed_rule_notes(const quant::GptqConfig& config,
                         const EngineView& first_view,
                         const engine::GptqHeaders& headers,
                         const engine::GptqRules& before,
                         Diagnosis& diagnosis) {
  const engine::ModelInfo& model = first_view.model;
  const std::vector<LayerView>& views = *first_view.views;
  const engine::EngineVersion& first_version = first_view.version;
  std::vector<std::pair<std::pair<size_t, size_t>, size_t>> shadowed; // ((+, -), layers)
  for (const LayerView& view : views) {
    bool undecidable = false;
    const auto first = before.first_dynamic(view.layer->prefix, undecidable);
    if (!first || config.dynamic[*first].negative) {
      continue;
    }
    for (size_t j = *first + 1; j < config.dynamic.size(); ++j) {
      if (!config.dynamic[j].negative) {
        continue;
      }
      const engine::GptqRules one(
          only_rule(config, config.dynamic[j]), model, headers, first_version);
      if (one.first_dynamic(view.layer->prefix, undecidable).has_value()) {
        const auto pair = std::pair(*first, j);
        const auto it = std::find_if(shadowed.begin(), shadowed.end(), [&](const auto& entry) {
          return entry.first == pair;
        });
        if (it == shadowed.end()) {
          shadowed.emplace_back(pair, 1);
        } else {
          ++it->second;
        }
        break;
      }
    }
  }
  for (const auto& [pair, count] : shadowed) {
    diagnosis.notes.push_back(
        "dynamic rule " + quoted(config.dynamic[pair.first].key) + " (dynamic[" +
        std::to_string(pair.first) + "]) matches " + std::to_string(count) + " layer" +
        (count == 1 ? "" : "s") + " before " + quoted(config.dynamic[pair.second].key) +
        " (dynamic[" + std::to_string(pair.second) +
        "]) is tried: the first match wins, so that exclusion never applies to them");
  }
}

// The fix's edits of modules_in_block_to_quantize, in every copy of the config.
void change_module_list(const JudgeInput& in,
                        const quant::GptqConfig& config,
                        const GptqFix& fix,
                        Diagnosis& diagnosis) {
  const quant::ConfigSet& configs = in.configs;
  if (fix.list_create && config.optimum.flat) {
    // transformers' refusal of the flat list (sum() raises) is what the nested list mends.
    for (Finding& finding : diagnosis.findings) {
      if (finding.kind == FindingKind::config_rejected &&
          finding.engine_error == config.optimum.error &&
          finding.engines == std::vector<std::string>{"transformers"}) {
        finding.fixable = true;
      }
    }
  }
  if (fix.list_create) {
    // The list written anew, one nested list, in every copy of the config: the key is replaced
    // (it moves to the end of the config object).
    const quant::GptqConfig after = patched(config, fix);
    for (const quant::ConfigFile& file : configs.files) {
      if (!same_method(quant::declared_method(file), "gptq")) {
        continue;
      }
      // Laid out like the file: its indent unit, one entry a line, below the member's depth.
      const std::string unit = indent_unit(file.text);
      const auto indent = [&](size_t depth) {
        std::string out;
        for (size_t i = 0; i < depth; ++i) {
          out += unit;
        }
        return out;
      };
      const size_t depth = file.pointer.size() + 1;
      std::string raw = "[\n" + indent(depth + 1) + "[\n";
      for (size_t i = 0; i < after.modules_in_block->size(); ++i) {
        raw += indent(depth + 2) + json::Json((*after.modules_in_block)[i]).dump() +
               (i + 1 < after.modules_in_block->size() ? ",\n" : "\n");
      }
      raw += indent(depth + 1) + "]\n" + indent(depth) + "]";
      ObjectChange change;
      change.file = file.name;
      change.pointer = file.pointer;
      if (file.config().contains("modules_in_block_to_quantize")) {
        change.remove.emplace_back("modules_in_block_to_quantize");
      }
      change.append.emplace_back("modules_in_block_to_quantize", raw);
      std::vector<std::string> removed;
      for (const quant::GptqListEntry& entry : fix.list_removed) {
        removed.push_back(written_entry(in.active, entry));
      }
      change.reported = std::pair(fix.list_added, std::move(removed));
      diagnosis.object_changes.push_back(std::move(change));
    }
  } else if (!fix.list_removed.empty() || !fix.list_added.empty()) {
    // Every copy of the config gets the same list edit, each in its own layout.
    std::set<std::string> removed;
    for (const quant::GptqListEntry& entry : fix.list_removed) {
      removed.insert(written_entry(in.active, entry));
    }
    for (const quant::ConfigFile& file : configs.files) {
      if (same_method(quant::declared_method(file), "gptq")) {
        list_changes(file, removed, fix.list_added, diagnosis);
      }
    }
  }
}

// The dynamic rules' lint (issue 23 item 6): negative keys whose removal changes no layer's
// decision in any engine version judged, found as the skip lists' entries are
// (skip_list_lint.hpp). A positive rule is never called dead: what it overrides (bits,
// group_size, desc_act, ...) shapes the weights vLLM allocates whether or not a verdict moves.
// JSON object keys cannot repeat, so there are no duplicates; a rule that makes a layer stored
// quantized dense is a finding already (quantized_made_dense).
std::optional<SkipListLint> lint_dynamic(const EngineViews& judged,
                                         const quant::GptqConfig& config,
                                         const engine::GptqHeaders& headers,
                                         const quant::ConfigFile& active) {
  if (!config.has_dynamic || config.dynamic.empty() ||
      config.dynamic.size() > k_lint_by_default_up_to) {
    return std::nullopt;
  }
  std::vector<std::string> keys;
  std::set<size_t> positive;
  for (size_t i = 0; i < config.dynamic.size(); ++i) {
    keys.push_back(config.dynamic[i].key);
    if (!config.dynamic[i].negative) {
      positive.insert(i);
    }
  }
  return lint_keyed_rules(judged,
                          active,
                          "dynamic",
                          std::move(keys),
                          positive,
                          [&](const std::vector<size_t>& removed, const EngineView& engine_view) {
                            quant::GptqConfig without = config;
                            without.dynamic = without_indices(config.dynamic, removed);
                            return engine::GptqRules(
                                without, engine_view.model, headers, engine_view.version);
                          });
}

// --prune: the rules that are dead once the fix is applied (a rule the fix removes can have
// shadowed one that then decides): the file's are added to the rules the fix removes, the fix's
// own are not prepended. Removing dead rules together changes no decision, so one round is the
// fixpoint. Returns the file's rules taken out.
std::set<size_t> prune_dynamic(const EngineViews& judged,
                               const quant::GptqConfig& config,
                               const engine::GptqHeaders& headers,
                               const quant::ConfigFile& active,
                               GptqFix& fix) {
  // patched(config, fix).dynamic: fix.prepend, then these.
  const std::vector<size_t> kept = kept_indices(config.dynamic.size(), fix.removed);
  std::set<size_t> pruned;
  const auto lint = lint_dynamic(judged, patched(config, fix), headers, active);
  if (!lint) {
    return pruned;
  }
  std::vector<size_t> dead_prepended;
  for (const size_t j : lint->dead) {
    if (j >= fix.prepend.size()) {
      pruned.insert(kept[j - fix.prepend.size()]);
    } else {
      dead_prepended.push_back(j); // a key of the fix's own no decision needs
    }
  }
  fix.removed.insert(pruned.begin(), pruned.end());
  fix.prepend = without_indices(fix.prepend, dead_prepended);
  return pruned;
}

} // namespace

Status judge_gptq(const JudgeInput& in, const quant::GptqConfig& config, Diagnosis& diagnosis) {
  const ModuleList& modules = in.modules;
  const quant::ConfigSet& configs = in.configs;
  // Every version of every engine whose verdicts can differ (versions.hpp), each on its own
  // layer names; the one patch satisfies all of them.
  const DiagnoseOptions& options = in.options;
  const engine::ModelInfo reference =
      engine::model_info_for(configs.architecture, configs.num_hidden_layers);
  const auto judged =
      engine_views(in.engines, reference, {modules, in.inventory, in.mtp_head, options}, "gptq");
  judged_versions(judged, diagnosis);
  // The first engine's view (the registry's order) words the storage problems and the traps.
  const EngineView& first_view = *judged.front();
  const engine::ModelInfo& model = first_view.model;
  const std::vector<LayerView>& views = *first_view.views;
  const engine::EngineVersion& first_version = first_view.version;
  const engine::GptqHeaders headers = engine::gptq_headers(in.inventory);
  const std::vector<engine::Engine> engines = in.engines.list();
  GptqFix fix = find_fix(config, headers, judged, modules);
  diagnosis.lint = lint_dynamic(judged, config, headers, in.active);
  if (options.prune) {
    if (const std::set<size_t> pruned = prune_dynamic(judged, config, headers, in.active, fix);
        !pruned.empty() && diagnosis.lint) {
      diagnosis.findings.push_back(pruned_entries_finding(*diagnosis.lint, pruned));
    }
  }
  const engine::GptqRules before(config, model, headers, first_version);

  LayerProblems problems;
  for (const auto& engine_view : judged) {
    const engine::GptqRules engine_before(
        config, engine_view->model, headers, engine_view->version);
    const engine::GptqRules engine_after(
        patched(config, fix), engine_view->model, headers, engine_view->version);
    problems.add(*engine_view->views,
                 modules,
                 engine_before,
                 engine_after,
                 gptq_finding_words(*engine_view, engine_before, config),
                 {engine_view->engine, &engine_view->version});
  }
  problems.report(diagnosis.findings, &judged);
  add_disk_problems(views, modules, before, engines, diagnosis.findings);
  dead_mtp_rule_notes(config, first_view, headers, diagnosis);
  shadowed_rule_notes(config, first_view, headers, before, diagnosis);
  if (fix.empty()) {
    return ok_status();
  }
  change_module_list(in, config, fix, diagnosis);
  if (fix.removed.empty() && fix.prepend.empty()) {
    return ok_status();
  }
  ObjectChange edit;
  for (const size_t i : fix.removed) {
    edit.remove.push_back(config.dynamic[i].key);
  }
  edit.prepend = fix.prepend;
  edit_every_copy(configs,
                  "gptq",
                  "dynamic",
                  has_object<quant::read_gptq, &quant::GptqConfig::has_dynamic>,
                  edit,
                  diagnosis);
  return ok_status();
}

} // namespace qpatch::diagnose::detail
