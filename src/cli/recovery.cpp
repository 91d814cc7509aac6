// SPDX-License-Identifier: Apache-2.0
#include "recovery.hpp"

#include "diagnostics.hpp"

#include <qpatch/commit/manifest.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/report/fix_report.hpp>

namespace qpatch::cli {

Result<Recovered> lock_and_recover(const std::string& dir, Io& io) {
  QP_TRY_ASSIGN(commit::CheckpointLock lock,
                commit::CheckpointLock::acquire(dir, commit::lock_wait()));
  QP_TRY_ASSIGN(const commit::Recovery transaction, commit::recover(dir));
  for (const std::string& note : transaction.notes) {
    report(io.err, Level::note, display_path(dir, "") + ": " + note);
  }
  QP_TRY_ASSIGN(const graft::Recovery graft, graft::recover(dir, dir));
  return Recovered{std::move(lock), graft};
}

std::string pending_work(const std::string& dir) {
  if (graft::interrupted(dir)) {
    return display_path(dir, std::string(graft::k_journal_name)) +
           ": a graft was interrupted; what is on disk is neither the old checkpoint nor the "
           "grafted one. " +
           report::shell_command("qpatch", dir) + " (or graft again) completes or undoes it, " +
           report::shell_command("qpatch restore", dir) + " undoes it";
  }
  const auto manifest = commit::read_manifest(dir);
  if (manifest && manifest->journal) {
    return display_path(dir, ".qpatch/manifest.json") +
           ": a qpatch run was interrupted while writing; the next " +
           report::shell_command("qpatch", dir) + " completes or undoes it";
  }
  return "";
}

} // namespace qpatch::cli
