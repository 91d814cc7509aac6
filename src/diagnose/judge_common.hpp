// SPDX-License-Identifier: Apache-2.0
// The vocabulary every method's judge shares: a layer with its on-disk storage, the grouping of
// per-layer problems into findings, and the helpers that word them. Private to src/diagnose/.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/diagnose/explain.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/skip_list_rules.hpp>
#include <qpatch/quant/auto_round.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/quant/gptq.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qpatch::diagnose::detail {

// The names every judge speaks in, declared once for all of them.
using checkpoint::Module;
using checkpoint::ModuleList;
using engine::DecidedBy;
using engine::Decision;
using engine::Layer;
using engine::LayerKind;
using engine::Verdict;

enum class Disk { dense, quantized, mixed, inconsistent };

struct LayerView {
  const engine::Layer* layer = nullptr;
  Disk disk = Disk::dense;
  std::string stored; // "BF16" for dense, the format name for quantized
  size_t order = 0;   // checkpoint order of its first module
};

// One problem of one layer, before grouping.
struct LayerProblem {
  FindingKind kind{};
  std::string key; // what the grouped line says after the count
  std::vector<std::string> names;
  size_t order = 0;
  std::vector<std::string> engines;              // the engines this problem shows in
  std::vector<engine::EngineVersion> versions{}; // the versions it shows in (empty: every one)
  std::vector<std::string> version_texts{};      // "SGLang before 2026-08-28", for the finding
  // Whether the patch fixes it (unset: its kind decides, from add_grouped's fixed kinds).
  std::optional<bool> fixable{};
};

// A module stored inconsistently (checkpoint/module.cpp's detail says how): no config loads it.
inline LayerProblem inconsistent_storage(const checkpoint::Module& module,
                                         size_t order,
                                         std::vector<std::string> engines) {
  return {FindingKind::inconsistent_storage,
          "stored inconsistently (" + module.detail +
              "): no config can load it; re-export the module",
          {std::string(module.name)},
          order,
          std::move(engines)};
}

// Say which versions a problem holds for, where that is not every version judged of its engine:
// the key gains " (vLLM before 2026-05-07 only)" (so problems of different versions stay apart
// when grouped) and the finding lists the text. `judged` holds every view judged.
struct EngineView;
void name_versions(std::vector<LayerProblem>& problems,
                   const std::vector<std::unique_ptr<EngineView>>& judged);

std::vector<LayerView> layer_views(const std::vector<engine::Layer>& layers,
                                   const checkpoint::ModuleList& modules,
                                   const checkpoint::Inventory& inventory,
                                   const DiagnoseOptions& options);

// One engine version's naming, the layers it builds, and how each is stored (the reference
// engine's newest by default). `views` point into `layers` (a moved vector keeps its elements in
// place).
struct NamingSetting {
  engine::ModelInfo model;
  std::vector<engine::Layer> layers;
  std::vector<LayerView> views;
};
// `version`: whose naming row (default: the newest of `engine`).
NamingSetting naming_setting(const checkpoint::Inventory& inventory,
                             const checkpoint::ModuleList& modules,
                             const quant::ConfigSet& configs,
                             const DiagnoseOptions& options,
                             engine::Engine engine = reference_engine(),
                             const engine::EngineVersion* version = nullptr);
bool consistent(const LayerView& view, const engine::Decision& decision);
// The module list vLLM derives for GPTQ when the config has none: the modules of every tensor,
// in every *.safetensors file (indexed or not), whose dtype is not a float dtype.
std::vector<std::string> derived_module_list(const checkpoint::Inventory& inventory);
// The exact names that exclude `layer`: its modules' checkpoint names, and where vLLM asks about
// another name that plain entries do not reach (MiMo's renumbered MTP layers), that name too.
std::vector<std::string> ignore_names(const engine::Layer& layer,
                                      const checkpoint::ModuleList& modules,
                                      const engine::ModelInfo& model);
std::string common_label(const std::vector<std::string>& names);
// The finding for a fused layer whose shards the config treats differently (vLLM raises).
std::pair<FindingKind, std::string> shards_disagree(const LayerView& view,
                                                    const engine::Decision& decision,
                                                    std::string_view who = "vLLM");
// The finding for a layer no verdict can be given for: a regex of `what` (GPTQ's `dynamic`,
// auto-round's `extra_config`) ran out of its match budget before it decided.
std::pair<FindingKind, std::string> undecidable_problem(std::string_view what);

