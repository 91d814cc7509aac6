// SPDX-License-Identifier: Apache-2.0
// Committing a graft so that an interruption at any point leaves the checkpoint loadable as the
// old or the new one, and the next run finishes or rolls back. Order:
//   1. every new shard is written under a temp name (.NAME.qpatch-XXXXXX), fsynced and verified
//      (graft/shard_writer); a failure removes them: nothing changed;
//   2. the journal .qpatch-graft.json records the plan (files created, files moved aside, the
//      new index's hash, the new config texts), written atomically;
//   2b. a single-file checkpoint gets the index of its file as it is (no engine loads anything
//      else for it; graft_plan.cpp identity_index), recorded as created; from here on it is a
//      sharded graft;
//   3. the temps are renamed to their new names, which the old index does not name, so engines
//      still load the old checkpoint;
//   4. the index and the configs go through commit::commit, index first: its rename is the
//      commit point (vLLM loads exactly the files the index names);
//   5. the replaced shards are renamed aside as backups (name.bak, never overwritten), or
//      removed with Backup::no; blobs behind symlinked shards are never touched;
//   6. the journal is marked committed and stays as the record `qpatch restore` replays.
// recover() reads a journal left at "committing": if the index on disk is the new one it
// finishes steps 4-6, else it removes what steps 1-3 created.
#pragma once

#include <qpatch/commit/file_system.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/graft/graft_plan.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::graft {

inline constexpr std::string_view k_journal_name = ".qpatch-graft.json";

struct CommitOptions {
  commit::Backup backup = commit::Backup::yes;
  commit::FileSystem* fs = nullptr; // nullptr: the real one
  Progress progress;
};

struct GraftResult {
  std::vector<std::string> created; // new shard files
  std::vector<std::string> backups; // every backup made (shards and JSON files)
  std::vector<std::string> removed; // replaced shards removed (Backup::no)
  CopyStats copy;
};

// Write and commit `plan` into `dir` (`display` names it in messages).
Result<GraftResult> commit_graft(const std::filesystem::path& dir,
                                 const std::string& display,
                                 const GraftPlan& plan,
                                 const CommitOptions& options);

enum class Recovery { none, finished, rolled_back };
std::string_view to_string(Recovery recovery);

// Finish or roll back a graft interrupted in `dir`, and remove stray temps of new shards.
Result<Recovery> recover(const std::filesystem::path& dir, const std::string& display);

// True when `dir` holds a journal of an interrupted graft (recover() has work to do).
bool interrupted(const std::filesystem::path& dir);

// What `qpatch restore` must undo besides the JSON files' backups: a committed graft's record.
struct GraftRecord {
  std::vector<std::string> created;
  std::vector<std::pair<std::string, std::string>> moved; // (file, backup)
};
// Return the record of the last committed graft in `dir`, if any.
std::optional<GraftRecord> read_record(const std::filesystem::path& dir);
// Put the moved shards back under their names (before the index is restored).
Status restore_shards(const std::filesystem::path& dir,
                      const std::string& display,
                      const GraftRecord& record);
// Remove the created shards and the record (after the index is restored).
Status remove_grafted(const std::filesystem::path& dir,
                      const std::string& display,
                      const GraftRecord& record);

} // namespace qpatch::graft
