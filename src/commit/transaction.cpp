// SPDX-License-Identifier: Apache-2.0
#include "commit/file_io.hpp"
#include "commit/metadata.hpp"

#include <qpatch/commit/interrupt.hpp>
#include <qpatch/commit/manifest.hpp>
#include <qpatch/commit/temp_file.hpp>
#include <qpatch/commit/transaction.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace qpatch::commit {
namespace fs = std::filesystem;

namespace {

Error failure(ErrorCode code, const std::string& file, const std::string& message) {
  return make_error(code, file, std::nullopt, "", message);
}

// What identifies the directory entry of a target between qpatch's read and its swap.
struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  mode_t type = 0;
};

std::optional<Identity> identity_of(const fs::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    return std::nullopt;
  }
  return Identity{info.st_dev, info.st_ino, info.st_size, info.st_mtim, info.st_mode & S_IFMT};
}

bool same(const std::optional<Identity>& a, const std::optional<Identity>& b) {
  return a && b && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
         a->type == b->type;
}

// The bytes behind `path` (through a symlink), or nullopt.
std::optional<std::string> contents(const fs::path& path, const std::string& name) {
  auto text = json::read_file(path, name, limits::k_max_index_size);
  return text ? std::optional<std::string>(text.take_value()) : std::nullopt;
}

// Give the open file `fd` the modification time `mtime` (after its bytes are written, which
// set it to now); return "" or an error text.
std::string set_mtime(int fd, const std::optional<timespec>& mtime) {
  if (!mtime) {
    return "";
  }
  const timespec times[2] = {{0, UTIME_OMIT}, *mtime};
  return ::futimens(fd, times) == 0 ? "" : "cannot keep the modification time: " + errno_text();
}

// Create `path` with O_EXCL, give it `meta`, write `data`, give it `mtime` and fsync; return ""
// or an error text.
std::string write_new_file(FileSystem& fs,
                           const fs::path& path,
                           const std::string& data,
                           const Metadata& meta,
                           const std::string& what,
                           const std::optional<timespec>& mtime = std::nullopt) {
  const int fd = fs.open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return "cannot create " + what + ": " + errno_text();
  }
  std::string error = apply_metadata(fs, fd, meta);
  if (error.empty() && !write_all(fs, fd, data)) {
    error = "cannot write " + what + ": " + errno_text();
  }
  if (error.empty()) {
    error = set_mtime(fd, mtime);
  }
  if (error.empty() && fs.fsync(fd) != 0) {
    error = "cannot write " + what + ": " + errno_text();
  }
  if (fs.close(fd) != 0 && error.empty()) {
    error = "cannot close " + what + ": " + errno_text();
  }
  if (!error.empty()) {
    fs.unlink(path.c_str());
  }
  return error;
}

// What goes into a temp file: its target's name, the bytes, the target's metadata, and the
// modification time to give it (none: the time of writing).
struct Staged {
  const std::string& file;
  const std::string& data;
  const Metadata& meta;
  std::optional<timespec> mtime = std::nullopt;
};

// Stage `staged.data` in a new temp file beside `staged.file`; return its name, or "" with
// `error` set.
std::string
stage_temp(FileSystem& fs, const fs::path& dir, const Staged& staged, std::string& error) {
  const std::string& file = staged.file;
  const std::string& data = staged.data;
  const Metadata& meta = staged.meta;
  const std::optional<timespec>& mtime = staged.mtime;
  TempFile temp(fs, dir, file);
  if (!temp.ok()) {
    error = "cannot create a temporary file: " + errno_text();
    return "";
  }
  error = apply_metadata(fs, temp.fd(), meta);
  if (error.empty() && !write_all(fs, temp.fd(), data)) {
    error = "cannot write the temporary file: " + errno_text();
  }
  if (error.empty()) {
    error = set_mtime(temp.fd(), mtime);
  }
  if (error.empty() && fs.fsync(temp.fd()) != 0) {
    error = "cannot fsync the temporary file: " + errno_text();
  }
  if (!temp.close() && error.empty()) {
    error = "cannot close the temporary file: " + errno_text();
  }
  if (!error.empty()) {
    return "";
  }
  temp.keep(); // the transaction exchanges it into place, or removes it on rollback
  return temp.name();
}

