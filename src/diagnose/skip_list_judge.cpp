// SPDX-License-Identifier: Apache-2.0
// The judge for AWQ (`modules_to_not_convert`; vLLM's and SGLang's rules), FP8 (`ignored_layers`,
// else `modules_to_not_convert`; SGLang the first key present), bitsandbytes, and ModelOpt
// (vLLM's rules for SGLang), all in
// engine/skip_list_rules.hpp. The fix is the same fixpoint as for compressed-tensors, over every
// judged engine at once: append exact checkpoint names for dense layers an engine would quantize
// (for AWQ experts, the experts layer name, which its substring test needs; for SGLang's AWQ, a
// fused layer's fused name, the only name it tests; for FP8 experts, every expert's names, which
// its experts rule reads), and remove an entry that makes packed layers dense. An absent AWQ list
// is created with every module vLLM would have derived from the headers, since writing the key
// switches that derivation off.
#include "diagnose/fixpoint.hpp"
#include "diagnose/judge_common.hpp"
#include "json/python_values.hpp"

#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/config_checks.hpp>
#include <qpatch/engine/skip_list_rules.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <optional>
#include <set>

namespace qpatch::diagnose::detail {

using engine::SkipListMethod;

namespace {

// "FP8, NVFP4": the MIXED_PRECISION algos the engine builds a quantized layer for.
std::string algos_text(const engine::Dialect& dialect) {
  std::string text;
  for (const std::string& algo : dialect.skip_list.modelopt_mixed_algos) {
    text += (text.empty() ? "" : ", ") + algo;
  }
  return text;
}

// auto_awq.py AutoAWQConfig.maybe_update_config: an absent or empty list (it tests truthiness)
// is derived from the headers: every module none of whose tensors has a dtype other than F16,
// BF16 or F32 (F8 or F64 tensors make a module "quantized").
std::vector<std::string> derived_awq_list(const ModuleList& modules,
                                          const checkpoint::Inventory& inventory) {
  const auto unquantized = [](safetensors::Dtype dtype) {
    return dtype == safetensors::Dtype::F16 || dtype == safetensors::Dtype::BF16 ||
           dtype == safetensors::Dtype::F32;
  };
  std::vector<std::string> entries;
  std::set<std::string> seen;
  for (const Module& module : modules) {
    bool all_float = true;
    for (const uint32_t t : module.tensors) {
      all_float = all_float && unquantized(inventory.tensors[t].dtype);
    }
    if (all_float && seen.insert(std::string(module.name)).second) {
      entries.emplace_back(module.name);
    }
  }
  return entries;
}

Result<SkipList> read_skip_list(const quant::ConfigFile& file,
                                SkipListMethod method,
                                const ModuleList& modules,
                                const checkpoint::Inventory& inventory) {
  const json::Json& config = file.config();
  SkipList list;
  const auto read = [&](const std::string& key) -> Status {
    if (!config.contains(key) || config[key].is_null()) {
      return ok_status();
    }
    const json::Json& value = config[key];
    if (!value.is_array()) {
      return quant::field_error(
          file, quant::pointer_text(file.pointer) + "/" + key, "expected a list of module names");
    }
    list.key = key;
    list.exists = true;
    list.entries.clear();
    for (const auto& item : value) {
      if (item.is_string()) {
        list.entries.push_back(item.get<std::string>());
      }
    }
    list.written = list.entries.size();
    return ok_status();
  };
  if (method == SkipListMethod::modelopt) {
    // config.json carries ModelOpt's exclude_modules as `ignore`; hf_quant_config.json as
    // `exclude_modules`.
    const std::string key = file.name == "hf_quant_config.json" ? "exclude_modules" : "ignore";
    if (auto status = read(key); !status) {
      return status.take_error();
    }
    if (!list.exists) {
      list.key = key;
    }
    return list;
  }
  if (method == SkipListMethod::fp8) {
    if (auto status = read("modules_to_not_convert"); !status) {
      return status.take_error();
    }
    // vLLM reads ignored_layers and falls back to modules_to_not_convert when it is empty.
    if (auto status = read("ignored_layers"); !status) {
      return status.take_error();
    }
    if (list.key == "ignored_layers" && list.entries.empty()) {
      list = SkipList{};
      (void)read("modules_to_not_convert");
    }
    if (!list.exists) {
      list.key = "modules_to_not_convert";
    }
    return list;
  }
  if (method == SkipListMethod::quark) {
    // QuarkConfig.get_quant_method: quant_config.get("exclude").
    if (auto status = read("exclude"); !status) {
      return status.take_error();
    }
    if (!list.exists) {
      list.key = "exclude";
    }
    return list;
  }
  if (method == SkipListMethod::bitsandbytes) {
    if (auto status = read("llm_int8_skip_modules"); !status) {
      return status.take_error();
    }
    if (!list.exists) {
      list.key = "llm_int8_skip_modules";
    }
    return list;
  }
  if (auto status = read("modules_to_not_convert"); !status) {
    return status.take_error();
  }
  if (list.entries.empty()) {
    list.key = "modules_to_not_convert";
    list.derived = true;
    list.entries = derived_awq_list(modules, inventory);
  }
  return list;
}

std::vector<std::string> exclusion_names(const LayerView& view,
                                         const ModuleList& modules,
                                         SkipListMethod method,
                                         const engine::ModelInfo& model,
                                         const engine::Dialect& dialect) {
  const Layer& layer = *view.layer;
  if (dialect.skip_list.awq_built_name_only && method == SkipListMethod::awq) {
    // The engine tests the name it builds the layer under (its own naming), a fused layer by
    // its fused name only: the checkpoint's names where one of them is part of
    // that name, else that name itself.
    if (model.shards_of(std::string(util::last_component(layer.prefix))) != nullptr) {
      return {layer.prefix};
    }
    std::vector<std::string> names;
    for (const uint32_t m : layer.modules) {
      names.emplace_back(modules[m].name);
    }
    const bool reached = std::any_of(names.begin(), names.end(), [&](const std::string& name) {
      return layer.prefix.find(name) != std::string::npos;
    });
    if (!reached) {
      names.push_back(layer.prefix);
    }
    return names;
  }
  if (layer.kind == LayerKind::experts && method == SkipListMethod::awq) {
    return {layer.name}; // the substring test must hit "...mlp.experts"
  }
  if (method == SkipListMethod::bitsandbytes) {
    // Tested by the fused name, as vLLM builds it: entries are never renamed (vllm-bnb-plugin),
    // so the name vLLM asks about is written, and the checkpoint's beside it where it differs
    // (what transformers' loader compares).
    if (layer.prefix == layer.name) {
      return {layer.name};
    }
    return {layer.name, layer.prefix};
  }
  std::vector<std::string> names = ignore_names(layer, modules, model);
  // A fused layer the quant config has no mapping for is looked up by its fused name alone
  // (is_layer_skipped: proj_name not in fused_mapping), which none of its shards' names is:
  // DeepSeek-V4's attn.fused_wqa_wkv on NVIDIA.
  const std::string_view last = util::last_component(layer.prefix);
  if (layer.kind == LayerKind::linear && model.quant_packed && model.shards_of(last) == nullptr &&
      std::any_of(model.packed.begin(),
                  model.packed.end(),
                  [&](const auto& entry) { return entry.first == last; }) &&
      std::none_of(names.begin(), names.end(), [&](const std::string& name) {
        return model.to_vllm(name) == layer.prefix;
      })) {
    // The shards' names as the engine renames them reach nothing either: the checkpoint's
    // (other engines' lists) and the fused name.
    names.resize(std::min(names.size(), layer.modules.size()));
    names.push_back(layer.prefix);
  }
  if (method == SkipListMethod::awq || method == SkipListMethod::modelopt) {
    // A substring test: a checkpoint name contained in the name vLLM asks about ("lm_head" in
    // the Qwen3.5 VLM's "language_model.lm_head") reaches it, so that name is not added too.
    const size_t own = layer.modules.size();
    std::vector<std::string> kept(
        names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(own, names.size())));
    for (size_t i = kept.size(); i < names.size(); ++i) {
      const bool reached = std::any_of(kept.begin(), kept.end(), [&](const std::string& name) {
        return names[i].find(model.to_vllm(name)) != std::string::npos;
      });
      if (!reached) {
        kept.push_back(names[i]);
      }
    }
    return kept;
  }
  return names;
}

// The edit that makes `active`'s list `key` hold exactly `entries` (every item it has goes; a
// key that holds no list, null, gets one).
ArrayChange list_written_as(const quant::ConfigFile& active,
                            const std::string& key,
                            const std::vector<std::string>& entries) {
  ArrayChange change;
  change.file = active.name;
  change.pointer = active.pointer;
  change.pointer.push_back(key);
  const json::Json& config = active.config();
  change.create = !config.contains(key) || !config[key].is_array();
  if (!change.create) {
    const json::Json& raw = config[key];
    for (size_t i = 0; i < raw.size(); ++i) {
      change.remove.push_back(i);
      change.removed_values.push_back(raw[i].is_string() ? raw[i].get<std::string>()
                                                         : raw[i].dump());
    }
  }
  change.append = entries;
  return change;
}

} // namespace

