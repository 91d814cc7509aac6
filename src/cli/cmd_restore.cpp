// SPDX-License-Identifier: Apache-2.0
// `qpatch restore DIR`: put back the files qpatch changed, from the backups its manifest records
// (commit/restore.hpp), then remove those backups. A `.bak` qpatch did not record is named and
// left alone.
#include "checkpoint_args.hpp"
#include "command_table.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "recovery.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/commit/lock.hpp>
#include <qpatch/commit/restore.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/diff/unified_diff.hpp>
#include <qpatch/graft/graft_commit.hpp>
#include <qpatch/quant/config_files.hpp>

#include <algorithm>
#include <filesystem>

namespace qpatch::cli {
namespace fs = std::filesystem;

CLI::App* setup_restore(CLI::App& app, RestoreOptions& options) {
  CLI::App* cmd =
      app.add_subcommand("restore", "Put back the original files from qpatch's backups");
  cmd->add_option("DIR", options.dirs, "Checkpoint directories")->required();
  cmd->add_flag("-n,--dry-run", options.dry_run, "Print a unified diff of what would be put back");
  cmd->add_flag("--json", options.json, "Print one JSON document on stdout");
  cmd->add_flag("--force",
                options.force,
                "Restore files edited since qpatch wrote them, keeping their current bytes as a "
                "backup first");
  return cmd;
}

namespace {

// One checkpoint's entry of the restore document: what was (or would be) put back.
json::Json restore_json(const RestoreOptions& options,
                        const commit::RestorePlan& plan,
                        const std::optional<graft::GraftRecord>& graft_record,
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
  // A graft's shards: those moved aside go back, those it created go.
  json::Json shards;
  if (graft_record) {
    json::Json back = json::Json::array();
    for (const auto& [file, backup] : graft_record->moved) {
      if (!backup.empty()) {
        back.push_back({{"file", file}, {"from", backup}});
      }
    }
    shards = {{"restored", std::move(back)}, {"removed", graft_record->created}};
  }
  return {{"path", options.dir},
          {"status",
           plan.steps.empty() && !graft_record ? "nothing-to-restore"
           : written                           ? "restored"
                                               : "would-restore"},
          {"restored", std::move(restored)},
          {"graft_shards", std::move(shards)},
          {"unrecorded_backups", plan.unrecorded},
          {"diff", diff.empty() ? json::Json() : json::Json(diff)}};
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

// Before a restore writes, the checkpoint's lock, and what an interrupted graft or transaction
// left finished or undone (recovery.hpp): restore then undoes a whole graft, never half of one
// (issue 24: a SIGKILL at a graft's rename, then restore, used to say "nothing to restore" and
// leave the grafted shards). A dry run takes no lock and notes what is pending.
std::optional<ExitCode> lock_for_restore(const RestoreOptions& options,
                                         Io& io,
                                         std::optional<commit::CheckpointLock>& lock) {
  if (!options.dry_run) {
    auto recovered = lock_and_recover(options.dir, io);
    if (!recovered) {
      return write_failure(io, recovered.error(), options.dir);
    }
    lock.emplace(std::move(recovered->lock));
    if (recovered->graft != graft::Recovery::none) {
      report(io.err,
             Level::note,
             display_path(options.dir, "") + ": an interrupted graft was " +
                 (recovered->graft == graft::Recovery::finished ? "completed" : "undone") +
                 " first");
    }
  } else if (const std::string note = pending_work(options.dir); !note.empty()) {
    report(io.err, Level::note, note);
  }
  return std::nullopt;
}

// The files restore leaves alone, said once.
void note_left_alone(const RestoreOptions& options, const commit::RestorePlan& plan, Io& io) {
  for (const std::string& name : plan.unrecorded) {
    report(io.err,
           Level::note,
           display_path(options.dir, name) +
               " is not a backup qpatch recorded (yours, or from a qpatch without a manifest); "
               "restore leaves it alone");
  }
  for (const std::string& name : plan.kept) {
    report(io.err,
           Level::note,
           display_path(options.dir, name) +
               " holds bytes qpatch found and did not write (another program's version, or "
               "edits a restore --force replaced): restore leaves it for you");
  }
}

// --dry-run (or nothing to restore): what restore would do, as text or the JSON entry.
ExitCode report_dry_run(const RestoreOptions& options,
                        const commit::RestorePlan& plan,
                        const std::optional<graft::GraftRecord>& graft_record,
                        const std::string& diff,
                        Io& io,
                        json::Json& entries) {
  if (options.dry_run && graft_record && !options.json) {
    for (const auto& [file, backup] : graft_record->moved) {
      io.out << options.dir << ": would restore " << file << " from " << backup << "\n";
    }
    for (const std::string& file : graft_record->created) {
      io.out << options.dir << ": would remove " << file << "\n";
    }
  }
  if (options.json) {
    entries.push_back(restore_json(options, plan, graft_record, false, diff));
    return ExitCode::ok;
  }
  if (plan.steps.empty() && !graft_record) {
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

// Restore `options.dir`; with --json its entry goes to `entries` instead of text to stdout.
ExitCode restore_one(const RestoreOptions& options,
                     const std::string& label_prefix,
                     Io& io,
                     json::Json& entries) {
  const fs::path dir = options.dir;
  std::optional<commit::CheckpointLock> lock;
  if (const auto failed = lock_for_restore(options, io, lock)) {
    return *failed;
  }
  auto planned = commit::plan_restore(dir, patched_files());
  if (!planned) {
    return write_failure(io, planned.error(), options.dir);
  }
  const commit::RestorePlan& plan = *planned;
  note_left_alone(options, plan, io);
  std::string diff;
  bool edited = false;
  for (const commit::RestoreStep& step : plan.steps) {
    diff += diff::unified_diff(step.current, step.original, label_prefix + step.file);
    edited = edited || step.edited;
  }
  // A graft also moved shards aside and created new ones (its record): the shards go back
  // before the index that names them, the new ones leave after it.
  const auto graft_record = graft::read_record(dir);
  // No config left to restore but a graft record: a restore stopped after the configs and
  // before the graft's shards (a SIGKILL at one of its unlinks) is finished here.
  if (options.dry_run || (plan.steps.empty() && !graft_record)) {
    return report_dry_run(options, plan, graft_record, diff, io, entries);
  }
  if (edited && !options.force) {
    io.out << diff; // what restoring would undo
  }
  if (graft_record && (!edited || options.force)) {
    if (auto shards = graft::restore_shards(dir, options.dir, *graft_record); !shards) {
      return write_failure(io, shards.error(), options.dir);
    }
  }
  auto restored = commit::apply_restore(dir, plan, options.force);
  if (!restored) {
    return write_failure(io, restored.error(), options.dir);
  }
  for (const commit::RestoreStep& step : plan.steps) {
    if (!options.json) {
      const bool relinked =
          std::find(restored->relinked.begin(), restored->relinked.end(), step.file) !=
          restored->relinked.end();
      io.out << options.dir << ": restored " << step.file << " from " << step.from
             << (relinked ? ", the symlink to " + step.link + " it was" : "") << "\n";
    }
  }
  for (const std::string& kept : restored->kept) {
    report(io.err, Level::note, "the edited bytes are kept in " + display_path(options.dir, kept));
  }
  if (graft_record) {
    if (auto removed = graft::remove_grafted(dir, options.dir, *graft_record); !removed) {
      return write_failure(io, removed.error(), options.dir);
    }
    for (const auto& [file, backup] : graft_record->moved) {
      if (!options.json && !backup.empty()) {
        io.out << options.dir << ": restored " << file << " from " << backup << "\n";
      }
    }
    for (const std::string& file : graft_record->created) {
      if (!options.json) {
        io.out << options.dir << ": removed " << file << "\n";
      }
    }
  }
  if (options.json) {
    entries.push_back(restore_json(options, plan, graft_record, true, diff));
  }
  return ExitCode::ok;
}

} // namespace

ExitCode run_restore(const RestoreOptions& options, Io& io) {
  // Each DIR in turn, as `qpatch DIR...` does; the worst exit code wins, and one document
  // (schema_version 2) holds every checkpoint's entry.
  ExitCode code = ExitCode::ok;
  json::Json entries = json::Json::array();
  for (const std::string& dir : options.dirs) {
    RestoreOptions one = options;
    one.dir = dir;
    const ExitCode done = restore_one(one, diff_prefix(dir, options.dirs.size() > 1), io, entries);
    code = to_int(done) > to_int(code) ? done : code;
  }
  if (options.json) {
    json::Json doc;
    doc["schema_version"] = 2;
    doc["checkpoints"] = std::move(entries);
    io.out << doc.dump(2) << "\n";
  }
  return code;
}

namespace {

class RestoreCommand final : public Command {
public:
  explicit RestoreCommand(CLI::App& root) { parser = setup_restore(root, m_options); }
  std::vector<std::string> dir_arguments() const override { return m_options.dirs; }
  bool raw_stdout() const override { return m_options.json || m_options.dry_run; }
  ExitCode run(CheckedDirs checked, Io& io) override {
    m_options.dirs = std::move(checked.dirs);
    return run_restore(m_options, io);
  }

private:
  RestoreOptions m_options;
};

} // namespace

std::unique_ptr<Command> make_restore_command(CLI::App& root) {
  return std::make_unique<RestoreCommand>(root);
}

} // namespace qpatch::cli
