// SPDX-License-Identifier: Apache-2.0
// Issue 16, item 1: Hub repo ids as DIR arguments, resolved through a local cache
// (support/hub_cache_fixture.hpp), on the CLI.
#include "run.hpp"
#include "support/hub_cache_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qpatch::hub {
namespace {

// The CLI, with HF_HUB_CACHE pointing at the test's cache.
class HubCliTest : public HubCacheTest {
protected:
  void SetUp() override {
    HubCacheTest::SetUp();
    const char* previous = std::getenv("HF_HUB_CACHE");
    m_previous = previous != nullptr ? std::optional<std::string>(previous) : std::nullopt;
    ::setenv("HF_HUB_CACHE", cache().c_str(), 1);
  }
  void TearDown() override {
    if (m_previous) {
      ::setenv("HF_HUB_CACHE", m_previous->c_str(), 1);
    } else {
      ::unsetenv("HF_HUB_CACHE");
    }
    HubCacheTest::TearDown();
  }
  struct Outcome {
    int code;
    std::string out;
    std::string err;
  };
  static Outcome run_args(const std::vector<std::string>& args) {
    std::ostringstream out;
    std::ostringstream err;
    const int code = cli::run(args, out, err, cli::Terminal{});
    return {code, out.str(), err.str()};
  }

private:
  std::optional<std::string> m_previous;
};

TEST_F(HubCliTest, CheckJudgesTheSnapshotOfMain) {
  write_cache();
  const std::string snapshot = (repo() / "snapshots" / k_main).string();
  const Outcome outcome = run_args({"--check", "Org/Name"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.err.substr(0, outcome.err.find('\n') + 1),
            "qpatch: note: Org/Name: Hugging Face cache snapshot " + std::string(k_main) +
                " (main) in " + snapshot + "\n");
  EXPECT_EQ(outcome.out.find(snapshot + ": compressed-tensors, judged for vLLM"), 0u)
      << outcome.out;
  EXPECT_NE(outcome.out.find("\n  status      needs-patch\n"), std::string::npos) << outcome.out;
}

TEST_F(HubCliTest, RevisionFlagAndAtFormPickTheSameSnapshot) {
  write_cache();
  const Outcome flag = run_args({"inspect", "--summary", "--revision", "v1", "Org/Name"});
  const Outcome at = run_args({"inspect", "--summary", "Org/Name@v1"});
  EXPECT_EQ(flag.code, 0);
  EXPECT_EQ(flag.out, at.out);
  EXPECT_NE(flag.out.find("checkpoint  " + (repo() / "snapshots" / k_old).string() + "\n"),
            std::string::npos)
      << flag.out;
  const Outcome both = run_args({"--check", "--revision", "main", "Org/Name@v1"});
  EXPECT_EQ(both.code, 2);
  EXPECT_EQ(both.err,
            "qpatch: error: Org/Name@v1: --revision main names another revision; give one of "
            "them\n");
}

// hub.revision is the revision a repo id was asked by (it was null even with @v1 or
// --revision, issue 25), "main" by default, and null for a snapshot named by its path.
TEST_F(HubCliTest, JsonNamesTheRepoRevisionAndCommitOfACacheSnapshot) {
  write_cache();
  // The first checkpoint's "path" and "hub", as the JSON document carries them.
  const auto where = [](const Outcome& outcome) {
    const nlohmann::json document = nlohmann::json::parse(outcome.out);
    const nlohmann::json& checkpoint = document.at("checkpoints").at(0);
    return nlohmann::json{{"path", checkpoint.at("path")}, {"hub", checkpoint.at("hub")}};
  };
  const auto expected = [&](const char* commit, const nlohmann::json& revision) {
    return nlohmann::json{
        {"path", (repo() / "snapshots" / commit).string()},
        {"hub",
         {{"repo_id", "Org/Name"}, {"revision", revision}, {"commit", commit}, {"remote", false}}}};
  };
  const Outcome at = run_args({"--check", "--json", "-q", "Org/Name@v1"});
  EXPECT_EQ(at.code, 1) << at.err;
  EXPECT_EQ(where(at), expected(k_old, "v1"));
  const Outcome flag = run_args({"--check", "--json", "-q", "--revision", "v1", "Org/Name"});
  EXPECT_EQ(where(flag), expected(k_old, "v1"));
  // `path` is where the files are: the snapshot the repo id resolved to.
  const Outcome main = run_args({"--check", "--json", "-q", "Org/Name"});
  EXPECT_EQ(where(main), expected(k_main, "main"));
  const Outcome path =
      run_args({"--check", "--json", "-q", (repo() / "snapshots" / k_main).string()});
  EXPECT_EQ(where(path), expected(k_main, nullptr));
}

// --recursive takes a repo id: the repo's folder in the cache, every snapshot it holds (it said
// "no such directory", issue 25); a repo the cache lacks is said once, with the fetch command.
TEST_F(HubCliTest, RecursiveTakesARepoIdForEverySnapshotOfIt) {
  write_cache();
  const Outcome outcome = run_args({"--check", "-r", "Org/Name"});
  EXPECT_EQ(outcome.code, 1) << outcome.err;
  EXPECT_EQ(outcome.err, "");
  const std::string snapshots = repo().string() + "/snapshots/";
  const std::string line = ": needs-patch (2 findings: dense_quantized_by_config)\n";
  EXPECT_EQ(outcome.out,
            snapshots + k_main + line + snapshots + k_old + line +
                "2 checkpoints would be patched\n");
  const Outcome missing = run_args({"--check", "-r", "Org/Missing"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err,
            "qpatch: error: Org/Missing: not in the Hugging Face cache: no " + cache().string() +
                "/models--Org--Missing (the cache from $HF_HUB_CACHE); fetch it with: hf "
                "download Org/Missing\n");
}

TEST_F(HubCliTest, MissingRepoSaysWhereItLookedAndHowToFetchIt) {
  write_cache();
  const Outcome outcome = run_args({"--check", "Org/Other"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.out, "");
  EXPECT_EQ(outcome.err,
            "qpatch: error: Org/Other: not in the Hugging Face cache: no " +
                (cache() / "models--Org--Other").string() +
                " (the cache from $HF_HUB_CACHE); fetch it with: hf download Org/Other\n");
  const Outcome pinned = run_args({"--check", "Org/Name@v9"});
  EXPECT_EQ(pinned.code, 2);
  EXPECT_EQ(pinned.err,
            "qpatch: error: Org/Name: revision 'v9' is neither a ref in " +
                (repo() / "refs").string() + " nor a snapshot in " +
                (repo() / "snapshots").string() +
                " (cached: 0123456789ab, fedcba987654) (the cache from $HF_HUB_CACHE); fetch it "
                "with: hf download Org/Name --revision v9\n");
}

TEST_F(HubCliTest, RepoFolderWithoutSnapshotGetsAHint) {
  write_cache();
  const Outcome outcome = run_args({"--check", repo().string()});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err,
            "qpatch: error: " + repo().string() +
                "/config.json: no such file (not a checkpoint directory); this is a Hugging Face "
                "cache folder: name the repo ('qpatch Org/Name', 'Org/Name@REV') or one of its "
                "snapshots (" +
                repo().string() + "/snapshots/<commit>)\n");
}

// Issue 25: a --dry-run diff of a snapshot's files, which are symlinks into blobs/, cannot be
// applied as printed (git apply: "patch does not apply"; GNU patch: "not a regular file"); the
// note says how to apply it there, and nothing is written.
TEST_F(HubCliTest, DryRunOfASnapshotSaysHowToApplyTheDiffThere) {
  write_cache();
  const fs::path snapshot = repo() / "snapshots" / k_main;
  const auto before = test::snapshot_tree(repo());
  const Outcome outcome = run_args({"--dry-run", snapshot.string()});
  EXPECT_EQ(outcome.code, 1) << outcome.err;
  const std::string config = (snapshot / "config.json").string();
  EXPECT_EQ(outcome.err.substr(0, outcome.err.find('\n') + 1),
            "qpatch: note: " + config +
                " is a symlink into the Hub cache's blobs/, which `git apply` and `patch` refuse "
                "(and `patch --follow-symlinks` would change the blob other snapshots share): "
                "apply the fix with `qpatch " +
                snapshot.string() +
                "`, which writes a regular file and keeps the blob, or make the link a copy "
                "first: cp --remove-destination \"$(readlink -f " +
                config + ")\" " + config + "\n");
  EXPECT_EQ(test::snapshot_tree(repo()), before);
  // -q leaves only errors on stderr.
  EXPECT_EQ(run_args({"--dry-run", "-q", snapshot.string()}).err.find("symlink"),
            std::string::npos);
}

TEST_F(HubCliTest, PatchingASnapshotReplacesTheLinkAndNeverTheBlob) {
  write_cache();
  const fs::path snapshot = repo() / "snapshots" / k_main;
  const fs::path blob = repo() / "blobs" / (std::string(k_main).substr(0, 8) + "-config.json");
  const std::string original = test::read_bytes(blob);
  const auto other_revision = test::snapshot_tree(repo() / "snapshots" / k_old);
  const Outcome outcome = run_args({"Org/Name"});
  EXPECT_EQ(outcome.code, 0) << outcome.out << outcome.err;
  EXPECT_EQ(test::read_bytes(blob), original);
  EXPECT_FALSE(fs::is_symlink(snapshot / "config.json"));
  EXPECT_NE(test::read_bytes(snapshot / "config.json"), original);
  EXPECT_EQ(test::read_bytes(snapshot / "config.json.bak"), original);
  EXPECT_EQ(test::snapshot_tree(repo() / "snapshots" / k_old), other_revision);
  EXPECT_NE(outcome.out.find("config.json was a symlink (Hugging Face cache); it is now a regular "
                             "file and the blob it pointed to is unchanged, so this cache copy "
                             "now differs from the Hub (qpatch restore puts the original back)"),
            std::string::npos)
      << outcome.out;
  // restore takes the repo id too, and puts the original back: the symlink into blobs/ it was
  // (issue 24 item 9: it came back as a regular copy), never a copy beside the blob.
  const Outcome restored = run_args({"restore", "Org/Name"});
  EXPECT_EQ(restored.code, 0) << restored.err;
  EXPECT_EQ(restored.out,
            snapshot.string() +
                ": restored config.json from config.json.bak, the symlink to "
                "../../blobs/" +
                std::string(k_main).substr(0, 8) + "-config.json it was\n");
  ASSERT_TRUE(fs::is_symlink(snapshot / "config.json"));
  EXPECT_EQ(fs::read_symlink(snapshot / "config.json"),
            "../../blobs/" + std::string(k_main).substr(0, 8) + "-config.json");
  EXPECT_EQ(test::read_bytes(snapshot / "config.json"), original);
  EXPECT_FALSE(fs::exists(snapshot / "config.json.bak"));
  EXPECT_FALSE(fs::exists(snapshot / ".qpatch"));
}

TEST_F(HubCliTest, RecursiveJudgesEverySnapshotAndFolderOnceEach) {
  write_cache();
  test::write_mini(
      dir() / "models" / "ck",
      {test::Head::dense,
       test::HeadFile::indexed_shard,
       test::ct_config_json("[\n      \"lm_head\"\n    ]", "[\n          \"Linear\"\n        ]")});
  fs::create_directory_symlink("..", dir() / "models" / "loop");   // a link loop ends
  fs::create_directory_symlink(cache(), dir() / "models" / "hub"); // the cache, entered once
  const std::string root = (dir() / "models").string();
  const Outcome outcome = run_args({"--check", "--recursive", root});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.err, "");
  // mtp.fc (vLLM only: SGLang builds it as a plain nn.Linear) and the draft layers.
  const std::string line = ": needs-patch (2 findings: dense_quantized_by_config)\n";
  EXPECT_EQ(outcome.out,
            root + "/ck" + line + root + "/hub/models--Org--Name/snapshots/" + k_main + line +
                root + "/hub/models--Org--Name/snapshots/" + k_old + line +
                "3 checkpoints would be patched\n");
  const Outcome empty = run_args({"--check", "-r", cache().string() + "/models--Org--Name/refs"});
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(empty.err,
            "qpatch: error: " + cache().string() +
                "/models--Org--Name/refs: no checkpoint below it (a directory with config.json "
                "and .safetensors files)\n");
}

} // namespace
} // namespace qpatch::hub
