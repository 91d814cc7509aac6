// SPDX-License-Identifier: Apache-2.0
// The one temp file qpatch writes beside a target: ".NAME.qpatch-XXXXXX" in the target's
// directory (so the rename or exchange that puts it in place never crosses a file system, and
// recovery finds a stray one by its name: manifest.hpp is_temp_name). Created with mkstemp
// through the FileSystem seam, so fault-injection tests reach every write. Removed when it goes
// out of scope, whatever unwinds it (an error, a signal's cancellation), unless keep() says the
// file now belongs elsewhere: renamed into place, or staged for the transaction's exchange.
// Used by the transaction (stage_temp), file_io (replace_file) and graft (the new shards).
#pragma once

#include <qpatch/commit/file_system.hpp>

#include <filesystem>
#include <string>

namespace qpatch::commit {

class TempFile {
public:
  // Create the temp file for `dir/name`; ok() is false (errno set) when mkstemp failed.
  TempFile(FileSystem& fs, const std::filesystem::path& dir, const std::string& name);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  bool ok() const { return !m_path.empty(); }
  int fd() const { return m_fd; }
  const std::string& path() const { return m_path; }
  // Its name in the directory (".NAME.qpatch-XXXXXX").
  std::string name() const;
  // Close it (once); false with errno set when close(2) failed.
  bool close();
  // The file stays when this goes out of scope.
  void keep() { m_keep = true; }

private:
  FileSystem& m_fs;
  std::string m_path; // "" when it could not be created
  int m_fd = -1;
  bool m_keep = false;
};

} // namespace qpatch::commit
