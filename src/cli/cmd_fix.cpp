// SPDX-License-Identifier: Apache-2.0
// `qpatch [options] DIR...`: read -> inventory -> judge -> plan -> render or apply, per checkpoint.
#include "checkpoint_args.hpp"
#include "command_table.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "parse_errors.hpp"
#include "recovery.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/checkpoint/open.hpp>
#include <qpatch/commit/lock.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/diagnose/skip_list_lint.hpp>
#include <qpatch/diff/unified_diff.hpp>
#include <qpatch/hub/hub_cache.hpp>
#include <qpatch/plan/patch_plan.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/report/fix_report.hpp>
#include <qpatch/report/scan_report.hpp>
#include <qpatch/util/parallel.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>

namespace qpatch::cli {

using report::CheckpointOutcome;
using report::Status;
using ChangeSummaryRef = std::reference_wrapper<const report::ChangeSummary>;
namespace fs = std::filesystem;

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
                 engine_option_help("whose loading rules to judge by; by default every version "
                                    "of every engine, and a patch satisfies all of them at once"))
      ->check(engine_choice());
  app.add_flag("-r,--recursive",
               options.recursive,
               "Each DIR is a root: judge every checkpoint below it (a folder of models, a whole "
               "Hugging Face cache), one line each");
  app.add_flag("--no-backup", options.no_backup, "Do not keep a backup of changed files");
  app.add_flag("--prune",
               options.prune,
               "Also remove the skip-list entries no verdict depends on (dead "
               "ones and duplicates, as the lint line counts them)");
  app.add_option("--color", options.color, "auto|always|never (auto: a TTY without NO_COLOR)")
      ->check(one_of("--color value", {"auto", "always", "never"}));
  CLI::Option* quiet = app.add_flag("-q,--quiet", options.quiet, "Print errors only");
  app.add_flag("-v,--verbose", options.verbose, "List every module of every finding")
      ->excludes(quiet);
}