// The list a skip-list method (awq, fp8, modelopt, bitsandbytes) reads from its active file.
struct SkipList {
  std::string key; // the field the engine reads
  bool exists = false;
  bool derived = false;             // AWQ: absent or empty, so vLLM derives it from the headers
  std::vector<std::string> entries; // as written, or derived (AWQ)
  size_t written = 0;               // how many entries are in the file (0 when derived)
};
struct SkipListSetting {
  engine::SkipListMethod method{};
  bool nvfp4 = false; // ModelOpt NVFP4 (vLLM's modelopt_fp4)
  SkipList list;
  bool lm_head_quantized = false; // AWQ `lm_head` (truthy)
  // AWQ: the config is one AWQ Marlin can serve (4 bits with zero points, group size -1, 32,
  // 64 or 128), so an engine that picks its AWQ class by it picks Marlin's.
  bool awq_marlin = false;
  // ModelOpt MIXED_PRECISION: `quantized_layers` (key, quant_algo), from config.json's
  // quantization_config when it has them (vLLM prefers it), else hf_quant_config.json.
  std::optional<std::vector<std::pair<std::string, std::string>>> quantized_layers;
  // FP8: both lists as written (nothing: absent or null), for the engines that prefer the other
  // one (SkipListDialect::fp8_prefers_modules_to_not_convert).
  std::optional<std::vector<std::string>> fp8_ignored_layers;
  std::optional<std::vector<std::string>> fp8_modules_to_not_convert;
  // FP8: `ignored_layers` is a key of the config (null included), which an engine reading the
  // first key present (SkipListDialect::fp8_first_present_key) then reads.
  bool fp8_ignored_layers_key = false;
  // The key `version` reads its list from.
  std::string key_read_by(const engine::EngineVersion& version,
                          const engine::ModelInfo& model) const;
  // The entries `version` reads: the derived list only where its dialect derives one.
  std::vector<std::string> read_by(const engine::EngineVersion& version,
                                   const engine::ModelInfo& model) const;
  // The judge of `engine` over `entries` (the list as read, or as patched).
  engine::SkipListRules judge(const engine::EngineVersion& version,
                              std::vector<std::string> entries,
                              const engine::ModelInfo& model) const;
};
// The setting of the skip-list method `active` declares; an error for a method that is not one
// (methods.hpp names the skip-list family: no name falls back to another method).
Result<SkipListSetting> skip_list_setting(const quant::ConfigFile& active,
                                          const quant::ConfigSet& configs,
                                          const checkpoint::ModuleList& modules,
                                          const checkpoint::Inventory& inventory);
std::string quoted(const std::string& text);

// --prune (skip_list_lint.hpp): the entries of the list as written that go, dead ones then
// duplicates, and the finding that names them.
std::vector<size_t> pruned_entries(const SkipListLint& lint);
// The finding for the entries of the list as written that --prune takes out (`pruned`: their
// indices, the lint's dead ones and duplicates and those dead once the fix's names are listed).
Finding pruned_entries_finding(const SkipListLint& lint, const std::set<size_t>& pruned);
void add_grouped(std::vector<LayerProblem>& problems,
                 std::vector<Finding>& findings,
                 const std::set<FindingKind>& fixed_kinds,
                 bool split_by_engines = false,
                 bool split_by_fixability = false);

// The finding for a layer stored dense that the model cannot run dense (ModelInfo::needs_quantized,
// `why`) under engine `who`.
inline std::pair<FindingKind, std::string>
needs_quantized_problem(const LayerView& view, const std::string& who, std::string_view why) {
  return {FindingKind::engine_quantizes,
          "stored " + view.stored + " but " + who + " cannot run them dense: " + std::string(why) +
              " (not fixable by a config patch)"};
}

