// SPDX-License-Identifier: Apache-2.0
// A file descriptor closed when it goes out of scope: the reader's shard files, graft's byte
// comparisons and the written-shard verification each hold one while they pread.
#pragma once

#include <unistd.h>

namespace qpatch::util {

class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : m_fd(fd) {}
  ~FileDescriptor() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return m_fd; }

private:
  int m_fd;
};

} // namespace qpatch::util
