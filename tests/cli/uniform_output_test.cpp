// SPDX-License-Identifier: Apache-2.0
// Issue 13, items 5 and 6: `inspect` fitted to a terminal with what the config makes of each
// module, `restore` over several DIRs, and the exact documents of `explain --json`,
// `restore --json` and `inspect` over several DIRs.
#include "run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/report/fit_width.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qpatch::cli {
namespace {

namespace fs = std::filesystem;
using test::Head;
using test::HeadFile;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run_args(const std::vector<std::string>& args, const Terminal& terminal = Terminal{}) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = run(args, out, err, terminal);
  return {code, out.str(), err.str()};
}

// `actual` must be the bytes of testdata/expected/NAME (reviewed in git diff; rewritten with
// QPATCH_UPDATE_GOLDEN=1, as the golden cases are).
void expect_file(const std::string& actual, const std::string& name) {
  const fs::path file = fs::path(QPATCH_TESTDATA_DIR) / "expected" / name;
  if (const char* update = std::getenv("QPATCH_UPDATE_GOLDEN"); update != nullptr && *update) {
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << actual;
  }
  EXPECT_EQ(actual, test::read_bytes(file)) << name;
}

// Relative DIR arguments, as typed, from inside the test's directory.
class UniformOutputTest : public test::TempDirTest {
protected:
  void SetUp() override {
    test::TempDirTest::SetUp();
    m_previous = fs::current_path();
    fs::current_path(dir());
  }
  void TearDown() override {
    fs::current_path(m_previous);
    test::TempDirTest::TearDown();
  }
  // The Qwen3.5 mini checkpoint whose dense MTP head a "Linear" target quantizes (vLLM and SGLang
  // build it quantized; transformers never builds the head).
  void write_checkpoint(const std::string& name) {
    test::write_mini(dir() / name,
                     {Head::dense,
                      HeadFile::indexed_shard,
                      test::ct_config_json("[\n      \"lm_head\"\n    ]",
                                           "[\n          \"Linear\"\n        ]")});
  }

private:
  fs::path m_previous;
};

TEST_F(UniformOutputTest, InspectOnAnEightyColumnTerminal) {
  write_checkpoint("ck");
  Terminal tty;
  tty.stdout_is_tty = true;
  tty.no_color = true;
  tty.stdout_columns = 80;
  const Outcome outcome = run_args({"inspect", "ck"}, tty);
  EXPECT_EQ(outcome.code, 0);
  EXPECT_EQ(outcome.err, "");
  expect_file(outcome.out, "inspect_tty_80.stdout");
  // Every line fits: names are cut from the left, the kind, group and file columns dropped.
  std::istringstream lines(outcome.out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(report::display_width(line), 80u) << line;
  }
}

TEST_F(UniformOutputTest, InspectVerboseOnATerminalKeepsEveryColumn) {
  write_checkpoint("ck");
  Terminal tty;
  tty.stdout_is_tty = true;
  tty.no_color = true;
  tty.stdout_columns = 80;
  const Outcome verbose = run_args({"inspect", "-v", "--only", "^mtp\\.fc$", "ck"}, tty);
  EXPECT_EQ(verbose.code, 0);
  expect_file(verbose.out, "inspect_verbose_mtp_fc.stdout");
  // A pipe gets the same whole lines.
  EXPECT_EQ(run_args({"inspect", "--only", "^mtp\\.fc$", "ck"}).out, verbose.out);
}

TEST_F(UniformOutputTest, InspectSeveralDirs) {
  write_checkpoint("ck1");
  write_checkpoint("ck2");
  const Outcome text = run_args({"inspect", "--summary", "ck1", "./ck2"});
  EXPECT_EQ(text.code, 0);
  EXPECT_EQ(text.err, "");
  expect_file(text.out, "inspect_summary_two_dirs.stdout");
  const Outcome json = run_args({"inspect", "--summary", "--json", "ck1", "./ck2"});
  EXPECT_EQ(json.code, 0);
  EXPECT_EQ(json.err, "");
  expect_file(json.out, "inspect_summary_two_dirs.json");
}

TEST_F(UniformOutputTest, ExplainJson) {
  write_checkpoint("ck");
  const Outcome outcome = run_args({"explain", "--json", "--engine", "vllm", "ck", "mtp.fc"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.err, "");
  expect_file(outcome.out, "explain_mtp_fc_vllm.json");
}

TEST_F(UniformOutputTest, RestoreSeveralDirsPutsBackEachOriginal) {
  write_checkpoint("ck1");
  write_checkpoint("ck2");
  const std::string original = test::read_bytes(dir() / "ck1" / "config.json");
  ASSERT_EQ(run_args({"ck1", "ck2"}).code, 0);
  ASSERT_NE(test::read_bytes(dir() / "ck2" / "config.json"), original);
  const Outcome dry = run_args({"restore", "--dry-run", "ck1", "ck2"});
  EXPECT_EQ(dry.code, 0);
  EXPECT_EQ(dry.err, "");
  // One diff for both, labelled relative to the current directory, as `qpatch --dry-run` does.
  expect_file(dry.out, "restore_dry_run_two_dirs.diff");
  const Outcome json = run_args({"restore", "--dry-run", "--json", "ck1", "ck2"});
  EXPECT_EQ(json.code, 0);
  expect_file(json.out, "restore_dry_run_two_dirs.json");
  const Outcome restored = run_args({"restore", "ck1", "ck2"});
  EXPECT_EQ(restored.code, 0);
  EXPECT_EQ(restored.err, "");
  EXPECT_EQ(restored.out,
            "ck1: restored config.json from config.json.bak\n"
            "ck2: restored config.json from config.json.bak\n");
  EXPECT_EQ(test::read_bytes(dir() / "ck1" / "config.json"), original);
  EXPECT_EQ(test::read_bytes(dir() / "ck2" / "config.json"), original);
  EXPECT_FALSE(fs::exists(dir() / "ck1" / "config.json.bak"));
  EXPECT_FALSE(fs::exists(dir() / "ck2" / "config.json.bak"));
}

TEST_F(UniformOutputTest, RestoreJsonAfterWriting) {
  write_checkpoint("ck");
  ASSERT_EQ(run_args({"ck"}).code, 0);
  const Outcome outcome = run_args({"restore", "--json", "ck", "ck"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_EQ(outcome.err, "");
  expect_file(outcome.out, "restore_json_same_dir_twice.json");
}

// Each subcommand's --help ends with its own exit statuses, not the patching table (issue 25).
TEST(SubcommandHelp, EachSubcommandListsItsOwnExitStatuses) {
  const auto help_of = [](const std::string& command) {
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(cli::run({command, "--help"}, out, err, cli::Terminal{}), 0);
    return out.str();
  };
  const std::string explain = help_of("explain");
  EXPECT_NE(explain.find("Exit status:\n  0  MODULE is built as it is stored"), std::string::npos);
  EXPECT_EQ(explain.find("a patch is\n     needed"), std::string::npos);
  const std::string graft = help_of("graft");
  EXPECT_NE(graft.find("Exit status:\n  0  grafted, or nothing to graft\n"), std::string::npos);
  EXPECT_EQ(graft.find("HF_HUB_CACHE"), std::string::npos);
  const std::string restore = help_of("restore");
  EXPECT_NE(restore.find("Exit status:\n  0  restored, or nothing to restore\n"),
            std::string::npos);
  const std::string inspect = help_of("inspect");
  EXPECT_NE(inspect.find("Exit status:\n  0  read and shown"), std::string::npos);
}

} // namespace
} // namespace qpatch::cli