// The layer problems of one or more engines, grouped into findings once all are in: a problem
// two engines share becomes one finding that names both.
class LayerProblems {
public:
  // Word every layer whose verdict under `before` (the rules of `judged`) disagrees with the
  // disk, as `word(view, decision) -> (kind, key)`. A problem is fixable when the patched judge
  // `after` makes its layer consistent, in every version that shows it: one layer no patch
  // reaches (a name one era builds apart) no longer marks the layers the patch does fix as not
  // fixable. Layers stored inconsistently or with shards stored differently are left to the
  // caller.
  // The engine version a problem is found in (none: every version judged).
  struct JudgedIn {
    engine::Engine engine = reference_engine();
    const engine::EngineVersion* version = nullptr;
  };
  template <class Judge, class Word>
  void add(const std::vector<LayerView>& views,
           const checkpoint::ModuleList& modules,
           const Judge& before,
           const Judge& after,
           Word&& word,
           JudgedIn in = {}) {
    const engine::Engine judged = in.engine;
    const engine::EngineVersion* version = in.version;
    for (const LayerView& view : views) {
      if (view.disk != Disk::dense && view.disk != Disk::quantized) {
        continue;
      }
      const engine::Decision decision = before.decide(*view.layer);
      if (consistent(view, decision)) {
        continue;
      }
      std::vector<std::string> names;
      for (const uint32_t m : view.layer->modules) {
        names.emplace_back(modules[m].name);
      }
      auto [kind, key] = word(view, decision);
      m_problems.push_back({kind,
                            std::move(key),
                            std::move(names),
                            view.order,
                            {std::string(engine::to_string(judged))},
                            version != nullptr ? std::vector<engine::EngineVersion>{*version}
                                               : std::vector<engine::EngineVersion>{}});
      // Whether the patch makes this layer consistent in this version (report() joins the
      // versions showing it).
      m_problems.back().fixable = consistent(view, after.decide(*view.layer));
    }
  }
  // Dense layers the model cannot run dense (ModelInfo::needs_quantized) that the config
  // already builds dense, so add() found nothing wrong: no config can help them.
  template <typename Judge>
  void add_needs_quantized(const std::vector<LayerView>& views,
                           const checkpoint::ModuleList& modules,
                           const Judge& before,
                           const engine::ModelInfo& model,
                           JudgedIn in) {
    const std::string who(engine::display_name(in.engine));
    for (const LayerView& view : views) {
      const std::string_view why = model.needs_quantized_because(view.layer->prefix);
      if (view.disk != Disk::dense || why.empty() ||
          !consistent(view, before.decide(*view.layer))) {
        continue;
      }
      std::vector<std::string> names;
      for (const uint32_t m : view.layer->modules) {
        names.emplace_back(modules[m].name);
      }
      auto [kind, key] = needs_quantized_problem(view, who, why);
      m_problems.push_back({kind,
                            std::move(key),
                            std::move(names),
                            view.order,
                            {std::string(engine::to_string(in.engine))},
                            in.version != nullptr ? std::vector<engine::EngineVersion>{*in.version}
                                                  : std::vector<engine::EngineVersion>{}});
      m_problems.back().fixable = false;
    }
  }
  // Layers `judged` cannot load as stored whatever the config says: a module stored
  // inconsistently, or shards of one fused layer (experts of one experts layer) stored partly
  // quantized, partly dense (vLLM builds one layer, with one quant method, for all of them).
  void add_storage(const std::vector<LayerView>& views,
                   const checkpoint::ModuleList& modules,
                   engine::Engine judged) {
    const std::string engine_name(engine::to_string(judged));
    for (const LayerView& view : views) {
      if (view.disk == Disk::inconsistent) {
        for (const uint32_t m : view.layer->modules) {
          if (modules[m].format == checkpoint::StorageFormat::inconsistent) {
            m_problems.push_back(inconsistent_storage(modules[m], view.order, {engine_name}));
          }
        }
        m_problems.back().fixable = false;
      } else if (view.disk == Disk::mixed) {
        std::vector<std::string> names;
        for (const uint32_t m : view.layer->modules) {
          names.emplace_back(modules[m].name);
        }
        m_problems.push_back({FindingKind::disk_shards_disagree,
                              "are shards of " + view.layer->name +
                                  " but stored partly quantized, partly dense: " +
                                  std::string(engine::display_name(judged)) +
                                  " builds one layer for them, so no config can load it",
                              std::move(names),
                              view.order,
                              {engine_name}});
        m_problems.back().fixable = false;
      }
    }
  }
  // With `judged` (the views of every version judged), a problem some versions show and others
  // do not says which (name_versions); problems of one layer merge across versions first.
  void report(std::vector<Finding>& findings,
              const std::vector<std::unique_ptr<EngineView>>* judged = nullptr) {
    if (judged != nullptr) {
      merge_versions();
      name_versions(m_problems, *judged);
    }
    // Problems no patch fixes for one engine (SGLang's Qwen3-Next draft shares the target's
    // layer names) stay apart from those it fixes for another: the patch is still written.
    add_grouped(m_problems, findings, {}, false, true);
  }

private:
  // One problem per (kind, key, engine, modules), holding every version that shows it.
  void merge_versions() {
    std::vector<LayerProblem> merged;
    for (LayerProblem& problem : m_problems) {
      auto same = std::find_if(merged.begin(), merged.end(), [&](const LayerProblem& other) {
        // The versions the patch fixes stay apart from those it does not: the fixable half is
        // patched and says which versions it holds for (a Qwen3_5ForCausalLM entry that reaches
        // one shard of a fused layer only from vLLM #50355, whose mapper gives entries the
        // layers' names, is removed although older versions judge that layer otherwise).
        return other.kind == problem.kind && other.key == problem.key &&
               other.engines == problem.engines && other.names == problem.names &&
               other.fixable.value_or(false) == problem.fixable.value_or(false);
      });
      if (same == merged.end()) {
        merged.push_back(std::move(problem));
        continue;
      }
      for (const engine::EngineVersion& version : problem.versions) {
        if (std::find(same->versions.begin(), same->versions.end(), version) ==
            same->versions.end()) {
          same->versions.push_back(version);
        }
      }
    }
    m_problems = std::move(merged);
  }

public:
private:
  std::vector<LayerProblem> m_problems;
};