struct Target {
  const WriteRequest* request = nullptr;
  Metadata meta;
  std::optional<Identity> identity;
  bool is_link = false;
  std::string link_target;
  std::optional<timespec> mtime; // of the original (through a link): its backup keeps it
  std::string temp;              // staged new bytes; after an exchange, what was at the target
  std::string backup;            // "" without one
  bool written = false;          // the backup file exists
  bool swapped = false;          // the target holds the new bytes
  bool exchanged = false;        // `temp` holds the old entry (exactly: inode, owner, xattrs)
};

// Put target back as it was; return "" or an error text.
std::string undo(FileSystem& fs, const fs::path& dir, const Target& target) {
  const fs::path path = dir / target.request->file;
  if (target.exchanged) {
    if (fs.rename((dir / target.temp).c_str(), path.c_str()) != 0) {
      return "cannot rename the original back: " + errno_text();
    }
    return "";
  }
  if (target.is_link) {
    return replace_with_symlink(fs, dir, target.request->file, target.link_target);
  }
  std::string error;
  const std::string temp =
      stage_temp(fs, dir, {target.request->file, target.request->before, target.meta}, error);
  if (temp.empty()) {
    return error;
  }
  if (fs.rename((dir / temp).c_str(), path.c_str()) != 0) {
    error = "cannot rename the temporary file over it: " + errno_text();
    fs.unlink((dir / temp).c_str());
  }
  return error;
}

Journal
journal_of(const std::vector<Target>& targets, JournalState state, const CommitOptions& options) {
  Journal journal;
  journal.state = state;
  journal.release = options.release;
  for (const Target& target : targets) {
    journal.steps.push_back({target.request->file,
                             target.temp,
                             target.backup,
                             content_hash(target.request->before),
                             content_hash(target.request->after),
                             options.backup == Backup::keep,
                             target.is_link ? target.link_target : std::string()});
  }
  return journal;
}

// The manifest once `journal` is complete: its backups recorded, the released ones dropped.
Manifest completed(Manifest manifest, const Journal& journal) {
  manifest.journal.reset();
  const auto released = [&](const BackupRecord& record) {
    return std::find(journal.release.begin(), journal.release.end(), record.backup) !=
           journal.release.end();
  };
  std::erase_if(manifest.backups, released);
  for (const JournalStep& step : journal.steps) {
    if (!step.backup.empty()) {
      (step.keep ? manifest.kept : manifest.backups)
          .push_back({step.file, step.backup, step.before_hash, step.after_hash, step.link});
    }
  }
  return manifest;
}

void remove_released(FileSystem& fs, const fs::path& dir, const Journal& journal) {
  for (const std::string& name : journal.release) {
    fs.unlink((dir / name).c_str());
  }
}

// Remove every temp file of qpatch's in `dir` and in its .qpatch/; return how many.
int remove_temps(FileSystem& fs, const fs::path& dir) {
  int removed = 0;
  for (const fs::path& where : {dir, dir / k_state_dir}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(where, ec)) {
      if (is_temp_name(entry.path().filename().string()) && fs.unlink(entry.path().c_str()) == 0) {
        ++removed;
      }
    }
  }
  if (removed > 0) {
    fsync_directory(fs, dir);
  }
  return removed;
}

// Before the point of no return: remove what was staged and close the journal.
void abandon(FileSystem& fs,
             const fs::path& dir,
             const Manifest& manifest,
             const std::vector<Target>& targets) {
  for (const Target& target : targets) {
    if (!target.temp.empty()) {
      fs.unlink((dir / target.temp).c_str());
    }
    if (target.written) {
      fs.unlink((dir / target.backup).c_str());
    }
  }
  fsync_directory(fs, dir);
  (void)write_manifest(dir, manifest);
}

class Committer {
public:
  Committer(const fs::path& dir,
            const std::vector<WriteRequest>& requests,
            const CommitOptions& options,
            FileSystem& fs)
      : m_dir(dir), m_options(options), m_fs(fs), m_targets(requests.size()) {
    for (size_t i = 0; i < requests.size(); ++i) {
      m_targets[i].request = &requests[i];
    }
  }

