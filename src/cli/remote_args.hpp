// SPDX-License-Identifier: Apache-2.0
// `--remote`: every DIR argument is a Hub repo id, read header-only into a private temporary
// directory (hub/remote_checkpoint.hpp) that lives as long as the command and is removed after
// it, whatever the outcome. The subcommands then judge those directories as local checkpoints,
// under labels that name the repo, so every message and report says "Org/Name/config.json".
#pragma once

#include "command_table.hpp"
#include "exit_code.hpp"

#include <qpatch/error.hpp>
#include <qpatch/report/fix_report.hpp>

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace qpatch::cli {

class RemoteCheckpoints {
public:
  RemoteCheckpoints() = default;
  ~RemoteCheckpoints();
  RemoteCheckpoints(const RemoteCheckpoints&) = delete;
  RemoteCheckpoints& operator=(const RemoteCheckpoints&) = delete;

  // Replace each repo id of checked.dirs by its local copy and fill checked.labels with the repo
  // ids (dirs[i] is read, labels[i] shown) and checked.sources with what was read. `revision`
  // is --revision. Unless `quiet`, note what was read on `err`. On failure the error is on
  // `err` and the exit code is returned: usage (2) for an argument that is not a repo id or
  // HF_HUB_OFFLINE, invalid_input (3) for a Hub error, 128+N for a signal. With `keep_going`
  // (the fix command, whose report has a place for it), a Hub error is instead recorded in
  // checked.remote_failures[i] and the other repos are still read.
  std::optional<int> fetch(CheckedDirs& checked,
                           const std::string& revision,
                           bool quiet,
                           bool keep_going,
                           std::ostream& err);

private:
  std::filesystem::path m_root; // the temporary directory, "" until made
};

} // namespace qpatch::cli