Result<SkipListSetting> skip_list_setting(const quant::ConfigFile& active,
                                          const quant::ConfigSet& configs,
                                          const ModuleList& modules,
                                          const checkpoint::Inventory& inventory) {
  const std::string method_name = quant::declared_method(active);
  const Method* row = find_method(method_name);
  if (row == nullptr || !row->skip_list) {
    // Only a skip-list row's judge reads a skip list: any other name is a dispatch bug, never a
    // reason to judge the config as some other method's.
    Error error = make_error(ErrorCode::internal,
                             active.name,
                             std::nullopt,
                             quant::pointer_text(active.pointer),
                             "quant_method \"" + method_name + "\" has no skip list");
    error.subject_kind = "at";
    return error;
  }
  SkipListSetting setting;
  setting.method = *row->skip_list;
  // ModelOpt NVFP4: vLLM builds Qwen3.5/Next mtp.fc dense (the "modelopt_fp4" method).
  std::string algo;
  for (const quant::ConfigFile& file : configs.files) {
    if (file.has_config() && file.config().contains("quant_algo") &&
        file.config()["quant_algo"].is_string() && algo.empty()) {
      algo = file.config()["quant_algo"].get<std::string>();
    }
  }
  setting.nvfp4 = setting.method == SkipListMethod::modelopt && algo == "NVFP4";
  if (setting.method == SkipListMethod::modelopt && algo == "MIXED_PRECISION") {
    for (const quant::ConfigFile& file : configs.files) {
      if (!file.has_config() || setting.quantized_layers ||
          !file.config().contains("quantized_layers") ||
          !file.config()["quantized_layers"].is_object()) {
        continue;
      }
      setting.quantized_layers.emplace();
      for (const auto& [key, value] : file.config()["quantized_layers"].items()) {
        const bool has_algo =
            value.is_object() && value.contains("quant_algo") && value["quant_algo"].is_string();
        setting.quantized_layers->emplace_back(
            key, util::upper_ascii(has_algo ? value["quant_algo"].get<std::string>() : "?"));
      }
    }
  }
  if (setting.method == SkipListMethod::awq && active.config().contains("lm_head")) {
    // get_from_keys_or(config, ["lm_head"], default=False), used for its truthiness.
    setting.lm_head_quantized = py::truthy(active.config()["lm_head"]);
  }
  if (setting.method == SkipListMethod::awq) {
    setting.awq_marlin = engine::awq_marlin_compatible(active.config());
  }
  QP_TRY_ASSIGN(setting.list, read_skip_list(active, setting.method, modules, inventory));
  if (setting.method == SkipListMethod::fp8) {
    // read_skip_list has refused a value that is neither null nor a list.
    const auto strings = [&](const char* key) -> std::optional<std::vector<std::string>> {
      const json::Json& config = active.config();
      if (!config.contains(key) || !config[key].is_array()) {
        return std::nullopt;
      }
      std::vector<std::string> out;
      for (const auto& item : config[key]) {
        if (item.is_string()) {
          out.push_back(item.get<std::string>());
        }
      }
      return out;
    };
    setting.fp8_ignored_layers = strings("ignored_layers");
    setting.fp8_modules_to_not_convert = strings("modules_to_not_convert");
    setting.fp8_ignored_layers_key = active.config().contains("ignored_layers");
  }
  return setting;
}