  Result<CommitResult> run() {
    QP_TRY_ASSIGN(m_manifest, read_manifest(m_dir));
    if (m_manifest.journal) {
      return failure(ErrorCode::write_failed,
                     k_manifest_name,
                     "an unfinished transaction is recorded; nothing was written (run qpatch "
                     "again to finish it)");
    }
    if (auto error = verify(); error) {
      return *error;
    }
    if (auto error = prepare(); error) {
      abandon(m_fs, m_dir, m_manifest, m_targets);
      return *error;
    }
    Manifest swapping = m_manifest;
    swapping.journal = journal_of(m_targets, JournalState::swap, m_options);
    if (Status written = write_manifest(m_dir, swapping); !written) {
      abandon(m_fs, m_dir, m_manifest, m_targets);
      return failure(ErrorCode::write_failed,
                     written.error().path,
                     written.error().message + "; nothing was changed");
    }
    // The point of no return for a crash: the next run completes the swaps.
    if (auto error = swap_all(); error) {
      return *error;
    }
    fsync_directory(m_fs, m_dir);
    for (const Target& target : m_targets) {
      if (!target.temp.empty()) {
        m_fs.unlink((m_dir / target.temp).c_str()); // the old entries, once the swaps are durable
      }
    }
    remove_released(m_fs, m_dir, *swapping.journal);
    Manifest done = completed(m_manifest, *swapping.journal);
    done.kept.insert(done.kept.end(), m_kept.begin(), m_kept.end());
    if (Status written = write_manifest(m_dir, done); !written) {
      return failure(ErrorCode::write_failed,
                     written.error().path,
                     written.error().message +
                         "; every file was written, and the next run closes the journal");
    }
    if (!m_other_writer.empty()) {
      return failure(ErrorCode::changed_on_disk, m_other_writer_file, m_other_writer);
    }
    m_result.interrupted_by = take_interrupt();
    return m_result;
  }

private:
  // 1. Every file must still hold what was judged, with metadata qpatch can keep.
  std::optional<Error> verify() {
    for (Target& target : m_targets) {
      const std::string& file = target.request->file;
      const fs::path path = m_dir / file;
      target.identity = identity_of(path);
      const auto current = contents(path, file);
      if (!current || *current != target.request->before) {
        return failure(ErrorCode::changed_on_disk,
                       file,
                       "changed since qpatch read it; nothing was written (run qpatch again)");
      }
      if (std::string error = read_metadata(path, target.meta); !error.empty()) {
        return failure(ErrorCode::write_failed, file, error + "; nothing was written");
      }
      const uid_t me = ::geteuid();
      if (me != 0 && target.meta.owner != me) {
        return failure(ErrorCode::write_failed,
                       file,
                       "owned by uid " + std::to_string(target.meta.owner) +
                           ", and qpatch, running as uid " + std::to_string(me) +
                           ", could not keep that owner; nothing was written (run qpatch as "
                           "the owner or as root)");
      }
      std::error_code ec;
      target.is_link = fs::is_symlink(path, ec);
      if (target.is_link) {
        target.link_target = fs::read_symlink(path, ec).string();
      }
      if (struct stat info{}; ::stat(path.c_str(), &info) == 0) {
        target.mtime = info.st_mtim;
      }
    }
    return std::nullopt;
  }

  std::optional<Error> interrupted() {
    if (const int sig = take_interrupt(); sig != 0) {
      return failure(ErrorCode::write_failed,
                     "",
                     "interrupted by " + signal_name(sig) + "; nothing was changed");
    }
    return std::nullopt;
  }

  // 2-3. Journal the plan, stage the new files and write the backups.
  std::optional<Error> prepare() {
    if (m_options.backup != Backup::no) {
      std::set<std::string> taken;
      for (const BackupRecord& record : m_manifest.backups) {
        taken.insert(record.backup);
      }
      for (Target& target : m_targets) {
        target.backup = free_backup_name(m_dir, target.request->file, taken);
        if (target.backup.empty()) {
          return failure(ErrorCode::write_failed,
                         target.request->file,
                         "too many backups of " + target.request->file + "; nothing was changed");
        }
        taken.insert(target.backup);
      }
    }
    Manifest preparing = m_manifest;
    preparing.journal = journal_of(m_targets, JournalState::prepare, m_options);
    // The first write of a patch: a directory this user cannot write fails here, with the
    // commands that write nothing named.
    if (std::string error = make_directory(m_dir / k_state_dir); !error.empty()) {
      return failure(ErrorCode::write_failed, k_state_dir, error + "; nothing was changed");
    }
    if (Status written = write_manifest(m_dir, preparing); !written) {
      return failure(ErrorCode::write_failed,
                     written.error().path,
                     written.error().message + "; nothing was changed");
    }
    for (Target& target : m_targets) {
      if (auto error = interrupted(); error) {
        return error;
      }
      std::string error;
      target.temp = stage_temp(
          m_fs,
          m_dir,
          {target.request->file, target.request->after, target.meta, target.request->mtime},
          error);
      if (target.temp.empty()) {
        return failure(
            ErrorCode::write_failed, target.request->file, error + "; nothing was changed");
      }
    }
    for (Target& target : m_targets) {
      if (target.backup.empty()) {
        continue;
      }
      if (std::string error = write_new_file(m_fs,
                                             m_dir / target.backup,
                                             target.request->before,
                                             target.meta,
                                             "the backup " + target.backup,
                                             target.mtime);
          !error.empty()) {
        return failure(
            ErrorCode::write_failed, target.request->file, error + "; nothing was changed");
      }
      target.written = true;
    }
    fsync_directory(m_fs, m_dir);
    return interrupted();
  }