// One engine's layer problems, grouped into `findings` (see LayerProblems).
template <class Judge, class Word>
void report_layers(const std::vector<LayerView>& views,
                   const checkpoint::ModuleList& modules,
                   const Judge& before,
                   const Judge& after,
                   Word&& word,
                   std::vector<Finding>& findings) {
  LayerProblems problems;
  problems.add(views, modules, before, after, word);
  problems.report(findings);
}

// True when `a` and `b` name one method (a name and its alias, or the same name).
bool same_method(const std::string& a, const std::string& b);

// Whether `file` holds the object a method's fix edits (Has: the view's member saying so), or
// nothing when `file` cannot be read as that method (Read: the method's config reader).
template <auto Read, auto Has> std::optional<bool> has_object(const quant::ConfigFile& file) {
  auto view = Read(file);
  return view ? std::optional<bool>((*view).*Has) : std::nullopt;
}

// Apply one edit of the object `key` (GPTQ `dynamic`, auto-round `extra_config`) to every file
// that declares `method`: config.json and its sidecars carry copies of one config, and they stay
// in step. `has_object(file)` returns whether that file has the object (nothing: skip the file).
template <class HasObject>
void edit_every_copy(const quant::ConfigSet& configs,
                     const std::string& method,
                     const std::string& key,
                     HasObject&& has_object,
                     const ObjectChange& edit,
                     Diagnosis& diagnosis) {
  for (const quant::ConfigFile& file : configs.files) {
    if (!same_method(quant::declared_method(file), method)) {
      continue;
    }
    const std::optional<bool> exists = has_object(file);
    if (!exists) {
      continue;
    }
    ObjectChange change = edit;
    change.file = file.name;
    change.pointer = file.pointer;
    change.pointer.push_back(key);
    change.create = !*exists;
    diagnosis.object_changes.push_back(std::move(change));
  }
}

// One engine's view of the checkpoint: its model rules, the layers it builds, their storage.
struct EngineView {
  engine::Engine engine{};
  engine::EngineVersion version; // which version of the engine (versions.hpp)
  engine::ModelInfo model;
  engine::Dialect dialect; // how this version reads each method's config
  // Versions of one engine build the same layers, so they share them and their storage views.
  std::shared_ptr<const std::vector<engine::Layer>> layers;
  std::shared_ptr<const std::vector<LayerView>> views; // point into `layers`
  std::vector<engine::Layer> not_built;                // layers this engine never builds
};

// Every engine version judged, each with its view.
using EngineViews = std::vector<std::unique_ptr<EngineView>>;

// The decisions remembered for the checkpoint judged: the layer cache's when `options` has one
// (the judgement and the plan's re-judgement share it), else `local` (decision_memo.hpp).
class DecisionMemo;
DecisionMemo& decision_memo(const DiagnoseOptions& options, DecisionMemo& local);

