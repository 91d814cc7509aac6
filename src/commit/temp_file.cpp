// SPDX-License-Identifier: Apache-2.0
#include <qpatch/commit/temp_file.hpp>

namespace qpatch::commit {

TempFile::TempFile(FileSystem& fs, const std::filesystem::path& dir, const std::string& name)
    : m_fs(fs) {
  std::string path = (dir / ("." + name + ".qpatch-XXXXXX")).string();
  m_fd = m_fs.mkstemp(path.data());
  if (m_fd >= 0) {
    m_path = std::move(path);
  }
}

TempFile::~TempFile() {
  close();
  if (ok() && !m_keep) {
    m_fs.unlink(m_path.c_str());
  }
}

std::string TempFile::name() const {
  return std::filesystem::path(m_path).filename().string();
}

bool TempFile::close() {
  const int fd = m_fd;
  m_fd = -1;
  return fd < 0 || m_fs.close(fd) == 0;
}

} // namespace qpatch::commit
