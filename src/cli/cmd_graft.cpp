// SPDX-License-Identifier: Apache-2.0
// `qpatch graft --from DONOR DIR`: read both -> select and check -> plan (shards, index, config
// patch) -> render, or write and commit. The work is graft/'s; this file maps it to streams and
// exit codes.
#include "command_table.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "recovery.hpp"

#include <qpatch/commit/lock.hpp>
#include <qpatch/diff/unified_diff.hpp>
#include <qpatch/graft/graft_commit.hpp>
#include <qpatch/report/graft_report.hpp>

#include <chrono>

namespace qpatch::cli {

CLI::App* setup_graft(CLI::App& app, GraftOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "graft", "Put dense weights (the MTP head) from a base model into a checkpoint");
  cmd->add_option("--from", options.donor, "DONOR: a checkpoint storing the modules dense")
      ->required();
  cmd->add_option("DIR", options.dir, "Checkpoint directory to graft into")->required();
  cmd->add_option("--only",
                  options.only,
                  "Graft the modules whose name matches REGEX (Python re.search) instead of the "
                  "MTP head");
  cmd->add_flag(
      "-n,--dry-run", options.dry_run, "Print the plan and the config diff; write nothing");
  cmd->add_flag(
      "--check", options.check, "Write nothing; exit 1 if a graft would change something");
  cmd->add_flag("--json", options.json, "Print one JSON document on stdout");
  cmd->add_flag(
      "--no-backup", options.no_backup, "Remove the replaced files instead of keeping them");
  return cmd;
}

namespace {

ExitCode exit_code_of(const Error& error) {
  switch (error.code) {
  case ErrorCode::no_space:
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

// "\r  copying 412 of 850 MB" on a terminal, once a copy has run a second.
graft::Progress progress_line(Io& io) {
  if (!io.terminal.stderr_is_tty) {
    return {};
  }
  const auto start = std::chrono::steady_clock::now();
  return [&io, start](uint64_t done, uint64_t total) {
    if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
      return;
    }
    io.err << "\r  copying     " << (done >> 20) << " of " << (total >> 20) << " MB"
           << (done == total ? "\n" : "") << std::flush;
  };
}

} // namespace

ExitCode run_graft(const GraftOptions& options, Io& io) {
  std::optional<engine::Pattern> only;
  if (!compile_only(options.only, only, io.err)) {
    return ExitCode::usage;
  }
  const bool writing = !options.dry_run && !options.check;
  report::GraftOutcome outcome;
  outcome.path = options.dir;
  outcome.donor = options.donor;
  // As `qpatch DIR` does: hold the checkpoint's lock through the commit, and first complete or
  // undo what an interrupted run left (recovery.hpp).
  std::optional<commit::CheckpointLock> lock;
  if (writing) {
    auto recovered = lock_and_recover(options.dir, io);
    if (!recovered) {
      report(io.err, recovered.error(), options.dir);
      return exit_code_of(recovered.error());
    }
    lock.emplace(std::move(recovered->lock));
    outcome.recovered = recovered->graft;
  } else if (const std::string note = pending_work(options.dir); !note.empty()) {
    report(io.err, Level::note, note);
  }
  auto dir = graft::read_checkpoint(options.dir, options.dir);
  auto donor = graft::read_checkpoint(options.donor, options.donor);
  if (!dir || !donor) {
    if (!dir) {
      report(io.err, dir.error(), options.dir);
    }
    if (!donor) {
      report(io.err, donor.error(), options.donor);
    }
    return ExitCode::invalid_input;
  }
  graft::PlanOptions plan_options;
  plan_options.only = only;
  auto plan = graft::plan_graft(*dir, *donor, plan_options);
  if (!plan) {
    // The plan names files of both checkpoints, each already under the directory the user
    // typed: prefixing DIR again would name "quant/base/model.safetensors" (issue 25).
    report(io.err, plan.error(), "");
    return exit_code_of(plan.error());
  }
  outcome.plan = &*plan;
  for (const graft::ConfigEdit& edit : plan->configs) {
    outcome.diff += diff::unified_diff(edit.before, edit.after, edit.file);
  }
  ExitCode code = ExitCode::ok;
  if (plan->empty()) {
    outcome.status = report::GraftStatus::nothing_to_graft;
    // The weights are right; the config may still misdescribe them (the bundled sample: a
    // dense head its `ignore` does not list), which is a patch, not a graft (issue 25).
    outcome.config_needs_patch = config_needs_patch(options.dir);
  } else if (!writing) {
    outcome.status = report::GraftStatus::would_graft;
    code = ExitCode::findings;
  } else {
    graft::CommitOptions commit_options;
    commit_options.backup = options.no_backup ? commit::Backup::no : commit::Backup::yes;
    commit_options.progress = progress_line(io);
    auto result = graft::commit_graft(options.dir, options.dir, *plan, commit_options);
    if (!result) {
      report(io.err, result.error(), options.dir);
      return exit_code_of(result.error());
    }
    outcome.result = result.take_value();
    outcome.status = report::GraftStatus::grafted;
  }
  // The stream rule every subcommand keeps (README "Streams"): the result on stdout (the report,
  // or the diff with --dry-run, or the document with --json), the human report on stderr
  // whenever it is not the result, so `qpatch graft --dry-run ... > graft.patch` is a patch.
  const bool report_to_stdout = !options.json && !options.dry_run;
  (report_to_stdout ? io.out : io.err) << report::render_graft_text(outcome);
  if (options.json) {
    io.out << report::render_graft_json(outcome).dump(2) << "\n";
  } else if (options.dry_run) {
    io.out << outcome.diff;
  }
  return code;
}

namespace {

class GraftCommand final : public Command {
public:
  explicit GraftCommand(CLI::App& root) { parser = setup_graft(root, m_options); }
  std::vector<std::string> dir_arguments() const override {
    return {m_options.dir, m_options.donor};
  }
  bool raw_stdout() const override { return m_options.json || m_options.dry_run; }
  ExitCode run(CheckedDirs checked, Io& io) override {
    m_options.dir = checked.dirs[0];
    m_options.donor = checked.dirs[1];
    return run_graft(m_options, io);
  }

private:
  GraftOptions m_options;
};

} // namespace

std::unique_ptr<Command> make_graft_command(CLI::App& root) {
  return std::make_unique<GraftCommand>(root);
}

} // namespace qpatch::cli
