// SPDX-License-Identifier: Apache-2.0
// `qpatch inspect DIR`: what is on disk, module by module, from the headers alone.
#include "commands.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/report/inspect_report.hpp>

namespace qpatch::cli {

CLI::App* setup_inspect(CLI::App& app, InspectOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show every module of a checkpoint: how it is stored and in which file");
  cmd->add_option("DIR", options.dir, "Checkpoint directory (holds config.json)")->required();
  cmd->add_flag("--json", options.json, "Print one JSON document on stdout");
  cmd->add_flag("--summary", options.summary_only, "Print the summary only, no module rows");
  cmd->add_option(
      "--only", options.only, "Show only modules whose name matches REGEX (Python re.search)");
  cmd->add_option("--color", options.color, "auto|always|never (auto: a TTY without NO_COLOR)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  return cmd;
}

ExitCode run_inspect(const InspectOptions& options, Io& io) {
  const auto when = parse_color_when(options.color).value_or(ColorWhen::automatic);
  const report::TextStyle out_style{use_color(when, io.terminal.stdout_is_tty, io.terminal)};
  const report::TextStyle err_style{use_color(when, io.terminal.stderr_is_tty, io.terminal)};
  std::optional<engine::Pattern> only;
  if (!options.only.empty()) {
    auto pattern = engine::Pattern::compile(options.only, "--only");
    if (!pattern) {
      io.err << "qpatch: error: " << pattern.error().to_string() << "\n";
      return ExitCode::usage;
    }
    only = *pattern;
  }
  checkpoint::ModuleBuilder modules_builder; // groups modules while later headers are read
  auto inventory = checkpoint::read_inventory(options.dir, options.dir, modules_builder);
  if (!inventory) {
    io.err << "qpatch: error: " << inventory.error().to_string() << "\n";
    return ExitCode::invalid_input;
  }
  const auto modules = modules_builder.finish(*inventory);
  report::InspectView view{
      *inventory, modules, {}, options.summary_only ? report::Rows::none : report::Rows::all};
  view.shown.reserve(modules.size());
  for (size_t m = 0; m < modules.size(); ++m) {
    if (only) {
      const auto matched = only->matches(modules[m].name, engine::MatchMode::search);
      if (!matched) {
        io.err << "qpatch: error: --only: pattern gave up on '" << modules[m].name
               << "' (match limit)\n";
        return ExitCode::usage;
      }
      if (!*matched) {
        continue;
      }
    }
    view.shown.push_back(m);
  }
  if (options.json) {
    io.out << report::render_inspect_json(view).dump(2) << "\n";
  } else {
    io.out << report::render_inspect_text(view, out_style);
  }
  io.err << report::render_inventory_problems(*inventory, err_style);
  return inventory->has_errors() ? ExitCode::invalid_input : ExitCode::ok;
}

} // namespace qpatch::cli
