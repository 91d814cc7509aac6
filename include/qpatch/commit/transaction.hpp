// SPDX-License-Identifier: Apache-2.0
// Writing the files of one checkpoint together or not at all, journaled in the manifest
// (manifest.hpp) so a run cut by SIGKILL or power loss is completed by the next one. In order:
//   1. each target still holds what was judged (bytes; its owner, mode and xattrs are read);
//   2. journal "prepare" with the backup names (name.bak, else name.bak.1, ...; never reused);
//   3. stage each new file as .name.qpatch-XXXXXX with the target's metadata, fsync; write each
//      backup (O_EXCL), fsync; fsync the directory;
//   4. journal "swap" (fsynced): from here on the transaction is completed, never undone;
//   5. per target, re-check it (inode, size, mtime, bytes), then swap it with its temp file by
//      renameat2(RENAME_EXCHANGE), so the temp name now holds what was there at the instant of
//      the swap; that is checked again, and another writer's version found there is kept;
//   6. fsync the directory; the manifest records the backups and closes the journal.
// A swap onto a symlink replaces the link with a regular file and leaves its target (a Hugging
// Face cache blob others may share) untouched. If swap k fails, files 0..k-1 are swapped back.
// The caller holds the checkpoint's lock (lock.hpp) from before it read the files. The manifest
// is written through the real file system, so a FileSystem a test passes fails only the steps on
// the checkpoint's own files.
#pragma once

#include <qpatch/commit/file_system.hpp>
#include <qpatch/error.hpp>

#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::commit {

struct WriteRequest {
  std::string file;   // relative to the checkpoint directory
  std::string before; // what the file must still hold
  std::string after;
  // The modification time `after` gets (restore gives back the original's, which its backup
  // kept); none: the time of writing, as any edit.
  std::optional<timespec> mtime = std::nullopt;
};

enum class Backup {
  no,
  yes,  // recorded backups of the originals, which restore puts back
  keep, // copies of what is replaced, recorded as kept: restore never removes them
};

struct CommitOptions {
  Backup backup = Backup::yes;
  // Recorded backups this transaction ends: dropped from the manifest and removed when it
  // completes (restore's).
  std::vector<std::string> release;
};

struct CommitResult {
  std::vector<std::string> backups;        // relative names of the backups made
  std::vector<std::string> replaced_links; // files that were symlinks and now are files
  int interrupted_by = 0; // a signal that arrived after the point of no return: all was written
};

// Write `requests` into `dir` as one transaction.
Result<CommitResult> commit(const std::filesystem::path& dir,
                            const std::vector<WriteRequest>& requests,
                            const CommitOptions& options,
                            FileSystem& fs = posix_file_system());
inline Result<CommitResult> commit(const std::filesystem::path& dir,
                                   const std::vector<WriteRequest>& requests,
                                   Backup backup,
                                   FileSystem& fs = posix_file_system()) {
  return commit(dir, requests, CommitOptions{backup, {}}, fs);
}

struct Recovery {
  std::vector<std::string> notes; // what was found and done, one sentence each
};

// Finish what a run stopped by a signal or a crash left behind: complete a journal in "swap"
// state, undo one in "prepare" state, and remove qpatch's temp files. Run under the lock.
Result<Recovery> recover(const std::filesystem::path& dir, FileSystem& fs = posix_file_system());

// Return the files named `file`.bak, `file`.bak.1, ... in `dir`, whoever made them.
std::vector<std::string> backups_of(const std::filesystem::path& dir, const std::string& file);

} // namespace qpatch::commit
