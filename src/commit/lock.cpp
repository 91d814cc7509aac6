// SPDX-License-Identifier: Apache-2.0
#include "commit/file_io.hpp"

#include <qpatch/commit/lock.hpp>
#include <qpatch/commit/manifest.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace qpatch::commit {
namespace fs = std::filesystem;

namespace {

// An error about the lock at `path` (k_lock_name, or "" for the directory itself).
Error lock_error(ErrorCode code,
                 const std::string& message,
                 const std::string& path = k_lock_name) {
  return make_error(code, path, std::nullopt, "", message);
}

// The PID holding an flock on the file `fd` is open on, from the kernel's table of locks
// (/proc/locks: "1: FLOCK  ADVISORY  WRITE 4242 08:01:1311 0 EOF", device in hex), or "" when
// it is not listed. Nothing is written for the one that waits.
std::string holder_of(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return "";
  }
  char device[64];
  std::snprintf(device,
                sizeof device,
                "%02x:%02x:%llu",
                major(info.st_dev),
                minor(info.st_dev),
                static_cast<unsigned long long>(info.st_ino));
  std::FILE* locks = std::fopen("/proc/locks", "re");
  if (locks == nullptr) {
    return "";
  }
  std::string pid;
  char line[256];
  while (pid.empty() && std::fgets(line, sizeof line, locks) != nullptr) {
    char kind[16] = {};
    char holder[16] = {};
    char where[64] = {};
    if (std::sscanf(line, "%*s %15s %*s %*s %15s %63s", kind, holder, where) == 3 &&
        std::strcmp(kind, "FLOCK") == 0 && std::strcmp(where, device) == 0) {
      pid = holder;
    }
  }
  std::fclose(locks);
  return pid;
}

// True when `fd` is still the file at `path`: a holder that found nothing to keep removes the
// lock file while it holds the lock, and a waiter that locked the removed file must start over.
bool still_linked(int fd, const fs::path& path) {
  struct stat open_info {};
  struct stat path_info {};
  return ::fstat(fd, &open_info) == 0 && ::lstat(path.c_str(), &path_info) == 0 &&
         open_info.st_dev == path_info.st_dev && open_info.st_ino == path_info.st_ino;
}

Error held_error(int fd, const std::string& path) {
  const std::string pid = holder_of(fd);
  return lock_error(ErrorCode::write_failed,
                    "another qpatch" + (pid.empty() ? "" : " (PID " + pid + ")") +
                        " is writing this checkpoint; nothing was written (run qpatch again "
                        "when it has finished)",
                    path);
}

} // namespace

std::chrono::milliseconds lock_wait() {
  if (const char* text = std::getenv("QPATCH_LOCK_WAIT_MS"); text != nullptr && *text != '\0') {
    return std::chrono::milliseconds(std::strtol(text, nullptr, 10));
  }
  return std::chrono::seconds(5);
}

Result<CheckpointLock> CheckpointLock::acquire(const fs::path& dir,
                                               std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // The directory's own descriptor: a run with nothing to change then writes nothing at all
  // (no lock file, no PID, no mtime). Some network file systems refuse to flock a directory
  // (NFS emulates flock with byte-range locks, which need a file open for writing): the lock
  // file is used there instead.
  if (const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    for (;;) {
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        return CheckpointLock(dir, fd);
      }
      if (errno != EWOULDBLOCK && errno != EINTR) {
        ::close(fd);
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        Error error = held_error(fd, "");
        ::close(fd);
        return error;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const fs::path path = dir / k_lock_name;
  for (;;) {
    if (::mkdir((dir / k_state_dir).c_str(), 0755) != 0 && errno != EEXIST) {
      return lock_error(ErrorCode::write_failed,
                        "cannot create " + std::string(k_state_dir) + ": " + errno_text());
    }
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == ENOENT) {
        continue; // the holder removed .qpatch/ between our mkdir and open
      }
      return lock_error(ErrorCode::write_failed, "cannot open: " + errno_text());
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (!still_linked(fd, path)) {
        ::close(fd);
        continue;
      }
      return CheckpointLock(dir, fd);
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const std::string error = errno_text();
      ::close(fd);
      return lock_error(ErrorCode::write_failed, "cannot lock: " + error);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      Error error = held_error(fd, k_lock_name);
      ::close(fd);
      return error;
    }
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

CheckpointLock::CheckpointLock(CheckpointLock&& other) noexcept
    : m_dir(std::move(other.m_dir)), m_fd(other.m_fd) {
  other.m_fd = -1;
}

CheckpointLock::~CheckpointLock() {
  if (m_fd < 0) {
    return;
  }
  // With nothing recorded, leave the checkpoint as qpatch found it: no .qpatch/ at all (a lock
  // file is there only where the directory could not be locked, or from an earlier version).
  struct stat info {};
  if (::lstat((m_dir / k_manifest_name).c_str(), &info) != 0 && errno == ENOENT &&
      ::lstat((m_dir / k_state_dir).c_str(), &info) == 0) {
    ::unlink((m_dir / k_lock_name).c_str());
    ::rmdir((m_dir / k_state_dir).c_str());
  }
  ::close(m_fd);
}

} // namespace qpatch::commit
