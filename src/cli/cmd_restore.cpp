// SPDX-License-Identifier: Apache-2.0
// `qpatch restore DIR`: put back the files qpatch changed, from the backups its manifest records
// (commit/restore.hpp), then remove those backups. A `.bak` qpatch did not record is named and
// left alone.
#include "commands.hpp"
#include "diagnostics.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/commit/lock.hpp>
#include <qpatch/commit/restore.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/diff/unified_diff.hpp>
#include <qpatch/quant/config_files.hpp>

#include <filesystem>

namespace qpatch::cli {
namespace fs = std::filesystem;

CLI::App* setup_restore(CLI::App& app, RestoreOptions& options) {
  CLI::App* cmd =
      app.add_subcommand("restore", "Put back the original files from qpatch's backups");
  cmd->add_option("DIR", options.dir, "Checkpoint directory")->required();
  cmd->add_flag("-n,--dry-run", options.dry_run, "Print a unified diff of what would be put back");
  cmd->add_flag("--json", options.json, "Print one JSON document on stdout");
  cmd->add_flag("--force",
                options.force,
                "Restore files edited since qpatch wrote them, keeping their current bytes as a "
                "backup first");
  return cmd;
}

namespace {

// The restore as one document (schema_version 2): what was (or would be) put back.
json::Json restore_json(const RestoreOptions& options,
                        const commit::RestorePlan& plan,
                        bool written,
                        const std::string& diff) {
  json::Json restored = json::Json::array();
  for (const commit::RestoreStep& step : plan.steps) {
    restored.push_back(
        {{"file", step.file},
         {"from", step.from},
         {"edited_since_patch", step.edited},
         {"backups_removed", written ? json::Json(step.remove) : json::Json::array()}});
  }
  json::Json doc;
  doc["schema_version"] = 2;
  doc["checkpoints"] =
      json::Json::array({{{"path", options.dir},
                          {"status",
                           plan.steps.empty() ? "nothing-to-restore"
                           : written          ? "restored"
                                              : "would-restore"},
                          {"restored", std::move(restored)},
                          {"unrecorded_backups", plan.unrecorded},
                          {"diff", diff.empty() ? json::Json() : json::Json(diff)}}});
  return doc;
}

std::vector<std::string> patched_files() {
  std::vector<std::string> files{"config.json", std::string(checkpoint::k_index_file_name)};
  for (const std::string& sidecar : quant::sidecar_names()) {
    files.push_back(sidecar);
  }
  return files;
}

ExitCode write_failure(Io& io, const Error& error, const std::string& dir) {
  report(io.err, error, dir);
  // A busy lock, a refusal or a signal (run() makes that 128+N) all leave every file intact.
  return error.code == ErrorCode::rollback_failed ? ExitCode::rollback_failed
                                                  : ExitCode::write_failed;
}

} // namespace

ExitCode run_restore(const RestoreOptions& options, Io& io) {
  const fs::path dir = options.dir;
  std::optional<commit::CheckpointLock> lock;
  if (!options.dry_run) {
    auto taken = commit::CheckpointLock::acquire(dir, commit::lock_wait());
    if (!taken) {
      return write_failure(io, taken.error(), options.dir);
    }
    lock.emplace(taken.take_value());
    auto recovered = commit::recover(dir);
    if (!recovered) {
      return write_failure(io, recovered.error(), options.dir);
    }
    for (const std::string& note : recovered->notes) {
      report(io.err, Level::note, display_path(options.dir, "") + ": " + note);
    }
  }
  auto planned = commit::plan_restore(dir, patched_files());
  if (!planned) {
    return write_failure(io, planned.error(), options.dir);
  }
  const commit::RestorePlan& plan = *planned;
  for (const std::string& name : plan.unrecorded) {
    report(io.err,
           Level::note,
           display_path(options.dir, name) +
               " is not a backup qpatch recorded (yours, or from a qpatch without a manifest); "
               "restore leaves it alone");
  }
  std::string diff;
  bool edited = false;
  for (const commit::RestoreStep& step : plan.steps) {
    diff += diff::unified_diff(step.current, step.original, step.file);
    edited = edited || step.edited;
  }
  if (options.dry_run || plan.steps.empty()) {
    if (options.json) {
      io.out << restore_json(options, plan, false, diff).dump(2) << "\n";
      return ExitCode::ok;
    }
    if (plan.steps.empty()) {
      io.out << options.dir << ": no qpatch backups; nothing to restore\n";
      return ExitCode::ok;
    }
    for (const commit::RestoreStep& step : plan.steps) {
      io.out << options.dir << ": would restore " << step.file << " from " << step.from
             << (step.edited ? " (edited since qpatch wrote it: needs --force)" : "") << "\n";
    }
    io.out << diff;
    return ExitCode::ok;
  }
  if (edited && !options.force) {
    io.out << diff; // what restoring would undo
  }
  auto restored = commit::apply_restore(dir, plan, options.force);
  if (!restored) {
    return write_failure(io, restored.error(), options.dir);
  }
  for (const commit::RestoreStep& step : plan.steps) {
    if (!options.json) {
      io.out << options.dir << ": restored " << step.file << " from " << step.from << "\n";
    }
  }
  for (const std::string& kept : restored->kept) {
    report(io.err, Level::note, "the edited bytes are kept in " + display_path(options.dir, kept));
  }
  if (options.json) {
    io.out << restore_json(options, plan, true, diff).dump(2) << "\n";
  }
  return ExitCode::ok;
}

} // namespace qpatch::cli
