// SPDX-License-Identifier: Apache-2.0
// What an interrupted run left, in one place for every command. A run that writes (`qpatch DIR`,
// `graft`, `restore`) takes the checkpoint's lock and then finishes or undoes both kinds of
// interrupted work before it reads anything: a config/index transaction (commit::recover), then
// a graft (graft::recover), whose index commit is itself such a transaction. A run that writes
// nothing (--check, --dry-run) names what is pending and the command that completes it, so a
// half-done graft is not mistaken for a broken export.
#pragma once

#include "commands.hpp"

#include <qpatch/commit/lock.hpp>
#include <qpatch/graft/graft_commit.hpp>

#include <string>

namespace qpatch::cli {

struct Recovered {
  commit::CheckpointLock lock;
  graft::Recovery graft = graft::Recovery::none;
};

// Take `dir`'s lock and finish or undo what an interrupted run left there; notes go to
// `io.err`. The error names `dir` (or a file in it) as the user gave it.
Result<Recovered> lock_and_recover(const std::string& dir, Io& io);

// For a run that writes nothing: a note on the interrupted work `dir` holds, naming the command
// that completes it, or "" when there is none.
std::string pending_work(const std::string& dir);

} // namespace qpatch::cli
