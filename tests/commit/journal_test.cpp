// SPDX-License-Identifier: Apache-2.0
// The manifest and journal, another writer racing the swap, and the metadata of replaced files.
#include "support/temp_dir.hpp"

#include <qpatch/commit/lock.hpp>
#include <qpatch/commit/manifest.hpp>
#include <qpatch/commit/transaction.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <functional>

namespace qpatch::commit {
namespace {

namespace fs = std::filesystem;

// Runs `hook` once, just before the `at`-th fsync (while qpatch stages its temp files).
class RacingFileSystem : public FileSystem {
public:
  RacingFileSystem(int at, std::function<void()> hook) : m_at(at), m_hook(std::move(hook)) {}
  int fsync(int fd) override {
    if (++m_count == m_at) {
      m_hook();
    }
    return FileSystem::fsync(fd);
  }

private:
  int m_at;
  int m_count = 0;
  std::function<void()> m_hook;
};

class JournalTest : public test::TempDirTest {
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
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : fs::recursive_directory_iterator(dir())) {
      out.push_back(fs::relative(entry.path(), dir()).string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(JournalTest, ManifestRecordsEachBackupWithItsHashes) {
  ASSERT_TRUE(commit(dir(), requests(), Backup::yes).ok());
  const auto manifest = read_manifest(dir());
  ASSERT_TRUE(manifest.ok());
  ASSERT_EQ(manifest->backups.size(), 2U);
  EXPECT_EQ(manifest->backups[0].file, "config.json");
  EXPECT_EQ(manifest->backups[0].backup, "config.json.bak");
  EXPECT_EQ(manifest->backups[0].original_hash, content_hash("{\"a\": 1}\n"));
  EXPECT_EQ(manifest->backups[0].written_hash, content_hash("{\"a\": 10}\n"));
  EXPECT_FALSE(manifest->journal.has_value());
  EXPECT_EQ(content_hash(""), "2d06800538d394c2"); // XXH3-64 of nothing, as xxhsum -H3 prints
}

TEST_F(JournalTest, NoBackupLeavesNoQpatchDirectory) {
  ASSERT_TRUE(commit(dir(), requests(), Backup::no).ok());
  EXPECT_EQ(names(), (std::vector<std::string>{"config.json", "quantization_config.json"}));
}

TEST_F(JournalTest, AnEditBeforeTheSwapStopsTheTransaction) {
  // Lands after qpatch's first check, while it stages: on main it was overwritten, exit 0.
  RacingFileSystem racing(1, [&] { write("config.json", "{\"a\": 2}\n"); });
  const auto result = commit(dir(), requests(), Backup::yes, racing);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "config.json: changed since qpatch read it; nothing was written (run qpatch again)");
  EXPECT_EQ(read("config.json"), "{\"a\": 2}\n");
  EXPECT_EQ(read("quantization_config.json"), "{\"b\": 2}\n");
  EXPECT_EQ(names(), (std::vector<std::string>{"config.json", "quantization_config.json"}));
}

TEST_F(JournalTest, AnEditAtTheSwapIsKeptAsARecordedBackup) {
  // Another program had the file open and writes into it just as qpatch swaps it out: the write
  // lands in the old inode, which the swap leaves at the temp name, where qpatch finds it.
  class LateWriter : public FileSystem {
  public:
    int exchange(const char* a, const char* b) override {
      const bool target = std::string_view(b).ends_with("quantization_config.json");
      const int fd = target ? ::open(b, O_WRONLY | O_CLOEXEC) : -1;
      const int done = FileSystem::exchange(a, b);
      if (fd >= 0) {
        EXPECT_EQ(::ftruncate(fd, 0), 0);
        EXPECT_EQ(::pwrite(fd, "{\"b\": 3}\n", 9, 0), 9);
        ::close(fd);
      }
      return done;
    }
  } late;
  const auto result = commit(dir(), requests(), Backup::yes, late);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(to_string(result.error().code), "changed_on_disk");
  EXPECT_EQ(result.error().to_string(),
            "quantization_config.json: another program wrote it while qpatch replaced it: its "
            "version is kept in quantization_config.json.bak.1, qpatch's is in "
            "quantization_config.json");
  EXPECT_EQ(read("quantization_config.json.bak.1"), "{\"b\": 3}\n");
  EXPECT_EQ(read("quantization_config.json"), "{\"b\": 20}\n");
  const auto manifest = read_manifest(dir());
  ASSERT_TRUE(manifest.ok());
  ASSERT_EQ(manifest->kept.size(), 1U);
  EXPECT_EQ(manifest->kept[0].backup, "quantization_config.json.bak.1");
  EXPECT_EQ(manifest->kept[0].original_hash, content_hash("{\"b\": 3}\n"));
}

TEST_F(JournalTest, AReplacementAtTheSwapIsKept) {
  // Another editor renames its own file into place after qpatch's last look, before its swap.
  class Replacer : public FileSystem {
  public:
    explicit Replacer(fs::path dir) : m_dir(std::move(dir)) {}
    int exchange(const char* a, const char* b) override {
      if (m_count++ == 0) {
        std::ofstream(m_dir / "new", std::ios::binary) << "{\"a\": 5}\n";
        fs::rename(m_dir / "new", m_dir / "config.json");
      }
      return FileSystem::exchange(a, b);
    }

  private:
    fs::path m_dir;
    int m_count = 0;
  } replacer(dir());
  const auto result = commit(dir(), requests(), Backup::yes, replacer);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "config.json: another program wrote it while qpatch replaced it: its version is kept "
            "in config.json.bak.1, qpatch's is in config.json");
  EXPECT_EQ(read("config.json.bak.1"), "{\"a\": 5}\n");
  EXPECT_EQ(read("config.json.bak"), "{\"a\": 1}\n");
  EXPECT_EQ(read("config.json"), "{\"a\": 10}\n");
}

TEST_F(JournalTest, OwnerGroupModeAndXattrsAreKept) {
  const fs::path config = dir() / "config.json";
  ASSERT_EQ(::chown(config.c_str(), 1234, 5678), 0);
  ASSERT_EQ(::chmod(config.c_str(), 0640), 0);
  ASSERT_EQ(::setxattr(config.c_str(), "user.origin", "hub", 3, 0), 0);
  ASSERT_TRUE(commit(dir(), requests(), Backup::yes).ok());
  for (const char* name : {"config.json", "config.json.bak"}) {
    struct stat info {};
    ASSERT_EQ(::stat((dir() / name).c_str(), &info), 0);
    EXPECT_EQ(info.st_uid, 1234U) << name;
    EXPECT_EQ(info.st_gid, 5678U) << name;
    EXPECT_EQ(info.st_mode & 07777, 0640U) << name;
    char value[8] = {};
    EXPECT_EQ(::getxattr((dir() / name).c_str(), "user.origin", value, sizeof value), 3) << name;
    EXPECT_STREQ(value, "hub");
  }
}

TEST_F(JournalTest, RollbackKeepsTheOriginalInodeAndOwner) {
  const fs::path config = dir() / "config.json";
  ASSERT_EQ(::chown(config.c_str(), 1234, 5678), 0);
  struct stat before {};
  ASSERT_EQ(::stat(config.c_str(), &before), 0);
  class FailSecond : public FileSystem {
  public:
    int exchange(const char* a, const char* b) override {
      return ++m_count == 2 ? (errno = EIO, -1) : FileSystem::exchange(a, b);
    }

  private:
    int m_count = 0;
  } fail_second;
  ASSERT_FALSE(commit(dir(), requests(), Backup::yes, fail_second).ok());
  struct stat after {};
  ASSERT_EQ(::stat(config.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_uid, 1234U);
  EXPECT_EQ(read("config.json"), "{\"a\": 1}\n");
  EXPECT_EQ(names(), (std::vector<std::string>{"config.json", "quantization_config.json"}));
}

TEST_F(JournalTest, AnOwnerThatCannotBeKeptRefusesBeforeWriting) {
  ASSERT_EQ(::chown((dir() / "config.json").c_str(), 1234, 5678), 0);
  class NoChown : public FileSystem {
  public:
    int fchown(int, uid_t, gid_t) override { return errno = EPERM, -1; }
  } no_chown;
  const auto result = commit(dir(), requests(), Backup::yes, no_chown);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "config.json: cannot keep its owner 1234:5678 (Operation not permitted); nothing was "
            "changed");
  EXPECT_EQ(read("config.json"), "{\"a\": 1}\n");
  EXPECT_EQ(names(), (std::vector<std::string>{"config.json", "quantization_config.json"}));
}

TEST_F(JournalTest, RecoveryCompletesASwapJournal) {
  // A run killed after journaling "swap" and swapping config.json only.
  write(".quantization_config.json.qpatch-AbCdEf", "{\"b\": 20}\n");
  write("config.json", "{\"a\": 10}\n");
  write("config.json.bak", "{\"a\": 1}\n");
  write("quantization_config.json.bak", "{\"b\": 2}\n");
  Manifest manifest;
  manifest.journal = Journal{JournalState::swap,
                             {{"config.json",
                               ".config.json.qpatch-XyZxYz",
                               "config.json.bak",
                               content_hash("{\"a\": 1}\n"),
                               content_hash("{\"a\": 10}\n")},
                              {"quantization_config.json",
                               ".quantization_config.json.qpatch-AbCdEf",
                               "quantization_config.json.bak",
                               content_hash("{\"b\": 2}\n"),
                               content_hash("{\"b\": 20}\n")}},
                             {}};
  ASSERT_TRUE(write_manifest(dir(), manifest).ok());
  const auto recovered = recover(dir());
  ASSERT_TRUE(recovered.ok()) << recovered.error().to_string();
  EXPECT_EQ(recovered->notes,
            std::vector<std::string>{"an interrupted qpatch run was completed (config.json, "
                                     "quantization_config.json written)"});
  EXPECT_EQ(read("quantization_config.json"), "{\"b\": 20}\n");
  const auto after = read_manifest(dir());
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->journal.has_value());
  EXPECT_EQ(after->backups.size(), 2U);
}

TEST_F(JournalTest, RecoveryRemovesStaleTempFiles) {
  write(".config.json.qpatch-Q1w2E3", "half");
  write(".config.json.qpatch-link", "");
  const auto recovered = recover(dir());
  ASSERT_TRUE(recovered.ok());
  EXPECT_EQ(recovered->notes,
            std::vector<std::string>{"removed 2 temporary file(s) an interrupted qpatch run left"});
  EXPECT_EQ(names(), (std::vector<std::string>{"config.json", "quantization_config.json"}));
}

TEST_F(JournalTest, TheLockNamesItsHolderAndLeavesNoTrace) {
  {
    auto held = CheckpointLock::acquire(dir(), std::chrono::milliseconds(0));
    ASSERT_TRUE(held.ok());
    const auto second = CheckpointLock::acquire(dir(), std::chrono::milliseconds(50));
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().to_string(),
              "another qpatch (PID " + std::to_string(::getpid()) +
                  ") is writing this checkpoint; nothing was written (run qpatch again when it "
                  "has finished)");
    EXPECT_EQ(to_string(second.error().code), "write_failed");
  }
  EXPECT_EQ(names(), (std::vector<std::string>{"config.json", "quantization_config.json"}));
}

} // namespace
} // namespace qpatch::commit
