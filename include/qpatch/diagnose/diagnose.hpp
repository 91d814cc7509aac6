// SPDX-License-Identifier: Apache-2.0
// Judge a checkpoint: compare what its quantization config makes an engine build with what the
// headers say is stored, and compute the config edits that make them agree. Findings are values
// (never printed here); the fix is expressed as edits to the ignore list and the index, which
// plan/ turns into file contents.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/skip_list_lint.hpp>
#include <qpatch/engine/effects.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/engine/versions.hpp>
#include <qpatch/quant/config_files.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qpatch::diagnose {

enum class FindingKind {
  dense_quantized_by_config, // dense on disk, the config makes the engine quantize it
  quantized_made_dense,      // quantized on disk, an ignore entry makes it dense
  fused_shards_disagree,     // the config treats shards of one fused layer differently
  quantized_untargeted,      // quantized on disk, no target matches: built dense
  engine_builds_dense,       // quantized on disk, the engine never quantizes this layer
  engine_quantizes,          // dense on disk, the engine quantizes this layer whatever the config
  disk_shards_disagree,      // shards of one fused layer stored differently on disk
  inconsistent_storage,      // a module's tensors contradict each other
  configs_disagree,          // config.json and a sidecar disagree about ignore/targets
  unindexed_tensors,         // a shard file the index does not name
  missing_file,              // a file the index names is not there
  duplicate_tensor,          // one tensor in two loaded files
  undecidable,               // a regex gave up, or cannot be compiled
  unsupported_method,        // a quant_method this version does not judge
  config_rejected,           // the engine refuses the quantization config itself
  quantized_without_config,  // quantized on disk, but no config the engines read: built dense
  untargeted_raises,         // no target matches a layer and the engine raises for that
  missing_draft_head,        // config.json declares MTP layers that no file stores
  dead_skip_entries,         // --prune: ignore entries no verdict depends on, removed
};
std::string_view to_string(FindingKind kind);

struct Finding {
  FindingKind kind{};
  std::string label;                // common name prefix of the modules ("mtp"), or a file
  std::vector<std::string> modules; // checkpoint module names (or tensor names)
  std::string detail;               // one line for people
  bool fixable = false;
  std::vector<std::string> engines; // the judged engines it affects ("vllm", "sglang", ...)
  // The versions it holds for, where not every version judged of an engine ("vLLM before
  // 2026-05-07", "SGLang before a5ea6158"); empty: every version judged.
  std::vector<std::string> versions;
  // The exception the engine raises, verbatim, when it refuses to load (config_rejected:
  // "ValueError: Unsupported quantization config: bits=3, sym=True"); "" otherwise. Reports quote
  // it as the consequence, so they need not take the detail line apart.
  std::string engine_error;
  // What each engine does, where a judge computed it from the model class rather than from the
  // kind of mismatch (a missing draft head: vLLM's DeepSeekMTP raises, its Qwen3_5MTP does
  // not): (engine, consequence), reported as given.
  std::vector<std::pair<std::string, std::string>> engine_effects;
};

// Edits to one config file's arrays.
struct ArrayChange {
  std::string file;
  std::vector<std::string> pointer; // the array, e.g. {"quantization_config", "ignore"}
  bool create = false;              // the key is absent and must be added
  std::vector<size_t> remove;
  std::vector<std::string> append;
  std::vector<std::string> removed_values; // for reports
};

// Edits to one config file's object whose member order matters (GPTQ `dynamic`).
struct ObjectChange {
  std::string file;
  std::vector<std::string> pointer; // the object, e.g. {"quantization_config", "dynamic"}
  bool create = false;              // the key is absent and must be added
  std::vector<std::string> remove;  // keys to drop
  std::vector<std::string> prepend; // keys to insert first, each with the value {}
  std::vector<std::pair<std::string, std::string>> append; // (key, raw JSON value) to add last
  // What reports list as added and removed, when not the keys (a member written anew: the
  // entries its value gains and loses).
  std::optional<std::pair<std::vector<std::string>, std::vector<std::string>>> reported{};
};

// A whole quantization config copied from a sidecar into config.json, where the engines read it.
// The sidecar's object is taken after the sidecar's own edits, so both files end up the same.
struct ConfigInsert {
  std::string file = "config.json";
  std::vector<std::string> pointer{"quantization_config"}; // the new member, at the top level
  std::string from;         // the sidecar holding the config ("quantize_config.json")
  std::string quant_method; // added when the sidecar declares none (AutoGPTQ's file); "" else
};

struct Diagnosis {
  std::string quant_method;         // "" when not quantized
  engine::BuiltWeight built_weight; // what a quantized layer's weight parameter is (effects)
  bool quantized = false;
  std::string engine_rules;         // which engine behaviour the verdict models
  std::vector<std::string> engines; // the engines judged (a method may model only vLLM)
  // Every version judged of every engine, oldest first per engine (versions.hpp); a judge that
  // judges one version of an engine lists that one.
  std::vector<engine::EngineVersion> versions_judged;
  std::vector<Finding> findings;
  std::vector<std::string> notes; // traps worth knowing that change no verdict
  std::string mtp;                // the MTP head as a unit, or "" when there is none
  // The compressed-tensors `ignore` list's dead, duplicate and over-broad entries (the judge's);
  // nothing for other methods and for lists too long to lint by default.
  std::optional<SkipListLint> lint;
  std::vector<ArrayChange> array_changes;
  std::vector<ObjectChange> object_changes;
  std::optional<ConfigInsert> config_insert;
  std::vector<std::pair<std::string, std::string>> index_additions; // tensor -> file

  bool has_unfixable() const;
  bool has_fixable() const;
};

// The layers each engine version builds from one checkpoint's modules, kept between the
// judgement and the plan's re-judgement of the same inventory (plan/patch_plan.cpp), which
// build the same layers again otherwise: two passes over ~70k modules per engine on a
// 1T-parameter MoE. Keyed by the inventory and module list it was filled from, so a
// re-judgement of another inventory (a patch that adds index entries, a graft) builds anew.
class LayerCache;

struct DiagnoseOptions {
  std::optional<engine::Pattern> only; // consider only modules whose name matches (re.search)
  engine::EngineSet engines = engine::EngineSet::all(); // --engine
  // --engine named the engines (not the default "all"): an engine that cannot load the
  // method at all is judged too, and refuses the config.
  bool engines_named = false;
  engine::VersionPins pins; // --engine ENGINE@REF: one version of that engine, not every one
  bool prune = false;       // --prune: remove the skip list's dead and duplicate entries
  std::shared_ptr<LayerCache> layer_cache; // nothing: every judgement builds its layers
};

// Return an empty cache for DiagnoseOptions::layer_cache (diagnose/engine_views.cpp).
std::shared_ptr<LayerCache> make_layer_cache();

// Judge `inventory` against `configs`. Fails only on a config that cannot be read as its method.
Result<Diagnosis> diagnose(const checkpoint::Inventory& inventory,
                           const checkpoint::ModuleList& modules,
                           const quant::ConfigSet& configs,
                           const DiagnoseOptions& options = {});

} // namespace qpatch::diagnose