  // Swap target `k` in; return an error text or "".
  std::string swap_one(Target& target) {
    const fs::path path = m_dir / target.request->file;
    const fs::path temp = m_dir / target.temp;
    // The last look before the swap: an edit since verify() stops the transaction.
    const auto now = contents(path, target.request->file);
    if (!same(identity_of(path), target.identity) || !now || *now != target.request->before) {
      return "changed since qpatch read it";
    }
    if (m_fs.exchange(temp.c_str(), path.c_str()) == 0) {
      target.swapped = true;
      target.exchanged = true;
      check_swapped_out(target);
      return "";
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
      return "cannot rename the temporary file over it: " + errno_text();
    }
    // A file system without RENAME_EXCHANGE: a plain rename, checked just before.
    if (m_fs.rename(temp.c_str(), path.c_str()) != 0) {
      return "cannot rename the temporary file over it: " + errno_text();
    }
    target.swapped = true;
    target.temp.clear();
    return "";
  }

  // The entry swapped out must be the one read; else another writer got in between the last
  // look and the swap, and its version (now at the temp name) is kept.
  void check_swapped_out(Target& target) {
    const fs::path temp = m_dir / target.temp;
    const std::string& file = target.request->file;
    const auto old = contents(temp, file);
    if (same(identity_of(temp), target.identity) && old && *old == target.request->before) {
      return;
    }
    std::set<std::string> taken;
    for (const Target& other : m_targets) {
      taken.insert(other.backup);
    }
    for (const BackupRecord& record : m_manifest.backups) {
      taken.insert(record.backup);
    }
    const std::string name = free_backup_name(m_dir, file, taken);
    if (name.empty() || ::link(temp.c_str(), (m_dir / name).c_str()) != 0) {
      m_other_writer +=
          (m_other_writer.empty() ? "" : "; ") +
          std::string("another program "
                      "wrote it while qpatch replaced it, and its version could not be kept "
                      "(") +
          errno_text() + "); it is in " + target.temp;
      target.temp.clear(); // never removed
      m_other_writer_file = file;
      return;
    }
    m_kept.push_back(
        {file, name, content_hash(old.value_or("")), content_hash(target.request->after)});
    m_other_writer = "another program wrote it while qpatch replaced it: its version is kept in " +
                     name + ", qpatch's is in " + file;
    m_other_writer_file = file;
  }

  // 5. Swap every target in; swap the done ones back if one fails.
  std::optional<Error> swap_all() {
    for (size_t k = 0; k < m_targets.size(); ++k) {
      Target& target = m_targets[k];
      std::string error = swap_one(target);
      if (error.empty()) {
        if (target.is_link) {
          m_result.replaced_links.push_back(target.request->file);
        }
        continue;
      }
      const bool changed = error == "changed since qpatch read it";
      std::string failed_undos;
      for (size_t j = 0; j < k; ++j) {
        if (std::string undone = undo(m_fs, m_dir, m_targets[j]); !undone.empty()) {
          failed_undos +=
              "; " + m_targets[j].request->file + " could not be restored (" + undone + ")";
        } else {
          m_targets[j].exchanged = false;
          m_targets[j].temp.clear();
        }
      }
      if (!failed_undos.empty()) {
        std::string kept;
        for (const Target& t : m_targets) {
          if (t.written) {
            kept += (kept.empty() ? "" : ", ") + t.backup;
          }
        }
        Manifest closed = m_manifest;
        closed.journal.reset();
        (void)write_manifest(m_dir, closed);
        return failure(ErrorCode::rollback_failed,
                       target.request->file,
                       error + failed_undos + "; the originals are in " + kept);
      }
      abandon(m_fs, m_dir, m_manifest, m_targets);
      take_interrupt(); // every file is as it was: the signal has nothing left to stop
      if (changed) {
        return failure(ErrorCode::changed_on_disk,
                       target.request->file,
                       "changed since qpatch read it; nothing was written (run qpatch again)");
      }
      return failure(ErrorCode::write_failed,
                     target.request->file,
                     error + "; every file was put back as it was");
    }
    for (const Target& target : m_targets) {
      if (target.written) {
        m_result.backups.push_back(target.backup);
      }
    }
    return std::nullopt;
  }

