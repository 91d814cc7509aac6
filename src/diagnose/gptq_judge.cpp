// SPDX-License-Identifier: Apache-2.0
// The judge for GPTQ under vLLM's rules (engine/vllm_gptq.hpp). The fix inserts negative
// `dynamic` rules at the front (first match wins, so nothing earlier can shadow them) and
// removes a negative rule that makes quantized modules dense, as a fixpoint like the
// compressed-tensors judge. Rules match vLLM's fused names: one "-:^mtp\." when every MTP layer
// is dense on disk; exact anchored rules otherwise. When part of a Qwen3.5 MTP head is packed, a
// rule must not contain the text "mtp" (vLLM's special case would make the packed decoder
// layers dense), so it is written m[t]p.
#include "diagnose/judge_common.hpp"

#include <qpatch/engine/vllm_gptq.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/quant/gptq.hpp>

#include <algorithm>
#include <optional>
#include <set>

namespace qpatch::diagnose::detail {

using checkpoint::Module;
using checkpoint::ModuleList;
using engine::DecidedBy;
using engine::Decision;
using engine::Layer;
using engine::Verdict;

namespace {

// Python re.escape for the characters vLLM names hold.
std::string escape_regex(const std::string& name) {
  std::string out;
  for (const char c : name) {
    if (std::string_view(".^$*+?()[]{}|\\-").find(c) != std::string_view::npos) {
      out += '\\';
    }
    out += c;
  }
  return out;
}

struct GptqFix {
  std::set<size_t> removed;         // original dynamic rules to drop
  std::vector<std::string> prepend; // new negative keys, in checkpoint order
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
  return out;
}

bool is_mtp(const LayerView& view) {
  return view.layer->prefix.rfind("mtp.", 0) == 0;
}

// Iterate to the fixpoint: every dense layer the engine quantizes gets a negative rule; every
// negative rule that makes a quantized layer dense goes.
GptqFix find_fix(const quant::GptqConfig& config,
                 const engine::ModelInfo& model,
                 const std::vector<std::string>& derived,
                 const std::vector<LayerView>& views,
                 const std::vector<engine::Engine>& engines) {
  GptqFix fix;
  const bool mtp_all_dense = std::all_of(views.begin(), views.end(), [](const LayerView& v) {
    return !is_mtp(v) || v.disk == Disk::dense;
  });
  for (int round = 0; round < 16; ++round) {
    const quant::GptqConfig current = patched(config, fix);
    // Where each rule of `current` came from: one of ours (nothing) or an original index.
    std::vector<std::optional<size_t>> origin(fix.prepend.size());
    for (size_t i = 0; i < config.dynamic.size(); ++i) {
      if (fix.removed.count(i) == 0) {
        origin.emplace_back(i);
      }
    }
    bool changed = false;
    std::vector<std::pair<size_t, std::string>> wanted;
    for (const engine::Engine engine : engines) {
      const engine::VllmGptq judge(current, model, derived, engine);
      for (const LayerView& view : views) {
        if (view.disk != Disk::dense && view.disk != Disk::quantized) {
          continue;
        }
        const Decision decision = judge.decide(*view.layer);
        if (decision.by == DecidedBy::built_quantized) {
          continue; // no rule changes it
        }
        const bool wrong_dense = view.disk == Disk::dense && decision.verdict != Verdict::dense;
        if (wrong_dense) {
          std::string key;
          if (is_mtp(view) && mtp_all_dense) {
            key = "-:^mtp\\.";
          } else {
            std::string escaped = escape_regex(view.layer->prefix);
            if (!mtp_all_dense && escaped.find("mtp") != std::string::npos) {
              escaped.replace(escaped.find("mtp"), 3, "m[t]p");
            }
            key = "-:^" + escaped + "$";
          }
          if (std::find(fix.prepend.begin(), fix.prepend.end(), key) == fix.prepend.end()) {
            wanted.emplace_back(view.order, key);
          }
        } else if (view.disk == Disk::quantized && decision.by == DecidedBy::ignore_entry) {
          // The rule index is into `current`, whose first rules are ours.
          if (const auto original = origin.at(*decision.ignore_index)) {
            changed = fix.removed.insert(*original).second || changed;
          }
        } else if (view.disk == Disk::quantized && decision.by == DecidedBy::built_dense &&
                   judge.mtp_special_case()) {
          // A "-:...mtp..." rule switched packed MTP decoder layers dense: drop such rules.
          for (size_t i = 0; i < config.dynamic.size(); ++i) {
            const auto& rule = config.dynamic[i];
            if (rule.negative && rule.key.find("mtp") != std::string::npos) {
              changed = fix.removed.insert(i).second || changed;
            }
          }
        }
      }
    }
    std::stable_sort(wanted.begin(), wanted.end());
    for (const auto& [order, key] : wanted) {
      if (std::find(fix.prepend.begin(), fix.prepend.end(), key) == fix.prepend.end()) {
        fix.prepend.push_back(key);
        changed = true;
      }
    }
    if (!changed) {
      break;
    }
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

} // namespace

Status judge_gptq(const checkpoint::Inventory& inventory,
                  const ModuleList& modules,
                  const quant::ConfigSet& configs,
                  const quant::ConfigFile& active,
                  const DiagnoseOptions& options,
                  Diagnosis& diagnosis) {
  QP_TRY_ASSIGN(const quant::GptqConfig config, quant::read_gptq(active));
  const VllmSetting setting = vllm_setting(inventory, modules, configs, options);
  const engine::ModelInfo& model = setting.model;
  const std::vector<LayerView>& views = setting.views;
  const std::vector<std::string> derived = derived_module_list(inventory);
  const std::vector<engine::Engine> engines = modelled_engines("gptq", options.engines).list();
  const GptqFix fix = find_fix(config, model, derived, views, engines);
  const engine::VllmGptq before(config, model, derived);

  const auto word_for = [&](engine::Engine engine) {
    return [&, engine](const LayerView& view, const Decision& decision) {
      if (decision.by == DecidedBy::built_quantized) {
        return std::pair(FindingKind::engine_quantizes,
                         "stored " + view.stored +
                             " but SGLang's GPTQ Marlin quantizes every FusedMoE layer (dynamic is "
                             "not read for experts): not fixable by a config patch");
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
          (decision.by == DecidedBy::built_dense && engine == engine::Engine::vllm &&
           before.mtp_special_case())) {
        return std::pair(FindingKind::quantized_made_dense,
                         "stored " + view.stored + " but made dense by " + rule_text(decision));
      }
      if (engine == engine::Engine::sglang) {
        return std::pair(FindingKind::engine_builds_dense,
                         "stored " + view.stored +
                             " but SGLang builds this layer dense: not fixable by a config patch");
      }
      return std::pair(FindingKind::quantized_untargeted,
                       "stored " + view.stored +
                           " but vLLM builds them dense (not in modules_in_block_to_quantize, or a "
                           "layer GPTQ never quantizes): not fixable by a config patch");
    };
  };
  LayerProblems problems;
  for (const engine::Engine engine : engines) {
    const engine::VllmGptq engine_before(config, model, derived, engine);
    const engine::VllmGptq engine_after(patched(config, fix), model, derived, engine);
    problems.add(views, modules, engine_before, engine_after, word_for(engine), engine);
  }
  problems.report(diagnosis.findings);
  // Traps: negative rules that name MTP but match no layer of this checkpoint (engines.md §11).
  for (size_t i = 0; i < config.dynamic.size(); ++i) {
    const auto& rule = config.dynamic[i];
    if (!rule.negative || rule.key.find("mtp") == std::string::npos) {
      continue;
    }
    const engine::VllmGptq one(
        quant::GptqConfig{{rule}, true, config.modules_in_block, false}, model, derived);
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
  // Traps: a positive rule that matches a layer first shadows a later negative rule matching the
  // same layer (first match wins): the exclusion never applies to it (failures.md F17).
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
      const engine::VllmGptq one(
          quant::GptqConfig{{config.dynamic[j]}, true, config.modules_in_block, false},
          model,
          derived);
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
  if (fix.removed.empty() && fix.prepend.empty()) {
    return ok_status();
  }
  ObjectChange edit;
  for (const size_t i : fix.removed) {
    edit.remove.push_back(config.dynamic[i].key);
  }
  edit.prepend = fix.prepend;
  edit_every_copy(
      configs,
      "gptq",
      "dynamic",
      [](const quant::ConfigFile& file) -> std::optional<bool> {
        auto same = quant::read_gptq(file);
        return same ? std::optional<bool>(same->has_dynamic) : std::nullopt;
      },
      edit,
      diagnosis);
  return ok_status();
}

} // namespace qpatch::diagnose::detail
