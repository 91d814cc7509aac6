// SPDX-License-Identifier: Apache-2.0
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/explain.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/auto_round_rules.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/gptq_rules.hpp>
#include <qpatch/quant/auto_round.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/quant/gptq.hpp>
#include <qpatch/report/inspect_report.hpp>

#include <algorithm>

namespace qpatch::diagnose {

using checkpoint::Module;
using checkpoint::ModuleList;
using engine::Layer;

namespace {

// "vLLM main 2026-02-28..017e9f4 (2026-08-17), 5 versions, SGLang ... and transformers ...": the
// versions traced of each engine, as the method's judge judges them.
std::string judged_text(engine::EngineSet engines,
                        const Method& row,
                        const std::string& method,
                        const std::string& architecture,
                        const engine::VersionPins& pins) {
  std::vector<std::string> rules;
  for (const engine::Engine engine : engines.list()) {
    rules.push_back(engine::versions_text(
        engine::versions_to_judge(engine, row.name, architecture, pins), method));
  }
  return engine::join_names(rules);
}

std::string disk_text(const detail::LayerView& v) {
  return v.disk == detail::Disk::dense       ? "dense (" + v.stored + ")"
         : v.disk == detail::Disk::quantized ? "quantized (" + v.stored + ")"
         : v.disk == detail::Disk::mixed     ? std::string("shards stored differently")
                                             : std::string("inconsistent");
}

// Lines that close a trace over several engines: what is stored, and who builds it wrong.
void close_trace(detail::ExplainContext& context, const std::vector<std::string>& wrong) {
  auto& lines = context.out.lines;
  context.out.consistent = wrong.empty();
  lines.emplace_back("on disk",
                     context.view == nullptr ? std::string("?") : disk_text(*context.view));
  std::string who;
  for (const std::string& engine : wrong) {
    who += (who.empty() ? "" : ", ") + engine;
  }
  lines.emplace_back("status",
                     context.out.consistent
                         ? std::string("consistent: every engine builds what is stored")
                         : "inconsistent for " + who + ": run `qpatch --dry-run " +
                               context.inventory.command_name() + "` to see the fix");
}

} // namespace

Result<Explanation> explain(const checkpoint::Inventory& inventory,
                            const ModuleList& modules,
                            const quant::ConfigSet& configs,
                            const std::string& name,
                            engine::EngineSet engines,
                            const engine::VersionPins& pins) {
  const engine::ModelInfo model =
      engine::model_info_for(configs.architecture, configs.num_hidden_layers);
  const std::vector<Layer> layers = engine::build_layers(modules, model);
  const Layer* layer = nullptr;
  const Module* module = nullptr;
  for (const Layer& candidate : layers) {
    if (candidate.draft) {
      continue; // the target's layer over the same modules is the one traced
    }
    for (const uint32_t m : candidate.modules) {
      if (modules[m].name == name) {
        layer = &candidate;
        module = &modules[m];
      }
    }
    if (layer == nullptr && (candidate.name == name || candidate.prefix == name)) {
      layer = &candidate;
    }
  }
  if (layer == nullptr) {
    const bool exists = std::any_of(
        modules.begin(), modules.end(), [&](const Module& m) { return m.name == name; });
    Error error = make_error(ErrorCode::unknown_module,
                             inventory.display_dir,
                             std::nullopt,
                             name,
                             exists ? "is not a layer an engine quantizes (a norm or a parameter)"
                                    : "no such module in the checkpoint (see qpatch inspect)");
    error.subject_kind = "module";
    return error;
  }
  Explanation out;
  auto& lines = out.lines;
  if (module != nullptr) {
    std::string files;
    for (const uint32_t f : module->files) {
      files += (files.empty() ? "" : ", ") + inventory.files[f].name;
    }
    lines.emplace_back("stored",
                       report::describe_storage(inventory, *module) + " in " + files +
                           (module->loaded ? "" : " (a file the engine never loads)"));
  }
  lines.emplace_back(
      "layer",
      layer->prefix + " (" + layer->cls + ")" +
          (layer->prefix != layer->name ? ", renamed from " + layer->name : std::string()) +
          (layer->modules.size() > 1 ? ", " + std::to_string(layer->modules.size()) + " modules"
                                     : std::string()));
  const quant::ConfigFile* active = configs.active();
  if (active == nullptr) {
    lines.emplace_back("config", "none: not quantized, every layer is dense");
    return out;
  }
  const std::string method = quant::declared_method(*active);
  const Method* row = find_method(method);
  engines = modelled_engines(row, engines);
  if (row == nullptr) {
    lines.emplace_back(
        "config", active->name + " " + quant::pointer_text(active->pointer) + " (" + method + ")");
    lines.emplace_back("verdict", "quant_method \"" + method + "\" is not judged yet");
    return out;
  }
  lines.emplace_back("config",
                     active->name + " " + quant::pointer_text(active->pointer) + " (" + method +
                         "), judged as " +
                         judged_text(engines, *row, method, configs.architecture, pins) +
                         (engines.list().size() > 1 ? " load it" : " loads it"));
  const auto views = detail::layer_views(layers, modules, inventory, DiagnoseOptions{});
  const auto view = std::find_if(
      views.begin(), views.end(), [&](const detail::LayerView& v) { return v.layer == layer; });
  detail::ExplainContext context{inventory,
                                 modules,
                                 configs,
                                 *active,
                                 method,
                                 model,
                                 *layer,
                                 module,
                                 views,
                                 view == views.end() ? nullptr : &*view,
                                 engines,
                                 pins,
                                 *row,
                                 out};
  if (auto status = row->explain(context); !status) {
    return status.take_error();
  }
  return out;
}

namespace detail {

namespace {

using TraceLines = std::vector<std::pair<std::string, std::string>>;
using VersionTraces = std::vector<std::pair<engine::EngineVersion, TraceLines>>;

// Each version's trace; versions whose traces are equal are shown once, named together.
void add_grouped_traces(const VersionTraces& traces,
                        const std::vector<engine::EngineVersion>& versions,
                        TraceLines& lines) {
  std::vector<bool> shown_trace(traces.size(), false);
  for (size_t i = 0; i < traces.size(); ++i) {
    if (shown_trace[i]) {
      continue;
    }
    std::vector<engine::EngineVersion> same;
    for (size_t j = i; j < traces.size(); ++j) {
      if (!shown_trace[j] && traces[j].second == traces[i].second) {
        same.push_back(traces[j].first);
        shown_trace[j] = true;
      }
    }
    if (same.size() < traces.size()) {
      lines.emplace_back("version", engine::subset_text(same, versions));
    }
    lines.insert(lines.end(), traces[i].second.begin(), traces[i].second.end());
  }
}

// One version's trace of the layers over the module asked about (`mine`); an engine whose
// verdict differs from the disk goes into `wrong`.
template <class Mine>
TraceLines trace_one_version(const ExplainContext& context,
                             const EngineView& view,
                             const LayerRules& rules,
                             const Mine& mine,
                             std::vector<std::string>& wrong) {
  const Layer* layer = &context.layer;
  const std::string engine_name(engine::to_string(view.engine));
  const std::string shown(engine::display_name(view.engine));
  std::vector<std::pair<std::string, std::string>> trace_lines;
  bool traced = false;
  for (const Layer& candidate : view.not_built) {
    if (mine(candidate)) {
      traced = true;
      trace_lines.emplace_back("not built",
                               candidate.name + ": " + shown + " never builds the MTP head");
    }
  }
  for (const LayerView& candidate : *view.views) {
    if (!mine(*candidate.layer) || candidate.layer->draft) {
      continue;
    }
    traced = true;
    // An engine that builds layers of its own may name them otherwise (one that builds a
    // layer per module names it in the trace below).
    if (view.model.engine_layers && candidate.layer->prefix != layer->prefix) {
      trace_lines.emplace_back("layer", candidate.layer->prefix + " (" + shown + "'s name)");
    }
    const auto trace = rules.trace(*candidate.layer);
    trace_lines.insert(trace_lines.end(), trace.begin(), trace.end());
    if (!consistent(candidate, rules.decide(*candidate.layer)) &&
        std::find(wrong.begin(), wrong.end(), engine_name) == wrong.end()) {
      wrong.push_back(engine_name);
    }
    if (view.model.engine_layers) {
      break; // an engine that fuses builds one layer over the module
    }
  }
  if (!traced) {
    trace_lines.emplace_back("not built", shown + " builds no layer of this name");
    if (std::find(wrong.begin(), wrong.end(), engine_name) == wrong.end() &&
        context.view == nullptr) {
      wrong.push_back(engine_name);
    }
  }
  return trace_lines;
}

} // namespace

Status trace_versions(ExplainContext& context) {
  const ModuleList& modules = context.modules;
  const Layer* layer = &context.layer;
  const Module* module = context.module;
  auto& lines = context.out.lines;
  const quant::ConfigFile* config_json = context.configs.find("config.json");
  const auto head = config_json != nullptr
                        ? checkpoint::find_mtp_head(config_json->doc, modules, context.inventory)
                        : checkpoint::MtpHead{};
  DiagnoseOptions options;
  options.pins = context.pins;
  // Every version judged of every engine, each under its own names (versions.hpp).
  const auto views = engine_views(context.engines,
                                  context.model,
                                  {modules, context.inventory, head.modules, options},
                                  context.row.name);
  // The module asked about; for a fused name, each of its shards.
  const auto mine = [&](const Layer& candidate) {
    return std::any_of(candidate.modules.begin(), candidate.modules.end(), [&](uint32_t m) {
      return module != nullptr ? &modules[m] == module
                               : std::find(layer->modules.begin(), layer->modules.end(), m) !=
                                     layer->modules.end();
    });
  };
  const auto list = context.engines.list();
  std::vector<std::string> wrong;
  for (const engine::Engine engine : list) {
    const std::string engine_name(engine::to_string(engine));
    const std::string shown(engine::display_name(engine));
    const auto versions = versions_of(views, engine);
    if (list.size() > 1) {
      lines.emplace_back("engine", engine::versions_text(versions, context.method));
    }
    VersionTraces traces;
    for (const auto& view : views) {
      if (view->engine != engine) {
        continue;
      }
      QP_TRY_ASSIGN(
          const auto rules,
          context.row.rules({context.active, context.configs, modules, context.inventory, *view}));
      traces.emplace_back(view->version, trace_one_version(context, *view, *rules, mine, wrong));
    }
    add_grouped_traces(traces, versions, lines);
  }
  close_trace(context, wrong);
  return ok_status();
}

Status explain_compressed_tensors(ExplainContext& context, const quant::CtConfig& /*config*/) {
  return trace_versions(context);
}

Status explain_skip_list(ExplainContext& context, const SkipListSetting& setting) {
  if (setting.list.derived) {
    // Who derives the absent list, in each engine's own dialect.
    std::vector<std::string> derives;
    std::vector<std::string> none;
    for (const engine::Engine engine : context.engines.list()) {
      const engine::EngineVersion version = engine::newest_version(engine);
      const bool derived =
          engine::dialect_of(version, context.model).skip_list.awq_derives_absent_list;
      (derived ? derives : none).emplace_back(engine::display_name(engine));
    }
    std::string text = std::string(setting.list.exists ? "empty" : "absent") + ": ";
    if (!derives.empty()) {
      text += engine::join_names(derives) + " derive" + (derives.size() == 1 ? "s " : " ") +
              std::to_string(setting.list.entries.size()) +
              " entries from the headers (every all-float module)";
    }
    if (!none.empty()) {
      text += (derives.empty() ? "" : "; ") + engine::join_names(none) + " derive" +
              (none.size() == 1 ? "s" : "") + " none";
    }
    context.out.lines.emplace_back(setting.list.key, text);
  }
  return trace_versions(context);
}

Status explain_gptq(ExplainContext& context, const quant::GptqConfig& /*config*/) {
  return trace_versions(context);
}

Status explain_auto_round(ExplainContext& context, const quant::IncConfig& /*config*/) {
  return trace_versions(context);
}

} // namespace detail

} // namespace qpatch::diagnose