engine::SkipListRules SkipListSetting::judge(const engine::EngineVersion& version,
                                             std::vector<std::string> entries,
                                             const engine::ModelInfo& model) const {
  const bool given =
      list.exists || !entries.empty() || fp8_ignored_layers || fp8_modules_to_not_convert;
  engine::SkipListRules out(method, std::move(entries), model, nvfp4, version);
  const bool marlin_ok =
      !engine::dialect_of(version, model).skip_list.awq_head_needs_marlin || awq_marlin;
  out.set_lm_head_quantized(lm_head_quantized && marlin_ok);
  // A list the patch writes is given from then on (it creates the key with its entries).
  out.set_list_given(given);
  if (quantized_layers) {
    out.set_quantized_layers(*quantized_layers);
  }
  return out;
}

namespace {} // namespace

std::string SkipListSetting::key_read_by(const engine::EngineVersion& version,
                                         const engine::ModelInfo& model) const {
  if (method == SkipListMethod::fp8 &&
      engine::dialect_of(version, model).skip_list.fp8_first_present_key) {
    return fp8_ignored_layers_key ? "ignored_layers" : "modules_to_not_convert";
  }
  if (method == SkipListMethod::fp8 &&
      engine::dialect_of(version, model).skip_list.fp8_prefers_modules_to_not_convert) {
    return fp8_modules_to_not_convert || !fp8_ignored_layers ? "modules_to_not_convert"
                                                             : "ignored_layers";
  }
  return list.key;
}

std::vector<std::string> SkipListSetting::read_by(const engine::EngineVersion& version,
                                                  const engine::ModelInfo& model) const {
  if (method == SkipListMethod::fp8 &&
      engine::dialect_of(version, model).skip_list.fp8_first_present_key) {
    // A null value reads as None, then `ignored_layers or []`.
    return (fp8_ignored_layers_key ? fp8_ignored_layers : fp8_modules_to_not_convert)
        .value_or(std::vector<std::string>());
  }
  if (method == SkipListMethod::fp8 &&
      engine::dialect_of(version, model).skip_list.fp8_prefers_modules_to_not_convert) {
    return fp8_modules_to_not_convert ? *fp8_modules_to_not_convert
           : fp8_ignored_layers       ? *fp8_ignored_layers
                                      : std::vector<std::string>();
  }
  return list.derived && !engine::dialect_of(version, model).skip_list.awq_derives_absent_list
             ? std::vector<std::string>()
             : list.entries;
}

namespace {

// The list the fix works on: the entries it keeps, and the names it appends (with the order of
// the module they are for), re-judged until stable.
struct ListEdit {
  SkipList list;
  std::set<size_t> removed;                             // indices into list.entries
  std::vector<std::pair<std::string, size_t>> appended; // name, module order

  // The list as it stands, and where each entry came from (its index in list.entries, or none
  // for an appended one).
  std::pair<std::vector<std::string>, std::vector<std::optional<size_t>>> current() const {
    std::vector<std::string> entries;
    std::vector<std::optional<size_t>> origin;
    for (size_t i = 0; i < list.entries.size(); ++i) {
      if (removed.count(i) == 0) {
        entries.push_back(list.entries[i]);
        origin.emplace_back(i);
      }
    }
    for (const auto& added : appended) {
      entries.push_back(added.first);
      origin.emplace_back(std::nullopt);
    }
    return {entries, origin};
  }
  bool edits() const { return !removed.empty() || !appended.empty(); }
  bool empties_written_list() const {
    return !list.entries.empty() && appended.empty() && removed.size() == list.entries.size();
  }
};

// The fixpoint's step over every judged engine at once: append exact checkpoint names for the
// dense layers an engine would quantize, remove an entry that makes a quantized layer dense.
class SkipListFixer {
public:
  SkipListFixer(const EngineViews& judged,
                const ModuleList& modules,
                const SkipListSetting& setting)
      : m_judged(judged), m_modules(modules), m_setting(setting) {}

  void run(ListEdit& edit) const {
    fix_to_fixpoint([&] { return step(edit); });
  }

private:
  // An entry in SGLang's names is a substring test in every engine: it must not reach a layer
  // stored quantized under any engine's names (vLLM's Qwen3-Next target
  // model.language_model.layers.0.self_attn.qkv_proj contains the draft's model.layers.0...).
  bool reaches_quantized(const std::string& name) const {
    for (const auto& engine_view : m_judged) {
      for (const LayerView& other : *engine_view->views) {
        if (other.disk == Disk::quantized && (other.layer->prefix.find(name) != std::string::npos ||
                                              other.layer->name.find(name) != std::string::npos)) {
          return true;
        }
      }
    }
    return false;
  }

