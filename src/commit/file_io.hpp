// SPDX-License-Identifier: Apache-2.0
// The file operations commit/ shares: reads that never follow a symlink, whole writes, and
// replacing a small file by temp + fsync + rename + directory fsync.
#pragma once

#include <qpatch/commit/file_system.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <string>

namespace qpatch::commit {

struct ReadStatus {
  int error = 0; // an errno value, 0 on success (ELOOP: a symlink; EINVAL: not a regular file)
  struct stat info {};
};

// Read the regular file `path` (not through a symlink) into `out`, at most `max_size` bytes.
ReadStatus read_no_follow(const std::filesystem::path& path, uint64_t max_size, std::string& out);

// Write all of `data` to `fd`, retrying short writes; false with errno set on failure.
bool write_all(FileSystem& fs, int fd, const std::string& data);

void fsync_directory(FileSystem& fs, const std::filesystem::path& dir);

// "NAME.bak" (n = 0), else "NAME.bak.N": the backups of a file, a patch's and a graft's alike.
std::string backup_name(const std::string& file, int n);
// Whether `path` names a directory entry (a dangling symlink too); an lstat error other than
// ENOENT counts as taken, so a backup never lands where qpatch cannot see.
bool name_exists(const std::filesystem::path& path);
// The first NAME.bak[.N] in `dir` that neither exists nor is in `taken`; "" after 1,000.
std::string free_backup_name(const std::filesystem::path& dir,
                             const std::string& file,
                             const std::set<std::string>& taken = {});

// The text of errno, as every I/O error carries it.
std::string errno_text();

// Make `dir/name` the symlink to `target` through a temp link beside it (".NAME.qpatch-link")
// and a rename, so it is the old entry or the link, never neither; return "" or an error text.
std::string replace_with_symlink(FileSystem& fs,
                                 const std::filesystem::path& dir,
                                 const std::string& name,
                                 const std::string& target);

// Make directory `dir` if it is not there; return "" or an error text, which says what to run
// instead when the checkpoint directory is not writable (a shared store, a read-only mount).
std::string make_directory(const std::filesystem::path& dir);

// Replace `dir/name` with `data` through a temp file beside it; return "" or an error text.
std::string replace_file(FileSystem& fs,
                         const std::filesystem::path& dir,
                         const std::string& name,
                         const std::string& data,
                         mode_t mode);

} // namespace qpatch::commit