// Whether two decisions of one layer are the same verdict for the same reason.
inline bool same_decision(const engine::Decision& a, const engine::Decision& b) {
  return a.verdict == b.verdict && a.by == b.by && a.group == b.group && a.target == b.target &&
         a.error == b.error && a.shard_ignored == b.shard_ignored;
}

// `items` without those at the sorted indices `removed`.
template <typename T>
std::vector<T> without_indices(const std::vector<T>& items, const std::vector<size_t>& removed) {
  std::vector<T> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!std::binary_search(removed.begin(), removed.end(), i)) {
      out.push_back(items[i]);
    }
  }
  return out;
}

// The indices below `size` not in `removed`, in order: where a kept item sits once the others go.
inline std::vector<size_t> kept_indices(size_t size, const std::set<size_t>& removed) {
  std::vector<size_t> out;
  for (size_t i = 0; i < size; ++i) {
    if (removed.count(i) == 0) {
      out.push_back(i);
    }
  }
  return out;
}

// The lint of a config's keyed rules, rule by rule (GPTQ `dynamic`, auto-round
// `extra_config`): rules whose removal changes no layer's decision in any version judged are
// dead (skip_list_lint.hpp), except those in `live`. `rules_without(removed, view)` builds that
// version's rules with the rules at the sorted indices `removed` taken out.
template <typename RulesWithout>
SkipListLint lint_keyed_rules(const EngineViews& judged,
                              const quant::ConfigFile& active,
                              const std::string& key,
                              std::vector<std::string> entries,
                              const std::set<size_t>& live,
                              const RulesWithout& rules_without) {
  SkipListLint lint;
  lint.file = active.name;
  lint.pointer = active.pointer;
  lint.pointer.push_back(key);
  lint.entries = std::move(entries);
  const auto decisions = [&](const std::vector<size_t>& removed) {
    std::vector<engine::Decision> out;
    for (const auto& engine_view : judged) {
      const auto rules = rules_without(removed, *engine_view);
      for (const LayerView& view : *engine_view->views) {
        out.push_back(rules.decide(*view.layer));
      }
    }
    return out;
  };
  const std::vector<engine::Decision> first = decisions({});
  // A rule that decides some layer in some version is not dead.
  std::set<size_t> deciding = live;
  for (const engine::Decision& decision : first) {
    if (decision.ignore_index) {
      deciding.insert(*decision.ignore_index);
    }
  }
  find_dead_entries(lint, deciding, [&](const std::vector<size_t>& removed) {
    const std::vector<engine::Decision> now = decisions(removed);
    return std::equal(now.begin(), now.end(), first.begin(), first.end(), same_decision);
  });
  return lint;
}

// What a method's per-layer decider (Method::decider) is built from: the active config and one
// engine version's view.
struct DecideInput {
  const quant::ConfigFile& active;
  const quant::ConfigSet& configs;
  const checkpoint::ModuleList& modules;
  const checkpoint::Inventory& inventory;
  const EngineView& view;
};

// The key of the version-dependent rules that can change a verdict for the config being judged
// (CompressedTensorsRules::rules_key); consecutive versions of equal keys and naming are judged
// once, as one version spanning them. Empty: every version apart.
using RulesKey = std::function<std::string(const engine::EngineVersion&)>;

// Build the view of every version judged of every engine in `engines` for `method` (oldest
// version first; options.pins narrows an engine to one). `model` is vLLM's newest naming row.
// transformers never builds the MTP head (`mtp_head`, module indices): its layers go to
// `not_built`.
// The checkpoint the views are of: its modules and inventory, its MTP head's module indices,
// and the options (pins, --engine).
struct ViewedCheckpoint {
  const checkpoint::ModuleList& modules;
  const checkpoint::Inventory& inventory;
  const std::vector<uint32_t>& mtp_head;
  const DiagnoseOptions& options;
};
std::vector<std::unique_ptr<EngineView>> engine_views(engine::EngineSet engines,
                                                      const engine::ModelInfo& model,
                                                      const ViewedCheckpoint& checkpoint,
                                                      std::string_view method,
                                                      const RulesKey& rules_key = {});
// Record the versions `views` judge in `diagnosis` (versions_judged, engine_rules).
void judged_versions(const std::vector<std::unique_ptr<EngineView>>& views, Diagnosis& diagnosis);
// The versions `views` judge of `engine`, in their order.
std::vector<engine::EngineVersion>
versions_of(const std::vector<std::unique_ptr<EngineView>>& views, engine::Engine engine);

