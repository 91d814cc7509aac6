// SPDX-License-Identifier: Apache-2.0
// `qpatch restore DIR`: put back the files qpatch changed, from their oldest backup (the
// original), then remove the backups.
#include "checkpoint_args.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/diff/unified_diff.hpp>
#include <qpatch/graft/graft_commit.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/quant/config_files.hpp>

#include <filesystem>

namespace qpatch::cli {
namespace fs = std::filesystem;

CLI::App* setup_restore(CLI::App& app, RestoreOptions& options) {
  CLI::App* cmd =
      app.add_subcommand("restore", "Put back the original files from qpatch's backups");
  cmd->add_option("DIR", options.dirs, "Checkpoint directories")->required();
  cmd->add_flag("-n,--dry-run", options.dry_run, "Print a unified diff of what would be put back");
  cmd->add_flag("--json", options.json, "Print one JSON document on stdout");
  return cmd;
}

namespace {

// One checkpoint's entry of the restore document: what was (or would be) put back.
json::Json restore_json(const RestoreOptions& options,
                        const std::vector<std::vector<std::string>>& backups,
                        bool written,
                        const std::string& diff) {
  json::Json restored = json::Json::array();
  for (const auto& list : backups) {
    restored.push_back({{"file", list.front().substr(0, list.front().size() - 4)},
                        {"from", list.front()},
                        {"backups_removed", written ? json::Json(list) : json::Json::array()}});
  }
  return {{"path", options.dir},
          {"status",
           backups.empty() ? "nothing-to-restore"
           : written       ? "restored"
                           : "would-restore"},
          {"restored", std::move(restored)},
          {"diff", diff.empty() ? json::Json() : json::Json(diff)}};
}

// Restore `options.dir`; with --json its entry goes to `entries` instead of text to stdout.
ExitCode restore_one(const RestoreOptions& options,
                     const std::string& label_prefix,
                     Io& io,
                     json::Json& entries) {
  const fs::path dir = options.dir;
  std::vector<std::string> files{"config.json", std::string(checkpoint::k_index_file_name)};
  for (const std::string& sidecar : quant::sidecar_names()) {
    files.push_back(sidecar);
  }
  std::vector<commit::WriteRequest> requests;
  std::vector<std::vector<std::string>> backups;
  std::string diff;
  for (const std::string& file : files) {
    const auto found = commit::backups_of(dir, file);
    if (found.empty()) {
      continue;
    }
    auto original = json::read_file(dir / found.front(), found.front(), limits::k_max_index_size);
    auto current = json::read_file(dir / file, file, limits::k_max_index_size);
    if (!original || !current) {
      report(io.err, !original ? original.error() : current.error(), options.dir);
      return ExitCode::invalid_input;
    }
    if (*original != *current) {
      requests.push_back({file, *current, *original});
      diff += diff::unified_diff(*current, *original, label_prefix + file);
    }
    backups.push_back(found);
  }
  // A graft also moved shards aside and created new ones: the shards go back before the index
  // that names them, the new ones leave after it.
  const auto graft_record = graft::read_record(dir);
  if (options.dry_run && graft_record && !options.json) {
    for (const auto& [file, backup] : graft_record->moved) {
      io.out << options.dir << ": would restore " << file << " from " << backup << "\n";
    }
    for (const std::string& file : graft_record->created) {
      io.out << options.dir << ": would remove " << file << "\n";
    }
  }
  if (options.dry_run || backups.empty()) {
    if (options.json) {
      entries.push_back(restore_json(options, backups, false, diff));
    } else if (backups.empty()) {
      io.out << options.dir << ": no qpatch backups; nothing to restore\n";
    } else {
      io.out << diff;
    }
    return ExitCode::ok;
  }
  if (graft_record) {
    if (auto restored = graft::restore_shards(dir, options.dir, *graft_record); !restored) {
      report(io.err, restored.error(), options.dir);
      return ExitCode::write_failed;
    }
  }
  auto committed = commit::commit(dir, requests, commit::Backup::no);
  if (!committed) {
    report(io.err, committed.error(), options.dir);
    return committed.error().code == ErrorCode::rollback_failed ? ExitCode::rollback_failed
                                                                : ExitCode::write_failed;
  }
  std::error_code ec;
  for (const auto& list : backups) {
    for (const std::string& backup : list) {
      fs::remove(dir / backup, ec);
    }
    if (!options.json) {
      io.out << options.dir << ": restored " << list.front().substr(0, list.front().size() - 4)
             << " from " << list.front() << "\n";
    }
  }
  if (graft_record) {
    if (auto removed = graft::remove_grafted(dir, options.dir, *graft_record); !removed) {
      report(io.err, removed.error(), options.dir);
      return ExitCode::write_failed;
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
    entries.push_back(restore_json(options, backups, true, diff));
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

} // namespace qpatch::cli