  // Whether the one entry `name` makes a layer stored quantized dense (or its shards disagree)
  // under any judged engine.
  bool skips_quantized(const std::string& name) const {
    for (const auto& engine_view : m_judged) {
      const engine::SkipListRules judge =
          m_setting.judge(engine_view->version, {name}, engine_view->model);
      for (const LayerView& other : *engine_view->views) {
        if (other.disk != Disk::quantized) {
          continue;
        }
        const Decision decision = judge.decide(*other.layer);
        if (decision.verdict == Verdict::load_error ||
            (decision.verdict == Verdict::dense && decision.by == DecidedBy::ignore_entry)) {
          return true;
        }
      }
    }
    return false;
  }

  // The names to append for a dense layer `view` that `engine_view` would quantize, with the
  // list at `entries`.
  std::vector<std::string> names_for(const LayerView& view,
                                     const Decision& decision,
                                     const std::vector<std::string>& entries,
                                     const EngineView& engine_view) const {
    const SkipListMethod method = m_setting.method;
    std::vector<std::string> names =
        exclusion_names(view, m_modules, method, engine_view.model, engine_view.dialect);
    // SGLang's FP8 and ModelOpt test a layer their quant config's mapping does not fuse by its
    // own name (the Qwen3.5 draft's mtp.layers.0.self_attn.qkv_proj, mapping {}; ModelOpt's
    // is_layer_skipped is FP8's, and is_layer_excluded full-matches the whole name): once the
    // checkpoint's names are listed and it is still quantized, that name. So does any engine
    // version whose layer names are not its entries' renamed (vLLM's Qwen3_5ForCausalLM from
    // #50210 to #50355, no mapper: layers at model.layers.N, entries as written), for every
    // method whose entries it reads exactly (Quark, FP8, ModelOpt), and SGLang's Quark (its
    // DeepSeek-V3 draft at model.decoder before #19425 renamed the entries).
    const auto& dialect = engine_view.dialect.skip_list;
    const bool exact_reader = method == SkipListMethod::fp8 || method == SkipListMethod::modelopt ||
                              method == SkipListMethod::quark;
    if (((method == SkipListMethod::fp8 && dialect.fp8_first_present_key) ||
         (method == SkipListMethod::modelopt && dialect.modelopt_skipped_or_excluded) ||
         (exact_reader && engine_view.engine != engine::Engine::transformers &&
          engine_view.model.separate_layer_names)) &&
        std::all_of(names.begin(), names.end(), [&](const std::string& name) {
          return std::find(entries.begin(), entries.end(), name) != entries.end();
        })) {
      // The names it tests: its shards where the mapping fuses it (SGLang before #18926 builds
      // the vision tower's attn.qkv as visual...attn.qkv_proj), else its own; none where another
      // engine or version builds a quantized layer under it (SGLang before #18926 builds the
      // draft at the target's model.layers.0).
      std::vector<std::string> tested = decision.shards;
      if (tested.empty()) {
        tested.push_back(view.layer->prefix);
      }
      names.clear();
      for (const std::string& name : tested) {
        // A target whose class's mapper renames the list (SGLang's Qwen3.5 VLM until #23471):
        // a spelling it leaves reaching the layer (Quark reads "re:", ModelOpt dotted parts;
        // FP8's own model.-stripped variant already survives it).
        const std::string spelled = method == SkipListMethod::fp8
                                        ? name
                                        : spelling_past_mapper(engine_view.model,
                                                               engine::method_name(method),
                                                               name,
                                                               method == SkipListMethod::quark
                                                                   ? MapperSpelling::regex
                                                                   : MapperSpelling::dotted_tail);
        if (!skips_quantized(spelled)) {
          names.push_back(spelled);
        }
      }
    }
    std::vector<std::string> kept;
    for (const std::string& name : names) {
      if (dialect.awq_built_name_only && method == SkipListMethod::awq &&
          name != view.layer->name && reaches_quantized(name)) {
        continue; // a substring of a quantized layer's name: no list can name it alone
      }
      kept.push_back(name);
    }
    return kept;
  }

  bool step(ListEdit& edit) const {
    const auto listed = edit.current();
    const std::vector<std::string>& entries = listed.first;
    const std::vector<std::optional<size_t>>& origin = listed.second;
    bool changed = false;
    for (const auto& engine_view : m_judged) {
      const engine::SkipListRules judge =
          m_setting.judge(engine_view->version, entries, engine_view->model);
      each_decided(
          *engine_view->views, judge, [&](const LayerView& view, const Decision& decision) {
            const bool error = decision.verdict == Verdict::load_error;
            // A layer the model cannot run dense is not made dense: no entry helps it.
            const bool runs_dense =
                engine_view->model.needs_quantized_because(view.layer->prefix).empty();
            if (view.disk == Disk::dense && runs_dense &&
                (decision.verdict == Verdict::quantized || error)) {
              for (const std::string& name : names_for(view, decision, entries, *engine_view)) {
                const auto same = [&](const auto& added) { return added.first == name; };
                if (std::find(entries.begin(), entries.end(), name) == entries.end() &&
                    std::none_of(edit.appended.begin(), edit.appended.end(), same)) {
                  edit.appended.emplace_back(name, view.order);
                  changed = true;
                }
              }
            } else if (view.disk == Disk::quantized && decision.ignore_index) {
              if (const auto original = origin.at(*decision.ignore_index)) {
                changed = edit.removed.insert(*original).second || changed;
              }
            }
          });
    }
    return changed;
  }