// Python re.escape for the characters engine layer names hold.
std::string escape_regex(const std::string& name);

// How an entry may spell a layer past the target's mapper (ModelInfo::target_config_mapper).
enum class MapperSpelling {
  dotted_tail, // the method reads an entry as a substring or a run of dotted parts (ModelOpt)
  regex,       // the method reads "re:" entries, exact names otherwise (Quark)
  either,      // both (compressed-tensors as SGLang read it until #32736)
};
// An entry that reaches engine layer `name` once `model`'s target mapper has renamed it under
// `method` (SGLang's Qwen3.5 VLM until #23471 renames model.language_model.X to
// language_model.model.X): `name` when the mapper leaves it; else, where `spelling` allows, its
// dotted tail after "model." when the mapper leaves that; else the anchored "re:^name$" (dots
// escaped, so no substring rule fires inside it).
std::string spelling_past_mapper(const engine::ModelInfo& model,
                                 std::string_view method,
                                 const std::string& name,
                                 MapperSpelling spelling);

// A readable `re:` entry that could stand for `replaces`, engine-named entries a fix appends
// (readable_entries.cpp). `checkpoint_roots`: the first name components of the checkpoint's
// modules, which an anchored subtree pattern must not name.
struct EntryCandidate {
  std::string entry;
  std::vector<std::string> replaces;
  // A pattern over a whole subtree whose root no checkpoint module has ("re:^visual\\."): the
  // names it stands for can be tails that other entries already cover, so it may be needless.
  bool subtree = false;
};
std::vector<EntryCandidate> readable_candidates(const std::vector<std::string>& names,
                                                const std::set<std::string>& checkpoint_roots);

// What a method's judge reads: the checkpoint, its config files, the active one, and the engines
// whose rules are modelled for the method (the requested ones it models, or vLLM alone).
struct JudgeInput {
  const checkpoint::Inventory& inventory;
  const checkpoint::ModuleList& modules;
  const quant::ConfigSet& configs;
  const quant::ConfigFile& active;
  const std::vector<uint32_t>& mtp_head; // module indices of the MTP head
  const DiagnoseOptions& options;
  engine::EngineSet engines;
};

// Judge a compressed-tensors config under every engine in `in.options` (ct_judge.cpp); the MTP
// head's modules (in.mtp_head) are never built by transformers.
void judge_compressed_tensors(const JudgeInput& in,
                              const quant::CtConfig& config,
                              Diagnosis& diagnosis);

// Judge a GPTQ config under the engines of `in` (gptq_judge.cpp).
Status judge_gptq(const JudgeInput& in, const quant::GptqConfig& config, Diagnosis& diagnosis);

// Judge an auto-round config under vLLM's INC rules (inc_judge.cpp).
Status judge_auto_round(const JudgeInput& in, const quant::IncConfig& config, Diagnosis& diagnosis);

// Judge an AWQ, FP8, ModelOpt or bitsandbytes config, one skip list (skip_list_judge.cpp).
Status
judge_skip_list(const JudgeInput& in, const SkipListSetting& skip_list, Diagnosis& diagnosis);

// What a method's explain reads (the checkpoint, the layer traced and its storage, the engines
// modelled) and writes (`out`): one module's trace, built by explain.cpp.
struct ExplainContext {
  const checkpoint::Inventory& inventory;
  const checkpoint::ModuleList& modules;
  const quant::ConfigSet& configs;
  const quant::ConfigFile& active;
  const std::string& method; // as declared
  const engine::ModelInfo& model;
  const engine::Layer& layer;
  const checkpoint::Module* module; // the module asked about; null for a fused layer's name
  const std::vector<LayerView>& views;
  const LayerView* view; // `layer`'s storage; null when it has none
  engine::EngineSet engines;
  const engine::VersionPins& pins; // --engine ENGINE@REF
  const Method& row;
  Explanation& out;
};

// Trace one module under each method's rules (explain.cpp).
Status explain_compressed_tensors(ExplainContext& context, const quant::CtConfig& config);
Status explain_gptq(ExplainContext& context, const quant::GptqConfig& config);
Status explain_auto_round(ExplainContext& context, const quant::IncConfig& config);
Status explain_skip_list(ExplainContext& context, const SkipListSetting& setting);

} // namespace qpatch::diagnose::detail
