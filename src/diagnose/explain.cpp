// SPDX-License-Identifier: Apache-2.0
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/explain.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/gptq_rules.hpp>
#include <qpatch/engine/auto_round_rules.hpp>
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
// versions traced of each engine (compressed-tensors judges every version; the other methods the
// newest, as their judges do).
std::string judged_text(engine::EngineSet engines,
                        const std::string& method,
                        const std::string& architecture,
                        const engine::VersionPins& pins) {
  const Method* row = find_method(method);
  const bool versioned = row != nullptr && row->name == "compressed-tensors";
  std::vector<std::string> rules;
  for (const engine::Engine engine : engines.list()) {
    rules.push_back(
        versioned ? engine::versions_text(
                        engine::versions_to_judge(engine, "compressed-tensors", architecture, pins),
                        method)
                  : std::string(engine::rules_of(engine, method)));
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

// The layer SGLang builds over the modules of `context.layer`, under SGLang's names.
struct SglangLayer {
  engine::ModelInfo model;
  std::vector<Layer> layers;
  std::vector<detail::LayerView> views;
  const Layer* layer = nullptr;
  const detail::LayerView* view = nullptr;
};

std::unique_ptr<SglangLayer> sglang_layer(const detail::ExplainContext& context) {
  auto out = std::make_unique<SglangLayer>();
  out->model =
      engine::sglang_model_info(context.configs.architecture, context.configs.num_hidden_layers);
  out->layers = engine::build_layers(context.modules, out->model);
  out->views = detail::layer_views(out->layers, context.modules, context.inventory, {});
  for (const detail::LayerView& candidate : out->views) {
    const auto& mine = context.layer.modules;
    const bool ours = std::any_of(
        candidate.layer->modules.begin(), candidate.layer->modules.end(), [&](uint32_t m) {
          return context.module != nullptr ? &context.modules[m] == context.module
                                           : std::find(mine.begin(), mine.end(), m) != mine.end();
        });
    if (ours && !candidate.layer->draft) {
      out->layer = candidate.layer;
      out->view = &candidate;
      break;
    }
  }
  return out;
}

// Every judged engine's rules in turn, then the verdict: `trace_of(engine, model, layer)`
// returns that engine's (trace lines, decision) for the layer, judged under that engine's
// names (SGLang builds layers of its own).
template <class TraceOf>
void trace_each_engine(detail::ExplainContext& context, const TraceOf& trace_of) {
  auto& lines = context.out.lines;
  const auto list = context.engines.list();
  std::vector<std::string> wrong;
  for (const engine::Engine engine : list) {
    if (list.size() > 1) {
      lines.emplace_back("engine", std::string(engine::rules_of(engine, context.method)));
    }
    const engine::ModelInfo* model = &context.model;
    const Layer* layer = &context.layer;
    const detail::LayerView* view = context.view;
    std::unique_ptr<SglangLayer> sglang;
    if (engine == engine::Engine::sglang) {
      sglang = sglang_layer(context);
      if (sglang->layer != nullptr) {
        model = &sglang->model;
        layer = sglang->layer;
        view = sglang->view;
        if (layer->prefix != context.layer.prefix) {
          lines.emplace_back("layer", layer->prefix + " (SGLang's name)");
        }
      }
    }
    const auto [trace, decision] = trace_of(engine, *model, *layer);
    lines.insert(lines.end(), trace.begin(), trace.end());
    if (view == nullptr || !detail::consistent(*view, decision)) {
      wrong.emplace_back(engine::to_string(engine));
    }
  }
  close_trace(context, wrong);
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
  lines.emplace_back("config",
                     active->name + " " + quant::pointer_text(active->pointer) + " (" + method +
                         "), judged as " +
                         judged_text(engines, method, configs.architecture, pins) +
                         (engines.list().size() > 1 ? " load it" : " loads it"));
  const auto views = detail::layer_views(layers, modules, inventory, DiagnoseOptions{});
  const auto view = std::find_if(
      views.begin(), views.end(), [&](const detail::LayerView& v) { return v.layer == layer; });
  if (row == nullptr) {
    lines.emplace_back("verdict", "quant_method \"" + method + "\" is not judged yet");
    return out;
  }
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
                                 out};
  if (auto status = row->explain(context); !status) {
    return status.take_error();
  }
  return out;
}

namespace detail {

Status explain_compressed_tensors(ExplainContext& context, const quant::CtConfig& config) {
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
                                  modules,
                                  context.inventory,
                                  head.modules,
                                  options,
                                  "compressed-tensors");
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
    const auto versions = versions_of(views, engine);
    if (list.size() > 1) {
      lines.emplace_back("engine", engine::versions_text(versions));
    }
    // Each version's trace; versions whose traces are equal are shown once, named together.
    std::vector<std::pair<engine::EngineVersion, std::vector<std::pair<std::string, std::string>>>>
        traces;
    for (const auto& view : views) {
      if (view->engine != engine) {
        continue;
      }
      std::vector<std::pair<std::string, std::string>> trace_lines;
      const engine::CompressedTensorsRules judge(config, view->model, view->version);
      const auto judge_one = [&](const Layer& candidate, const LayerView* stored) {
        const auto trace = judge.trace(candidate);
        trace_lines.insert(trace_lines.end(), trace.begin(), trace.end());
        if ((stored == nullptr || !consistent(*stored, judge.decide(candidate))) &&
            std::find(wrong.begin(), wrong.end(), engine_name) == wrong.end()) {
          wrong.push_back(engine_name);
        }
      };
      if (engine == engine::Engine::vllm) {
        judge_one(*layer, context.view); // vLLM's names are the ones `name` was resolved in
        traces.emplace_back(view->version, std::move(trace_lines));
        continue;
      }
      bool traced = false;
      for (const Layer& candidate : view->not_built) {
        if (mine(candidate)) {
          traced = true;
          trace_lines.emplace_back("not built",
                                   candidate.name + ": " +
                                       std::string(engine::display_name(engine)) +
                                       " never builds the MTP head");
        }
      }
      for (const LayerView& candidate : *view->views) {
        if (!mine(*candidate.layer) || candidate.layer->draft) {
          continue;
        }
        traced = true;
        if (engine == engine::Engine::sglang && candidate.layer->prefix != layer->prefix) {
          trace_lines.emplace_back("layer", candidate.layer->prefix + " (SGLang's name)");
        }
        judge_one(*candidate.layer, &candidate);
        if (engine == engine::Engine::sglang) {
          break; // SGLang builds one layer over the module
        }
      }
      if (!traced) {
        trace_lines.emplace_back("not built",
                                 std::string(engine::display_name(engine)) +
                                     " builds no layer of this name");
      }
      traces.emplace_back(view->version, std::move(trace_lines));
    }
    std::vector<bool> shown(traces.size(), false);
    for (size_t i = 0; i < traces.size(); ++i) {
      if (shown[i]) {
        continue;
      }
      std::vector<engine::EngineVersion> same;
      for (size_t j = i; j < traces.size(); ++j) {
        if (!shown[j] && traces[j].second == traces[i].second) {
          same.push_back(traces[j].first);
          shown[j] = true;
        }
      }
      if (same.size() < traces.size()) {
        lines.emplace_back("version", engine::subset_text(same, versions));
      }
      lines.insert(lines.end(), traces[i].second.begin(), traces[i].second.end());
    }
  }
  close_trace(context, wrong);
  return ok_status();
}

