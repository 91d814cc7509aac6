// SPDX-License-Identifier: Apache-2.0
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/explain.hpp>
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/vllm_compressed_tensors.hpp>
#include <qpatch/engine/vllm_gptq.hpp>
#include <qpatch/engine/vllm_inc.hpp>
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
                            engine::EngineSet engines) {
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
                         "), judged as " + engine::rules_of(engines, method) +
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
  const auto list = context.engines.list();
  std::unique_ptr<EngineView> plain_view; // transformers' layers, when judged
  if (context.engines.has(engine::Engine::transformers)) {
    const quant::ConfigFile* config_json = context.configs.find("config.json");
    const auto head = config_json != nullptr
                          ? checkpoint::find_mtp_head(config_json->doc, modules, context.inventory)
                          : checkpoint::MtpHead{};
    plain_view = std::move(engine_views(engine::EngineSet::only(engine::Engine::transformers),
                                        context.model,
                                        modules,
                                        context.inventory,
                                        head.modules,
                                        DiagnoseOptions{})
                               .front());
  }
  std::vector<std::string> wrong;
  for (const engine::Engine engine : list) {
    const std::string engine_name(engine::to_string(engine));
    if (list.size() > 1) {
      lines.emplace_back("engine", std::string(engine::rules_of(engine)));
    }
    if (engine == engine::Engine::sglang) {
      // SGLang builds layers of its own names; each modelled version is traced.
      const std::string& architecture = context.configs.architecture;
      const uint64_t layers = context.configs.num_hidden_layers;
      const auto first = engine::sglang_model_info(architecture, layers);
      const std::vector<Layer> sglang_layers = engine::build_layers(modules, first);
      const auto sglang_views =
          layer_views(sglang_layers, modules, context.inventory, DiagnoseOptions{});
      std::vector<engine::ModelInfo> versions{first};
      if (engine::sglang_versions_differ(architecture)) {
        versions.push_back(engine::sglang_model_info(architecture, layers, true));
      }
      for (const engine::ModelInfo& version : versions) {
        if (versions.size() > 1) {
          lines.emplace_back("version", "SGLang " + version.version);
        }
        const engine::VllmCompressedTensors judge(config, version, engine);
        for (const LayerView& candidate : sglang_views) {
          const bool ours = std::any_of(
              candidate.layer->modules.begin(), candidate.layer->modules.end(), [&](uint32_t m) {
                return module != nullptr
                           ? &modules[m] == module
                           : std::find(layer->modules.begin(), layer->modules.end(), m) !=
                                 layer->modules.end();
              });
          if (!ours || candidate.layer->draft) {
            continue;
          }
          if (candidate.layer->prefix != layer->prefix) {
            lines.emplace_back("layer", candidate.layer->prefix + " (SGLang's name)");
          }
          const auto trace = judge.trace(*candidate.layer);
          lines.insert(lines.end(), trace.begin(), trace.end());
          if (!consistent(candidate, judge.decide(*candidate.layer)) &&
              std::find(wrong.begin(), wrong.end(), engine_name) == wrong.end()) {
            wrong.push_back(engine_name);
          }
          break;
        }
      }
      continue;
    }
    if (engine != engine::Engine::transformers) {
      const engine::VllmCompressedTensors judge(config, context.model, engine);
      const auto trace = judge.trace(*layer);
      lines.insert(lines.end(), trace.begin(), trace.end());
      if (context.view == nullptr || !consistent(*context.view, judge.decide(*layer))) {
        wrong.push_back(engine_name);
      }
      continue;
    }
    // transformers builds one nn.Linear per module and never builds the MTP head.
    const EngineView& plain = *plain_view;
    // The module asked about; for a fused name, each of its shards.
    const auto mine = [&](const Layer& candidate) {
      return std::any_of(candidate.modules.begin(), candidate.modules.end(), [&](uint32_t m) {
        return module != nullptr ? &modules[m] == module
                                 : std::find(layer->modules.begin(), layer->modules.end(), m) !=
                                       layer->modules.end();
      });
    };
    bool traced = false;
    for (const Layer& candidate : plain.not_built) {
      if (mine(candidate)) {
        traced = true;
        lines.emplace_back("not built",
                           candidate.name + ": transformers never builds the MTP head");
      }
    }
    for (const LayerView& candidate : *plain.views) {
      if (!mine(*candidate.layer)) {
        continue;
      }
      traced = true;
      const engine::VllmCompressedTensors judge(config, plain.model, engine);
      const auto trace = judge.trace(*candidate.layer);
      lines.insert(lines.end(), trace.begin(), trace.end());
      if (!consistent(candidate, judge.decide(*candidate.layer)) &&
          std::find(wrong.begin(), wrong.end(), engine_name) == wrong.end()) {
        wrong.push_back(engine_name);
      }
    }
    if (!traced) {
      lines.emplace_back("not built", "transformers builds no layer of this name");
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
        const engine::VllmSkipList judge = setting.judge(engine, setting.read_by(engine), model);
        return std::pair(judge.trace(layer, setting.list.key), judge.decide(layer));
      });
  return ok_status();
}

Status explain_gptq(ExplainContext& context, const quant::GptqConfig& config) {
  const std::vector<std::string> derived = engine::derived_gptq_list(context.inventory);
  trace_each_engine(context,
                    [&](engine::Engine engine, const engine::ModelInfo& model, const Layer& layer) {
                      const engine::VllmGptq judge(config, model, derived, engine);
                      return std::pair(judge.trace(layer), judge.decide(layer));
                    });
  return ok_status();
}

// vLLM alone (the only engine modelled for auto-round), so the status speaks of one engine.
Status explain_auto_round(ExplainContext& context, const quant::IncConfig& config) {
  auto& lines = context.out.lines;
  const engine::VllmInc judge(config, context.model);
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
