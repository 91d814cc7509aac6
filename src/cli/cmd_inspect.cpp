// SPDX-License-Identifier: Apache-2.0
// `qpatch inspect DIR...`: what is on disk, module by module, from the headers alone.
#include "command_table.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "parse_errors.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/checkpoint/open.hpp>
#include <qpatch/diagnose/module_verdicts.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/report/inspect_report.hpp>

namespace qpatch::cli {

CLI::App* setup_inspect(CLI::App& app, InspectOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show every module of a checkpoint: how it is stored and in which file");
  cmd->add_option("DIR", options.dirs, "Checkpoint directories (each holds config.json)")
      ->required();
  cmd->add_flag("--json", options.json, "Print one JSON document on stdout");
  cmd->add_flag("--summary", options.summary_only, "Print the summary only, no module rows");
  cmd->add_option(
      "--only", options.only, "Show only modules whose name matches REGEX (Python re.search)");
  cmd->add_flag("-v,--verbose",
                options.verbose,
                "Every column, lines whole even on a terminal (pipes always get them whole)");
  cmd->add_option("--color", options.color, "auto|always|never (auto: a TTY without NO_COLOR)")
      ->check(one_of("--color value", {"auto", "always", "never"}));
  return cmd;
}

namespace {

struct Inspected {
  std::optional<checkpoint::Inventory> inventory;
  checkpoint::ModuleList modules;
  std::vector<size_t> shown;
  std::optional<diagnose::ModuleVerdicts> verdicts; // text only: what the config makes of each
};

} // namespace

ExitCode run_inspect(const InspectOptions& options, Io& io) {
  const auto when = parse_color_when(options.color).value_or(ColorWhen::automatic);
  const report::TextStyle out_style{use_color(when, io.terminal.stdout_is_tty, io.terminal)};
  std::optional<engine::Pattern> only;
  if (!compile_only(options.only, only, io.err)) {
    return ExitCode::usage;
  }
  std::vector<Inspected> inspected(options.dirs.size());
  size_t shown = 0;
  for (size_t d = 0; d < options.dirs.size(); ++d) {
    const std::string& dir = options.dirs[d];
    const std::string& label = label_of(options.dirs, options.labels, d);
    // --summary stays a header read only; --json shows the disk, not the verdicts.
    if (d < options.remote_failures.size() && options.remote_failures[d]) {
      // The Hub refused the repo: its entry holds the error, and the others are still read.
      inspected[d].inventory.emplace();
      inspected[d].inventory->display_dir = label;
      inspected[d].inventory->errors.push_back(*options.remote_failures[d]);
      continue;
    }
    checkpoint::OpenOptions open_options;
    open_options.read_configs = !options.json && !options.summary_only;
    auto opened = checkpoint::open(dir, label, open_options);
    if (!opened) {
      report(io.err, opened.error(), label);
      return ExitCode::invalid_input;
    }
    if (options.remote) {
      opened->inventory.command_arg = "--remote " + label;
    }
    Inspected& one = inspected[d];
    one.modules = std::move(opened->modules);
    one.inventory = std::move(opened->inventory);
    for (size_t m = 0; m < one.modules.size(); ++m) {
      if (only) {
        const auto matched = only->matches(one.modules[m].name, engine::MatchMode::search);
        if (!matched) {
          report(io.err,
                 Level::error,
                 "--only: pattern gave up on '" + std::string(one.modules[m].name) +
                     "' (match limit)");
          return ExitCode::usage;
        }
        if (!*matched) {
          continue;
        }
      }
      one.shown.push_back(m);
    }
    shown += one.shown.size();
    if (open_options.read_configs && !opened->config_error) {
      // A config that cannot be judged costs the column, not the table: inspect is about the
      // disk, and `qpatch --check` reports the config's own error.
      auto verdicts = diagnose::module_verdicts(*one.inventory, one.modules, opened->configs);
      if (verdicts) {
        one.verdicts = verdicts.take_value();
      }
    }
  }
  if (only && shown == 0) {
    report(io.err,
           Level::error,
           "--only '" + options.only + "' matches no module in " +
               (options.dirs.size() > 1 ? "any of the checkpoints"
                                        : label_of(options.dirs, options.labels, 0)));
    return ExitCode::usage;
  }
  ExitCode code = ExitCode::ok;
  json::Json checkpoints = json::Json::array();
  for (size_t d = 0; d < inspected.size(); ++d) {
    const Inspected& one = inspected[d];
    report::InspectView view{*one.inventory,
                             one.modules,
                             one.shown,
                             options.summary_only ? report::Rows::none : report::Rows::all,
                             one.verdicts ? &*one.verdicts : nullptr,
                             options.verbose ? 0 : io.terminal.stdout_columns};
    if (options.json) {
      checkpoints.push_back(report::render_inspect_json(view));
    } else {
      io.out << (d == 0 ? "" : "\n") << report::render_inspect_text(view, out_style);
    }
    for (const auto& line : report::inventory_problems(*one.inventory)) {
      report(io.err, line.is_error ? Level::error : Level::warning, line.text);
    }
    if (one.inventory->has_errors()) {
      code = ExitCode::invalid_input;
    }
  }
  if (options.json) {
    json::Json doc;
    doc["schema_version"] = report::k_inspect_schema_version;
    doc["checkpoints"] = std::move(checkpoints);
    io.out << doc.dump(2) << "\n";
  }
  return code;
}

namespace {

class InspectCommand final : public Command {
public:
  explicit InspectCommand(CLI::App& root) { parser = setup_inspect(root, m_options); }
  std::vector<std::string> dir_arguments() const override { return m_options.dirs; }
  // --json prints a document whatever the Hub says; the text report has no place for it.
  bool reports_remote_failures() const override { return m_options.json; }
  bool raw_stdout() const override { return m_options.json; }
  ExitCode run(CheckedDirs checked, Io& io) override {
    m_options.dirs = std::move(checked.dirs);
    m_options.labels = std::move(checked.labels);
    m_options.remote = checked.remote;
    m_options.remote_failures = std::move(checked.remote_failures);
    return run_inspect(m_options, io);
  }

private:
  InspectOptions m_options;
};

} // namespace

std::unique_ptr<Command> make_inspect_command(CLI::App& root) {
  return std::make_unique<InspectCommand>(root);
}

} // namespace qpatch::cli