  const EngineViews& m_judged;
  const ModuleList& m_modules;
  const SkipListSetting& m_setting;
};

// FP8 judged only by engines that read one list other than vLLM's way (transformers prefers
// modules_to_not_convert, SGLang reads the first key present): when they all read the same
// list, that list is the one edited.
std::optional<SkipList> list_all_read(const EngineViews& judged,
                                      const SkipListSetting& skip_list,
                                      const quant::ConfigFile& active) {
  const auto own_reading = [](const auto& view) {
    return view->dialect.skip_list.fp8_prefers_modules_to_not_convert ||
           view->dialect.skip_list.fp8_first_present_key;
  };
  if (skip_list.method != SkipListMethod::fp8 ||
      !std::all_of(judged.begin(), judged.end(), own_reading)) {
    return std::nullopt;
  }
  const std::string key = skip_list.key_read_by(judged.front()->version, judged.front()->model);
  const std::vector<std::string> entries =
      skip_list.read_by(judged.front()->version, judged.front()->model);
  if (!std::all_of(judged.begin(), judged.end(), [&](const auto& view) {
        return skip_list.key_read_by(view->version, view->model) == key &&
               skip_list.read_by(view->version, view->model) == entries;
      })) {
    return std::nullopt;
  }
  SkipList list;
  list.key = key;
  list.exists = active.config().contains(key) && active.config()[key].is_array();
  list.entries = entries;
  list.written = list.entries.size();
  return list;
}

// A fix that removes every entry of a written AWQ list would leave it falsy, and vLLM would
// derive one from the headers after all (maybe_update_config), parents such as a GDN
// `linear_attn` (A_log, dt_bias) among its entries. The derived list is written instead, less
// what the fixpoint removes from it; returns the written entries it replaces.
std::vector<std::string> write_derived_awq_list(ListEdit& edit,
                                                const SkipListFixer& fixer,
                                                const ModuleList& modules,
                                                const checkpoint::Inventory& inventory) {
  if (edit.list.derived || !edit.empties_written_list()) {
    return {};
  }
  std::vector<std::string> replaced = edit.list.entries;
  edit.list.entries = derived_awq_list(modules, inventory);
  edit.list.derived = true;
  edit.removed.clear();
  fixer.run(edit);
  return replaced;
}

// FP8: an emptied `ignored_layers` makes Fp8Config.from_config fall back to
// `modules_to_not_convert` (fp8.py: `if not ignored_layers`). The fix empties the one (the
// change returned) and goes on with the other.
std::optional<ArrayChange> fall_back_to_modules_to_not_convert(ListEdit& edit,
                                                               const SkipListFixer& fixer,
                                                               const quant::ConfigFile& active) {
  const json::Json& config = active.config();
  if (edit.list.key != "ignored_layers" || !edit.empties_written_list() ||
      !config.contains("modules_to_not_convert") || !config["modules_to_not_convert"].is_array() ||
      config["modules_to_not_convert"].empty()) {
    return std::nullopt;
  }
  ArrayChange emptied;
  emptied.file = active.name;
  emptied.pointer = active.pointer;
  emptied.pointer.push_back(edit.list.key);
  for (size_t i = 0; i < edit.list.entries.size(); ++i) {
    emptied.remove.push_back(i);
    emptied.removed_values.push_back(edit.list.entries[i]);
  }
  edit.list = SkipList{};
  edit.list.key = "modules_to_not_convert";
  edit.list.exists = true;
  for (const auto& item : config["modules_to_not_convert"]) {
    if (item.is_string()) {
      edit.list.entries.push_back(item.get<std::string>());
    }
  }
  edit.list.written = edit.list.entries.size();
  edit.removed.clear();
  fixer.run(edit);
  return emptied;
}

// How one engine's verdict on a layer is worded in a finding.
auto finding_words(const EngineView& engine_view,
                   const SkipListSetting& skip_list,
                   const std::string& method_name) {
  const engine::Engine engine = engine_view.engine;
  const std::string key = skip_list.key_read_by(engine_view.version, engine_view.model);
  const std::vector<std::string> read = skip_list.read_by(engine_view.version, engine_view.model);
  return [&engine_view, method_name, engine, key, read](const LayerView& view,
                                                        const Decision& decision) {
    const std::string who(engine::display_name(engine));
    if (decision.verdict == Verdict::load_error && decision.by == DecidedBy::undecidable) {
      // vLLM's Quark: a "re:" exclude entry that does not compile, reached by this layer's test.
      return std::pair(FindingKind::undecidable,
                       "reach an exclude entry that is no Python regex before any entry matches "
                       "them: " +
                           who + " raises while it builds the model: " + decision.error);
    }
    if (decision.verdict == Verdict::load_error) {
      return shards_disagree(view, decision, who);
    }
    if (const std::string_view why = engine_view.model.needs_quantized_because(view.layer->prefix);
        view.disk == Disk::dense && !why.empty()) {
      return needs_quantized_problem(view, who, why);
    }
    if (view.disk == Disk::dense) {
      return std::pair(FindingKind::dense_quantized_by_config,
                       "stored " + view.stored + " but quantized by " +
                           (decision.by == DecidedBy::target_name
                                ? "their quantized_layers entry (" + decision.target + ")"
                                : method_name) +
                           " (not in " + key + ")");
    }
    if (decision.by == DecidedBy::no_target) {
      return std::pair(FindingKind::quantized_untargeted,
                       "stored " + view.stored +
                           " but no quantized_layers entry gives them an algo " + who +
                           " builds (" + algos_text(engine_view.dialect) +
                           "): built dense (not fixable by a config patch)");
    }
    if (decision.by == DecidedBy::ignore_entry) {
      return std::pair(FindingKind::quantized_made_dense,
                       "stored " + view.stored + " but made dense by " + key + " entry " +
                           quoted(read.at(*decision.ignore_index)));
    }
    return std::pair(FindingKind::engine_builds_dense,
                     "stored " + view.stored + " but " + who +
                         " builds this layer dense: not fixable by a config patch");
  };
}

// Every layer whose verdict an engine gets wrong, before the fix and after it.
void report_layers(const EngineViews& judged,
                   const ModuleList& modules,
                   const SkipListSetting& skip_list,
                   const ListEdit& edit,
                   const std::string& method_name,
                   Diagnosis& diagnosis) {
  LayerProblems problems;
  for (const auto& engine_view : judged) {
    const engine::Engine engine = engine_view->engine;
    const engine::SkipListRules before =
        skip_list.judge(engine_view->version,
                        skip_list.read_by(engine_view->version, engine_view->model),
                        engine_view->model);
    const engine::SkipListRules after =
        skip_list.judge(engine_view->version, edit.current().first, engine_view->model);
    problems.add(*engine_view->views,
                 modules,
                 before,
                 after,
                 finding_words(*engine_view, skip_list, method_name),
                 {engine, &engine_view->version});
    // fp8.py Fp8Config.get_quant_method (and each method's get_quant_method) builds a fused
    // layer as one, with one quant method, so its shards must be stored alike.
    problems.add_storage(*engine_view->views, modules, engine);
    problems.add_needs_quantized(
        *engine_view->views, modules, before, engine_view->model, {engine, &engine_view->version});
  }
  problems.report(diagnosis.findings, &judged);
}

// The edit of the active file's list, and that list as it reads after the fix.
struct ListChange {
  ArrayChange change;
  std::vector<std::string> final_list; // empty when nothing is written
  bool writes = false;                 // the fix edits the list (or replaces it)
};

ListChange list_change(const quant::ConfigFile& active,
                       ListEdit& edit,
                       const std::vector<std::string>& replaced) {
  std::stable_sort(edit.appended.begin(), edit.appended.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;
  });
  ListChange out;
  out.writes = edit.edits() || !replaced.empty();
  ArrayChange& change = out.change;
  change.file = active.name;
  change.pointer = active.pointer;
  change.pointer.push_back(edit.list.key);
  change.create = !edit.list.exists;
  for (size_t i = 0; i < replaced.size(); ++i) {
    change.remove.push_back(i);
    change.removed_values.push_back(replaced[i]);
  }
  for (size_t i = 0; i < edit.list.entries.size(); ++i) {
    if (edit.list.derived) {
      // The derived list is written (writing the key switches the derivation off), less what
      // the fix removes.
      if (edit.removed.count(i) == 0) {
        change.append.push_back(edit.list.entries[i]);
      }
    } else if (edit.removed.count(i) > 0) {
      change.remove.push_back(i);
      change.removed_values.push_back(edit.list.entries[i]);
    } else {
      out.final_list.push_back(edit.list.entries[i]);
    }
  }
  for (const auto& added : edit.appended) {
    change.append.push_back(added.first);
  }
  out.final_list.insert(out.final_list.end(), change.append.begin(), change.append.end());
  if (edit.list.derived && !out.writes) {
    out.final_list.clear(); // nothing is written
  }
  return out;
}

