// SPDX-License-Identifier: Apache-2.0
#include <qpatch/commit/transaction.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace qpatch::commit {
namespace fs = std::filesystem;

namespace {

Error failure(ErrorCode code, const std::string& file, const std::string& message) {
  return make_error(code, file, std::nullopt, "", message);
}

std::string errno_text() {
  return std::strerror(errno);
}

// Write all of `data` to `fd`, retrying short writes.
bool write_all(FileSystem& fs, int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = fs.write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// A temp file beside the target, removed unless committed.
class TempFile {
public:
  TempFile(FileSystem& fs, const fs::path& dir, const std::string& name) : m_fs(fs) {
    std::string path = (dir / ("." + name + ".qpatch-XXXXXX")).string();
    m_fd = m_fs.mkstemp(path.data());
    if (m_fd >= 0) {
      m_path = path;
    }
  }
  ~TempFile() {
    if (m_fd >= 0) {
      m_fs.close(m_fd);
    }
    if (!m_path.empty() && !m_committed) {
      m_fs.unlink(m_path.c_str());
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // Write `data` with `mode`, fsync and close; return an error text or "".
  std::string stage(const std::string& data, mode_t mode) {
    if (m_fd < 0) {
      return "cannot create a temporary file: " + errno_text();
    }
    if (m_fs.fchmod(m_fd, mode) != 0) {
      return "cannot set the mode of the temporary file: " + errno_text();
    }
    if (!write_all(m_fs, m_fd, data)) {
      return "cannot write the temporary file: " + errno_text();
    }
    if (m_fs.fsync(m_fd) != 0) {
      return "cannot fsync the temporary file: " + errno_text();
    }
    const int fd = m_fd;
    m_fd = -1;
    if (m_fs.close(fd) != 0) {
      return "cannot close the temporary file: " + errno_text();
    }
    return "";
  }
  // Rename over `target`; return an error text or "".
  std::string rename_to(const fs::path& target) {
    if (m_fs.rename(m_path.c_str(), target.c_str()) != 0) {
      return "cannot rename the temporary file over it: " + errno_text();
    }
    m_committed = true;
    return "";
  }

private:
  FileSystem& m_fs;
  std::string m_path;
  int m_fd = -1;
  bool m_committed = false;
};

void fsync_directory(FileSystem& fs, const fs::path& dir) {
  const int fd = fs.open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd >= 0) {
    fs.fsync(fd);
    fs.close(fd);
  }
}

std::string backup_name(const std::string& file, int n) {
  return n == 0 ? file + ".bak" : file + ".bak." + std::to_string(n);
}

// Create the first free name.bak[.N] with O_EXCL and write `data`; return its name or "".
std::string write_backup(FileSystem& fs,
                         const fs::path& dir,
                         const std::string& file,
                         const std::string& data,
                         mode_t mode,
                         std::string& error) {
  for (int n = 0; n < 1000; ++n) {
    const std::string name = backup_name(file, n);
    const int fd = fs.open((dir / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) {
      continue;
    }
    if (fd < 0) {
      error = "cannot create the backup " + name + ": " + errno_text();
      return "";
    }
    const bool ok = write_all(fs, fd, data) && fs.fsync(fd) == 0;
    const bool closed = fs.close(fd) == 0;
    if (!ok || !closed) {
      error = "cannot write the backup " + name + ": " + errno_text();
      fs.unlink((dir / name).c_str());
      return "";
    }
    return name;
  }
  error = "too many backups of " + file;
  return "";
}

struct Target {
  const WriteRequest* request = nullptr;
  mode_t mode = 0644;
  bool is_link = false;
  std::string link_target;
  std::unique_ptr<TempFile> temp;
};

// Put file `target` back as it was (its bytes, or its link). Return "" or an error text.
std::string restore(FileSystem& fs, const fs::path& dir, const Target& target) {
  const fs::path path = dir / target.request->file;
  if (target.is_link) {
    const fs::path temp = dir / ("." + target.request->file + ".qpatch-link");
    std::error_code ec;
    fs::remove(temp, ec);
    fs::create_symlink(target.link_target, temp, ec);
    if (ec || fs.rename(temp.c_str(), path.c_str()) != 0) {
      return "cannot re-create the symlink: " + (ec ? ec.message() : errno_text());
    }
    return "";
  }
  TempFile temp(fs, dir, target.request->file);
  if (std::string error = temp.stage(target.request->before, target.mode); !error.empty()) {
    return error;
  }
  return temp.rename_to(path);
}

} // namespace

std::vector<std::string> backups_of(const fs::path& dir, const std::string& file) {
  std::vector<std::string> out;
  std::error_code ec;
  for (int n = 0; n < 1000; ++n) {
    if (fs::exists(fs::symlink_status(dir / backup_name(file, n), ec))) {
      out.push_back(backup_name(file, n));
    } else if (n > 0) {
      break;
    }
  }
  return out;
}

Result<CommitResult> commit(const fs::path& dir,
                            const std::vector<WriteRequest>& requests,
                            Backup backup,
                            FileSystem& fs) {
  std::vector<Target> targets(requests.size());
  // 1. Every file must still hold what was judged.
  for (size_t i = 0; i < requests.size(); ++i) {
    Target& target = targets[i];
    target.request = &requests[i];
    const fs::path path = dir / requests[i].file;
    auto current = json::read_file(path, requests[i].file, limits::k_max_index_size);
    if (!current || *current != requests[i].before) {
      return failure(ErrorCode::changed_on_disk,
                     requests[i].file,
                     "changed since qpatch read it; nothing was written (run qpatch again)");
    }
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) {
      target.mode = info.st_mode & 07777;
    }
    std::error_code ec;
    target.is_link = fs::is_symlink(path, ec);
    if (target.is_link) {
      target.link_target = fs::read_symlink(path, ec).string();
    }
  }
  // 2. Stage every new file; a failure here leaves nothing behind.
  for (Target& target : targets) {
    target.temp = std::make_unique<TempFile>(fs, dir, target.request->file);
    if (std::string error = target.temp->stage(target.request->after, target.mode);
        !error.empty()) {
      return failure(
          ErrorCode::write_failed, target.request->file, error + "; nothing was changed");
    }
  }
  // 3. Back up the originals.
  CommitResult result;
  if (backup == Backup::yes) {
    for (const Target& target : targets) {
      std::string error;
      const std::string name =
          write_backup(fs, dir, target.request->file, target.request->before, target.mode, error);
      if (name.empty()) {
        for (const std::string& made : result.backups) {
          fs.unlink((dir / made).c_str());
        }
        return failure(
            ErrorCode::write_failed, target.request->file, error + "; nothing was changed");
      }
      result.backups.push_back(name);
    }
  }
  // 4. Swap the files in; undo the swapped ones if one fails.
  for (size_t k = 0; k < targets.size(); ++k) {
    const std::string error = targets[k].temp->rename_to(dir / targets[k].request->file);
    if (error.empty()) {
      if (targets[k].is_link) {
        result.replaced_links.push_back(targets[k].request->file);
      }
      continue;
    }
    std::string failed_restores;
    for (size_t j = 0; j < k; ++j) {
      if (std::string undo = restore(fs, dir, targets[j]); !undo.empty()) {
        failed_restores +=
            "; " + targets[j].request->file + " could not be restored (" + undo + ")";
      }
    }
    for (const std::string& made : result.backups) {
      if (failed_restores.empty()) {
        fs.unlink((dir / made).c_str());
      }
    }
    if (!failed_restores.empty()) {
      std::string kept;
      for (const std::string& made : result.backups) {
        kept += (kept.empty() ? "" : ", ") + made;
      }
      return failure(ErrorCode::rollback_failed,
                     targets[k].request->file,
                     error + failed_restores + "; the originals are in " + kept);
    }
    return failure(ErrorCode::write_failed,
                   targets[k].request->file,
                   error + "; every file was put back as it was");
  }
  fsync_directory(fs, dir);
  return result;
}

} // namespace qpatch::commit
