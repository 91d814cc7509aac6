// SPDX-License-Identifier: Apache-2.0
// A fresh directory per test, removed even when the test fails, plus small file helpers.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

namespace qpatch::test {

class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;

  const std::filesystem::path& dir() const { return m_dir; }
  // Write `content` to `name` (relative to dir()), creating parent directories.
  void write(const std::string& name, const std::string& content) const;
  std::string read(const std::string& name) const;

private:
  std::filesystem::path m_dir;
};

// Return the bytes of a file.
std::string read_bytes(const std::filesystem::path& file);

// name -> (bytes or link target, mode): what a command must leave untouched.
std::map<std::string, std::string> snapshot_tree(const std::filesystem::path& dir);

} // namespace qpatch::test
