// SPDX-License-Identifier: Apache-2.0
#include "commit/metadata.hpp"

#include "commit/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

namespace qpatch::commit {

namespace {

// Call `get(buffer, size)` until the buffer is large enough; false with errno on failure.
template <class Get> bool read_sized(std::string& out, Get get) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const ssize_t size = get(nullptr, 0);
    if (size < 0) {
      return false;
    }
    out.assign(static_cast<size_t>(size), '\0');
    const ssize_t got = get(out.data(), out.size());
    if (got >= 0) {
      out.resize(static_cast<size_t>(got));
      return true;
    }
    if (errno != ERANGE) { // ERANGE: it grew in between
      return false;
    }
  }
  return false;
}

} // namespace

std::string read_metadata(const std::filesystem::path& path, Metadata& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat info {};
  if (fd < 0 || ::fstat(fd, &info) != 0) {
    const std::string error = "cannot read its owner and mode: " + errno_text();
    if (fd >= 0) {
      ::close(fd);
    }
    return error;
  }
  out.mode = info.st_mode & 07777;
  out.owner = info.st_uid;
  out.group = info.st_gid;
  std::string names;
  const bool listed =
      read_sized(names, [fd](char* buffer, size_t size) { return ::flistxattr(fd, buffer, size); });
  if (!listed && errno != ENOTSUP) {
    const std::string error = "cannot list its extended attributes: " + errno_text();
    ::close(fd);
    return error;
  }
  for (size_t at = 0; listed && at < names.size();) {
    const std::string name = names.c_str() + at;
    at += name.size() + 1;
    std::string value;
    if (!read_sized(value, [fd, &name](char* buffer, size_t size) {
          return ::fgetxattr(fd, name.c_str(), buffer, size);
        })) {
      const std::string error = "cannot read its extended attribute " + name + ": " + errno_text();
      ::close(fd);
      return error;
    }
    out.xattrs.emplace_back(name, std::move(value));
  }
  ::close(fd);
  return "";
}

std::string apply_metadata(FileSystem& fs, int fd, const Metadata& m) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return "cannot read the temporary file's owner: " + errno_text();
  }
  // chown first: it clears set-user-ID bits, and chmod puts them back.
  if ((info.st_uid != m.owner || info.st_gid != m.group) && fs.fchown(fd, m.owner, m.group) != 0) {
    return "cannot keep its owner " + std::to_string(m.owner) + ":" + std::to_string(m.group) +
           " (" + errno_text() + ")";
  }
  if (fs.fchmod(fd, m.mode) != 0) {
    return "cannot set the mode of the temporary file: " + errno_text();
  }
  // After chmod, which rewrites the ACL mask: the copied system.posix_acl_access restores it.
  for (const auto& [name, value] : m.xattrs) {
    if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) != 0) {
      return "cannot keep its extended attribute " + name + " (" + errno_text() + ")";
    }
  }
  return "";
}

} // namespace qpatch::commit
