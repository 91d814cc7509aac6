// SPDX-License-Identifier: Apache-2.0
// What qpatch has written into one checkpoint, kept in DIR/.qpatch/manifest.json: every backup it
// made (the file, the backup's name, the XXH3-64 of the original bytes and of the bytes written),
// and the transaction in progress, if any, as a journal. A backup not in the manifest is not
// qpatch's (a `cp config.json config.json.bak` of the user's), and restore never touches it.
//
// The journal has two states. "prepare": backups and temp files may exist, no target has been
// renamed yet, so a run that finds it removes them and nothing has changed. "swap": every temp
// file and backup is on disk and fsynced, so a run that finds it completes the renames. The
// manifest itself is replaced by rename, so it is always one whole version or the other.
#pragma once

#include <qpatch/commit/file_system.hpp>
#include <qpatch/error.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qpatch::commit {

// The directory and files qpatch keeps inside a checkpoint.
inline constexpr const char* k_state_dir = ".qpatch";
inline constexpr const char* k_manifest_name = ".qpatch/manifest.json";
inline constexpr const char* k_lock_name = ".qpatch/lock";

// XXH3-64 of `bytes` as 16 lowercase hex digits.
std::string content_hash(std::string_view bytes);

struct BackupRecord {
  std::string file;          // relative to the checkpoint directory
  std::string backup;        // its backup's name, beside it
  std::string original_hash; // of the bytes in `backup`
  std::string written_hash;  // of the bytes qpatch put into `file`
  // Where `file` pointed when it was a symlink (a Hub cache snapshot's config.json points into
  // blobs/): restore puts the link back, not a copy; "" for a regular file.
  std::string link = {};
};

struct JournalStep {
  std::string file;
  std::string temp;   // the staged new bytes (".NAME.qpatch-XXXXXX"), "" before staging
  std::string backup; // "" with --no-backup
  std::string before_hash;
  std::string after_hash;
  bool keep = false;     // the backup is recorded as kept, not as one restore puts back
  std::string link = {}; // BackupRecord::link
};

enum class JournalState { prepare, swap };

struct Journal {
  JournalState state = JournalState::prepare;
  std::vector<JournalStep> steps;
  std::vector<std::string> release; // recorded backups to drop and remove on completion
};

struct Manifest {
  std::vector<BackupRecord> backups; // oldest first
  // Copies qpatch kept of bytes it found and did not write (restore --force, another writer's
  // version): named in reports, never removed.
  std::vector<BackupRecord> kept;
  std::optional<Journal> journal;

  bool empty() const { return backups.empty() && kept.empty() && !journal; }
};

// Read DIR/.qpatch/manifest.json; an absent file is an empty manifest.
Result<Manifest> read_manifest(const std::filesystem::path& dir);

// Replace the manifest (temp file, fsync, rename, fsync of .qpatch/); an empty one is removed.
Status write_manifest(const std::filesystem::path& dir,
                      const Manifest& manifest,
                      FileSystem& fs = posix_file_system());

// True when `name` is one of qpatch's temp files (".NAME.qpatch-XXXXXX", ".NAME.qpatch-link").
bool is_temp_name(std::string_view name);

} // namespace qpatch::commit