  fs::path m_dir;
  const CommitOptions& m_options;
  FileSystem& m_fs;
  std::vector<Target> m_targets;
  Manifest m_manifest;
  CommitResult m_result;
  std::vector<BackupRecord> m_kept;
  std::string m_other_writer;
  std::string m_other_writer_file;
};

} // namespace

std::vector<std::string> backups_of(const fs::path& dir, const std::string& file) {
  std::vector<std::string> out;
  for (int n = 0; n < 1000; ++n) {
    if (name_exists(dir / backup_name(file, n))) {
      out.push_back(backup_name(file, n));
    } else if (n > 0) {
      break;
    }
  }
  return out;
}

namespace {

std::string hash_of_file(const fs::path& path, const std::string& name) {
  const auto bytes = contents(path, name);
  return bytes ? content_hash(*bytes) : "";
}

// A journal in "prepare" state: no target was renamed; remove the backups it made.
void undo_prepare(FileSystem& fs, const fs::path& dir, const Manifest& manifest) {
  for (const JournalStep& step : manifest.journal->steps) {
    const bool recorded =
        std::any_of(manifest.backups.begin(), manifest.backups.end(), [&](const auto& record) {
          return record.backup == step.backup;
        });
    std::string bytes;
    if (!step.backup.empty() && !recorded &&
        read_no_follow(dir / step.backup, limits::k_max_index_size, bytes).error == 0 &&
        content_hash(bytes) == step.before_hash) {
      fs.unlink((dir / step.backup).c_str());
    }
  }
}

// A journal in "swap" state: every temp file was staged; complete the renames.
std::string complete_swap(FileSystem& fs, const fs::path& dir, const Journal& journal) {
  std::string problems;
  for (const JournalStep& step : journal.steps) {
    const std::string now = hash_of_file(dir / step.file, step.file);
    if (now == step.after_hash) {
      continue;
    }
    if (now == step.before_hash && !step.temp.empty() &&
        hash_of_file(dir / step.temp, step.temp) == step.after_hash &&
        fs.rename((dir / step.temp).c_str(), (dir / step.file).c_str()) == 0) {
      continue;
    }
    problems += (problems.empty() ? "" : "; ") + step.file +
                " holds neither what it held nor what the run meant to write";
  }
  return problems;
}

} // namespace

Result<Recovery> recover(const fs::path& dir, FileSystem& fs) {
  const InterruptGuard guard;
  Recovery recovery;
  QP_TRY_ASSIGN(Manifest manifest, read_manifest(dir));
  if (manifest.journal && manifest.journal->state == JournalState::prepare) {
    undo_prepare(fs, dir, manifest);
    manifest.journal.reset();
    recovery.notes.push_back(
        "an interrupted qpatch run had changed no file yet; what it staged was removed");
  } else if (manifest.journal) {
    const Journal journal = *manifest.journal;
    if (std::string problems = complete_swap(fs, dir, journal); !problems.empty()) {
      return failure(ErrorCode::rollback_failed,
                     k_manifest_name,
                     "an interrupted qpatch run cannot be completed: " + problems +
                         "; the journal is kept, and the originals are in its backups");
    }
    fsync_directory(fs, dir);
    remove_released(fs, dir, journal);
    manifest = completed(manifest, journal);
    std::string files;
    for (const JournalStep& step : journal.steps) {
      files += (files.empty() ? "" : ", ") + step.file;
    }
    recovery.notes.push_back("an interrupted qpatch run was completed (" + files + " written)");
  }
  if (!recovery.notes.empty()) {
    if (Status written = write_manifest(dir, manifest); !written) {
      return written.take_error();
    }
  }
  if (const int removed = remove_temps(fs, dir); removed > 0) {
    recovery.notes.push_back("removed " + std::to_string(removed) +
                             " temporary file(s) an interrupted qpatch run left");
  }
  return recovery;
}

Result<CommitResult> commit(const fs::path& dir,
                            const std::vector<WriteRequest>& requests,
                            const CommitOptions& options,
                            FileSystem& fs) {
  const InterruptGuard guard;
  return Committer(dir, requests, options, fs).run();
}

} // namespace qpatch::commit
