// SPDX-License-Identifier: Apache-2.0
// The POSIX calls commit/ makes, behind an interface so tests can make any one of them fail
// (tests run as root, so permissions cannot be used to provoke failures).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>

namespace qpatch::commit {

class FileSystem {
public:
  virtual ~FileSystem() = default;
  virtual int open(const char* path, int flags, mode_t mode);
  virtual int mkstemp(char* path_template);
  virtual ssize_t write(int fd, const void* data, size_t size);
  virtual int fchmod(int fd, mode_t mode);
  virtual int fchown(int fd, uid_t owner, gid_t group);
  virtual int fsync(int fd);
  virtual int close(int fd);
  virtual int rename(const char* from, const char* to);
  // Swap two names atomically (renameat2 RENAME_EXCHANGE); EINVAL where the file system cannot.
  virtual int exchange(const char* a, const char* b);
  virtual int unlink(const char* path);
};

// The real one.
FileSystem& posix_file_system();

} // namespace qpatch::commit
