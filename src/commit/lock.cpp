// SPDX-License-Identifier: Apache-2.0
#include "commit/file_io.hpp"

#include <qpatch/commit/lock.hpp>
#include <qpatch/commit/manifest.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace qpatch::commit {
namespace fs = std::filesystem;

namespace {

Error lock_error(ErrorCode code, const std::string& message) {
  return make_error(code, k_lock_name, std::nullopt, "", message);
}

// The PID the holder wrote, or "" when it has not written one yet.
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid = n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) {
    pid.pop_back();
  }
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

} // namespace

std::chrono::milliseconds lock_wait() {
  if (const char* text = std::getenv("QPATCH_LOCK_WAIT_MS"); text != nullptr && *text != '\0') {
    return std::chrono::milliseconds(std::strtol(text, nullptr, 10));
  }
  return std::chrono::seconds(5);
}

Result<CheckpointLock> CheckpointLock::acquire(const fs::path& dir,
                                               std::chrono::milliseconds wait) {
  const fs::path path = dir / k_lock_name;
  const auto deadline = std::chrono::steady_clock::now() + wait;
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
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
        const std::string error = errno_text();
        ::close(fd);
        return lock_error(ErrorCode::write_failed, "cannot write the holder's PID: " + error);
      }
      return CheckpointLock(dir, fd);
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const std::string error = errno_text();
      ::close(fd);
      return lock_error(ErrorCode::write_failed, "cannot lock: " + error);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string pid = holder_of(fd);
      ::close(fd);
      return lock_error(ErrorCode::write_failed,
                        "another qpatch" + (pid.empty() ? "" : " (PID " + pid + ")") +
                            " is writing this checkpoint; nothing was written (run qpatch "
                            "again when it has finished)");
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
  // With nothing recorded, leave the checkpoint as qpatch found it: no .qpatch/ at all.
  struct stat info {};
  if (::lstat((m_dir / k_manifest_name).c_str(), &info) != 0 && errno == ENOENT) {
    ::unlink((m_dir / k_lock_name).c_str());
    ::rmdir((m_dir / k_state_dir).c_str());
  }
  ::close(m_fd);
}

} // namespace qpatch::commit
