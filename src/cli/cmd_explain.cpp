// SPDX-License-Identifier: Apache-2.0
// `qpatch explain DIR MODULE`: every rule that decides one module, and the verdict.
// `qpatch explain DIR --error TEXT`: the finding behind an engine's error message.
#include "command_table.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "did_you_mean.hpp"
#include "parse_errors.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/checkpoint/open.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/diagnose/error_texts.hpp>
#include <qpatch/diagnose/explain.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/report/consequence.hpp>
#include <qpatch/report/fit_width.hpp>
#include <qpatch/report/fix_report.hpp>

namespace qpatch::cli {

CLI::App* setup_explain(CLI::App& app, ExplainOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "explain", "Show every rule that decides one module's verdict, in the engine's order");
  cmd->add_option("DIR", options.dir, "Checkpoint directory")->required();
  cmd->add_option("MODULE",
                  options.module,
                  "A checkpoint module name (mtp.fc) or an engine layer name (…qkv_proj)");
  cmd->add_option("--error",
                  options.error_text,
                  "TEXT: an engine's error message (a log line, quoted): the finding behind it "
                  "and the command that fixes it, instead of MODULE");
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

// The command that deals with `findings`: a graft, the patch, or the trace of one module.
std::string next_step(const std::vector<const diagnose::Finding*>& findings,
                      const std::string& shown) {
  for (const diagnose::Finding* finding : findings) {
    if (finding->kind == diagnose::FindingKind::missing_draft_head) {
      return report::graft_command(shown);
    }
  }
  for (const diagnose::Finding* finding : findings) {
    if (finding->fixable) {
      return report::shell_command("qpatch", shown);
    }
  }
  const diagnose::Finding* first = findings.front();
  return first->modules.empty() ? report::shell_command("qpatch explain", shown)
                                : report::explain_command(shown, first->modules.front(), false);
}

ExitCode explain_error(const ExplainOptions& options,
                       const checkpoint::Inventory& inventory,
                       const checkpoint::ModuleList& modules,
                       const quant::ConfigSet& configs,
                       const engine::EngineChoice& choice,
                       Io& io) {
  const std::string& shown = options.label.empty() ? options.dir : options.label;
  const auto match = diagnose::match_error_text(options.error_text);
  diagnose::DiagnoseOptions diagnose_options;
  diagnose_options.engines = choice.engines;
  diagnose_options.engines_named = options.engine != "all";
  diagnose_options.pins = choice.pins;
  auto diagnosis = diagnose::diagnose(inventory, modules, configs, diagnose_options);
  if (!diagnosis) {
    report(io.err, diagnosis.error(), shown);
    return ExitCode::invalid_input;
  }
  std::vector<const diagnose::Finding*> behind;
  if (match) {
    behind = diagnose::findings_behind(*diagnosis, *match);
  }
  const std::string next = behind.empty() ? "" : next_step(behind, shown);
  if (options.json) {
    json::Json doc;
    doc["schema_version"] = 2;
    doc["path"] = shown;
    doc["recognized"] = match.has_value();
    doc["error"] = match ? json::Json{{"id", match->id},
                                      {"engine", match->engine},
                                      {"meaning", match->meaning},
                                      {"module",
                                       match->module_hint.empty() ? json::Json()
                                                                  : json::Json(match->module_hint)}}
                         : json::Json();
    json::Json findings = json::Json::array();
    for (const diagnose::Finding* finding : behind) {
      findings.push_back({{"kind", diagnose::to_string(finding->kind)},
                          {"label", finding->label},
                          {"fixable", finding->fixable},
                          {"detail", finding->detail},
                          {"engines", finding->engines},
                          {"modules", finding->modules}});
    }
    doc["findings"] = std::move(findings);
    doc["next"] = next.empty() ? json::Json() : json::Json(next);
    io.out << doc.dump(2) << "\n";
    return behind.empty() ? ExitCode::ok : ExitCode::findings;
  }
  const auto line = [&](const std::string& label, const std::string& text) {
    std::string padded = label;
    padded.resize(12, ' ');
    io.out << padded << text << "\n";
  };
  if (!match) {
    std::string known;
    for (const std::string& id : diagnose::known_error_texts()) {
      known += (known.empty() ? "" : ", ") + id;
    }
    line("error", "not a message qpatch recognises (it knows: " + known + ")");
    return ExitCode::ok;
  }
  line("error", match->id + ": " + match->meaning);
  if (!match->module_hint.empty()) {
    line("names", match->module_hint);
  }
  if (behind.empty()) {
    line("cause",
         "none in " + shown +
             ": qpatch finds no mismatch of these kinds for the engines judged, so the message "
             "comes from something qpatch does not model (another engine version, a flag, a "
             "kernel)");
    return ExitCode::ok;
  }
  for (const diagnose::Finding* finding : behind) {
    line("cause", std::string(finding->fixable ? "fixable: " : "not fixable: ") + finding->detail);
    const std::string effect = report::consequence(
        *finding, diagnosis->quant_method, diagnosis->engines, diagnosis->built_weight);
    if (!effect.empty()) {
      line("breaks", effect);
    }
  }
  line("next", next);
  return ExitCode::findings;
}

} // namespace

