// SPDX-License-Identifier: Apache-2.0
// Issue 13: nothing written by a slip of the keyboard, one diagnostic form naming the file as the
// user would open it, and one diff for several checkpoints that `git apply` takes.
#include "run.hpp"
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qpatch::cli {
namespace {

namespace fs = std::filesystem;
using test::Head;
using test::HeadFile;

constexpr const char* k_linear = "[\n          \"Linear\"\n        ]";

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run_args(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = run(args, out, err, Terminal{});
  return {code, out.str(), err.str()};
}

// Run with the current directory set to `dir`, so relative DIR arguments are tested as typed.
class InDirTest : public test::TempDirTest {
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
  void write_checkpoint(const std::string& name) {
    test::write_mini(dir() / name,
                     {Head::dense,
                      HeadFile::indexed_shard,
                      test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear)});
  }

private:
  fs::path m_previous;
};

TEST_F(InDirTest, TypoSubcommandBesideACheckpointWritesNothing) {
  write_checkpoint("ck");
  const auto before = test::snapshot_tree(dir());
  const Outcome outcome = run_args({"inpsect", "ck"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.out, "");
  EXPECT_EQ(outcome.err, "qpatch: error: unknown command 'inpsect'; did you mean 'inspect'?\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

TEST_F(InDirTest, MissingDirBesideACheckpointWritesNothing) {
  write_checkpoint("ck");
  const auto before = test::snapshot_tree(dir());
  const Outcome outcome = run_args({"ck", "./nope"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.out, "");
  EXPECT_EQ(outcome.err, "qpatch: error: ./nope: no such directory\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

// stat failing for another reason than a missing name gives its errno text (ELOOP: root gets
// it too), for a DIR and for a --recursive root.
TEST_F(InDirTest, ASymlinkLoopAsDirNamesItsErrnoText) {
  fs::create_symlink("loop", dir() / "loop");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"loop"},
                                               std::vector<std::string>{"inspect", "loop"},
                                               std::vector<std::string>{"--recursive", "loop"}}) {
    const Outcome outcome = run_args(args);
    EXPECT_EQ(outcome.code, 2) << args.back();
    EXPECT_EQ(outcome.out, "");
    EXPECT_EQ(outcome.err, "qpatch: error: loop: cannot read: Too many levels of symbolic links\n")
        << args.front();
  }
}

TEST_F(InDirTest, CommandAfterItsDirIsAUsageError) {
  write_checkpoint("ck");
  const Outcome outcome = run_args({"ck", "inspect"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.out, "");
  EXPECT_EQ(outcome.err,
            "qpatch: error: 'inspect' is a command: write it first, as in 'qpatch inspect DIR'\n");
}

TEST_F(InDirTest, ErrorPathIsTheDirAsGivenJoinedWithTheFile) {
  write_checkpoint("ck");
  std::ofstream(dir() / "ck" / "config.json", std::ios::trunc) << "{\n  \"a\": 1,\n  \"b\" 2\n}\n";
  for (const std::string& given :
       {std::string("ck"), std::string("./ck"), (dir() / "ck").string()}) {
    const Outcome outcome = run_args({"--check", given});
    EXPECT_EQ(outcome.code, 3) << given;
    EXPECT_EQ(outcome.err,
              "qpatch: error: " + given +
                  "/config.json: byte 18 (line 3, column 7): syntax error while parsing object "
                  "separator - unexpected number literal; expected ':'\n")
        << given;
    EXPECT_EQ(outcome.out, given + ": could not be judged (see the error)\n  status      error\n");
  }
}

TEST_F(InDirTest, UnreadableCheckpointHoldsBackEveryWrite) {
  write_checkpoint("ck1");
  write_checkpoint("ck2");
  std::ofstream(dir() / "ck2" / "model_extra_tensors.safetensors", std::ios::trunc) << "short";
  const auto before = test::snapshot_tree(dir());
  const Outcome outcome = run_args({"ck1", "ck2"});
  EXPECT_EQ(outcome.code, 3);
  EXPECT_EQ(test::snapshot_tree(dir()), before);
  EXPECT_NE(outcome.out.find("  status      needs-patch (nothing written: another checkpoint could "
                             "not be read)\n"),
            std::string::npos)
      << outcome.out;
  EXPECT_NE(outcome.out.find("1 checkpoint would be patched, 1 error\n"), std::string::npos)
      << outcome.out;
}

TEST_F(InDirTest, TwoCheckpointsDryRunIsOnePatchThatGitApplies) {
  write_checkpoint("ck1");
  write_checkpoint("ck2");
  const Outcome dry = run_args({"--dry-run", "ck1", "ck2"});
  EXPECT_EQ(dry.code, 1);
  EXPECT_EQ(dry.out.find("--- a/ck1/config.json\n+++ b/ck1/config.json\n"), 0u) << dry.out;
  EXPECT_NE(dry.out.find("--- a/ck2/config.json\n+++ b/ck2/config.json\n"), std::string::npos);
  EXPECT_NE(dry.err.find("2 checkpoints would be patched\n"), std::string::npos) << dry.err;
  std::ofstream(dir() / "fix.patch", std::ios::binary) << dry.out;
  ASSERT_EQ(std::system("git apply fix.patch"), 0);
  EXPECT_EQ(run_args({"--check", "ck1", "ck2"}).code, 0);
}

TEST_F(InDirTest, DidYouMeanForFlagsEnginesAndModules) {
  write_checkpoint("ck");
  EXPECT_EQ(run_args({"--dryrun", "ck"}).err,
            "qpatch: error: unknown option '--dryrun'; did you mean '--dry-run'?\n");
  EXPECT_EQ(run_args({"--engine", "vlm", "ck"}).err,
            "qpatch: error: --engine: unknown engine 'vlm'; did you mean 'vllm'? (vllm, sglang, "
            "transformers, all, or ENGINE@REF: one version)\n");
  EXPECT_EQ(run_args({"--engine", "vllm@2025-01-01", "ck"}).err,
            "qpatch: error: --engine: vllm@2025-01-01: qpatch models vLLM main from 2026-02-28 "
            "to 2026-08-17 (017e9f4)\n");
  EXPECT_EQ(run_args({"--engine", "vllm@0.99", "ck"}).err,
            "qpatch: error: --engine: vllm@0.99: not a release qpatch knows (0.16, 0.17, 0.18, "
            "0.19, 0.20, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26, 0.27, 0.28, 0.29, 0.30); give main, "
            "a day YYYY-MM-DD, or one of those\n");
  EXPECT_EQ(run_args({"--engine", "sglang,vllm@main,vlm", "ck"}).err,
            "qpatch: error: --engine: unknown engine 'vlm'; did you mean 'vllm'? (vllm, sglang, "
            "transformers, all, or ENGINE@REF: one version)\n");
  const Outcome explained = run_args({"explain", "ck", "mpt.fc"});
  EXPECT_EQ(explained.code, 2);
  EXPECT_EQ(explained.err,
            "qpatch: error: ck: module 'mpt.fc': no such module in the checkpoint (see qpatch "
            "inspect); did you mean 'mtp.fc'?\n");
}

// Issue 25: `qpatch --check ''` said "error: : no such directory", and `graft --form x DIR` only
// "missing --from": CLI11 checks required options before unknown ones, so the typo went unnamed.
TEST_F(InDirTest, AnEmptyDirAndAMistypedRequiredOptionAreNamed) {
  write_checkpoint("ck");
  const auto before = test::snapshot_tree(dir());
  const Outcome empty = run_args({"--check", ""});
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(empty.err,
            "qpatch: error: an empty DIR (''): give a checkpoint directory or a Hub repo id "
            "ORG/NAME\n");
  const Outcome form = run_args({"graft", "--form", "ck", "ck"});
  EXPECT_EQ(form.code, 2);
  EXPECT_EQ(form.err, "qpatch: error: unknown option '--form'; did you mean '--from'?\n");
  const Outcome missing = run_args({"graft", "ck"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err,
            "qpatch: error: graft: missing --from; run 'qpatch graft --help' for usage\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

TEST_F(InDirTest, QuietWithVerboseAndOnlyMatchingNothingAreUsageErrors) {
  write_checkpoint("ck");
  const Outcome both = run_args({"-q", "-v", "ck"});
  EXPECT_EQ(both.code, 2);
  EXPECT_EQ(both.err, "qpatch: error: --quiet and --verbose cannot be used together\n");
  const Outcome only = run_args({"--check", "--only", "^nothing", "ck"});
  EXPECT_EQ(only.code, 2);
  EXPECT_EQ(only.out, "");
  EXPECT_EQ(only.err,
            "qpatch: error: --only '^nothing' matches no module in ck; see the names with 'qpatch "
            "inspect DIR'\n");
}

} // namespace
} // namespace qpatch::cli
