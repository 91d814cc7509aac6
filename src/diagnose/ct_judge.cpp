// SPDX-License-Identifier: Apache-2.0
// The judge for compressed-tensors, under every engine's rules at once.
//
// The fix is found as a fixpoint rather than by special cases: starting from the ignore list as
// written, re-judge every layer; a dense-on-disk layer the engine would quantize gets its exact
// checkpoint module names appended; an ignore entry that makes a quantized-on-disk layer dense is
// removed. Removing a blanket entry (the reverse trap, re:^mtp.*) makes the dense modules it
// covered quantized in the next round, which appends their exact names, so no other module's
// verdict changes. Nothing else is touched.
#include "diagnose/decision_memo.hpp"
#include "diagnose/fixpoint.hpp"
#include "diagnose/judge_common.hpp"

#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/diagnose/skip_list_lint.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/util/names.hpp>
#include <qpatch/util/parallel.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_set>

namespace qpatch::diagnose::detail {

using checkpoint::Inventory;
using checkpoint::ModuleList;
using checkpoint::StorageFormat;
using engine::DecidedBy;
using engine::Decision;
using engine::Layer;
using engine::Verdict;

namespace {

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

// What a compressed-tensors config says to every engine, as one digest (DecisionMemo): every
// field the rules read, each length-prefixed.
MemoKey config_key(const quant::CtConfig& config) {
  std::string text;
  const auto field = [&](std::string_view value) {
    text += std::to_string(value.size());
    text += ':';
    text += value;
  };
  field(config.has_ignore ? "ignore" : "no ignore");
  field(config.format);
  field(std::to_string(config.ignore.size()));
  for (const std::string& entry : config.ignore) {
    field(entry);
  }
  for (const quant::CtGroup& group : config.groups) {
    field(group.name);
    field(group.format);
    field(std::to_string(group.targets.size()));
    for (const std::string& target : group.targets) {
      field(target);
    }
  }
  return memo_key(text);
}

struct IgnoreItem {
  std::string text;
  std::optional<size_t> original; // index in the file's list; nothing for appended names
};

class Fixer {
public:
  Fixer(const quant::CtConfig& config,
        const std::vector<std::unique_ptr<EngineView>>& engines,
        const ModuleList& modules,
        DecisionMemo& memo)
      : m_config(config), m_engines(engines), m_modules(modules), m_memo(memo) {}