namespace {

ExitCode exit_code_of(const CheckpointOutcome& outcome) {
  if (outcome.error) {
    switch (outcome.error->code) {
    case ErrorCode::write_failed:
    case ErrorCode::changed_on_disk:
      return ExitCode::write_failed; // busy and interrupted too: run() maps a signal to 128+N
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

// A checkpoint judged and planned, with what it would write; nothing is written yet.
struct Judged {
  CheckpointOutcome outcome;
  std::vector<commit::WriteRequest> requests;
  bool only_matched = false; // --only matched at least one module here
};

// What the report says of the judgement itself: the method, and the engines and versions judged.
void describe_judgement(const diagnose::Diagnosis& diagnosis, CheckpointOutcome& outcome) {
  outcome.quant_method = diagnosis.quant_method;
  outcome.built_weight = diagnosis.built_weight;
  outcome.engine_rules = diagnosis.engine_rules;
  outcome.engines = diagnosis.engines;
  for (const std::string& name : diagnosis.engines) {
    std::vector<std::string> labels;
    std::vector<engine::EngineVersion> versions;
    for (const engine::EngineVersion& version : diagnosis.versions_judged) {
      if (engine::to_string(version.engine) == name) {
        labels.push_back(version.label());
        versions.push_back(version);
      }
    }
    outcome.engine_versions.emplace_back(name, std::move(labels));
    // Several versions, or one other than the newest (--engine ENGINE@REF), or one that is no
    // commit of the engine's main (transformers): the header says.
    if (versions.size() > 1 ||
        (versions.size() == 1 &&
         (versions.front().spans_eras || !versions.front().newest() ||
          !versions.front().with.empty() || !versions.front().judged_as().empty()))) {
      outcome.engine_ranges.emplace_back(name, engine::range_text(versions));
    }
  }
}

// `shown` is what the report calls `dir`: the DIR argument, or a repo id with --remote.
Judged judge(const std::string& dir,
             const std::string& shown,
             const diagnose::DiagnoseOptions& diagnose_options,
             const std::string& label_prefix) {
  Judged judged;
  CheckpointOutcome& outcome = judged.outcome;
  outcome.path = shown;
  const auto fail = [&](Error error) {
    outcome.status = Status::error;
    outcome.error = std::move(error);
    return judged;
  };
  auto opened = checkpoint::open(dir, shown);
  if (!opened) {
    return fail(opened.take_error());
  }
  const checkpoint::Inventory* inventory = &opened->inventory;
  if (!inventory->errors.empty()) {
    for (size_t i = 1; i < inventory->errors.size(); ++i) {
      outcome.warnings.push_back("also unreadable: " + inventory->errors[i].to_string());
    }
    return fail(inventory->errors.front());
  }
  if (opened->config_error) {
    return fail(*opened->config_error);
  }
  const quant::ConfigSet* configs = &opened->configs;
  const auto& modules = opened->modules;
  if (diagnose_options.only) {
    for (const auto& module : modules) {
      const auto matched = diagnose_options.only->matches(module.name, engine::MatchMode::search);
      if (!matched || *matched) {
        judged.only_matched = true; // a pattern that gives up is reported by the judge
        break;
      }
    }
  }
  // The plan re-judges this same inventory: the layers each engine builds are built once.
  diagnose::DiagnoseOptions options = diagnose_options;
  options.layer_cache = diagnose::make_layer_cache();
  auto diagnosis = diagnose::diagnose(*inventory, modules, *configs, options);
  if (!diagnosis) {
    return fail(diagnosis.take_error());
  }
  describe_judgement(*diagnosis, outcome);
  outcome.findings = diagnosis->findings;
  outcome.notes = diagnosis->notes;
  if (!diagnose_options.prune) {
    // The skip list's dead weight, counted (--prune removes it with the patch).
    outcome.lint = diagnosis->lint;
  }
  outcome.mtp = diagnosis->mtp;
  for (const auto& problem : inventory->problems) {
    if (problem.code == checkpoint::ProblemCode::wrong_file ||
        problem.code == checkpoint::ProblemCode::orphan_entry) {
      outcome.warnings.push_back(display_path(shown, problem.path) + ": " +
                                 (problem.subject.empty() ? "" : "'" + problem.subject + "': ") +
                                 problem.message);
    }
  }
  if (!diagnosis->has_fixable()) {
    outcome.status = diagnosis->has_unfixable() ? Status::unfixable : Status::clean;
    return judged;
  }
  auto plan = plan::plan_patch(*diagnosis, *configs, *inventory, options, &modules);
  if (!plan) {
    return fail(plan.take_error());
  }
  // The status is the patched checkpoint's, as the run after this one will find it: where the
  // re-judge finds nothing unfixable, what looked unfixable went with the patch's rewrite (a
  // transformers refusal of a glob in a list the patch rewrites), and is reported as fixed by it.
  const Status unresolved = plan->left_unfixable.empty() ? Status::clean : Status::unfixable;
  if (unresolved == Status::clean) {
    for (diagnose::Finding& finding : outcome.findings) {
      finding.fixable = true;
    }
  }
  for (const auto& change : plan->changes) {
    outcome.changes.push_back(
        {change.file,
         change.added,
         change.removed,
         diff::unified_diff(change.before, change.after, label_prefix + change.file)});
    judged.requests.push_back({change.file, change.before, change.after});
  }
  outcome.status = unresolved == Status::unfixable ? Status::unfixable : Status::needs_patch;
  return judged;
}

// Write one judged checkpoint's plan; its outcome says what was written.
void apply(const std::string& dir, const FixOptions& options, Judged& judged) {
  CheckpointOutcome& outcome = judged.outcome;
  if (judged.requests.empty()) {
    return;
  }
  auto committed = commit::commit(
      dir, judged.requests, options.no_backup ? commit::Backup::no : commit::Backup::yes);
  if (!committed) {
    outcome.status = Status::error;
    outcome.error = committed.take_error();
    return;
  }
  outcome.backups = committed->backups;
  outcome.replaced_links = committed->replaced_links;
  if (outcome.status == Status::needs_patch) {
    outcome.status = Status::patched;
  }
}

// A dry-run diff for files that are symlinks (a Hugging Face cache snapshot links each file into
// blobs/) cannot be applied as printed: `git apply` fails ("patch does not apply": it reads the
// link itself), GNU patch refuses ("not a regular file"), and `patch --follow-symlinks` would
// rewrite the blob every snapshot of that content shares. Say how to apply it there.
std::string symlinked_diff_note(const std::string& dir, const CheckpointOutcome& outcome) {
  std::vector<std::string> linked;
  for (const ChangeSummaryRef change : outcome.changes) {
    std::error_code ec;
    if (fs::is_symlink(fs::path(dir) / change.get().file, ec)) {
      linked.push_back(change.get().file);
    }
  }
  if (linked.empty()) {
    return "";
  }
  const std::string first =
      report::shell_command("", (fs::path(dir) / linked.front()).string()).substr(1);
  return display_path(dir, linked.front()) +
         (linked.size() > 1 ? " and " + std::to_string(linked.size() - 1) + " more are" : " is") +
         " a symlink into the Hub cache's blobs/, which `git apply` and `patch` refuse (and "
         "`patch --follow-symlinks` would change the blob other snapshots share): apply the fix "
         "with `" +
         report::shell_command("qpatch", dir) +
         "`, which writes a regular file and keeps the blob, or make the link a copy first: cp "
         "--remove-destination \"$(readlink -f " +
         first + ")\" " + first;
}

} // namespace

bool config_needs_patch(const std::string& dir) {
  return judge(dir, dir, diagnose::DiagnoseOptions{}, "").outcome.status == Status::needs_patch;
}

namespace {

// Judge every checkpoint not locked out, on a few threads at once when there are several (a
// scan of a whole cache): each is an independent read, and the header reads of one small
// checkpoint do not fill the cores. Each thread takes the next checkpoint; results keep the
// order of the arguments.
void judge_all(const FixOptions& options,
               const diagnose::DiagnoseOptions& diagnose_options,
               const std::vector<bool>& locked_out,
               std::vector<Judged>& judged) {
  const bool several = options.dirs.size() > 1;
  // Checkpoints are judged side by side; an exception (run() reports it as an internal error)
  // is rethrown once the others are judged, and judging writes nothing.
  util::parallel_for(options.dirs.size(), [&](size_t i) {
    if (i < options.remote_failures.size() && options.remote_failures[i]) {
      judged[i].outcome.path = label_of(options.dirs, options.labels, i);
      judged[i].outcome.status = Status::error;
      judged[i].outcome.error = options.remote_failures[i];
      judged[i].outcome.remote = true;
      judged[i].outcome.hub = options.sources[i];
    } else if (!locked_out[i]) {
      // Diff labels of a Hub repo are relative to the repo (a/config.json), or, for
      // several, name it (a/Org/Name/config.json).
      const std::string& shown = label_of(options.dirs, options.labels, i);
      judged[i] = judge(options.dirs[i],
                        shown,
                        diagnose_options,
                        options.remote ? (several ? shown + "/" : "")
                                       : diff_prefix(options.dirs[i], several));
      judged[i].outcome.remote = options.remote;
      if (i < options.sources.size()) {
        judged[i].outcome.hub = options.sources[i];
      } else if (const auto snapshot = hub::snapshot_of_path(options.dirs[i])) {
        const auto asked = options.revisions.find(options.dirs[i]);
        judged[i].outcome.hub =
            report::HubSource{snapshot->repo_id,
                              asked != options.revisions.end() ? asked->second : std::string(),
                              snapshot->commit,
                              false};
      }
    }
  });
}

// Print what was judged and written: warnings and errors on stderr, then the results on stdout
// (the diff, the JSON document) and the human report, on stdout only when it is the result, so
// `qpatch --dry-run DIR > fix.patch` and `--json | jq` stay clean. The exit code of them all.
ExitCode report_all(const FixOptions& options,
                    std::vector<Judged>& judged,
                    const std::vector<bool>& pending,
                    bool any_unreadable,
                    Io& io) {
  const bool several = options.dirs.size() > 1;
  const bool writing = !options.dry_run && !options.check;
  const auto when = parse_color_when(options.color).value_or(ColorWhen::automatic);
  std::vector<CheckpointOutcome> outcomes;
  std::string diff;
  ExitCode code = ExitCode::ok;
  for (size_t i = 0; i < judged.size(); ++i) {
    CheckpointOutcome& outcome = judged[i].outcome;
    for (const std::string& warning : outcome.warnings) {
      report(io.err, Level::warning, warning);
    }
    if (outcome.error) {
      report(io.err, *outcome.error, label_of(options.dirs, options.labels, i));
    }
    for (const ChangeSummaryRef change : outcome.changes) {
      diff += change.get().diff;
    }
    code = std::max(code, exit_code_of(outcome));
    if (options.dry_run && !options.remote && !options.quiet) {
      if (const std::string note = symlinked_diff_note(options.dirs[i], outcome); !note.empty()) {
        report(io.err, Level::note, note);
      }
    }
    if (pending[i] && !outcome.error) {
      code = std::max(code, ExitCode::findings); // a write is pending: not a clean checkpoint
    }
    outcomes.push_back(std::move(outcome));
  }
  if (writing && any_unreadable) {
    report(io.err,
           Level::note,
           "nothing written: every checkpoint must be readable before any is patched");
  }
  const bool report_to_stdout = !options.json && !options.dry_run;
  const bool tty = report_to_stdout ? io.terminal.stdout_is_tty : io.terminal.stderr_is_tty;
  report::TextOptions text_options;
  text_options.style = report::TextStyle{use_color(when, tty, io.terminal)};
  text_options.width = report_to_stdout ? io.terminal.stdout_columns : io.terminal.stderr_columns;
  text_options.mode = options.dry_run ? report::Mode::dry_run
                      : options.check ? report::Mode::check
                                      : report::Mode::fix;
  text_options.verbosity = options.quiet     ? report::Verbosity::quiet
                           : options.verbose ? report::Verbosity::verbose
                                             : report::Verbosity::normal;
  // A scan of a whole cache is read as a list: one line per checkpoint unless -v.
  std::string text = options.recursive && !options.verbose
                         ? report::render_scan_lines(outcomes, options.quiet)
                         : report::render_fix_text(outcomes, text_options);
  if ((several || options.recursive) && !options.quiet) {
    text += report::render_total(outcomes, text_options.mode);
  }
  if (options.json) {
    io.out << report::render_fix_json(outcomes).dump(2) << "\n";
  } else if (options.dry_run) {
    io.out << diff;
  }
  (report_to_stdout ? io.out : io.err) << text;
  return code;
}

} // namespace

ExitCode run_fix(const FixOptions& options, Io& io) {
  diagnose::DiagnoseOptions diagnose_options;
  if (!compile_only(options.only, diagnose_options.only, io.err)) {
    return ExitCode::usage;
  }
  // CLI11 has already refused anything else (engine_choice).
  const auto choice =
      engine::parse_engine_choice(options.engine).choice.value_or(engine::EngineChoice{});
  diagnose_options.engines = choice.engines;
  diagnose_options.engines_named = options.engine != "all";
  diagnose_options.pins = choice.pins;
  diagnose_options.prune = options.prune;
  if (!options.quiet) {
    for (const std::string& note : choice.notes) {
      report(io.err, Level::note, note);
    }
  }
  // Judge every checkpoint before writing any: a checkpoint that cannot be read stops every
  // write, so exit 3 keeps its promise that nothing was written anywhere.
  const bool several = options.dirs.size() > 1;
  const bool writing = !options.dry_run && !options.check;
  std::vector<Judged> judged(options.dirs.size());
  // A writing run holds each checkpoint's lock from before it reads it until its commit is over,
  // and first finishes what an interrupted run left (commit/lock.hpp, commit::recover).
  std::vector<commit::CheckpointLock> locks;
  std::vector<bool> locked_out(options.dirs.size(), false);
  for (size_t i = 0; writing && i < options.dirs.size(); ++i) {
    auto recovered = lock_and_recover(options.dirs[i], io);
    if (!recovered) {
      judged[i].outcome.path = options.dirs[i];
      judged[i].outcome.status = Status::error;
      judged[i].outcome.error = recovered.take_error();
      locked_out[i] = true;
      continue;
    }
    if (recovered->graft != graft::Recovery::none) {
      report(io.err,
             Level::note,
             display_path(options.dirs[i], "") + ": an interrupted graft was " +
                 (recovered->graft == graft::Recovery::finished ? "completed" : "undone"));
    }
    locks.push_back(std::move(recovered->lock));
  }
  // Nothing is written here, so what an interrupted run left stays; say so before the report,
  // which judges the files as they are mid-way.
  std::vector<bool> pending(options.dirs.size(), false);
  for (size_t i = 0; !writing && !options.remote && i < options.dirs.size(); ++i) {
    if (const std::string note = pending_work(options.dirs[i]); !note.empty()) {
      report(io.err, Level::note, note);
      pending[i] = true;
    }
  }
  judge_all(options, diagnose_options, locked_out, judged);
  bool any_unreadable = false;
  bool only_matched = false;
  for (size_t i = 0; i < judged.size(); ++i) {
    // A checkpoint another qpatch is writing is reported, and holds back no other.
    any_unreadable = any_unreadable || (!locked_out[i] && judged[i].outcome.error.has_value());
    only_matched = only_matched || judged[i].only_matched;
  }
  if (diagnose_options.only && !only_matched && !any_unreadable) {
    report(io.err,
           Level::error,
           "--only '" + options.only + "' matches no module in " +
               (several ? "any of the checkpoints" : label_of(options.dirs, options.labels, 0)) +
               "; see the names with 'qpatch inspect DIR'");
    return ExitCode::usage;
  }
  for (size_t i = 0; i < judged.size(); ++i) {
    if (!writing) {
      continue;
    }
    if (any_unreadable) {
      judged[i].outcome.held_back = !judged[i].requests.empty();
      continue;
    }
    apply(options.dirs[i], options, judged[i]);
  }
  return report_all(options, judged, pending, any_unreadable, io);
}

namespace {

class FixCommand final : public Command {
public:
  explicit FixCommand(CLI::App& root) {
    setup_fix(root, m_options);
    parser = &root;
  }
  std::vector<std::string> dir_arguments() const override { return m_options.dirs; }
  bool recursive() const override { return m_options.recursive; }
  std::string remote_refusal() const override {
    return m_options.check || m_options.dry_run
               ? ""
               : "--remote reads a Hub repo and cannot patch it: add --check, or --dry-run for "
                 "the diff (apply it after 'hf download', or open a pull request with it)";
  }
  bool reports_remote_failures() const override { return true; }
  bool quiet() const override { return m_options.quiet; }
  bool raw_stdout() const override { return m_options.json || m_options.dry_run; }
  ExitCode run(CheckedDirs checked, Io& io) override {
    m_options.dirs = std::move(checked.dirs);
    m_options.labels = std::move(checked.labels);
    m_options.remote = checked.remote;
    m_options.sources = std::move(checked.sources);
    m_options.remote_failures = std::move(checked.remote_failures);
    m_options.revisions = std::move(checked.revisions);
    return run_fix(m_options, io);
  }

private:
  FixOptions m_options;
};

} // namespace

std::unique_ptr<Command> make_fix_command(CLI::App& root) {
  return std::make_unique<FixCommand>(root);
}

} // namespace qpatch::cli
