// SPDX-License-Identifier: Apache-2.0
// Writing the files of one checkpoint together or not at all. For each file: a byte-exact
// backup before its first change (name.bak, else name.bak.1, ...; never overwritten), a temp
// file beside it (.name.qpatch-XXXXXX) with the target's mode, written and fsynced, then renamed
// over the target; the directory is fsynced last. A rename onto a symlink replaces the link with
// a regular file and leaves its target (a Hugging Face cache blob others may share) untouched.
// If rename k fails, files 0..k-1 are put back from the original bytes held in memory.
#pragma once

#include <qpatch/commit/file_system.hpp>
#include <qpatch/error.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::commit {

struct WriteRequest {
  std::string file;   // relative to the checkpoint directory
  std::string before; // what the file must still hold
  std::string after;
};

enum class Backup { no, yes };

struct CommitResult {
  std::vector<std::string> backups;        // relative names of the backups made
  std::vector<std::string> replaced_links; // files that were symlinks and now are files
};

// Write `requests` into `dir` as one transaction.
Result<CommitResult> commit(const std::filesystem::path& dir,
                            const std::vector<WriteRequest>& requests,
                            Backup backup,
                            FileSystem& fs = posix_file_system());

// Return the backups of `file` in `dir`, oldest (the original) first.
std::vector<std::string> backups_of(const std::filesystem::path& dir, const std::string& file);

} // namespace qpatch::commit
