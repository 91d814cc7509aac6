// SPDX-License-Identifier: Apache-2.0
// commit::TempFile, the one temp file beside a target (issue 26): its name is the one recovery
// recognises, it is gone when it goes out of scope, and keep() leaves it for its new owner.
#include "support/temp_dir.hpp"

#include <qpatch/commit/manifest.hpp>
#include <qpatch/commit/temp_file.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace qpatch::commit {
namespace {

namespace fs = std::filesystem;

class TempFileTest : public test::TempDirTest {};

TEST_F(TempFileTest, IsBesideItsTargetUnderARecognisedNameAndGoneOutOfScope) {
  std::string path;
  {
    TempFile temp(posix_file_system(), dir(), "config.json");
    ASSERT_TRUE(temp.ok());
    path = temp.path();
    EXPECT_EQ(fs::path(path).parent_path(), dir());
    EXPECT_EQ(temp.name().rfind(".config.json.qpatch-", 0), 0u);
    EXPECT_EQ(temp.name().size(), std::string(".config.json.qpatch-XXXXXX").size());
    EXPECT_TRUE(is_temp_name(temp.name()));
    EXPECT_EQ(::write(temp.fd(), "{}", 2), 2);
    EXPECT_TRUE(temp.close());
    EXPECT_TRUE(temp.close()); // once only
    EXPECT_EQ(fs::file_size(path), 2u);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir()));
}

TEST_F(TempFileTest, KeepLeavesItForItsNewOwner) {
  std::string path;
  {
    TempFile temp(posix_file_system(), dir(), "model.safetensors");
    ASSERT_TRUE(temp.ok());
    path = temp.path();
    temp.keep();
  }
  EXPECT_TRUE(fs::exists(path));
}

TEST_F(TempFileTest, ADirectoryItCannotBeCreatedInIsNotOk) {
  TempFile temp(posix_file_system(), dir() / "missing", "config.json");
  EXPECT_FALSE(temp.ok());
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(temp.fd(), -1);
}

} // namespace
} // namespace qpatch::commit
