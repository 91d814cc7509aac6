// SPDX-License-Identifier: Apache-2.0
#include "commit/file_io.hpp"

#include <qpatch/commit/manifest.hpp>
#include <qpatch/commit/restore.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/limits.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace qpatch::commit {
namespace fs = std::filesystem;

namespace {

Error refusal(const std::string& file, const std::string& message) {
  return make_error(ErrorCode::changed_on_disk, file, std::nullopt, "", message);
}

// Read a recorded backup and check it is what qpatch wrote into it.
Result<std::string> read_backup(const fs::path& dir, const BackupRecord& record) {
  std::string bytes;
  const ReadStatus status = read_no_follow(dir / record.backup, limits::k_max_index_size, bytes);
  if (status.error == ELOOP || (status.error == EINVAL && fs::is_symlink(dir / record.backup))) {
    return refusal(record.backup,
                   "is a symlink, and qpatch never makes one nor follows one; nothing was "
                   "restored");
  }
  if (status.error != 0) {
    return refusal(record.backup,
                   "cannot read this recorded backup of " + record.file + ": " +
                       std::strerror(status.error) + "; nothing was restored");
  }
  if (content_hash(bytes) != record.original_hash) {
    return refusal(record.backup,
                   "does not hold what qpatch backed up (xxh3 " + content_hash(bytes) +
                       ", recorded " + record.original_hash + "); nothing was restored");
  }
  return bytes;
}

// Put `step.file` back as the symlink it was (a Hub cache snapshot's config.json into blobs/),
// where the link's target still holds the original bytes: the file now holds the same bytes, so
// the rename changes what it is, never what it reads. A target that is gone or changed leaves
// the restored regular file (false).
bool relink(FileSystem& fs, const fs::path& dir, const RestoreStep& step) {
  const fs::path link = fs::path(step.link).is_absolute()
                            ? fs::path(step.link)
                            : (dir / step.file).parent_path() / step.link;
  std::string bytes;
  if (read_no_follow(link, limits::k_max_index_size, bytes).error != 0 || bytes != step.original) {
    return false;
  }
  return replace_with_symlink(fs, dir, step.file, step.link).empty();
}

} // namespace

Result<RestorePlan> plan_restore(const fs::path& dir, const std::vector<std::string>& files) {
  QP_TRY_ASSIGN(const Manifest manifest, read_manifest(dir));
  RestorePlan plan;
  for (const BackupRecord& record : manifest.kept) {
    plan.kept.push_back(record.backup);
  }
  for (const std::string& file : files) {
    std::vector<const BackupRecord*> chain;
    for (const BackupRecord& record : manifest.backups) {
      if (record.file == file) {
        chain.push_back(&record);
      }
    }
    for (const std::string& name : backups_of(dir, file)) {
      const auto recorded = [&](const BackupRecord& record) { return record.backup == name; };
      if (std::none_of(manifest.backups.begin(), manifest.backups.end(), recorded) &&
          std::none_of(manifest.kept.begin(), manifest.kept.end(), recorded)) {
        plan.unrecorded.push_back(name);
      }
    }
    if (chain.empty()) {
      continue;
    }
    RestoreStep step;
    step.file = file;
    step.from = chain.front()->backup;
    step.link = chain.front()->link;
    if (struct stat info{}; ::lstat((dir / step.from).c_str(), &info) == 0) {
      step.mtime = info.st_mtim; // the backup was given the original's (transaction.cpp)
    }
    for (const BackupRecord* record : chain) {
      QP_TRY_ASSIGN(const std::string bytes, read_backup(dir, *record));
      if (record == chain.front()) {
        step.original = bytes;
      }
      step.remove.push_back(record->backup);
    }
    const ReadStatus status = read_no_follow(dir / file, limits::k_max_index_size, step.current);
    if (status.error == ELOOP) {
      return refusal(file,
                     "is a symlink now, not the file qpatch wrote; nothing was restored (move it "
                     "away to restore it)");
    }
    if (status.error != 0 && status.error != ENOENT) {
      return refusal(file, std::string("cannot read: ") + std::strerror(status.error));
    }
    step.edited =
        status.error == ENOENT || content_hash(step.current) != chain.back()->written_hash;
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

Result<RestoreResult>
apply_restore(const fs::path& dir, const RestorePlan& plan, bool force, FileSystem& fs) {
  RestoreResult result;
  std::vector<WriteRequest> plain;
  std::vector<WriteRequest> edited;
  CommitOptions options;
  for (const RestoreStep& step : plan.steps) {
    if (step.edited && !force) {
      return refusal(step.file,
                     "changed since qpatch wrote it; nothing was restored (the diff shows what "
                     "restoring would undo; --force keeps the current bytes as a backup first)");
    }
    if (step.current != step.original) {
      (step.edited ? edited : plain)
          .push_back({step.file, step.current, step.original, step.mtime});
    }
    options.release.insert(options.release.end(), step.remove.begin(), step.remove.end());
  }
  // Two transactions at most: edited files keep a copy of what they hold, the others need none.
  if (!edited.empty()) {
    CommitOptions keep{Backup::keep, plain.empty() ? options.release : std::vector<std::string>{}};
    QP_TRY_ASSIGN(const CommitResult kept, commit(dir, edited, keep, fs));
    result.kept = kept.backups;
    result.interrupted_by = kept.interrupted_by;
  }
  if (!plain.empty()) {
    options.backup = Backup::no;
    QP_TRY_ASSIGN(const CommitResult done, commit(dir, plain, options, fs));
    result.interrupted_by = std::max(result.interrupted_by, done.interrupted_by);
  }
  for (const RestoreStep& step : plan.steps) {
    if (!step.link.empty() && relink(fs, dir, step)) {
      result.relinked.push_back(step.file);
    }
  }
  return result;
}

} // namespace qpatch::commit
