// SPDX-License-Identifier: Apache-2.0
// Write failures injected at each step leave the originals byte-identical and no temp files.
#include "support/temp_dir.hpp"

#include <qpatch/commit/transaction.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>

namespace qpatch::commit {
namespace {

namespace fs = std::filesystem;

// Fails the `fail_at`-th call (1-based) of one kind of operation with EIO.
class FailingFileSystem : public FileSystem {
public:
  enum class Op { backup_open, temp_write, rename };
  FailingFileSystem(Op op, int fail_at) : m_op(op), m_fail_at(fail_at) {}

  int open(const char* path, int flags, mode_t mode) override {
    if (m_op == Op::backup_open && (flags & O_EXCL) && ++m_count == m_fail_at) {
      errno = EIO;
      return -1;
    }
    return FileSystem::open(path, flags, mode);
  }
  ssize_t write(int fd, const void* data, size_t size) override {
    if (m_op == Op::temp_write && ++m_count == m_fail_at) {
      errno = ENOSPC;
      return -1;
    }
    return FileSystem::write(fd, data, size);
  }
  // The swaps of the targets are exchanges; plain renames also write the manifest.
  int exchange(const char* a, const char* b) override {
    if (m_op == Op::rename && ++m_count == m_fail_at) {
      errno = EIO;
      return -1;
    }
    return FileSystem::exchange(a, b);
  }

private:
  Op m_op;
  int m_fail_at;
  int m_count = 0;
};

class TransactionTest : public test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    write("config.json", "{\"a\": 1}\n");
    write("quantization_config.json", "{\"b\": 2}\n");
  }
  std::vector<WriteRequest> requests() const {
    return {{"config.json", "{\"a\": 1}\n", "{\"a\": 10}\n"},
            {"quantization_config.json", "{\"b\": 2}\n", "{\"b\": 20}\n"}};
  }
  void expect_untouched() {
    EXPECT_EQ(read("config.json"), "{\"a\": 1}\n");
    EXPECT_EQ(read("quantization_config.json"), "{\"b\": 2}\n");
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir())) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"config.json", "quantization_config.json"}));
  }
};

TEST_F(TransactionTest, CommitsBothFilesWithBackupsAndModes) {
  fs::permissions(dir() / "config.json", fs::perms(0600));
  const auto result = commit(dir(), requests(), Backup::yes);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(read("config.json"), "{\"a\": 10}\n");
  EXPECT_EQ(read("quantization_config.json"), "{\"b\": 20}\n");
  EXPECT_EQ(read("config.json.bak"), "{\"a\": 1}\n");
  EXPECT_EQ(result->backups,
            (std::vector<std::string>{"config.json.bak", "quantization_config.json.bak"}));
  EXPECT_EQ(fs::status(dir() / "config.json").permissions(), fs::perms(0600));
}

TEST_F(TransactionTest, AnExistingBackupIsNeverOverwritten) {
  write("config.json.bak", "older");
  const auto result = commit(dir(), {requests()[0]}, Backup::yes);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(read("config.json.bak"), "older");
  EXPECT_EQ(read("config.json.bak.1"), "{\"a\": 1}\n");
}

TEST_F(TransactionTest, FileChangedOnDiskIsRefused) {
  write("config.json", "{\"a\": 2}\n");
  const auto result = commit(dir(), requests(), Backup::yes);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "config.json: changed since qpatch read it; nothing was written (run qpatch again)");
  EXPECT_EQ(read("config.json"), "{\"a\": 2}\n");
}

TEST_F(TransactionTest, FailedTempWriteChangesNothing) {
  FailingFileSystem fs(FailingFileSystem::Op::temp_write, 2);
  const auto result = commit(dir(), requests(), Backup::yes, fs);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "quantization_config.json: cannot write the temporary file: No space left on device; "
            "nothing was changed");
  expect_untouched();
}

TEST_F(TransactionTest, FailedBackupChangesNothing) {
  FailingFileSystem fs(FailingFileSystem::Op::backup_open, 2);
  const auto result = commit(dir(), requests(), Backup::yes, fs);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "quantization_config.json: cannot create the backup quantization_config.json.bak: "
            "Input/output error; nothing was changed");
  expect_untouched();
}

TEST_F(TransactionTest, FailedFirstRenameChangesNothing) {
  FailingFileSystem fs(FailingFileSystem::Op::rename, 1);
  const auto result = commit(dir(), requests(), Backup::yes, fs);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(to_string(result.error().code), "write_failed");
  EXPECT_EQ(result.error().to_string(),
            "config.json: cannot rename the temporary file over it: Input/output error; every "
            "file was put back as it was");
  expect_untouched();
}

TEST_F(TransactionTest, FailedSecondRenameRollsTheFirstBack) {
  FailingFileSystem fs(FailingFileSystem::Op::rename, 2);
  const auto result = commit(dir(), requests(), Backup::yes, fs);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "quantization_config.json: cannot rename the temporary file over it: Input/output "
            "error; every file was put back as it was");
  expect_untouched();
}

TEST_F(TransactionTest, FailedRollbackIsReportedWithTheBackups) {
  class Worse : public FailingFileSystem {
  public:
    Worse() : FailingFileSystem(Op::rename, 2) {}
    int rename(const char*, const char*) override { // every undo fails too
      errno = EIO;
      return -1;
    }
  } worse;
  const auto result = commit(dir(), requests(), Backup::yes, worse);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(to_string(result.error().code), "rollback_failed");
  EXPECT_EQ(result.error().to_string(),
            "quantization_config.json: cannot rename the temporary file over it: Input/output "
            "error; config.json could not be restored (cannot rename the original back: "
            "Input/output error); the originals are in config.json.bak, "
            "quantization_config.json.bak");
  EXPECT_EQ(read("config.json.bak"), "{\"a\": 1}\n");
}

TEST_F(TransactionTest, SymlinkIsReplacedAndItsTargetKept) {
  write("blobs/x", "{\"a\": 1}\n");
  fs::remove(dir() / "config.json");
  fs::create_symlink("blobs/x", dir() / "config.json");
  const auto result = commit(dir(), {requests()[0]}, Backup::yes);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->replaced_links, std::vector<std::string>{"config.json"});
  EXPECT_FALSE(fs::is_symlink(dir() / "config.json"));
  EXPECT_EQ(read("blobs/x"), "{\"a\": 1}\n");
  EXPECT_EQ(read("config.json"), "{\"a\": 10}\n");
}

TEST_F(TransactionTest, RollbackRecreatesASymlink) {
  write("blobs/x", "{\"a\": 1}\n");
  fs::remove(dir() / "config.json");
  fs::create_symlink("blobs/x", dir() / "config.json");
  FailingFileSystem fs(FailingFileSystem::Op::rename, 2);
  ASSERT_FALSE(commit(dir(), requests(), Backup::yes, fs).ok());
  EXPECT_TRUE(fs::is_symlink(dir() / "config.json"));
  EXPECT_EQ(fs::read_symlink(dir() / "config.json"), "blobs/x");
}

} // namespace
} // namespace qpatch::commit
