// SPDX-License-Identifier: Apache-2.0
// `qpatch explain DIR MODULE`: every rule that decides one module, and the verdict.
#include "commands.hpp"
#include "diagnostics.hpp"
#include "did_you_mean.hpp"
#include "parse_errors.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/explain.hpp>
#include <qpatch/quant/config_files.hpp>

namespace qpatch::cli {

CLI::App* setup_explain(CLI::App& app, ExplainOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "explain", "Show every rule that decides one module's verdict, in the engine's order");
  cmd->add_option("DIR", options.dir, "Checkpoint directory")->required();
  cmd->add_option("MODULE",
                  options.module,
                  "A checkpoint module name (mtp.fc) or an engine layer name (…qkv_proj)")
      ->required();
  cmd->add_option("--engine",
                  options.engine,
                  engine_option_help("whose rules to trace (default: every version of every "
                                     "engine modelled)"))
      ->check(engine_choice());
  cmd->add_flag("--json", options.json, "Print one JSON document on stdout");
  return cmd;
}

namespace {

// The explanation as one document (schema_version 2, as the other subcommands' documents).
json::Json explanation_json(const ExplainOptions& options,
                            const diagnose::Explanation& explanation) {
  json::Json lines = json::Json::array();
  for (const auto& [label, text] : explanation.lines) {
    lines.push_back({{"label", label}, {"text", text}});
  }
  json::Json doc;
  doc["schema_version"] = 2;
  doc["path"] = options.label.empty() ? options.dir : options.label;
  doc["module"] = options.module;
  doc["consistent"] = explanation.consistent;
  doc["lines"] = std::move(lines);
  return doc;
}

} // namespace

ExitCode run_explain(const ExplainOptions& options, Io& io) {
  const std::string& shown = options.label.empty() ? options.dir : options.label;
  checkpoint::ModuleBuilder modules_builder; // groups modules while later headers are read
  auto inventory = checkpoint::read_inventory(options.dir, shown, modules_builder);
  if (!inventory) {
    report(io.err, inventory.error(), shown);
    return ExitCode::invalid_input;
  }
  if (!inventory->errors.empty()) {
    report(io.err, inventory->errors.front(), shown);
    return ExitCode::invalid_input;
  }
  if (options.remote) {
    inventory->command_arg = "--remote " + shown;
  }
  auto configs = quant::load_config_files(options.dir);
  if (!configs) {
    report(io.err, configs.error(), shown);
    return ExitCode::invalid_input;
  }
  const auto modules = modules_builder.finish(*inventory);
  const auto choice =
      engine::parse_engine_choice(options.engine).choice.value_or(engine::EngineChoice{});
  for (const std::string& note : choice.notes) {
    report(io.err, Level::note, note);
  }
  auto explanation =
      diagnose::explain(*inventory, modules, *configs, options.module, choice.engines, choice.pins);
  if (!explanation) {
    std::string text = describe(explanation.error(), shown);
    if (explanation.error().code == ErrorCode::unknown_module) {
      // The closest names the checkpoint holds: a transposed pair or a dropped dot is the usual
      // slip in a 50-character module name.
      std::vector<std::string> names;
      names.reserve(modules.size());
      for (const auto& module : modules) {
        names.emplace_back(module.name);
      }
      const auto near =
          nearest(options.module, names, 3, std::max<size_t>(2, options.module.size() / 8));
      for (size_t i = 0; i < near.size(); ++i) {
        text += (i == 0 ? "; did you mean '" : i + 1 == near.size() ? "' or '" : "', '") + near[i];
      }
      text += near.empty() ? "" : "'?";
    }
    report(io.err, Level::error, text);
    return explanation.error().code == ErrorCode::unknown_module ? ExitCode::usage
                                                                 : ExitCode::invalid_input;
  }
  if (options.json) {
    io.out << explanation_json(options, *explanation).dump(2) << "\n";
  } else {
    io.out << options.module << "\n";
    for (const auto& [label, text] : explanation->lines) {
      std::string padded = label;
      padded.resize(std::max<size_t>(padded.size() + 1, 13), ' ');
      io.out << "  " << padded << text << "\n";
    }
  }
  return explanation->consistent ? ExitCode::ok : ExitCode::findings;
}

} // namespace qpatch::cli