// Every other file carrying the same method's list (ModelOpt's hf_quant_config.json beside a
// "modelopt_fp4" config.json, an AWQ or FP8 quantization_config.json sidecar) follows the one
// vLLM reads: same removals, same additions; one with no list gets config.json's whole list.
void sync_other_files(const JudgeInput& in,
                      SkipListMethod method,
                      const std::string& key,
                      const ListChange& edited,
                      Diagnosis& diagnosis) {
  const Method* family = find_method(quant::declared_method(in.active));
  for (const quant::ConfigFile& file : in.configs.files) {
    if (&file == &in.active || find_method(quant::declared_method(file)) != family) {
      continue;
    }
    auto other = read_skip_list(file, method, in.modules, in.inventory);
    if (!other) {
      continue;
    }
    if (!other->exists || other->derived) {
      // The sidecar holds no list (FP8 `ignored_layers: []` reads as none): it gets the one
      // config.json has after the fix, under the same key, so both files say the same.
      const json::Json& side = file.config();
      const bool has_key = side.contains(key) && side[key].is_array();
      if (edited.final_list.empty() || (has_key && !side[key].empty())) {
        continue;
      }
      ArrayChange sync;
      sync.file = file.name;
      sync.pointer = file.pointer;
      sync.pointer.push_back(key);
      sync.create = !has_key;
      sync.append = edited.final_list;
      if (!edited.writes) {
        Finding finding;
        finding.kind = FindingKind::configs_disagree;
        finding.label = file.name;
        finding.detail = file.name + ": has no " + key + " list, config.json's has " +
                         std::to_string(edited.final_list.size()) +
                         (edited.final_list.size() == 1 ? " entry" : " entries") +
                         " (vLLM reads config.json)";
        finding.fixable = true;
        diagnosis.findings.push_back(std::move(finding));
      }
      diagnosis.array_changes.push_back(std::move(sync));
      continue;
    }
    if (!edited.writes) {
      continue;
    }
    ArrayChange sync;
    sync.file = file.name;
    sync.pointer = file.pointer;
    sync.pointer.push_back(other->key);
    const ArrayChange& change = edited.change;
    for (size_t i = 0; i < other->entries.size(); ++i) {
      if (std::find(change.removed_values.begin(),
                    change.removed_values.end(),
                    other->entries[i]) != change.removed_values.end()) {
        sync.remove.push_back(i);
        sync.removed_values.push_back(other->entries[i]);
      }
    }
    for (const std::string& name : change.append) {
      if (std::find(other->entries.begin(), other->entries.end(), name) == other->entries.end()) {
        sync.append.push_back(name);
      }
    }
    if (!sync.remove.empty() || !sync.append.empty()) {
      diagnosis.array_changes.push_back(std::move(sync));
    }
  }
}

