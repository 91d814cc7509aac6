// SPDX-License-Identifier: Apache-2.0
// The judge for auto-round configs under vLLM's INC rules (engine/auto_round_rules.hpp). The fix
// adds an exact extra_config key {"bits": 16, "data_type": "fp"} for every module stored dense that
// the config would quantize (all shards of a fused layer; "...mlp.experts" for an experts layer),
// and removes a key that makes quantized modules dense, as a fixpoint like the other judges.
// Exact checkpoint names are the robust choice (engines.md §12.2): vLLM renames them like layer
// names, and the auto_round library (transformers) reads an exact nn.Linear name as that layer's
// own dict, joining it to the layers it converts whatever the block list, never overwritten by
// a regex or dynamic key (auto_round_library.cpp): {"bits": 16} makes it dense for both. The one
// patch is judged by every engine at once: each fix round asks every version of every engine.
#include "diagnose/fixpoint.hpp"
#include "diagnose/judge_common.hpp"

#include <qpatch/engine/auto_round_rules.hpp>
#include <qpatch/quant/auto_round.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <set>

namespace qpatch::diagnose::detail {

namespace {

constexpr const char* k_dense_entry = R"({"bits": 16, "data_type": "fp"})";

struct IncFix {
  std::set<size_t> removed;       // original extra_config entries to drop
  std::vector<std::string> added; // new exact keys, in checkpoint order
};

quant::IncConfig patched(const quant::IncConfig& config, const IncFix& fix) {
  quant::IncConfig out = config;
  out.extra_config.clear();
  for (size_t i = 0; i < config.extra_config.size(); ++i) {
    if (fix.removed.count(i) == 0) {
      out.extra_config.push_back(config.extra_config[i]);
    }
  }
  for (const std::string& key : fix.added) {
    out.extra_config.push_back(
        {key, 16, std::nullopt, std::nullopt, json::Json::parse(k_dense_entry)});
  }
  out.has_extra_config = true;
  return out;
}

// The exact keys that make `layer` dense: its modules' checkpoint names, or the experts layer.
std::vector<std::string>
keys_for(const Layer& layer, const ModuleList& modules, const engine::ModelInfo& model) {
  if (layer.kind == LayerKind::experts) {
    return {layer.name};
  }
  return ignore_names(layer, modules, model);
}

// The key that names `layer` itself as the engine looks it up: for a fused layer vLLM's early
// exit (inc.py get_quant_method) makes it dense before any fusion or regex rule is tried.
std::string fused_key(const Layer& layer, const engine::ModelInfo& model) {
  return model.to_vllm(layer.name) == layer.prefix ? layer.name : layer.prefix;
}

// True when `entry` reads as ours: 16 bits with the default group_size and sym, and no act_bits
// (the auto_round library quantizes a layer whose act_bits is 8 or less).
bool reads_as_dense_entry(const quant::IncEntry& entry) {
  return entry.bits == 16 && !entry.group_size && !entry.sym && !entry.value.contains("act_bits");
}

bool fix_round(const quant::IncConfig& config,
               const EngineView& engine_view,
               const ModuleList& modules,
               IncFix& fix);

// One fix for every version judged (`judged`): each round asks every version in turn.
IncFix find_fix(const quant::IncConfig& config,
                const std::vector<std::unique_ptr<EngineView>>& judged,
                const ModuleList& modules) {
  IncFix fix;
  fix_to_fixpoint([&] {
    bool changed = false;
    for (const auto& engine_view : judged) {
      changed = fix_round(config, *engine_view, modules, fix) || changed;
    }
    return changed;
  });
  return fix;
}

// One round of the fix under one version: true when it changed `fix`.
bool fix_round(const quant::IncConfig& config,
               const EngineView& engine_view,
               const ModuleList& modules,
               IncFix& fix) {
  const engine::ModelInfo& model = engine_view.model;
  const std::vector<LayerView>& views = *engine_view.views;
  {
    const quant::IncConfig current = patched(config, fix);
    const engine::AutoRoundRules judge(
        current, model, engine_view.version, engine_view.layers.get());
    // Where each entry of `current` came from: an original index, or one of ours (nothing).
    std::vector<std::optional<size_t>> origin;
    for (size_t i = 0; i < config.extra_config.size(); ++i) {
      if (fix.removed.count(i) == 0) {
        origin.emplace_back(i);
      }
    }
    origin.resize(current.extra_config.size());
    bool changed = false;
    const auto remove = [&](size_t index) {
      if (const auto original = origin.at(index)) {
        changed = fix.removed.insert(*original).second || changed;
      }
    };
    // The entry of `current` written exactly as `key` (a second one would not parse).
    const auto written = [&](const std::string& key) -> std::optional<size_t> {
      for (size_t i = 0; i < current.extra_config.size(); ++i) {
        if (current.extra_config[i].key == key) {
          return i;
        }
      }
      return std::nullopt;
    };
    const auto add = [&](const std::string& key) {
      if (std::find(fix.added.begin(), fix.added.end(), key) != fix.added.end()) {
        return false; // added this round by another layer
      }
      fix.added.push_back(key);
      return true;
    };
    each_decided(views, judge, [&](const LayerView& view, const Decision& decision) {
      if (view.disk == Disk::dense && decision.verdict != Verdict::dense) {
        // Escalate, one step a round: add the exact keys the layer lacks; else rewrite those
        // already written with other settings (a shard's {"bits": 16, "group_size": 64} and a
        // default shard never agree); else name the layer itself as the engine looks it up
        // (a fused layer; SGLang before #18926 builds the vision tower at visual.*, and vLLM's
        // mapper turns model.visual.* into the visual.* a key of the checkpoint's may also be
        // written as), adding that key or rewriting it.
        const std::vector<std::string> keys = keys_for(*view.layer, modules, model);
        bool missing = false;
        bool added = false;
        for (const std::string& key : keys) {
          if (!written(key)) {
            missing = true;
            added = add(key) || added;
          }
        }
        bool rewritten = false;
        for (const std::string& key : missing ? std::vector<std::string>() : keys) {
          const size_t i = *written(key);
          if (origin.at(i) && !reads_as_dense_entry(current.extra_config[i])) {
            remove(i);
            rewritten = add(key) || rewritten;
          }
        }
        if (!missing && !rewritten) {
          const std::string key = fused_key(*view.layer, model);
          if (const auto i = written(key); !i) {
            added = add(key);
          } else if (origin.at(*i) && !reads_as_dense_entry(current.extra_config[*i])) {
            remove(*i);
            rewritten = add(key);
          }
        }
        changed = changed || added || rewritten;
      } else if (view.disk == Disk::quantized && decision.verdict == Verdict::dense &&
                 decision.by == DecidedBy::ignore_entry) {
        remove(*decision.ignore_index);
      } else if (view.disk == Disk::quantized && decision.verdict == Verdict::load_error) {
        // A shard made dense by a key: drop the keys of >= 16 bits that name the shards.
        for (size_t i = 0; i < current.extra_config.size(); ++i) {
          const auto& entry = current.extra_config[i];
          const bool names_shard = std::any_of(
              decision.shards.begin(), decision.shards.end(), [&](const std::string& shard) {
                return model.to_vllm(entry.key) == shard;
              });
          if (names_shard && entry.bits.value_or(current.bits) >= 16) {
            remove(i);
          }
        }
      }
    });
    return changed;
  }
}

// How the auto_round library (transformers) goes wrong on one layer; `after` judges the patch.
std::pair<FindingKind, std::string> library_problem(const LayerView& view,
                                                    const Decision& decision,
                                                    const engine::AutoRoundRules& after,
                                                    const std::string& who) {
  if (decision.by == DecidedBy::undecidable) {
    return undecidable_problem("extra_config");
  }
  const std::string how = who + " (auto_round's convert_hf_model)";
  if (view.disk == Disk::dense) {
    return {FindingKind::dense_quantized_by_config,
            "stored " + view.stored + " but " + how + " quantizes them (" + decision.target +
                "); no extra_config key of 16 bits names them"};
  }
  if (decision.by == DecidedBy::ignore_entry) {
    std::string detail =
        "stored " + view.stored + " but " + how + " makes them dense by " + decision.target;
    const Decision without = after.decide(*view.layer);
    if (without.verdict == Verdict::dense && without.by != DecidedBy::ignore_entry) {
      detail += ", and without that key still dense (" + without.target +
                "): not fixable by a config patch";
    }
    return {FindingKind::quantized_made_dense, detail};
  }
  return {FindingKind::quantized_untargeted,
          "stored " + view.stored + " but " + how + " builds them dense (" + decision.target +
              "): not fixable by a config patch"};
}

// The auto_round library's refusals that depend on the layers it converts (a quantized layer
// no backend serves), for each version that converts with it, unless a refusal of the config
// itself (engine/transformers/config_checks.cpp) is reported already.
void add_library_refusals(const JudgeInput& in,
                          const quant::IncConfig& config,
                          const std::vector<std::unique_ptr<EngineView>>& judged,
                          Diagnosis& diagnosis) {
  for (const auto& engine_view : judged) {
    if (!engine_view->dialect.auto_round.library_convert) {
      continue;
    }
    const std::string engine(engine::to_string(engine_view->engine));
    const bool refused = std::any_of(
        diagnosis.findings.begin(), diagnosis.findings.end(), [&](const Finding& finding) {
          return finding.kind == FindingKind::config_rejected && finding.modules.empty() &&
                 finding.engines == std::vector<std::string>{engine};
        });
    const engine::AutoRoundRules rules(
        config, engine_view->model, engine_view->version, engine_view->layers.get());
    const auto refusal = refused ? std::nullopt : rules.library_refusal(*engine_view->layers);
    if (!refusal) {
      continue;
    }
    Finding finding;
    finding.kind = FindingKind::config_rejected;
    finding.label = in.active.name;
    const std::string where = quant::pointer_text(in.active.pointer);
    finding.detail =
        in.active.name + (where.empty() ? "" : " " + where) + ": " +
        std::string(engine_view->dialect.engine_name) +
        " refuses this quantization config while auto_round converts the model: " + *refusal;
    finding.engines = {engine};
    finding.engine_error = *refusal;
    diagnosis.findings.push_back(std::move(finding));
  }
}

} // namespace

namespace {

// How one version words a layer's problem (`judge_after`: that version's judge of the patch).
auto inc_finding_words(const quant::IncConfig& config,
                       const engine::AutoRoundRules& judge_before,
                       const engine::AutoRoundRules& judge_after,
                       const std::string& who) {
  return
      [&config, &judge_before, &judge_after, who](const LayerView& view, const Decision& decision) {
        if (decision.by == DecidedBy::undecidable) {
          return undecidable_problem("extra_config");
        }
        if (decision.by == DecidedBy::override_refused) {
          return std::pair(FindingKind::config_rejected,
                           "are given by " + decision.target +
                               " a scheme the kernel serving it cannot take, and " + who +
                               " raises while it builds them (\"" + decision.error +
                               "\"): not fixable by a config patch");
        }
        if (decision.verdict == Verdict::load_error) {
          return shards_disagree(view, decision, who);
        }
        if (view.disk == Disk::dense) {
          return std::pair(FindingKind::dense_quantized_by_config,
                           "stored " + view.stored + " but quantized (" +
                               std::to_string(config.bits) + " bits) by " + decision.target +
                               "; no extra_config key of 16 bits names them");
        }
        if (decision.by == DecidedBy::ignore_entry) {
          std::string detail = "stored " + view.stored + " but made dense by " + decision.target;
          const Decision without = judge_after.decide(*view.layer);
          if (without.verdict == Verdict::dense && without.by != DecidedBy::ignore_entry) {
            detail += ", and without that key still dense (" + without.target +
                      "): list its block in the block list by hand";
          }
          return std::pair(FindingKind::quantized_made_dense, detail);
        }
        if (decision.by == DecidedBy::built_dense && judge_before.mtp_special_case()) {
          return std::pair(FindingKind::engine_builds_dense,
                           "stored " + view.stored +
                               " but vLLM's Qwen3.5 MTP special case (a \"-:\" dynamic key "
                               "containing \"mtp\") builds them dense: remove that key");
        }
        if (decision.by == DecidedBy::built_dense) {
          return std::pair(FindingKind::quantized_untargeted,
                           "stored " + view.stored + " but " + who +
                               " builds them without a quant config: not fixable by a config "
                               "patch");
        }
        return std::pair(FindingKind::quantized_untargeted,
                         "stored " + view.stored + " but " + who + " builds them dense (" +
                             decision.target + "): list their block in " +
                             (config.block_names_key.empty() ? std::string("block_name_to_quantize")
                                                             : config.block_names_key) +
                             " by hand; qpatch does not widen the block list");
      };
}

// Layers no config can load: vLLM builds one layer (one quant method) for a fused layer's
// shards, and a module whose tensors contradict each other loads under none. Each engine's own
// layers (transformers fuses nothing); modules stored inconsistently once.
void storage_problems(const JudgeInput& in,
                      const std::vector<std::unique_ptr<EngineView>>& judged,
                      Diagnosis& diagnosis) {
  const ModuleList& modules = in.modules;
  std::vector<LayerProblem> storage;
  std::vector<std::string> engine_names;
  for (const engine::Engine engine : in.engines.list()) {
    engine_names.emplace_back(engine::to_string(engine));
  }
  const std::vector<LayerView>& first_views = *judged.front()->views;
  std::set<engine::Engine> seen;
  for (const auto& engine_view : judged) {
    if (!seen.insert(engine_view->engine).second) {
      continue; // versions of one engine build the same layers
    }
    for (const LayerView& view : *engine_view->views) {
      if (view.disk != Disk::mixed) {
        continue;
      }
      std::vector<std::string> names;
      for (const uint32_t m : view.layer->modules) {
        names.emplace_back(modules[m].name);
      }
      storage.push_back({FindingKind::disk_shards_disagree,
                         "are shards of " + view.layer->name +
                             " but stored partly quantized, partly dense: " +
                             std::string(engine_view->dialect.engine_name) +
                             " builds one layer for them, so no config can load it",
                         std::move(names),
                         view.order,
                         {std::string(engine::to_string(engine_view->engine))}});
    }
  }
  for (const LayerView& view : first_views) {
    if (view.disk == Disk::inconsistent) {
      for (const uint32_t m : view.layer->modules) {
        if (modules[m].format == checkpoint::StorageFormat::inconsistent) {
          storage.push_back(inconsistent_storage(modules[m], view.order, engine_names));
        }
      }
    }
  }
  add_grouped(storage, diagnosis.findings, {});
}

// Traps (engines.md §11.2): plain keys that look like patterns but, with no regex
// metacharacter, are literal names that no layer has (vLLM's reading).
void literal_key_notes(const quant::IncConfig& config,
                       const NamingSetting& setting,
                       const ModuleList& modules,
                       const std::vector<std::unique_ptr<EngineView>>& judged,
                       Diagnosis& diagnosis) {
  const engine::ModelInfo& model = setting.model;
  const std::vector<Layer>& layers = setting.layers;
  const bool vllm_judged = std::any_of(judged.begin(), judged.end(), [](const auto& view) {
    return !view->dialect.auto_round.library_convert;
  });
  for (const quant::IncEntry& entry :
       vllm_judged ? config.extra_config : std::vector<quant::IncEntry>()) {
    if (quant::is_inc_regex_key(entry.key)) {
      continue;
    }
    const std::string key = model.to_vllm(entry.key);
    const bool names_a_layer = std::any_of(layers.begin(), layers.end(), [&](const Layer& layer) {
      const std::string& p = layer.prefix;
      if (p == key || "model." + p == key || util::ends_with(p, "." + key)) {
        return true;
      }
      // A shard of a fused layer is looked up by its own name.
      for (const uint32_t m : layer.modules) {
        if (model.to_vllm(modules[m].name) == key) {
          return true;
        }
      }
      return false;
    });
    if (!names_a_layer) {
      diagnosis.notes.push_back(
          "extra_config key " + quoted(entry.key) +
          " has no regex metacharacter, so vLLM reads it as a literal module name, and no layer "
          "of this checkpoint has that name: it has no effect (write exact names, or a regex "
          "key such as \"^mtp\\\\.\")");
    }
  }
}

// The extra_config lint (issue 23 item 6): 16-bit keys (a module kept dense) whose removal
// changes no layer's decision in any version judged are dead, as GPTQ's negative dynamic rules
// (lint_keyed_rules); a key that sets bits, group_size, sym or act_bits shapes what is built and
// is never called dead.
std::optional<SkipListLint> lint_extra_config(const EngineViews& judged,
                                              const quant::IncConfig& config,
                                              const quant::ConfigFile& active) {
  if (!config.has_extra_config || config.extra_config.empty() ||
      config.extra_config.size() > k_lint_by_default_up_to) {
    return std::nullopt;
  }
  std::vector<std::string> keys;
  std::set<size_t> shaping;
  for (size_t i = 0; i < config.extra_config.size(); ++i) {
    keys.push_back(config.extra_config[i].key);
    if (!reads_as_dense_entry(config.extra_config[i])) {
      shaping.insert(i);
    }
  }
  return lint_keyed_rules(judged,
                          active,
                          "extra_config",
                          std::move(keys),
                          shaping,
                          [&](const std::vector<size_t>& removed, const EngineView& engine_view) {
                            quant::IncConfig without = config;
                            without.extra_config = without_indices(config.extra_config, removed);
                            return engine::AutoRoundRules(without,
                                                          engine_view.model,
                                                          engine_view.version,
                                                          engine_view.layers.get());
                          });
}

// --prune: the keys dead once the fix is applied (patched() keeps the file's keys in order, then
// appends the fix's): the file's are taken out with the fix, the fix's own (a checkpoint name
// beside the name vLLM looks up) are not added. Dead keys go together without a decision
// moving, so one round is the fixpoint. Returns the file's keys pruned.
std::set<size_t> prune_extra_config(const EngineViews& judged,
                                    const quant::IncConfig& config,
                                    const quant::ConfigFile& active,
                                    IncFix& fix) {
  const std::vector<size_t> kept = kept_indices(config.extra_config.size(), fix.removed);
  std::set<size_t> pruned;
  std::vector<size_t> dead_added;
  if (const auto lint = lint_extra_config(judged, patched(config, fix), active)) {
    for (const size_t j : lint->dead) {
      if (j < kept.size()) {
        pruned.insert(kept[j]);
      } else {
        dead_added.push_back(j - kept.size());
      }
    }
  }
  fix.removed.insert(pruned.begin(), pruned.end());
  fix.added = without_indices(fix.added, dead_added);
  return pruned;
}

} // namespace

Status
judge_auto_round(const JudgeInput& in, const quant::IncConfig& config, Diagnosis& diagnosis) {
  const ModuleList& modules = in.modules;
  const quant::ConfigSet& configs = in.configs;
  const NamingSetting setting = naming_setting(in.inventory, modules, configs, in.options);
  const engine::ModelInfo& model = setting.model;
  // Every version of every engine modelled for auto-round whose INC rules differ (versions.hpp),
  // one fix for all of them.
  const auto judged = engine_views(
      in.engines, model, {modules, in.inventory, in.mtp_head, in.options}, "auto-round");
  judged_versions(judged, diagnosis);
  IncFix fix = find_fix(config, judged, modules);
  diagnosis.lint = lint_extra_config(judged, config, in.active);
  if (in.options.prune) {
    if (const std::set<size_t> pruned = prune_extra_config(judged, config, in.active, fix);
        !pruned.empty() && diagnosis.lint) {
      diagnosis.findings.push_back(pruned_entries_finding(*diagnosis.lint, pruned));
    }
  }
  const quant::IncConfig fixed_config = patched(config, fix);

  LayerProblems problems;
  for (const auto& engine_view : judged) {
    const auto* built = engine_view->layers.get();
    const engine::AutoRoundRules version_before(
        config, engine_view->model, engine_view->version, built);
    const engine::AutoRoundRules version_after(
        fixed_config, engine_view->model, engine_view->version, built);
    if (version_before.library_convert()) {
      const std::string who(engine_view->dialect.engine_name);
      problems.add(*engine_view->views,
                   modules,
                   version_before,
                   version_after,
                   [&](const LayerView& view, const Decision& decision) {
                     return library_problem(view, decision, version_after, who);
                   },
                   {engine_view->engine, &engine_view->version});
      continue;
    }
    problems.add(
        *engine_view->views,
        modules,
        version_before,
        version_after,
        inc_finding_words(
            config, version_before, version_after, std::string(engine_view->dialect.engine_name)),
        {engine_view->engine, &engine_view->version});
  }
  problems.report(diagnosis.findings, &judged);
  add_library_refusals(in, config, judged, diagnosis);

  storage_problems(in, judged, diagnosis);
  literal_key_notes(config, setting, modules, judged, diagnosis);
  if (fix.removed.empty() && fix.added.empty()) {
    return ok_status();
  }
  ObjectChange edit;
  for (const size_t i : fix.removed) {
    edit.remove.push_back(config.extra_config[i].key);
  }
  for (const std::string& key : fix.added) {
    edit.append.emplace_back(key, k_dense_entry);
  }
  edit_every_copy(configs,
                  "auto-round",
                  "extra_config",
                  has_object<quant::read_auto_round, &quant::IncConfig::has_extra_config>,
                  edit,
                  diagnosis);
  return ok_status();
}

} // namespace qpatch::diagnose::detail
