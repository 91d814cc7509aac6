// SPDX-License-Identifier: Apache-2.0
// `qpatch [options] DIR...`: read -> inventory -> judge -> plan -> render or apply, per checkpoint.
#include "commands.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/diff/unified_diff.hpp>
#include <qpatch/plan/patch_plan.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/report/fix_report.hpp>

#include <algorithm>

namespace qpatch::cli {

using report::CheckpointOutcome;
using report::Status;

void setup_fix(CLI::App& app, FixOptions& options) {
  app.add_option("DIR", options.dirs, "Checkpoint directories (each holds config.json)");
  app.add_flag("-n,--dry-run",
               options.dry_run,
               "Print a unified diff of what would change (a/ and b/ paths relative to DIR); "
               "write nothing");
  app.add_flag("--check", options.check, "Write nothing; report and exit 1 if a patch is needed");
  app.add_flag("--json", options.json, "Print one JSON document on stdout; human text on stderr");
  app.add_option("--only",
                 options.only,
                 "Consider only modules whose checkpoint name matches REGEX (Python re.search)");
  app.add_option("--engine",
                 options.engine,
                 "vllm|sglang|transformers|all: whose loading rules to judge by; with all, a "
                 "patch satisfies every engine at once (default: all)")
      ->check(CLI::IsMember({"vllm", "sglang", "transformers", "all"}));
  app.add_flag("--no-backup", options.no_backup, "Do not keep a backup of changed files");
  app.add_option("--color", options.color, "auto|always|never (auto: a TTY without NO_COLOR)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_flag("-q,--quiet", options.quiet, "Print errors only");
  app.add_flag("-v,--verbose", options.verbose, "List every module of every finding");
}

namespace {

ExitCode exit_code_of(const CheckpointOutcome& outcome) {
  if (outcome.error) {
    switch (outcome.error->code) {
    case ErrorCode::write_failed:
    case ErrorCode::changed_on_disk:
      return ExitCode::write_failed;
    case ErrorCode::rollback_failed:
      return ExitCode::rollback_failed;
    case ErrorCode::internal:
      return ExitCode::internal;
    default:
      return ExitCode::invalid_input;
    }
  }
  switch (outcome.status) {
  case Status::clean:
  case Status::patched:
    return ExitCode::ok;
  default:
    return ExitCode::findings;
  }
}

// Judge one checkpoint and, unless only asked, patch it. `diff` collects --dry-run output.
CheckpointOutcome process(const std::string& dir,
                          const FixOptions& options,
                          const diagnose::DiagnoseOptions& diagnose_options,
                          std::string& diff) {
  CheckpointOutcome outcome;
  outcome.path = dir;
  const auto fail = [&](Error error) {
    outcome.status = Status::error;
    outcome.error = std::move(error);
    return outcome;
  };
  checkpoint::ModuleBuilder modules_builder; // groups modules while later headers are read
  auto inventory = checkpoint::read_inventory(dir, dir, modules_builder);
  if (!inventory) {
    return fail(inventory.take_error());
  }
  if (!inventory->errors.empty()) {
    for (size_t i = 1; i < inventory->errors.size(); ++i) {
      outcome.warnings.push_back("also unreadable: " + inventory->errors[i].to_string());
    }
    return fail(inventory->errors.front());
  }
  auto configs = quant::load_config_files(dir);
  if (!configs) {
    return fail(configs.take_error());
  }
  const auto modules = modules_builder.finish(*inventory);
  auto diagnosis = diagnose::diagnose(*inventory, modules, *configs, diagnose_options);
  if (!diagnosis) {
    return fail(diagnosis.take_error());
  }
  outcome.quant_method = diagnosis->quant_method;
  outcome.engine_rules = diagnosis->engine_rules;
  outcome.engines = diagnosis->engines;
  outcome.findings = diagnosis->findings;
  outcome.notes = diagnosis->notes;
  outcome.mtp = diagnosis->mtp;
  for (const auto& problem : inventory->problems) {
    if (problem.code == checkpoint::ProblemCode::wrong_file ||
        problem.code == checkpoint::ProblemCode::orphan_entry) {
      outcome.warnings.push_back(problem.path + ": " +
                                 (problem.subject.empty() ? "" : "'" + problem.subject + "': ") +
                                 problem.message);
    }
  }
  const Status unresolved = diagnosis->has_unfixable() ? Status::unfixable : Status::clean;
  if (!diagnosis->has_fixable()) {
    outcome.status = unresolved;
    return outcome;
  }
  auto plan = plan::plan_patch(*diagnosis, *configs, *inventory, diagnose_options);
  if (!plan) {
    return fail(plan.take_error());
  }
  for (const auto& change : plan->changes) {
    outcome.changes.push_back({change.file, change.added, change.removed});
    if (options.dry_run) {
      diff += diff::unified_diff(change.before, change.after, change.file);
    }
  }
  if (options.dry_run || options.check) {
    outcome.status = unresolved == Status::unfixable ? Status::unfixable : Status::needs_patch;
    return outcome;
  }
  std::vector<commit::WriteRequest> requests;
  for (const auto& change : plan->changes) {
    requests.push_back({change.file, change.before, change.after});
  }
  auto committed =
      commit::commit(dir, requests, options.no_backup ? commit::Backup::no : commit::Backup::yes);
  if (!committed) {
    return fail(committed.take_error());
  }
  outcome.backups = committed->backups;
  outcome.replaced_links = committed->replaced_links;
  outcome.status = unresolved == Status::unfixable ? Status::unfixable : Status::patched;
  return outcome;
}

} // namespace

ExitCode run_fix(const FixOptions& options, Io& io) {
  const auto when = parse_color_when(options.color).value_or(ColorWhen::automatic);
  diagnose::DiagnoseOptions diagnose_options;
  if (!options.only.empty()) {
    auto pattern = engine::Pattern::compile(options.only, "--only");
    if (!pattern) {
      io.err << "qpatch: error: " << pattern.error().to_string() << "\n";
      return ExitCode::usage;
    }
    diagnose_options.only = *pattern;
  }
  diagnose_options.engines =
      engine::EngineSet::parse(options.engine)
          .value_or(engine::EngineSet::all()); // CLI11 has already refused anything else
  std::vector<CheckpointOutcome> outcomes;
  std::string diff;
  ExitCode code = ExitCode::ok;
  for (const std::string& dir : options.dirs) {
    outcomes.push_back(process(dir, options, diagnose_options, diff));
    code = std::max(code, exit_code_of(outcomes.back()));
  }
  // Results on stdout (the diff, the JSON document); the human report goes to stdout only when
  // it is the result, so `qpatch --dry-run DIR > fix.patch` and `--json | jq` stay clean.
  const bool report_to_stdout = !options.json && !options.dry_run;
  const bool tty = report_to_stdout ? io.terminal.stdout_is_tty : io.terminal.stderr_is_tty;
  const report::TextStyle style{use_color(when, tty, io.terminal)};
  const report::Mode mode = options.dry_run ? report::Mode::dry_run
                            : options.check ? report::Mode::check
                                            : report::Mode::fix;
  const report::Verbosity verbosity = options.quiet     ? report::Verbosity::quiet
                                      : options.verbose ? report::Verbosity::verbose
                                                        : report::Verbosity::normal;
  const std::string text = report::render_fix_text(outcomes, mode, verbosity, style);
  if (options.json) {
    io.out << report::render_fix_json(outcomes).dump(2) << "\n";
  } else if (options.dry_run) {
    io.out << diff;
  }
  (report_to_stdout ? io.out : io.err) << text;
  return code;
}

} // namespace qpatch::cli