// FP8's two keys kept in step for the engines that read the other one. `edited` is the list the
// fix edited, as it reads after the fix; `emptied` the emptying of ignored_layers (if any).
void sync_fp8_keys(const EngineViews& judged,
                   const SkipListSetting& skip_list,
                   const quant::ConfigFile& active,
                   const SkipList& edited,
                   std::optional<ArrayChange>& emptied,
                   Diagnosis& diagnosis) {
  const std::string& key = edited.key;
  const std::vector<std::string>& wanted = edited.entries;
  // An engine that prefers modules_to_not_convert (transformers) reads it whenever it is there,
  // so where vLLM reads ignored_layers the two are made the same list.
  const bool mtnc_read = std::any_of(judged.begin(), judged.end(), [](const auto& view) {
    return view->dialect.skip_list.fp8_prefers_modules_to_not_convert;
  });
  if (mtnc_read && !emptied && key == "ignored_layers" && skip_list.fp8_modules_to_not_convert) {
    // An entry that is no Python regex skips nothing there (should_convert_module's endswith
    // alone could) but makes re.match raise: it is left out, which changes no verdict.
    std::vector<std::string> valid;
    for (const std::string& entry : wanted) {
      if (engine::Pattern::compile(entry, "modules_to_not_convert")) {
        valid.push_back(entry);
      }
    }
    if (*skip_list.fp8_modules_to_not_convert != valid) {
      diagnosis.array_changes.push_back(list_written_as(active, "modules_to_not_convert", valid));
    }
  }
  // An engine that reads the first key present (SGLang) reads ignored_layers whenever the key is
  // there, empty or null; where vLLM reads modules_to_not_convert past it, ignored_layers is
  // given the same list (vLLM then reads it, or, empty, falls back to the same entries).
  const bool first_present = std::any_of(judged.begin(), judged.end(), [](const auto& view) {
    return view->dialect.skip_list.fp8_first_present_key;
  });
  if (first_present && skip_list.fp8_ignored_layers_key && key != "ignored_layers") {
    if (emptied) {
      emptied->append = wanted;
    } else if (skip_list.fp8_ignored_layers.value_or(std::vector<std::string>()) != wanted) {
      diagnosis.array_changes.push_back(list_written_as(active, "ignored_layers", wanted));
    }
  }
}

// The lint of the list as written (skip_list_lint.hpp). Every judged view decides with this
// list, also one that reads FP8's other key: the patch may copy this list there (sync_fp8_keys),
// and then transformers' FP8 quantizes lm_head unless the list names it. An entry is dead only
// if no view's verdict changes without it; over-broad counts the views that read the list.
// A derived AWQ list is not written, so not linted; nor is a list longer than
// k_lint_by_default_up_to without --prune (each candidate set is judged again).
std::optional<SkipListLint> lint_list(const EngineViews& judged,
                                      const SkipListSetting& setting,
                                      const SkipList& list,
                                      const quant::ConfigFile& active,
                                      const DiagnoseOptions& options) {
  if (list.derived || list.entries.empty() ||
      (list.entries.size() > k_lint_by_default_up_to && !options.prune)) {
    return std::nullopt;
  }
  SkipListLint lint;
  lint.file = active.name;
  lint.pointer = active.pointer;
  lint.pointer.push_back(list.key);
  lint.entries = list.entries;
  std::set<size_t> live;
  std::set<size_t> over_broad;
  std::vector<std::vector<Decision>> first(judged.size());
  for (size_t r = 0; r < judged.size(); ++r) {
    const EngineView& reader = *judged[r];
    const bool reads_it = setting.key_read_by(reader.version, reader.model) == list.key &&
                          setting.read_by(reader.version, reader.model) == list.entries;
    const engine::SkipListRules rules = setting.judge(reader.version, list.entries, reader.model);
    for (const LayerView& view : *reader.views) {
      first[r].push_back(rules.decide(*view.layer));
      const Decision& decision = first[r].back();
      if (decision.ignore_index) {
        live.insert(*decision.ignore_index);
        if (reads_it && decision.by == DecidedBy::ignore_entry && view.disk == Disk::quantized) {
          over_broad.insert(*decision.ignore_index);
        }
      }
    }
  }
  lint.over_broad.assign(over_broad.begin(), over_broad.end());
  find_dead_entries(lint, live, [&](const std::vector<size_t>& removed) {
    std::vector<std::string> without;
    for (size_t i = 0; i < list.entries.size(); ++i) {
      if (!std::binary_search(removed.begin(), removed.end(), i)) {
        without.push_back(list.entries[i]);
      }
    }
    for (size_t r = 0; r < judged.size(); ++r) {
      const engine::SkipListRules rules =
          setting.judge(judged[r]->version, without, judged[r]->model);
      const auto& views = *judged[r]->views;
      for (size_t v = 0; v < views.size(); ++v) {
        const Decision decision = rules.decide(*views[v].layer);
        const Decision& before = first[r][v];
        if (decision.verdict != before.verdict || decision.by != before.by ||
            decision.shard_ignored != before.shard_ignored) {
          return false;
        }
      }
    }
    return true;
  });
  return lint;
}

