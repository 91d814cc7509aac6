// SPDX-License-Identifier: Apache-2.0
// Putting back what qpatch replaced, from the backups its manifest records and nothing else. For
// each file with recorded backups: the oldest holds the original (its hash is checked, and it is
// never read through a symlink); the file must still hold what qpatch last wrote into it (the
// hash of that is recorded too), else it was edited since and restore refuses unless forced,
// when the edited bytes are first kept as a backup of their own. A `.bak` the manifest does not
// name (the user's own `cp config.json config.json.bak`, or a backup of a qpatch older than the
// manifest) is reported and never read, restored or removed.
#pragma once

#include <qpatch/commit/file_system.hpp>
#include <qpatch/error.hpp>

#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::commit {

struct RestoreStep {
  std::string file;
  std::string from;                // the recorded backup holding the original
  std::string current;             // the bytes the file holds now
  std::string original;            // the bytes it will hold
  std::vector<std::string> remove; // every recorded backup of the file, removed after
  bool edited = false;             // the file is not what qpatch wrote: needs force
  std::optional<timespec> mtime;   // the original's, which its backup kept
  std::string link;                // the symlink it was (BackupRecord::link), or ""
};

struct RestorePlan {
  std::vector<RestoreStep> steps;
  std::vector<std::string> unrecorded; // name.bak* files qpatch did not record
  std::vector<std::string> kept;       // copies qpatch kept, never removed
};

// Work out what restore would do in `dir` (the files are those qpatch patches). An Error means
// a recorded backup cannot be trusted (changed, a symlink, missing): nothing is restored.
Result<RestorePlan> plan_restore(const std::filesystem::path& dir,
                                 const std::vector<std::string>& files);

struct RestoreResult {
  std::vector<std::string> kept;     // backups made of edited files (with force)
  std::vector<std::string> relinked; // files that are their symlink again
  int interrupted_by = 0;
};

// Carry out `plan` as one transaction. Without `force`, an edited file refuses the whole
// restore (ErrorCode::changed_on_disk) before anything is written.
Result<RestoreResult> apply_restore(const std::filesystem::path& dir,
                                    const RestorePlan& plan,
                                    bool force,
                                    FileSystem& fs = posix_file_system());

} // namespace qpatch::commit