  // Iterate to the fixpoint.
  void run() {
    fix_to_fixpoint([&] { return step(); });
  }
  std::vector<IgnoreItem> items() const {
    std::vector<IgnoreItem> out;
    for (size_t i = 0; i < m_config.ignore.size(); ++i) {
      if (m_removed.count(i) == 0) {
        out.push_back({m_config.ignore[i], i});
      }
    }
    // Appended names in checkpoint order, as change_ignore writes them: the order decides which
    // entry matches first, so the list judged is the list written.
    for (const std::string& name : appended()) {
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
    return e < m_first.size() && v < m_first[e]->size() && (*m_first[e])[v] ? &*(*m_first[e])[v]
                                                                            : nullptr;
  }
  const std::set<size_t>& removed() const { return m_removed; }
  DecisionMemo& memo() const { return m_memo; }
  // Engine `e`'s decision of each of its layers stored dense or quantized under `config`
  // (whose config_key is `key`), remembered (DecisionMemo).
  std::shared_ptr<const ViewDecisions>
  decisions(size_t e, const quant::CtConfig& config, const MemoKey& key) const {
    const EngineView& engine_view = *m_engines[e];
    const MemoKey memo = view_key(engine_view, "compressed-tensors", key);
    if (auto known = m_memo.find(memo)) {
      return known;
    }
    const engine::CompressedTensorsRules rules(config, engine_view.model, engine_view.version);
    auto decided = std::make_shared<ViewDecisions>(engine_view.views->size());
    for (size_t v = 0; v < decided->size(); ++v) {
      const LayerView& view = (*engine_view.views)[v];
      if (view.disk == Disk::dense || view.disk == Disk::quantized) {
        (*decided)[v] = rules.decide(*view.layer);
      }
    }
    m_memo.store(memo, decided);
    return decided;
  }
  // decisions() of every engine version under `config`, judged side by side (each version's
  // judgement is independent); the memo then holds them for the callers' loops.
  void decide_everywhere(const quant::CtConfig& config, const MemoKey& key) const {
    util::parallel_for(m_engines.size(), [&](size_t e) { decisions(e, config, key); });
  }
  // Take out entries no verdict depends on (--prune).
  void prune(const std::vector<size_t>& entries) {
    m_removed.insert(entries.begin(), entries.end());
  }
  // Take back an appended entry no verdict depends on (--prune on the patched list).
  void drop_appended(const std::string& text) {
    m_appended.erase(std::remove_if(m_appended.begin(),
                                    m_appended.end(),
                                    [&](const auto& appended) { return appended.first == text; }),
                     m_appended.end());
  }
  // The lint of the list as written, from the first round's verdicts (skip_list_lint.hpp): an
  // entry that decided a layer there is live; the others are judged again only when there are
  // any, without them.
  void lint(SkipListLint& out) const {
    std::set<size_t> live;
    std::set<size_t> over_broad;
    for (size_t e = 0; e < m_first.size(); ++e) {
      for (size_t v = 0; v < m_first[e]->size(); ++v) {
        const auto& decision = (*m_first[e])[v];
        if (!decision || !decision->ignore_index) {
          continue;
        }
        live.insert(*decision->ignore_index);
        if (decision->by == DecidedBy::ignore_entry &&
            (*m_engines[e]->views)[v].disk == Disk::quantized) {
          over_broad.insert(*decision->ignore_index);
        }
      }
    }
    out.over_broad.assign(over_broad.begin(), over_broad.end());
    find_dead_entries(out, live, [&](const std::vector<size_t>& removed) {
      quant::CtConfig without = m_config;
      without.ignore.clear();
      for (size_t i = 0; i < m_config.ignore.size(); ++i) {
        if (!std::binary_search(removed.begin(), removed.end(), i)) {
          without.ignore.push_back(m_config.ignore[i]);
        }
      }
      // What removing an entry could change: the verdict, the rule that gave it (an ignore
      // entry, or no target), its group and which shards are ignored.
      const auto same = [](const Decision& a, const Decision& b) {
        return a.verdict == b.verdict && a.by == b.by && a.group == b.group &&
               a.shard_ignored == b.shard_ignored;
      };
      const MemoKey key = config_key(without);
      for (size_t e = 0; e < m_engines.size(); ++e) {
        const auto decided = decisions(e, without, key);
        for (size_t v = 0; v < decided->size(); ++v) {
          const auto& first = (*m_first[e])[v];
          if (first && !same(*first, *(*decided)[v])) {
            return false;
          }
        }
      }
      return true;
    });
  }
  // Replace runs of appended engine names (no checkpoint module has them) by one readable
  // pattern each, where every engine and version then judges every layer as it does with the
  // names: the pattern must reach the same layers and no other.
  void make_readable() {
    if (m_appended.empty()) {
      return; // nothing appended, nothing to compact: most checkpoints, every clean one
    }
    // 71k modules on a 1T-parameter MoE against a few hundred appended names: the appended
    // names go in the set, and a module name is looked up only when some appended name has its
    // length (a set of every module name cost 38M instructions there). A root is added once per
    // run of modules that share it (modules come grouped by their prefix).
    std::unordered_set<std::string_view> not_in_checkpoint;
    std::vector<bool> appended_length;
    for (const auto& [name, order] : m_appended) {
      not_in_checkpoint.insert(name);
      appended_length.resize(std::max(appended_length.size(), name.size() + 1));
      appended_length[name.size()] = true;
    }
    std::set<std::string> roots;
    std::string_view last_root;
    for (const auto& module : m_modules) {
      const std::string_view name = module.name;
      if (name.size() < appended_length.size() && appended_length[name.size()]) {
        not_in_checkpoint.erase(name);
      }
      const std::string_view root = name.substr(0, name.find('.'));
      if (root != last_root) {
        roots.emplace(root);
        last_root = root;
      }
    }
    std::vector<std::string> engine_named;
    for (const auto& [name, order] : m_appended) {
      if (not_in_checkpoint.count(name) != 0) {
        engine_named.push_back(name);
      }
    }
    const auto candidates = readable_candidates(engine_named, roots);
    if (candidates.empty()) {
      return;
    }
    // The round that found the fixpoint judged this very list (its decisions are remembered).
    const size_t baseline = inconsistent_layers(patched_config());
    for (const EntryCandidate& candidate : candidates) {
      const std::set<std::string> replaced(candidate.replaces.begin(), candidate.replaces.end());
      std::vector<std::pair<std::string, size_t>> trial;
      bool placed = false;
      for (const auto& [name, order] : m_appended) {
        if (replaced.count(name) == 0) {
          trial.emplace_back(name, order);
        } else if (!placed) {
          trial.emplace_back(candidate.entry, order);
          placed = true;
        }
      }
      if (!placed) {
        continue; // an earlier candidate took its names
      }
      std::swap(trial, m_appended);
      if (inconsistent_layers(patched_config()) > baseline) {
        std::swap(trial, m_appended); // the pattern reaches a layer it must not, or misses one
        continue;
      }
      if (!candidate.subtree) {
        continue;
      }
      // A subtree pattern the other appended entries make needless goes too (dotted tails
      // "language_model.layers.0.x" beside "layers.0.x", which SGLang reads as a substring, are
      // covered already): it would be a dead entry. Tried for taken subtree patterns only: a
      // per-layer pattern stands for names no other entry reaches, and each try is a pass over
      // every engine's layers (31M instructions on a 1T-parameter MoE).
      std::vector<std::pair<std::string, size_t>> without;
      for (const auto& item : m_appended) {
        if (item.first != candidate.entry) {
          without.push_back(item);
        }
      }
      std::swap(without, m_appended);
      if (inconsistent_layers(patched_config()) > baseline) {
        std::swap(without, m_appended);
      }
    }
  }
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
  // True when `name` is an entry of the list as patched so far (kept or appended): a set kept
  // in step with m_removed and m_appended, since a 1T MoE's fix appends hundreds of names and
  // every layer asks.
  bool in_ignore(const std::string& name) const { return m_listed.count(name) > 0; }
  void relist() {
    m_listed.clear();
    for (const IgnoreItem& item : items()) {
      m_listed.insert(item.text);
    }
  }
  struct Holders {
    size_t count = 0;
    const Layer* first = nullptr;
  };
  // True when `name` is part of the name of a layer other than `self` (`as_suffix`: its dotted
  // tail). Each engine version asks of each name it appends, each round: the layers holding a
  // name are counted once per layer set (53M instructions on a 1T-parameter MoE otherwise).
  bool part_of_another(const std::string& name,
                       const Layer& self,
                       const std::vector<LayerView>& views,
                       bool as_suffix) const {
    auto& known = m_holders[{&views, as_suffix}];
    auto [it, added] = known.try_emplace(name);
    Holders& holders = it->second;
    if (added) {
      for (const LayerView& other : views) {
        const std::string& prefix = other.layer->prefix;
        if (prefix != name && (as_suffix ? util::is_dotted_suffix(name, prefix)
                                         : prefix.find(name) != std::string::npos)) {
          holders.first = holders.count == 0 ? other.layer : holders.first;
          ++holders.count;
        }
      }
    }
    return holders.count > 1 || (holders.count == 1 && holders.first != &self);
  }
  // List the dense layer `view` that `decision` quantizes: by its checkpoint names first (what a
  // person reads, and what vLLM and transformers match); when those are listed already and the
  // engine still quantizes it, by the names that engine tests (SGLang asks about
  // model.layers.N.linear_attn.in_proj_b where the checkpoint says
  // model.language_model.layers.N..., and judges a fused layer with no mapping by its fused name).
  bool
  append_layer(const LayerView& view, const EngineView& engine_view, const Decision& decision) {
    std::vector<std::string> names = ignore_names(*view.layer, m_modules, engine_view.model);
    if (std::all_of(
            names.begin(), names.end(), [&](const std::string& n) { return in_ignore(n); })) {
      names =
          decision.shards.empty() ? std::vector<std::string>{view.layer->prefix} : decision.shards;
      for (std::string& name : names) {
        // A target whose class's mapper renames the config's entries (SGLang's Qwen3.5 VLM
        // until #23471) reads the name as written only where the mapper leaves it.
        std::string spelled = spelling_past_mapper(
            engine_view.model, "compressed-tensors", name, MapperSpelling::either);
        // An engine that reads a plain entry as a substring (SGLang until #32736) or a dotted
        // suffix (from it): where the name is part (or the tail) of another layer's (MiMo's
        // draft self_attn.o_proj of model.layers.N.self_attn.o_proj), only an anchored pattern
        // names it alone.
        const engine::CtDialect& ct = engine_view.dialect.compressed_tensors;
        if (spelled.rfind("re:", 0) != 0 && (ct.substring_ignore || ct.suffix_ignore) &&
            part_of_another(spelled, *view.layer, *engine_view.views, ct.suffix_ignore)) {
          spelled = "re:^" + escape_regex(name) + "$";
        }
        name = std::move(spelled);
      }
    }
    bool changed = false;
    for (const std::string& name : names) {
      if (!in_ignore(name)) {
        m_appended.emplace_back(name, view.order);
        m_listed.insert(name);
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
  // The layers some engine's judge under `config` builds other than they are stored.
  size_t inconsistent_layers(const quant::CtConfig& config) const {
    const MemoKey key = config_key(config);
    decide_everywhere(config, key);
    size_t count = 0;
    for (size_t e = 0; e < m_engines.size(); ++e) {
      const auto decided = decisions(e, config, key);
      const std::vector<LayerView>& views = *m_engines[e]->views;
      for (size_t v = 0; v < views.size(); ++v) {
        count += (*decided)[v] && !consistent(views[v], *(*decided)[v]) ? 1U : 0U;
      }
    }
    return count;
  }
  // One round over every engine: a patch must satisfy all of them at once.
  bool step() {
    relist();
    const std::vector<IgnoreItem> current = items();
    const quant::CtConfig config = patched_config();
    const MemoKey key = config_key(config);
    decide_everywhere(config, key);
    const bool first = m_first.empty(); // nothing appended or removed yet: config is the file's
    bool changed = false;
    for (size_t e = 0; e < m_engines.size(); ++e) {
      const EngineView& engine_view = *m_engines[e];
      const auto decided = decisions(e, config, key);
      if (first) {
        m_first.push_back(decided);
      }
      for (size_t v = 0; v < decided->size(); ++v) {
        const LayerView& view = (*engine_view.views)[v];
        if (!(*decided)[v]) {
          continue;
        }
        const Decision& decision = *(*decided)[v];
        const bool error = decision.verdict == Verdict::load_error;
        if (view.disk == Disk::dense && (decision.verdict == Verdict::quantized || error)) {
          changed = append_layer(view, engine_view, decision) || changed;
        } else if (view.disk == Disk::quantized && decision.by == DecidedBy::ignore_entry) {
          changed = remove_entry(current, *decision.ignore_index) || changed;
        } else if (view.disk == Disk::quantized && error) {
          // The entries that ignore some of the fused layer's shards (built only here).
          const engine::CompressedTensorsRules rules(
              config, engine_view.model, engine_view.version);
          for (const std::string& shard : decision.shards) {
            bool undecidable = false;
            if (const auto hit = rules.match_ignore(shard, undecidable)) {
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
  DecisionMemo& m_memo;
  // part_of_another's answers: per layer set and test, the layers whose name holds a name.
  mutable std::map<std::pair<const void*, bool>, std::unordered_map<std::string, Holders>>
      m_holders;
  std::unordered_set<std::string> m_listed; // the texts of items(), see in_ignore
  // The first round's decisions (the config as written), by engine.
  std::vector<std::shared_ptr<const ViewDecisions>> m_first;
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

} // namespace

namespace {

// The lint of the list as written (the report's line, JSON "lint"): lists longer than
// k_lint_by_default_up_to entries only with --prune, since their candidates are judged again.
// With --prune, the dead and duplicate entries of the patched list go with the patch (the fix's
// own names can be dead once others are listed), linted again until it has none, so a second
// run with --prune writes nothing.
void lint_and_prune(Fixer& fixer,
                    const quant::CtConfig& config,
                    const EngineViews& engines,
                    const JudgeInput& in,
                    Diagnosis& diagnosis) {
  const quant::ConfigFile& active = in.active;
  const DiagnoseOptions& options = in.options;
  const auto lint_of = [&](const quant::CtConfig& list, const Fixer& judged) {
    SkipListLint lint;
    lint.file = active.name;
    lint.pointer = active.pointer;
    lint.pointer.push_back("ignore");
    lint.entries = list.ignore;
    judged.lint(lint);
    return lint;
  };
  if (config.has_ignore && !config.ignore.empty() &&
      (config.ignore.size() <= k_lint_by_default_up_to || options.prune)) {
    diagnosis.lint = lint_of(config, fixer);
  }
  if (!options.prune) {
    return;
  }
  // The patched list is what is linted: an entry dead beside one the fix removes (an over-broad
  // regex that covered it) can be the one that then keeps its layer dense.
  std::set<size_t> pruned;
  for (bool pruning = true; pruning;) {
    const quant::CtConfig patched = fixer.patched_config();
    Fixer again(patched, engines, in.modules, fixer.memo());
    again.run();
    const SkipListLint lint = lint_of(patched, again);
    // Each round takes out at least one entry, so the list shrinks to a fixpoint.
    pruning = !lint.dead.empty() || !lint.duplicates.empty();
    const std::vector<IgnoreItem> items = fixer.items();
    for (const size_t i : pruned_entries(lint)) {
      if (items[i].original) {
        pruned.insert(*items[i].original);
        fixer.prune({*items[i].original});
      } else {
        fixer.drop_appended(items[i].text);
      }
    }
  }
  if (!pruned.empty() && diagnosis.lint) {
    diagnosis.findings.push_back(pruned_entries_finding(*diagnosis.lint, pruned));
  }
}

// An ignore entry "re:..." that is no valid regex: every engine raises re.error.
std::vector<LayerProblem> invalid_regex_problems(const quant::CtConfig& config,
                                                 const quant::ConfigFile& active,
                                                 const std::vector<std::string>& all_engines) {
  std::vector<LayerProblem> problems;
  for (const std::string& entry : config.ignore) {
    if (entry.rfind("re:", 0) == 0) {
      auto pattern = engine::Pattern::compile(entry.substr(3), active.name);
      if (!pattern) {
        problems.push_back({FindingKind::undecidable,
                            "ignore entry " + quoted(entry) + " is not a valid regex (" +
                                pattern.error().message + "): the engines raise re.error",
                            {entry},
                            0,
                            all_engines,
                            {},
                            {},
                            false});
      }
    }
  }
  return problems;
}

// Modules an earlier engine already reported with the same kind only add the engine to that
// problem (engines build different layers from the same modules: vLLM fuses, transformers
// does not); the rest form a problem of their own. Each name is looked up, not searched for in
// every problem: a 1T-parameter MoE's fix meets ~500 problems per version (19M instructions).
class ProblemMerger {
public:
  explicit ProblemMerger(std::vector<LayerProblem>& problems) : m_problems(problems) {
    for (size_t i = 0; i < problems.size(); ++i) {
      index(i);
    }
  }
  void merge(LayerProblem problem) {
    std::vector<std::string> remaining;
    for (const std::string& name : problem.names) {
      // A layer the patch fixes for one engine and not for another is two findings: the fixable
      // half is patched (transformers' ignored packed lm_head) although vLLM, which builds the
      // head without a quant method, stays broken either way.
      const auto known = m_first.find(std::make_tuple(problem.kind, problem.fixable, name));
      if (known == m_first.end()) {
        remaining.push_back(name);
        continue;
      }
      LayerProblem& existing = m_problems[known->second];
      if (std::find(existing.engines.begin(), existing.engines.end(), problem.engines.front()) ==
          existing.engines.end()) {
        existing.engines.push_back(problem.engines.front());
      }
      for (const engine::EngineVersion& version : problem.versions) {
        if (std::find(existing.versions.begin(), existing.versions.end(), version) ==
            existing.versions.end()) {
          existing.versions.push_back(version);
        }
      }
    }
    if (!remaining.empty()) {
      problem.names = std::move(remaining);
      m_problems.push_back(std::move(problem));
      index(m_problems.size() - 1);
    }
  }

private:
  // The first problem of each kind that names a module (a merge adds engines, never names).
  void index(size_t i) {
    for (const std::string& name : m_problems[i].names) {
      m_first.emplace(std::make_tuple(m_problems[i].kind, m_problems[i].fixable, name), i);
    }
  }
  std::vector<LayerProblem>& m_problems;
  std::map<std::tuple<FindingKind, std::optional<bool>, std::string>, size_t> m_first;
};

// How a layer an engine gets wrong is worded: its finding kind and text.
std::pair<FindingKind, std::string> word_layer(const LayerView& view,
                                               const Decision& decision,
                                               const engine::CompressedTensorsRules& before,
                                               const quant::CtConfig& config,
                                               const ModuleList& modules,
                                               const std::string& who) {
  const Layer& layer = *view.layer;
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
  } else if (decision.by == DecidedBy::untargeted) {
    kind = FindingKind::untargeted_raises;
    key = "stored " + view.stored + (view.disk == Disk::dense ? " and" : " but") +
          " no target matches them, and " + who +
          " raises for that while it builds the model (\"ValueError: Unable to find "
          "matching target for ... in the compressed-tensors config.\")";
  } else if (decision.verdict == Verdict::load_error) {
    kind = FindingKind::fused_shards_disagree;
    key = "are judged as one layer (" + layer.name + ") but " +
          (decision.by == DecidedBy::experts_disagree ? std::string("expert 0's projections")
                                                      : std::string("its shards")) +
          " disagree in the config; " + who + ": " + decision.error;
  } else if (view.disk == Disk::dense) {
    kind = FindingKind::dense_quantized_by_config;
    const bool listed = std::all_of(layer.modules.begin(), layer.modules.end(), [&](uint32_t m) {
      return std::find(config.ignore.begin(), config.ignore.end(), modules[m].name) !=
             config.ignore.end();
    });
    // SGLang's Qwen3.5 VLM until #23471: the entries were right, the class's mapper renamed
    // them away (model.language_model. to language_model.model.).
    const engine::ConfigMapper& mapper = before.model().target_config_mapper;
    const bool renamed_away =
        listed && mapper.maps("compressed-tensors") && !before.model().in_draft_model(layer.prefix);
    key = "stored " + view.stored + " but quantized by " + rule_text(decision, config) +
          (renamed_away ? "; ignore lists their checkpoint names, but " + mapper.source +
                              " renames those entries to names no layer has (explain shows them)"
           : listed ? "; ignore lists their checkpoint names, but " + who +
                          " matches its own layer names, which differ (explain shows them)"
                    : std::string("; not in ignore"));
  } else if (decision.by == DecidedBy::ignore_entry) {
    kind = FindingKind::quantized_made_dense;
    const std::string& entry = config.ignore.at(*decision.ignore_index);
    // A substring hit is told apart from the exact reading of the same entries.
    if (before.dialect().compressed_tensors.substring_ignore &&
        !before.matches_exactly(layer.prefix) && entry.rfind("re:", 0) != 0) {
      // One line for every module a short or parent-module entry catches.
      key = "stored " + view.stored +
            " but made dense by plain ignore entries that name a parent module or part of "
            "a name (" +
            std::string(before.dialect().engine_name) +
            " reads plain entries as case-insensitive substrings)";
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
  return {kind, key};
}

// Every layer whose verdict an engine gets wrong under the config as written.
std::vector<LayerProblem> layer_problems(const EngineViews& engines,
                                         const Fixer& fixer,
                                         const quant::CtConfig& config,
                                         const quant::CtConfig& patched,
                                         const ModuleList& modules,
                                         std::vector<LayerProblem> problems) {
  ProblemMerger merger(problems);
  for (size_t e = 0; e < engines.size(); ++e) {
    const auto& engine_view = engines[e];
    const engine::Engine engine = engine_view->engine;
    const std::string engine_name(engine::to_string(engine));
    const std::string who(engine::display_name(engine));
    // The rules as written word a problem (built only for one); the patched config's decisions
    // are the fixer's last round's, remembered.
    std::optional<engine::CompressedTensorsRules> before;
    const auto after = fixer.decisions(e, patched, config_key(patched));
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
            merger.merge(inconsistent_storage(modules[m], view.order, {engine_name}));
          }
        }
        continue;
      }
      if (view.disk == Disk::mixed) {
        merger.merge({FindingKind::disk_shards_disagree,
                      "are shards of " + layer.name +
                          " but stored partly quantized, partly dense: " + who +
                          " builds one layer for them, so no config can load it",
                      module_names(),
                      view.order,
                      {engine_name}});
        continue;
      }
      const auto rules_as_written = [&]() -> const engine::CompressedTensorsRules& {
        if (!before) {
          before.emplace(config, engine_view->model, engine_view->version);
        }
        return *before;
      };
      const Decision* first = fixer.first_decision(e, v);
      std::optional<Decision> decided_now;
      if (first == nullptr) {
        decided_now = rules_as_written().decide(layer);
      }
      const Decision& decision = first != nullptr ? *first : *decided_now;
      if (consistent(view, decision)) {
        continue;
      }
      auto [kind, key] = word_layer(view, decision, rules_as_written(), config, modules, who);
      // Fixable when the patch makes this layer consistent (not every layer of its kind: an
      // entry for a head no patch can load must not hold back the entry it can remove).
      LayerProblem problem{
          kind, key, module_names(), view.order, {engine_name}, {engine_view->version}};
      problem.fixable = (*after)[v] && consistent(view, *(*after)[v]);
      merger.merge(std::move(problem));
    }
  }
  return problems;
}

// The edit of the config vLLM reads: the fixer's removals and additions to `ignore`.
void change_ignore(const Fixer& fixer,
                   const quant::CtConfig& config,
                   const quant::ConfigFile& active,
                   Diagnosis& diagnosis) {
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
}

// Sidecars follow config.json: their ignore list and each group's targets.
void sync_sidecars(const quant::ConfigSet& configs,
                   const quant::ConfigFile& active,
                   const quant::CtConfig& config,
                   const quant::CtConfig& patched,
                   Diagnosis& diagnosis) {
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

} // namespace

void judge_compressed_tensors(const JudgeInput& in,
                              const quant::CtConfig& config,
                              Diagnosis& diagnosis) {
  const engine::ModelInfo model =
      engine::model_info_for(in.configs.architecture, in.configs.num_hidden_layers);
  const auto engines =
      engine_views(in.options.engines,
                   model,
                   {in.modules, in.inventory, in.mtp_head, in.options},
                   "compressed-tensors",
                   [&](const engine::EngineVersion& version) {
                     return engine::CompressedTensorsRules::rules_key(config, version);
                   });
  judged_versions(engines, diagnosis);
  DecisionMemo local_memo;
  DecisionMemo& memo = decision_memo(in.options, local_memo);
  Fixer fixer(config, engines, in.modules, memo);
  fixer.run();
  fixer.make_readable();
  lint_and_prune(fixer, config, engines, in, diagnosis);
  const quant::CtConfig patched = fixer.patched_config();
  std::vector<LayerProblem> problems =
      layer_problems(engines,
                     fixer,
                     config,
                     patched,
                     in.modules,
                     invalid_regex_problems(config, in.active, in.options.engines.names()));
  name_versions(problems, engines);
  add_grouped(problems, diagnosis.findings, {}, true, true);
  change_ignore(fixer, config, in.active, diagnosis);
  sync_sidecars(in.configs, in.active, config, patched, diagnosis);
}

} // namespace qpatch::diagnose::detail