// --prune: the dead and duplicate entries of the list as the fix leaves it, linted again until
// it has none (an entry of the file, or one the fix appended, can be dead once the others are
// listed), so a second run with --prune writes nothing. AWQ keeps one entry: an empty list is
// derived from the headers again (auto_awq.py). Returns the file's entries taken out.
std::set<size_t> prune_to_fixpoint(const EngineViews& judged,
                                   const SkipListSetting& setting,
                                   const quant::ConfigFile& active,
                                   const DiagnoseOptions& options,
                                   ListEdit& edit) {
  std::set<size_t> pruned;
  for (size_t round = 0; round <= edit.list.entries.size() + edit.appended.size(); ++round) {
    const auto [entries, origin] = edit.current();
    SkipList now = edit.list;
    now.entries = entries;
    now.derived = false;
    const auto lint = lint_list(judged, setting, now, active, options);
    if (!lint) {
      break;
    }
    std::vector<size_t> gone = pruned_entries(*lint);
    if (setting.method == SkipListMethod::awq && gone.size() == entries.size() && !gone.empty()) {
      gone.pop_back();
    }
    if (gone.empty()) {
      break;
    }
    std::set<std::string> dropped;
    for (const size_t i : gone) {
      if (origin[i]) {
        edit.removed.insert(*origin[i]);
        pruned.insert(*origin[i]);
      } else {
        dropped.insert(entries[i]);
      }
    }
    edit.appended.erase(
        std::remove_if(edit.appended.begin(),
                       edit.appended.end(),
                       [&](const auto& added) { return dropped.count(added.first); }),
        edit.appended.end());
  }
  return pruned;
}

} // namespace

Status
judge_skip_list(const JudgeInput& in, const SkipListSetting& skip_list, Diagnosis& diagnosis) {
  const checkpoint::Inventory& inventory = in.inventory;
  const ModuleList& modules = in.modules;
  const quant::ConfigFile& active = in.active;
  const std::string method_name = quant::declared_method(active);
  const SkipListMethod method = skip_list.method;
  const NamingSetting setting = naming_setting(inventory, modules, in.configs, in.options);
  // Every version of every engine whose rules differ (versions.hpp), each on the layers it
  // builds under its own names (its folder's naming.cpp).
  auto judged = engine_views(in.engines,
                             setting.model,
                             {modules, inventory, in.mtp_head, in.options},
                             engine::method_name(method));
  judged_versions(judged, diagnosis);
  // Dead is "in every engine asked for": an engine whose loader for the method qpatch has not
  // read (History.methods; methods.cpp) could need any entry, and one that refuses the config
  // judges no entry, so the list is then not linted.
  const Method* row = find_method(method_name);
  const std::vector<engine::Engine> asked = in.options.engines.list();
  const bool lintable =
      row != nullptr &&
      std::all_of(asked.begin(),
                  asked.end(),
                  [&](engine::Engine engine) { return row->engines.has(engine); }) &&
      std::none_of(diagnosis.findings.begin(), diagnosis.findings.end(), [](const Finding& f) {
        return f.kind == FindingKind::config_rejected;
      });
  // An engine with no quantizer for the method skips the whole config, and a version that reads
  // it as another method (config_read_as: SGLang's MIXED_PRECISION as w4afp8) builds no layer by
  // its lists: their finding (config_checks) is the one, no layer of them is judged or patched.
  judged.erase(std::remove_if(judged.begin(),
                              judged.end(),
                              [&](const auto& view) {
                                return (method == SkipListMethod::modelopt &&
                                        view->dialect.skip_list.modelopt_unsupported) ||
                                       engine::config_read_as(view->version,
                                                              method_name,
                                                              active.config(),
                                                              in.configs.architecture);
                              }),
               judged.end());
  if (judged.empty()) {
    return ok_status();
  }
  ListEdit edit{list_all_read(judged, skip_list, active).value_or(skip_list.list), {}, {}};
  if (lintable) {
    diagnosis.lint = lint_list(judged, skip_list, edit.list, active, in.options);
  }
  const SkipListFixer fixer(judged, modules, skip_list);
  fixer.run(edit);
  const std::vector<std::string> replaced =
      method == SkipListMethod::awq ? write_derived_awq_list(edit, fixer, modules, inventory)
                                    : std::vector<std::string>();
  std::optional<ArrayChange> emptied =
      method == SkipListMethod::fp8 ? fall_back_to_modules_to_not_convert(edit, fixer, active)
                                    : std::nullopt;
  if (in.options.prune && lintable) {
    const std::set<size_t> pruned = prune_to_fixpoint(judged, skip_list, active, in.options, edit);
    // The finding names the file's entries by the lint of the list as written: only while the
    // edit is still on that list (not the derived AWQ list, not FP8's other key after
    // fall_back_to_modules_to_not_convert), or its indices would name another list's entries.
    if (!pruned.empty() && diagnosis.lint && !edit.list.derived &&
        diagnosis.lint->pointer.back() == edit.list.key) {
      diagnosis.findings.push_back(pruned_entries_finding(*diagnosis.lint, pruned));
    }
  }
  report_layers(judged, modules, skip_list, edit, method_name, diagnosis);
  ListChange edited = list_change(active, edit, replaced);
  sync_other_files(in, method, edit.list.key, edited, diagnosis);
  if (method == SkipListMethod::fp8) {
    SkipList after;
    after.key = edit.list.key;
    after.entries = edited.writes ? edited.final_list : edit.list.entries;
    sync_fp8_keys(judged, skip_list, active, after, emptied, diagnosis);
  }
  if (edited.writes) {
    diagnosis.array_changes.push_back(std::move(edited.change));
  }
  if (emptied) {
    diagnosis.array_changes.push_back(std::move(*emptied));
  }
  return ok_status();
}

} // namespace qpatch::diagnose::detail