Status explain_skip_list(ExplainContext& context, const SkipListSetting& setting) {
  if (setting.list.derived) {
    context.out.lines.emplace_back(
        setting.list.key,
        std::string(setting.list.exists ? "empty" : "absent") + ": vLLM derives " +
            std::to_string(setting.list.entries.size()) +
            " entries from the headers (every all-float module); SGLang derives none");
  }
  trace_each_engine(
      context, [&](engine::Engine engine, const engine::ModelInfo& model, const Layer& layer) {
        const engine::SkipListRules judge =
            setting.judge(engine::newest_version(engine), setting.read_by(engine), model);
        return std::pair(judge.trace(layer, setting.list.key), judge.decide(layer));
      });
  return ok_status();
}

Status explain_gptq(ExplainContext& context, const quant::GptqConfig& config) {
  const std::vector<std::string> derived = engine::derived_gptq_list(context.inventory);
  trace_each_engine(
      context, [&](engine::Engine engine, const engine::ModelInfo& model, const Layer& layer) {
        const engine::GptqRules judge(config, model, derived, engine::newest_version(engine));
        return std::pair(judge.trace(layer), judge.decide(layer));
      });
  return ok_status();
}

// vLLM alone (the only engine modelled for auto-round), so the status speaks of one engine.
Status explain_auto_round(ExplainContext& context, const quant::IncConfig& config) {
  auto& lines = context.out.lines;
  const engine::AutoRoundRules judge(config, context.model);
  const auto trace = judge.trace(context.layer);
  lines.insert(lines.end(), trace.begin(), trace.end());
  const engine::Decision decision = judge.decide(context.layer);
  context.out.consistent = context.view != nullptr && consistent(*context.view, decision);
  lines.emplace_back("on disk",
                     context.view == nullptr ? std::string("?") : disk_text(*context.view));
  lines.emplace_back("status",
                     context.out.consistent
                         ? std::string("consistent: the engine builds what is stored")
                         : std::string("inconsistent: run `qpatch --dry-run ") +
                               context.inventory.command_name() + "` to see the fix");
  return ok_status();
}

} // namespace detail

} // namespace qpatch::diagnose
