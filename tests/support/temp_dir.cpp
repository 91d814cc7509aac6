// SPDX-License-Identifier: Apache-2.0
#include "support/temp_dir.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace qpatch::test {
namespace fs = std::filesystem;

void TempDirTest::SetUp() {
  std::string pattern = (fs::temp_directory_path() / "qpatch-test-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  m_dir = pattern;
}

void TempDirTest::TearDown() {
  std::error_code ec;
  fs::remove_all(m_dir, ec);
}

void TempDirTest::write(const std::string& name, const std::string& content) const {
  const fs::path file = m_dir / name;
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  ASSERT_TRUE(out.good()) << file;
}

std::string TempDirTest::read(const std::string& name) const {
  return read_bytes(m_dir / name);
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::map<std::string, std::string> snapshot_tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(entry.path(), dir).string();
    struct stat info {};
    ::lstat(entry.path().c_str(), &info);
    std::string state = "mode=" + std::to_string(info.st_mode) + " ";
    if (entry.is_symlink()) {
      state += "link:" + fs::read_symlink(entry.path()).string();
    } else if (entry.is_regular_file()) {
      // Sparse shards are large: their header bytes and size stand for them.
      if (entry.file_size() > (1 << 20)) {
        std::ifstream in(entry.path(), std::ios::binary);
        std::string head(4096, '\0');
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        state += "size=" + std::to_string(entry.file_size()) + " head:" + head;
      } else {
        state += read_bytes(entry.path());
      }
    }
    out[name] = state;
  }
  return out;
}

} // namespace qpatch::test
