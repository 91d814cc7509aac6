// SPDX-License-Identifier: Apache-2.0
// `qpatch restore DIR`: put back the files qpatch changed, from their oldest backup (the
// original), then remove the backups.
#include "commands.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/quant/config_files.hpp>

#include <filesystem>

namespace qpatch::cli {
namespace fs = std::filesystem;

CLI::App* setup_restore(CLI::App& app, RestoreOptions& options) {
  CLI::App* cmd =
      app.add_subcommand("restore", "Put back the original files from qpatch's backups");
  cmd->add_option("DIR", options.dir, "Checkpoint directory")->required();
  return cmd;
}

ExitCode run_restore(const RestoreOptions& options, Io& io) {
  const fs::path dir = options.dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    io.err << "qpatch: error: " << options.dir << ": no such directory\n";
    return ExitCode::invalid_input;
  }
  std::vector<std::string> files{"config.json", std::string(checkpoint::k_index_file_name)};
  for (const std::string& sidecar : quant::sidecar_names()) {
    files.push_back(sidecar);
  }
  std::vector<commit::WriteRequest> requests;
  std::vector<std::vector<std::string>> backups;
  for (const std::string& file : files) {
    const auto found = commit::backups_of(dir, file);
    if (found.empty()) {
      continue;
    }
    auto original = json::read_file(dir / found.front(), found.front(), limits::k_max_index_size);
    auto current = json::read_file(dir / file, file, limits::k_max_index_size);
    if (!original || !current) {
      io.err << "qpatch: error: " << (!original ? original.error() : current.error()).to_string()
             << "\n";
      return ExitCode::invalid_input;
    }
    if (*original != *current) {
      requests.push_back({file, *current, *original});
    }
    backups.push_back(found);
  }
  if (backups.empty()) {
    io.out << options.dir << ": no qpatch backups; nothing to restore\n";
    return ExitCode::ok;
  }
  auto committed = commit::commit(dir, requests, commit::Backup::no);
  if (!committed) {
    io.err << "qpatch: error: " << committed.error().to_string() << "\n";
    return committed.error().code == ErrorCode::rollback_failed ? ExitCode::rollback_failed
                                                                : ExitCode::write_failed;
  }
  for (const auto& list : backups) {
    for (const std::string& backup : list) {
      fs::remove(dir / backup, ec);
    }
    io.out << options.dir << ": restored " << list.front().substr(0, list.front().size() - 4)
           << " from " << list.front() << "\n";
  }
  return ExitCode::ok;
}

} // namespace qpatch::cli
