// SPDX-License-Identifier: Apache-2.0
// Diagnosis: the inventory's findings, and dispatch to the judge of the config's method.
#include "diagnose/judge_common.hpp"
#include "diagnose/missing_head.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/built_weight.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/config_checks.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/model_info.hpp>
#include <qpatch/quant/compressed_tensors.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

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
  case FindingKind::missing_draft_head:
    return "missing_draft_head";
  case FindingKind::dead_skip_entries:
    return "dead_skip_entries";
  case FindingKind::duplicate_tensor:
    return "duplicate_tensor";
  case FindingKind::undecidable:
    return "undecidable";
  case FindingKind::unsupported_method:
    return "unsupported_method";
  case FindingKind::config_rejected:
    return "config_rejected";
  case FindingKind::quantized_without_config:
    return "quantized_without_config";
  case FindingKind::untargeted_raises:
    return "untargeted_raises";
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
  // Where vLLM names the layer apart from how its mapper renames entries (MiMo's renumbered
  // draft, the VLM's language_model.lm_head), that name too. An engine whose layer names differ
  // from its entries' by design (SGLang) gets the names it tests when these are not enough
  // (the fixer's append_layer).
  const size_t checkpoint_names = model.separate_layer_names ? 0 : names.size();
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

// Group problems by (kind, key) in checkpoint order and word them.
void add_grouped(std::vector<LayerProblem>& problems,
                 std::vector<Finding>& findings,
                 const std::set<FindingKind>& fixed_kinds,
                 bool split_by_engines,
                 bool split_by_fixability) {
  std::stable_sort(problems.begin(),
                   problems.end(),
                   [](const LayerProblem& a, const LayerProblem& b) { return a.order < b.order; });
  // (kind, key, engines): with split_by_engines, modules one engine gets wrong stay apart from
  // those every engine gets wrong, so each finding says what breaks where.
  std::vector<std::pair<std::tuple<FindingKind, std::string, std::string>, Finding>> groups;
  for (const LayerProblem& problem : problems) {
    std::string engines;
    if (split_by_engines) {
      std::vector<std::string> sorted = problem.engines;
      std::sort(sorted.begin(), sorted.end());
      for (const std::string& engine : sorted) {
        engines += engine + " ";
      }
    }
    if (split_by_fixability && problem.fixable && !*problem.fixable) {
      engines += "!"; // a module no patch fixes for one engine stays apart from fixable ones
    }
    const auto key = std::tuple(problem.kind, problem.key, engines);
    auto it = std::find_if(
        groups.begin(), groups.end(), [&](const auto& group) { return group.first == key; });
    if (it == groups.end()) {
      Finding finding;
      finding.kind = problem.kind;
      finding.fixable = problem.fixable.value_or(fixed_kinds.count(problem.kind) > 0);
      groups.push_back({key, finding});
      it = groups.end() - 1;
    } else if (problem.fixable) {
      it->second.fixable = it->second.fixable && *problem.fixable;
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
    for (const std::string& text : problem.version_texts) {
      if (std::find(it->second.versions.begin(), it->second.versions.end(), text) ==
          it->second.versions.end()) {
        it->second.versions.push_back(text);
      }
    }
  }
  // Engines in their canonical order, whatever order the problems came in.
  for (auto& [key, finding] : groups) {
    std::vector<std::string> ordered;
    for (const engine::Engine id : engine::all_engines()) {
      const std::string engine(engine::to_string(id));
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
    // Modules with no common prefix (lm_head, model.visual.*, mtp.*) are counted alone.
    finding.detail =
        (finding.label.empty() ? "" : finding.label + ": ") + count + " " + std::get<1>(key);
    findings.push_back(std::move(finding));
  }
}

void name_versions(std::vector<LayerProblem>& problems,
                   const std::vector<std::unique_ptr<EngineView>>& judged) {
  for (LayerProblem& problem : problems) {
    if (problem.versions.empty()) {
      continue;
    }
    std::string said;
    for (const std::string& name : problem.engines) {
      const auto engine = engine::EngineSet::parse(name);
      if (!engine || name == "all") {
        continue;
      }
      const engine::Engine which = engine->list().front();
      const std::vector<engine::EngineVersion> all = versions_of(judged, which);
      std::vector<engine::EngineVersion> subset;
      for (const engine::EngineVersion& version : all) {
        if (std::find(problem.versions.begin(), problem.versions.end(), version) !=
            problem.versions.end()) {
          subset.push_back(version);
        }
      }
      if (subset.empty() || subset.size() == all.size()) {
        continue;
      }
      std::string text = engine::subset_text(subset, all);
      said += (said.empty() ? "" : "; ") + text;
      problem.version_texts.push_back(std::move(text));
    }
    if (!said.empty()) {
      problem.key += " (" + said + " only)";
    }
  }
}

void judged_versions(const std::vector<std::unique_ptr<EngineView>>& views, Diagnosis& diagnosis) {
  diagnosis.versions_judged.clear();
  std::vector<engine::Engine> engines;
  for (const auto& view : views) {
    diagnosis.versions_judged.push_back(view->version);
    if (std::find(engines.begin(), engines.end(), view->engine) == engines.end()) {
      engines.push_back(view->engine);
    }
  }
  std::vector<std::string> rules;
  for (const engine::Engine engine : engines) {
    rules.push_back(engine::versions_text(versions_of(views, engine), diagnosis.quant_method));
  }
  diagnosis.engine_rules = engine::join_names(rules);
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

std::pair<FindingKind, std::string> undecidable_problem(std::string_view what) {
  return {FindingKind::undecidable,
          "could not be judged: a regex key of " + std::string(what) +
              " gave up (match limit) before it decided, and is not tried again"};
}

std::pair<FindingKind, std::string>
shards_disagree(const LayerView& view, const engine::Decision& decision, std::string_view who) {
  return {FindingKind::fused_shards_disagree,
          "are judged as one layer (" + view.layer->name + "); " + std::string(who) + ": " +
              decision.error};
}

} // namespace detail

namespace {

using namespace detail; // NOLINT: the shared judging vocabulary

// The tensors of unindexed file `f` that a module stored in indexed files left out because
// together they contradict each other (checkpoint/module.cpp keep_what_engines_load), with
// the module each would join.
std::vector<std::pair<std::string_view, const Module*>>
conflicting_tensors(const Inventory& inventory, const ModuleList& modules, uint32_t f) {
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_owner;
  for (uint32_t t = 0; t < inventory.tensors.size(); ++t) {
    const auto& tensor = inventory.tensors[t];
    if (tensor.file == f && !tensor.shadowed) {
      by_owner[checkpoint::split_tensor_name(tensor.name).first].push_back(t);
    }
  }
  std::vector<std::pair<std::string_view, const Module*>> out;
  for (const Module& module : modules) {
    const auto owned = by_owner.find(module.name);
    if (owned == by_owner.end()) {
      continue;
    }
    for (const uint32_t t : owned->second) {
      if (std::find(module.tensors.begin(), module.tensors.end(), t) == module.tensors.end()) {
        out.emplace_back(inventory.tensors[t].name, &module);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The finding for a file the index does not name, and the index entries that fix it. Returns
// false when there is nothing to find: every tensor it holds would contradict the indexed
// storage of its module, which is what the engines load (a note says why it stays unindexed).
// An index is never written that lists two storage formats of one module (issue 24 item 1).
bool unindexed_file_finding(const Inventory& inventory,
                            const ModuleList& modules,
                            const std::string& path,
                            Finding& finding,
                            Diagnosis& diagnosis) {
  const auto file = std::find_if(inventory.files.begin(),
                                 inventory.files.end(),
                                 [&](const auto& candidate) { return candidate.name == path; });
  const auto f = static_cast<uint32_t>(file - inventory.files.begin());
  const auto conflicts = conflicting_tensors(inventory, modules, f);
  std::unordered_set<std::string_view> conflicting;
  for (const auto& [tensor, module] : conflicts) {
    conflicting.insert(tensor);
  }
  std::vector<std::string> tensors;
  for (const auto& tensor : inventory.tensors) {
    if (tensor.file == f && !tensor.shadowed && conflicting.count(tensor.name) == 0) {
      tensors.emplace_back(tensor.name);
    }
  }
  std::string conflict_text; // "1 tensor (mtp.fc.weight) would give mtp.fc a second ..."
  if (!conflicts.empty()) {
    std::vector<std::string> names;
    std::vector<std::string> owners;
    for (const auto& [tensor, module] : conflicts) {
      names.emplace_back(tensor);
      owners.emplace_back(module->name);
    }
    owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
    const Module& first = *conflicts.front().second;
    conflict_text = std::to_string(conflicts.size()) +
                    (conflicts.size() == 1 ? " tensor (" : " tensors (") + common_label(names) +
                    ") would give " + common_label(owners) +
                    " a second storage format beside the one the index lists (" +
                    std::string(checkpoint::to_string(first.format)) + " in " +
                    inventory.files[first.files.front()].name + ")";
  }
  if (tensors.empty() && file->duplicate_count == 0) {
    diagnosis.notes.push_back(path + " is not indexed and stays so: its " + conflict_text +
                              "; the engines load the indexed form");
    return false;
  }
  finding.kind = FindingKind::unindexed_tensors;
  finding.fixable = file->duplicate_count == 0 && conflicts.empty();
  finding.modules = tensors;
  const size_t unlisted = file->tensor_count - conflicts.size();
  finding.detail = path + ": " + std::to_string(unlisted) +
                   (unlisted == 1 ? " tensor (" : " tensors (") + common_label(tensors) +
                   ") that the index does not list: vLLM and transformers never load them";
  if (finding.fixable) {
    for (const std::string& tensor : tensors) {
      diagnosis.index_additions.emplace_back(tensor, file->name);
    }
    return true;
  }
  if (file->duplicate_count > 0) {
    finding.detail += "; " + std::to_string(file->duplicate_count) +
                      " of them duplicate tensors in indexed files, so qpatch will not add "
                      "them (remove the file or the duplicates)";
  }
  if (!conflicts.empty()) {
    finding.detail +=
        "; " + conflict_text + ", so qpatch will not index the file (remove those tensors from it)";
  }
  return true;
}

void inventory_findings(const Inventory& inventory,
                        const ModuleList& modules,
                        Diagnosis& diagnosis) {
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
      if (!unindexed_file_finding(inventory, modules, problem.path, finding, diagnosis)) {
        continue;
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
  // A judge that judges several versions of an engine lists them (judged_versions).
  diagnosis.versions_judged.clear();
  for (const engine::Engine engine : engines.list()) {
    diagnosis.versions_judged.push_back(engine::newest_version(engine));
  }
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

// The file holding the config vLLM loads without being told the method, or nullptr. vLLM main
// 017e9f4 takes the method from the HF config alone (config/model.py
// ModelConfig._verify_quantization over model_arch_config.quantization_config: config.json's
// quantization_config, else text_config's), and transformers_utils/config.py get_config fills it
// from hf_quant_config.json (ModelOpt 0.29 and before) when config.json has none. A method's own
// file (quantize_config.json: auto_gptq.py/auto_awq.py get_config_filenames) is opened by
// model_loader/weight_utils.py get_quant_config only once the method is known, that is, only
// with --quantization; quantization_config.json is read by no engine.
const quant::ConfigFile* read_without_flags(const quant::ConfigSet& configs) {
  const quant::ConfigFile* active = configs.active();
  return active != nullptr &&
                 (active->name == "config.json" || active->name == "hf_quant_config.json")
             ? active
             : nullptr;
}

// The tensor of `module` a dense layer has no parameter for: its packed weight (weight_packed,
// qweight), or for formats that keep the name `weight` (FP8, int8) the first scale beside it.
std::string unplaceable_tensor(const Module& module, const Inventory& inventory) {
  const std::string_view primary = inventory.tensors[module.primary].name;
  if (checkpoint::split_tensor_name(primary).second != "weight") {
    return std::string(primary);
  }
  for (const uint32_t t : module.tensors) {
    const std::string_view param = checkpoint::split_tensor_name(inventory.tensors[t].name).second;
    if (param != "weight" && param != "bias") {
      return std::string(inventory.tensors[t].name);
    }
  }
  return std::string(primary);
}

// Quantized modules on disk while the engines find no quantization config: every layer is built
// dense (README "Findings"). Returns the sidecar whose config would fix it, or nullptr; no finding
// when nothing on disk is quantized.
const quant::ConfigFile* quantized_without_config(const Inventory& inventory,
                                                  const ModuleList& modules,
                                                  const quant::ConfigSet& configs,
                                                  Diagnosis& diagnosis) {
  Finding finding;
  finding.kind = FindingKind::quantized_without_config;
  finding.label = "config.json";
  std::vector<std::string_view> formats;
  for (const Module& module : modules) {
    if (!checkpoint::is_quantized(module.format)) {
      continue;
    }
    if (finding.modules.empty()) {
      finding.engine_error = "ValueError: There is no module or parameter named '" +
                             unplaceable_tensor(module, inventory) + "' in ...";
    }
    finding.modules.emplace_back(module.name);
    const std::string_view format = checkpoint::to_string(module.format);
    if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
      formats.push_back(format);
    }
  }
  if (finding.modules.empty()) {
    return nullptr;
  }
  // The sidecar the engines would need: GPTQ/AWQ's own file first (what --quantization gptq
  // reads), then the compressed-tensors copy, when it names its method.
  const quant::ConfigFile* source = nullptr;
  for (const char* name : {"quantize_config.json", "quantization_config.json"}) {
    const quant::ConfigFile* file = configs.find(name);
    if (source == nullptr && file != nullptr && file->has_config() &&
        !quant::declared_method(*file).empty()) {
      source = file;
    }
  }
  std::string stored;
  for (const std::string_view format : formats) {
    stored += (stored.empty() ? "" : ", ") + std::string(format);
  }
  const size_t n = finding.modules.size();
  finding.detail = "config.json: " + std::to_string(n) + (n == 1 ? " module" : " modules") +
                   " stored quantized (" + stored +
                   ") but no quantization_config the engines read, so they build every layer "
                   "dense";
  if (source != nullptr) {
    finding.fixable = true;
    finding.detail += "; " + source->name + " holds it: copy it into config.json";
    ConfigInsert insert;
    insert.from = source->name;
    if (!source->config().contains("quant_method")) {
      insert.quant_method = quant::declared_method(*source);
    }
    diagnosis.config_insert = std::move(insert);
  } else {
    finding.detail += "; no sidecar holds a config to copy";
  }
  diagnosis.findings.push_back(std::move(finding));
  return source;
}

} // namespace

namespace {

// The engines `method` is judged for: those asked for whose rules for it qpatch has read, less,
// by default, an engine that cannot load it at all and one whose model class loads the config
// through a quant config of its own; each left out is named in a note.
engine::EngineSet engines_for_method(const Method* method,
                                     const quant::ConfigFile& active,
                                     const quant::ConfigSet& configs,
                                     const DiagnoseOptions& options,
                                     Diagnosis& diagnosis) {
  // A method models only the engines of its row (methods.cpp); an unknown one is judged by none
  // and reported below, as vLLM would load it.
  engine::EngineSet modelled = modelled_engines(method, options.engines);
  if (method != nullptr) {
    // An engine asked for whose rules for this method qpatch has not read (its History.methods
    // lacks it) is not judged, and the report says so rather than judge it by analogy.
    for (const engine::Engine engine : options.engines.list()) {
      if (!method->engines.has(engine)) {
        diagnosis.notes.push_back(std::string(engine::display_name(engine)) +
                                  ": not judged: qpatch has not read its " +
                                  std::string(method->name) + " loader");
      }
    }
  }
  if (method != nullptr && !options.engines_named) {
    // By default an engine that cannot load the method at all is left out, and said so.
    engine::EngineSet loading = engine::EngineSet::none();
    for (const engine::Engine engine : modelled.list()) {
      const auto& cannot = engine::history(engine).cannot_load;
      const auto why = std::find_if(cannot.begin(), cannot.end(), [&](const auto& entry) {
        return entry.first == method->name;
      });
      if (why == cannot.end()) {
        loading.add(engine);
        continue;
      }
      diagnosis.notes.push_back(std::string(engine::display_name(engine)) +
                                ": not judged: " + std::string(why->second) + " (--engine " +
                                std::string(engine::to_string(engine)) + " judges it)");
    }
    if (!loading.empty()) {
      modelled = loading;
    }
  }
  // A model class that loads through a quant config of its own (vLLM's DeepSeek-V4 Quark, its
  // Kimi-K3 MXFP4) is not judged by the method's rules: the report says which engine and why.
  const json::Json& config = active.config();
  const std::string format = config.contains("format") && config["format"].is_string()
                                 ? config["format"].get<std::string>()
                                 : std::string();
  for (const engine::Engine engine : modelled.list()) {
    const engine::ModelInfo naming = engine::naming_of(
        engine::newest_version(engine), configs.architecture, configs.num_hidden_layers);
    const auto& replaces = naming.own_quant_method_replaces;
    const auto taken_over = [&](const std::string& key) {
      return std::find(replaces.begin(), replaces.end(), key) != replaces.end();
    };
    if (!naming.own_quant_method.empty() &&
        (taken_over(diagnosis.quant_method) ||
         (!format.empty() && taken_over(diagnosis.quant_method + ":" + format)))) {
      modelled.remove(engine);
      diagnosis.notes.push_back(
          std::string(engine::display_name(engine)) + ": not judged: " + configs.architecture +
          " loads a \"" + diagnosis.quant_method + "\"" +
          (taken_over(diagnosis.quant_method) ? std::string() : " (" + format + ")") +
          " config through its own " + naming.own_quant_method +
          " quant config, which qpatch has not modelled");
    }
  }
  return modelled;
}

// The versions of `engine` that read the config as another method than its own
// (engine::config_read_as: SGLang's ModelOpt MIXED_PRECISION read as w4afp8): one finding per
// reading, naming the versions when not all of those judged. No config patch helps them.
void read_as_another_method(engine::Engine engine,
                            const quant::ConfigFile& active,
                            const quant::ConfigSet& configs,
                            const DiagnoseOptions& options,
                            Diagnosis& diagnosis) {
  const std::vector<engine::EngineVersion> all =
      engine::versions_to_judge(engine, diagnosis.quant_method, configs.architecture, options.pins);
  std::vector<std::pair<engine::ConfigReading, std::vector<engine::EngineVersion>>> readings;
  for (const engine::EngineVersion& version : all) {
    const auto reading = engine::config_read_as(
        version, diagnosis.quant_method, active.config(), configs.architecture);
    if (!reading) {
      continue;
    }
    auto it = std::find_if(
        readings.begin(), readings.end(), [&](const auto& seen) { return seen.first == *reading; });
    if (it == readings.end()) {
      readings.emplace_back(*reading, std::vector<engine::EngineVersion>{});
      it = readings.end() - 1;
    }
    it->second.push_back(version);
  }
  const std::string name(engine::to_string(engine));
  const std::string where = quant::pointer_text(active.pointer);
  for (const auto& [reading, versions] : readings) {
    Finding finding;
    finding.kind = FindingKind::config_rejected;
    finding.label = active.name;
    if (versions.size() != all.size()) {
      finding.versions = {engine::subset_text(versions, all)};
    }
    finding.detail = active.name + (where.empty() ? "" : " " + where) + ": " +
                     std::string(engine::display_name(engine)) +
                     " reads this quantization config as " + reading.method + ": " + reading.why +
                     (finding.versions.empty() ? "" : " (" + finding.versions.front() + " only)");
    finding.engines = {name};
    finding.engine_effects = {
        {name,
         "builds the model as " + reading.method +
             ", not as stored, and drops the stored weights it has no parameter for silently"}};
    diagnosis.findings.push_back(std::move(finding));
  }
}

// An engine that refuses the config before it builds any layer (engine/config_checks.hpp).
void config_rejections(engine::EngineSet modelled,
                       const Method& method,
                       const quant::ConfigFile& active,
                       const quant::ConfigSet& configs,
                       const DiagnoseOptions& options,
                       Diagnosis& diagnosis) {
  for (const engine::Engine engine : modelled.list()) {
    // Judged at the one version the method's judge judges alone, or the newest.
    const engine::EngineVersion version =
        engine::one_version(engine, method.name, configs.architecture, options.pins);
    if (auto rejection =
            engine::config_rejection(version, diagnosis.quant_method, active.config())) {
      Finding finding;
      finding.kind = FindingKind::config_rejected;
      finding.label = active.name;
      const std::string where = quant::pointer_text(active.pointer);
      finding.detail =
          active.name + (where.empty() ? "" : " " + where) + ": " +
          std::string(engine::display_name(engine)) +
          " refuses this quantization config before it builds any layer: " + *rejection;
      finding.engines = {std::string(engine::to_string(engine))};
      finding.engine_error = *rejection;
      diagnosis.findings.push_back(std::move(finding));
    }
    read_as_another_method(engine, active, configs, options, diagnosis);
  }
}

// The notes an assumption that can change a verdict needs, and the versions the patch cannot
// satisfy.
void assumption_notes(engine::EngineSet modelled,
                      const quant::ConfigSet& configs,
                      const ModuleList& modules,
                      Diagnosis& diagnosis) {
  // Whether a stored module's name holds `part`, asked once per part (a naming row asks it for
  // every version it spans, and a 1T-parameter checkpoint has 71k modules).
  std::map<std::string, bool> held;
  const auto stored = [&](const std::string& part) {
    const auto [it, inserted] = held.emplace(part, true);
    if (inserted && !part.empty()) {
      it->second = std::any_of(modules.begin(), modules.end(), [&](const auto& module) {
        return module.name.find(part) != std::string_view::npos;
      });
    }
    return it->second;
  };
  // An assumption that can change a verdict is said: an engine's layer names for an
  // architecture its folder has no naming row for.
  for (const engine::Engine engine : modelled.list()) {
    const engine::EngineVersion newest = engine::newest_version(engine);
    if (engine::naming_of(newest, configs.architecture, configs.num_hidden_layers).assumed_naming) {
      diagnosis.notes.push_back(
          std::string(engine::display_name(engine)) + ": no naming table for " +
          (configs.architecture.empty() ? std::string("this architecture") : configs.architecture) +
          "; judged under assumed names (the checkpoint's, q/k/v and gate/up fused and judged "
          "through their shards)");
    }
    // A row read for the engine, but whose names for some versions judged are assumed: one
    // note for the span, with each version's reason.
    std::string from;
    std::string until;
    std::string reasons;
    // And a build the row assumes (one platform's), over the versions that assume it.
    std::string assumes_from;
    std::string assumes_until;
    std::string assumes;
    for (const engine::EngineVersion& version : diagnosis.versions_judged) {
      if (version.engine != engine || !version.with.empty()) {
        continue;
      }
      const engine::ModelInfo naming =
          engine::naming_of(version, configs.architecture, configs.num_hidden_layers);
      // The row's build, or its mapper's where it renames this method's config.
      const engine::ConfigMapper& mapper = naming.target_config_mapper;
      std::string assumed;
      if (!naming.assumes.empty() && stored(naming.assumes_when)) {
        assumed = naming.assumes;
      } else if (mapper.maps(diagnosis.quant_method)) {
        assumed = mapper.assumes;
      }
      if (!assumed.empty()) {
        assumes_from = assumes_from.empty() ? version.from : assumes_from;
        assumes_until =
            version.newest() ? std::string(engine::history(engine).newest_date) : version.until;
        assumes = assumed;
      }
      if (naming.assumed_naming || naming.assumed_because.empty()) {
        continue;
      }
      from = from.empty() ? version.from : from;
      until = version.until;
      reasons += (reasons.empty() ? "" : "; ") + naming.assumed_because;
    }
    if (!reasons.empty()) {
      diagnosis.notes.push_back(std::string(engine::display_name(engine)) + " main " + from + ".." +
                                until + ": names assumed (" + reasons + ")");
    }
    if (!assumes.empty()) {
      diagnosis.notes.push_back(std::string(engine::display_name(engine)) + " main " +
                                assumes_from + ".." + assumes_until + ": judged with " + assumes);
    }
  }
  // Versions that cannot both be satisfied: the patch is for those that can, and says so.
  const bool some_versions_unloadable =
      std::any_of(diagnosis.findings.begin(), diagnosis.findings.end(), [](const Finding& f) {
        return !f.fixable && !f.versions.empty();
      });
  if (some_versions_unloadable) {
    diagnosis.notes.push_back(
        "some versions judged cannot load this checkpoint whatever the config says (the "
        "findings marked \"only\" say which); the patch satisfies the others; --engine "
        "ENGINE@REF (main, YYYY-MM-DD, a release) judges the version you run alone");
  }
}

} // namespace

Result<Diagnosis> diagnose(const Inventory& inventory,
                           const ModuleList& modules,
                           const quant::ConfigSet& configs,
                           const DiagnoseOptions& options) {
  Diagnosis diagnosis;
  judged_by(options.engines, diagnosis);
  inventory_findings(inventory, modules, diagnosis);
  checkpoint::MtpHead head;
  if (const quant::ConfigFile* config = configs.find("config.json")) {
    head = checkpoint::find_mtp_head(config->doc, modules, inventory);
    if (!head.modules.empty()) {
      diagnosis.mtp = head.summary;
      if (head.declared > 0) {
        diagnosis.mtp += " (" + head.declared_by + ": " + std::to_string(head.declared) + ")";
      }
    }
  }
  const quant::ConfigFile* active = read_without_flags(configs);
  if (active == nullptr) {
    // Judge the sidecar's config as the engines will read it once it is copied.
    active = quantized_without_config(inventory, modules, configs, diagnosis);
    if (active == nullptr) {
      diagnosis.quantized = !diagnosis.findings.empty() &&
                            diagnosis.findings.back().kind == FindingKind::quantized_without_config;
      missing_head_finding(
          head, modules, configs.architecture, diagnosis.quantized, options.engines, diagnosis);
      return finish(std::move(diagnosis)); // not quantized, or nothing to judge it by
    }
  }
  diagnosis.quantized = true;
  diagnosis.quant_method = quant::declared_method(*active);
  diagnosis.built_weight = built_weight(diagnosis.quant_method, active->config());
  const Method* method = find_method(diagnosis.quant_method);
  // A method models only the engines of its row (methods.cpp); an unknown one is judged by none
  // and reported below, as vLLM would load it.
  const engine::EngineSet modelled =
      engines_for_method(method, *active, configs, options, diagnosis);
  judged_by(modelled, diagnosis);
  if (const engine::Engine reference = reference_engine();
      !options.engines.has(reference) && modelled.has(reference)) {
    // None of the engines asked for is modelled, so the reference engine's rules stand in.
    const std::string who(engine::display_name(reference));
    diagnosis.notes.push_back("quant_method \"" + diagnosis.quant_method + "\": only " + who +
                              "'s rules are modelled for this method, so it is judged as " + who +
                              " loads it");
  }
  if (method == nullptr) {
    Finding finding;
    finding.kind = FindingKind::unsupported_method;
    finding.label = active->name;
    finding.detail = active->name + ": quant_method \"" + diagnosis.quant_method +
                     "\" is not judged by this version of qpatch (" + judged_methods_text() +
                     " are)";
    diagnosis.findings.push_back(std::move(finding));
    return finish(std::move(diagnosis));
  }
  std::vector<Finding> inventory_part = std::move(diagnosis.findings);
  diagnosis.findings.clear();
  config_rejections(modelled, *method, *active, configs, options, diagnosis);
  const detail::JudgeInput in{
      inventory, modules, configs, *active, head.modules, options, modelled};
  if (auto status = method->judge(in, diagnosis); !status) {
    return status.take_error();
  }
  assumption_notes(modelled, configs, modules, diagnosis);
  missing_head_finding(
      head, modules, configs.architecture, diagnosis.quantized, options.engines, diagnosis);
  diagnosis.findings.insert(diagnosis.findings.end(), inventory_part.begin(), inventory_part.end());
  return finish(std::move(diagnosis));
}

} // namespace qpatch::diagnose
