// SPDX-License-Identifier: Apache-2.0
#include "diagnose/judge_common.hpp"

#include <qpatch/checkpoint/mtp_head.hpp>
#include <qpatch/diagnose/explain.hpp>
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
  const bool ct = method == "compressed-tensors" || method == "compressed_tensors";
  engines = detail::modelled_engines(method, engines);
  const auto list = engines.list();
  lines.emplace_back("config",
                     active->name + " " + quant::pointer_text(active->pointer) + " (" + method +
                         "), judged as " + engine::rules_of(engines, method) +
                         (list.size() > 1 ? " load it" : " loads it"));
  const DiagnoseOptions options;
  const auto views = detail::layer_views(layers, modules, inventory, options);
  const auto view = std::find_if(
      views.begin(), views.end(), [&](const detail::LayerView& v) { return v.layer == layer; });
  const auto disk_text = [](const detail::LayerView& v) {
    return v.disk == detail::Disk::dense       ? "dense (" + v.stored + ")"
           : v.disk == detail::Disk::quantized ? "quantized (" + v.stored + ")"
           : v.disk == detail::Disk::mixed     ? std::string("shards stored differently")
                                               : std::string("inconsistent");
  };
  // Lines that close a trace over several engines: what is stored, and who builds it wrong.
  const auto close = [&](const std::vector<std::string>& wrong) {
    out.consistent = wrong.empty();
    lines.emplace_back("on disk", view == views.end() ? std::string("?") : disk_text(*view));
    std::string who;
    for (const std::string& engine : wrong) {
      who += (who.empty() ? "" : ", ") + engine;
    }
    lines.emplace_back("status",
                       out.consistent
                           ? std::string("consistent: every engine builds what is stored")
                           : "inconsistent for " + who + ": run `qpatch --dry-run " +
                                 inventory.display_dir + "` to see the fix");
  };
  // Every judged engine's rules in turn, then the verdict: `trace_of(engine)` returns that
  // engine's (trace lines, decision) for the layer.
  const auto trace_each_engine = [&](const auto& trace_of) {
    std::vector<std::string> wrong;
    for (const engine::Engine engine : list) {
      if (list.size() > 1) {
        lines.emplace_back("engine", std::string(engine::rules_of(engine, method)));
      }
      const auto [trace, decision] = trace_of(engine);
      lines.insert(lines.end(), trace.begin(), trace.end());
      if (view == views.end() || !detail::consistent(*view, decision)) {
        wrong.emplace_back(engine::to_string(engine));
      }
    }
    close(wrong);
  };
  if (ct) {
    QP_TRY_ASSIGN(const quant::CtConfig config, quant::read_compressed_tensors(*active));
    std::unique_ptr<detail::EngineView> plain_view; // transformers' layers, when judged
    if (engines.has(engine::Engine::transformers)) {
      const quant::ConfigFile* config_json = configs.find("config.json");
      const auto head = config_json != nullptr
                            ? checkpoint::find_mtp_head(config_json->doc, modules, inventory)
                            : checkpoint::MtpHead{};
      plain_view =
          std::move(detail::engine_views(engine::EngineSet::only(engine::Engine::transformers),
                                         model,
                                         modules,
                                         inventory,
                                         head.modules,
                                         options)
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
        const auto first =
            engine::sglang_model_info(configs.architecture, configs.num_hidden_layers);
        const std::vector<Layer> sglang_layers = engine::build_layers(modules, first);
        const auto sglang_views = detail::layer_views(sglang_layers, modules, inventory, options);
        std::vector<engine::ModelInfo> versions{first};
        if (engine::sglang_versions_differ(configs.architecture)) {
          versions.push_back(
              engine::sglang_model_info(configs.architecture, configs.num_hidden_layers, true));
        }
        for (const engine::ModelInfo& version : versions) {
          if (versions.size() > 1) {
            lines.emplace_back("version", "SGLang " + version.version);
          }
          const engine::VllmCompressedTensors judge(config, version, engine);
          for (const detail::LayerView& candidate : sglang_views) {
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
            if (!detail::consistent(candidate, judge.decide(*candidate.layer)) &&
                std::find(wrong.begin(), wrong.end(), engine_name) == wrong.end()) {
              wrong.push_back(engine_name);
            }
            break;
          }
        }
        continue;
      }
      if (engine != engine::Engine::transformers) {
        const engine::VllmCompressedTensors judge(config, model, engine);
        const auto trace = judge.trace(*layer);
        lines.insert(lines.end(), trace.begin(), trace.end());
        if (view == views.end() || !detail::consistent(*view, judge.decide(*layer))) {
          wrong.push_back(engine_name);
        }
        continue;
      }
      // transformers builds one nn.Linear per module and never builds the MTP head.
      const detail::EngineView& plain = *plain_view;
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
      for (const detail::LayerView& candidate : *plain.views) {
        if (!mine(*candidate.layer)) {
          continue;
        }
        traced = true;
        const engine::VllmCompressedTensors judge(config, plain.model, engine);
        const auto trace = judge.trace(*candidate.layer);
        lines.insert(lines.end(), trace.begin(), trace.end());
        if (!detail::consistent(candidate, judge.decide(*candidate.layer)) &&
            std::find(wrong.begin(), wrong.end(), engine_name) == wrong.end()) {
          wrong.push_back(engine_name);
        }
      }
      if (!traced) {
        lines.emplace_back("not built", "transformers builds no layer of this name");
      }
    }
    close(wrong);
    return out;
  }
  if (detail::is_skip_list_method(method)) {
    QP_TRY_ASSIGN(const detail::SkipListSetting setting,
                  detail::skip_list_setting(*active, configs, modules, inventory));
    if (setting.list.derived) {
      lines.emplace_back(setting.list.key,
                         std::string(setting.list.exists ? "empty" : "absent") + ": vLLM derives " +
                             std::to_string(setting.list.entries.size()) +
                             " entries from the headers (every all-float module); SGLang "
                             "derives none");
    }
    trace_each_engine([&](engine::Engine engine) {
      const engine::VllmSkipList judge = setting.judge(engine, setting.read_by(engine), model);
      return std::pair(judge.trace(*layer, setting.list.key), judge.decide(*layer));
    });
    return out;
  }
  if (method == "gptq") {
    QP_TRY_ASSIGN(const quant::GptqConfig config, quant::read_gptq(*active));
    const std::vector<std::string> derived = engine::derived_gptq_list(inventory);
    trace_each_engine([&](engine::Engine engine) {
      const engine::VllmGptq judge(config, model, derived, engine);
      return std::pair(judge.trace(*layer), judge.decide(*layer));
    });
    return out;
  }
  engine::Decision decision;
  if (method == "auto-round") {
    QP_TRY_ASSIGN(const quant::IncConfig config, quant::read_auto_round(*active));
    const engine::VllmInc judge(config, model);
    const auto trace = judge.trace(*layer);
    lines.insert(lines.end(), trace.begin(), trace.end());
    decision = judge.decide(*layer);
  } else {
    lines.emplace_back("verdict", "quant_method \"" + method + "\" is not judged yet");
    return out;
  }
  out.consistent = view != views.end() && detail::consistent(*view, decision);
  lines.emplace_back("on disk", view == views.end() ? std::string("?") : disk_text(*view));
  lines.emplace_back("status",
                     out.consistent ? std::string("consistent: the engine builds what is stored")
                                    : std::string("inconsistent: run `qpatch --dry-run ") +
                                          inventory.display_dir + "` to see the fix");
  return out;
}

} // namespace qpatch::diagnose
