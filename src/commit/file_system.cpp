// SPDX-License-Identifier: Apache-2.0
#include <qpatch/commit/file_system.hpp>
#include <qpatch/commit/interrupt.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace qpatch::commit {

int FileSystem::open(const char* path, int flags, mode_t mode) {
  return ::open(path, flags, mode);
}
int FileSystem::mkstemp(char* path_template) {
  return ::mkstemp(path_template);
}
ssize_t FileSystem::write(int fd, const void* data, size_t size) {
  return ::write(fd, data, size);
}
int FileSystem::fchmod(int fd, mode_t mode) {
  return ::fchmod(fd, mode);
}
int FileSystem::fchown(int fd, uid_t owner, gid_t group) {
  return ::fchown(fd, owner, group);
}
int FileSystem::fsync(int fd) {
  return ::fsync(fd);
}
int FileSystem::close(int fd) {
  return ::close(fd);
}
int FileSystem::rename(const char* from, const char* to) {
  before_rename_fault();
  return std::rename(from, to);
}
int FileSystem::exchange(const char* a, const char* b) {
  before_rename_fault();
  return ::renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}
int FileSystem::unlink(const char* path) {
  return ::unlink(path);
}

FileSystem& posix_file_system() {
  static FileSystem file_system;
  return file_system;
}

} // namespace qpatch::commit