ExitCode run_explain(const ExplainOptions& options, Io& io) {
  const std::string& shown = options.label.empty() ? options.dir : options.label;
  if (options.module.empty() == options.error_text.empty()) {
    report(io.err,
           Level::error,
           options.module.empty() ? "explain needs MODULE or --error TEXT"
                                  : "explain takes MODULE or --error TEXT, not both");
    return ExitCode::usage;
  }
  auto opened = checkpoint::open(options.dir, shown);
  if (!opened) {
    report(io.err, opened.error(), shown);
    return ExitCode::invalid_input;
  }
  checkpoint::Inventory* inventory = &opened->inventory;
  if (!inventory->errors.empty()) {
    report(io.err, inventory->errors.front(), shown);
    return ExitCode::invalid_input;
  }
  if (options.remote) {
    inventory->command_arg = "--remote " + shown;
  }
  if (opened->config_error) {
    report(io.err, *opened->config_error, shown);
    return ExitCode::invalid_input;
  }
  const quant::ConfigSet* configs = &opened->configs;
  const auto& modules = opened->modules;
  const auto choice =
      engine::parse_engine_choice(options.engine).choice.value_or(engine::EngineChoice{});
  for (const std::string& note : choice.notes) {
    report(io.err, Level::note, note);
  }
  if (!options.error_text.empty()) {
    return explain_error(options, *inventory, modules, *configs, choice, io);
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
    // On a terminal each line fits its width, continued under the text column (issue 25: a
    // config line ran to 222 columns); a pipe gets whole lines (scripts grep them).
    constexpr size_t k_text_column = 15; // "  " and a label padded to 13
    for (const auto& [label, text] : explanation->lines) {
      std::string padded = label;
      padded.resize(std::max<size_t>(padded.size() + 1, 13), ' ');
      io.out << report::wrap("  " + padded + text, io.terminal.stdout_columns, k_text_column)
             << "\n";
    }
  }
  return explanation->consistent ? ExitCode::ok : ExitCode::findings;
}

namespace {

class ExplainCommand final : public Command {
public:
  explicit ExplainCommand(CLI::App& root) { parser = setup_explain(root, m_options); }
  std::vector<std::string> dir_arguments() const override { return {m_options.dir}; }
  bool raw_stdout() const override { return m_options.json; }
  ExitCode run(CheckedDirs checked, Io& io) override {
    m_options.dir = checked.dirs.front();
    m_options.label = checked.labels.empty() ? "" : checked.labels.front();
    m_options.remote = checked.remote;
    return run_explain(m_options, io);
  }

private:
  ExplainOptions m_options;
};

} // namespace

std::unique_ptr<Command> make_explain_command(CLI::App& root) {
  return std::make_unique<ExplainCommand>(root);
}

} // namespace qpatch::cli
