// SPDX-License-Identifier: Apache-2.0
// The owner, group, mode and extended attributes (ACLs are the system.posix_acl_* ones) of a
// file qpatch replaces: a rename puts a new inode in its place, which must carry them all, or a
// file owned by a user comes back root:root. What cannot be kept stops the commit before any
// target is renamed.
#pragma once

#include <qpatch/commit/file_system.hpp>

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace qpatch::commit {

struct Metadata {
  mode_t mode = 0644;
  uid_t owner = 0;
  gid_t group = 0;
  std::vector<std::pair<std::string, std::string>> xattrs; // name, value
};

// Read the metadata of the file at `path` (through a symlink); return "" or an error text.
std::string read_metadata(const std::filesystem::path& path, Metadata& out);

// Give the open file `fd` the metadata `m`; return "" or an error text naming what was not kept.
std::string apply_metadata(FileSystem& fs, int fd, const Metadata& m);

} // namespace qpatch::commit
