// SPDX-License-Identifier: Apache-2.0
#include "commit/file_io.hpp"

#include <qpatch/commit/temp_file.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace qpatch::commit {
namespace fs = std::filesystem;

std::string errno_text() {
  return std::strerror(errno);
}

ReadStatus read_no_follow(const fs::path& path, uint64_t max_size, std::string& out) {
  ReadStatus status;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    status.error = errno;
    return status;
  }
  if (::fstat(fd, &status.info) != 0) {
    status.error = errno;
  } else if (!S_ISREG(status.info.st_mode)) {
    status.error = EINVAL;
  } else if (static_cast<uint64_t>(status.info.st_size) > max_size) {
    status.error = EFBIG;
  }
  if (status.error != 0) {
    ::close(fd);
    return status;
  }
  out.assign(static_cast<size_t>(status.info.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      status.error = n < 0 ? errno : EIO; // shorter than fstat said: it changed while read
      ::close(fd);
      return status;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return status;
}

bool write_all(FileSystem& fs, int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = fs.write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      errno = ENOSPC;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string backup_name(const std::string& file, int n) {
  return n == 0 ? file + ".bak" : file + ".bak." + std::to_string(n);
}

bool name_exists(const fs::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 || errno != ENOENT;
}

std::string
free_backup_name(const fs::path& dir, const std::string& file, const std::set<std::string>& taken) {
  for (int n = 0; n < 1000; ++n) {
    const std::string name = backup_name(file, n);
    if (!taken.contains(name) && !name_exists(dir / name)) {
      return name;
    }
  }
  return "";
}

void fsync_directory(FileSystem& fs, const fs::path& dir) {
  const int fd = fs.open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd >= 0) {
    fs.fsync(fd);
    fs.close(fd);
  }
}

std::string replace_file(FileSystem& fs,
                         const fs::path& dir,
                         const std::string& name,
                         const std::string& data,
                         mode_t mode) {
  TempFile temp(fs, dir, name);
  if (!temp.ok()) {
    return "cannot create a temporary file for " + name + ": " + errno_text();
  }
  if (fs.fchmod(temp.fd(), mode) != 0 || !write_all(fs, temp.fd(), data) ||
      fs.fsync(temp.fd()) != 0) {
    return "cannot write " + name + ": " + errno_text();
  }
  if (!temp.close()) {
    return "cannot close " + name + ": " + errno_text();
  }
  if (fs.rename(temp.path().c_str(), (dir / name).c_str()) != 0) {
    return "cannot rename the temporary file over " + name + ": " + errno_text();
  }
  temp.keep();
  fsync_directory(fs, dir);
  return "";
}

std::string replace_with_symlink(FileSystem& fs,
                                 const std::filesystem::path& dir,
                                 const std::string& name,
                                 const std::string& target) {
  const std::filesystem::path temp = dir / ("." + name + ".qpatch-link");
  std::error_code ec;
  std::filesystem::remove(temp, ec);
  std::filesystem::create_symlink(target, temp, ec);
  if (ec) {
    return "cannot re-create the symlink: " + ec.message();
  }
  if (fs.rename(temp.c_str(), (dir / name).c_str()) != 0) {
    const std::string error = "cannot re-create the symlink: " + errno_text();
    std::filesystem::remove(temp, ec);
    return error;
  }
  return "";
}

std::string make_directory(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) {
    return "";
  }
  const int error = errno;
  const bool read_only = error == EACCES || error == EROFS || error == EPERM;
  return "cannot create " + dir.filename().string() + ": " + errno_text() +
         (read_only ? " (the checkpoint directory is not writable here: --dry-run prints the "
                      "patch and --check judges, writing nothing)"
                    : "");
}

} // namespace qpatch::commit
