// SPDX-License-Identifier: Apache-2.0
// Issue 16, item 1: Hub repo ids resolved through a local cache laid out as huggingface_hub lays
// it out (blobs/, snapshots/<commit>/ of relative symlinks, refs/), with its environment rules.
#include "run.hpp"
#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/hub/hub_cache.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace qpatch::hub {
namespace {

namespace fs = std::filesystem;

Environment fake(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    const auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(HubCacheDir, PrecedenceIsHuggingfaceHubs) {
  EXPECT_EQ(hub_cache_dir(fake({{"HOME", "/h"}})).path, "/h/.cache/huggingface/hub");
  EXPECT_EQ(hub_cache_dir(fake({{"HOME", "/h"}})).decided_by, "the default");
  EXPECT_EQ(hub_cache_dir(fake({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}})).path,
            "/x/huggingface/hub");
  EXPECT_EQ(hub_cache_dir(fake({{"XDG_CACHE_HOME", "/x"}, {"HF_HOME", "/hf"}})).path, "/hf/hub");
  const CacheDir both = hub_cache_dir(fake({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/hub"}}));
  EXPECT_EQ(both.path, "/hub");
  EXPECT_EQ(both.decided_by, "HF_HUB_CACHE");
  // The legacy variable sits between HF_HUB_CACHE and HF_HOME.
  EXPECT_EQ(hub_cache_dir(fake({{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/old"}})).path,
            "/old");
  EXPECT_EQ(hub_cache_dir(fake({{"HUGGINGFACE_HUB_CACHE", "/old"}, {"HF_HUB_CACHE", "/new"}})).path,
            "/new");
}

TEST(HubCacheDir, ExpandsUserAndVariablesLikePosixpath) {
  EXPECT_EQ(hub_cache_dir(fake({{"HOME", "/h/"}, {"HF_HOME", "~/hf"}})).path, "/h/hf/hub");
  EXPECT_EQ(hub_cache_dir(fake({{"D", "/data"}, {"HF_HUB_CACHE", "$D/hub"}})).path, "/data/hub");
  EXPECT_EQ(hub_cache_dir(fake({{"D", "/data"}, {"HF_HUB_CACHE", "${D}/x/$NOPE"}})).path,
            "/data/x/$NOPE");
  // os.getenv: a variable set to "" is used as it is, and "" joined with "hub" is "hub".
  EXPECT_EQ(hub_cache_dir(fake({{"HF_HOME", ""}})).path, "hub");
}

TEST(RepoRef, ParsesOrgNameAndRevision) {
  const auto plain = parse_repo_ref("Qwen/Qwen3.5-27B-W4A16");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->repo_id, "Qwen/Qwen3.5-27B-W4A16");
  EXPECT_EQ(plain->revision, "");
  const auto pinned = parse_repo_ref("org/name@v1.0");
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned->repo_id, "org/name");
  EXPECT_EQ(pinned->revision, "v1.0");
  for (const char* bad : {"name",
                          "a/b/c",
                          "./ck",
                          "org/",
                          "/name",
                          "org/na--me",
                          "org/..x",
                          "-org/name",
                          "org/name.",
                          "org/name@",
                          "org/na me"}) {
    EXPECT_FALSE(parse_repo_ref(bad)) << bad;
  }
}

constexpr const char* k_main = "0123456789abcdef0123456789abcdef01234567";
constexpr const char* k_old = "fedcba9876543210fedcba9876543210fedcba98";

// A cache holding Org/Name at two commits: refs/main names the first, refs/v1 the second.
class HubCacheTest : public test::TempDirTest {
protected:
  fs::path cache() const { return dir() / "hub"; }
  fs::path repo() const { return cache() / "models--Org--Name"; }
  // Move every file of checkpoint `source` into blobs/ and link it from snapshots/<commit>/ by a
  // relative symlink, as huggingface_hub's _create_symlink does.
  void add_snapshot(const fs::path& source, const std::string& commit) {
    fs::create_directories(repo() / "blobs");
    fs::create_directories(repo() / "snapshots" / commit);
    for (const auto& entry : fs::directory_iterator(source)) {
      const std::string name = entry.path().filename().string();
      const std::string blob = commit.substr(0, 8) + "-" + name;
      fs::rename(entry.path(), repo() / "blobs" / blob);
      fs::create_symlink("../../blobs/" + blob, repo() / "snapshots" / commit / name);
    }
  }
  void add_ref(const std::string& name, const std::string& commit) {
    fs::create_directories((repo() / "refs" / name).parent_path());
    std::ofstream(repo() / "refs" / name, std::ios::binary) << commit; // no newline, as the Hub
  }
  void write_cache() {
    for (const std::string commit : {k_main, k_old}) {
      const fs::path staging = dir() / ("staging-" + commit);
      test::write_mini(staging,
                       {test::Head::dense,
                        test::HeadFile::indexed_shard,
                        test::ct_config_json("[\n      \"lm_head\"\n    ]",
                                             "[\n          \"Linear\"\n        ]")});
      add_snapshot(staging, commit);
      fs::remove_all(staging);
    }
    add_ref("main", k_main);
    add_ref("v1", k_old);
  }
  CacheDir cache_dir() const { return {cache(), "HF_HUB_CACHE"}; }
};

TEST_F(HubCacheTest, ResolvesRefsCommitsAndUniquePrefixes) {
  write_cache();
  const auto main = resolve_snapshot(cache_dir(), {"Org/Name", ""});
  ASSERT_TRUE(main) << main.error().to_string();
  EXPECT_EQ(main->commit, k_main);
  EXPECT_EQ(main->revision, "main");
  EXPECT_EQ(main->dir, repo() / "snapshots" / k_main);
  EXPECT_EQ(resolve_snapshot(cache_dir(), {"Org/Name", "v1"})->commit, k_old);
  EXPECT_EQ(resolve_snapshot(cache_dir(), {"Org/Name", k_old})->commit, k_old);
  EXPECT_EQ(resolve_snapshot(cache_dir(), {"Org/Name", "fedcb"})->commit, k_old);
  const auto short_prefix = resolve_snapshot(cache_dir(), {"Org/Name", "fedc"});
  ASSERT_FALSE(short_prefix);
  EXPECT_EQ(short_prefix.error().to_string(),
            "Org/Name: revision 'fedc' is neither a ref in " + (repo() / "refs").string() +
                " nor a snapshot in " + (repo() / "snapshots").string() +
                " (cached: 0123456789ab, fedcba987654)");
}

TEST_F(HubCacheTest, PathInsideTheCacheNamesItsRepo) {
  const auto snapshot = snapshot_of_path(repo() / "snapshots" / k_main);
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->repo_id, "Org/Name");
  EXPECT_EQ(snapshot->commit, k_main);
  EXPECT_FALSE(snapshot_of_path(dir()));
}

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
  const auto hub_of = [](const std::string& revision, const char* commit) {
    return "\"hub\": {\n        \"repo_id\": \"Org/Name\",\n        \"revision\": " + revision +
           ",\n        \"commit\": \"" + std::string(commit) +
           "\",\n        \"remote\": false\n      },\n";
  };
  const Outcome at = run_args({"--check", "--json", "-q", "Org/Name@v1"});
  EXPECT_EQ(at.code, 1) << at.err;
  EXPECT_NE(at.out.find(hub_of("\"v1\"", k_old)), std::string::npos) << at.out;
  const Outcome flag = run_args({"--check", "--json", "-q", "--revision", "v1", "Org/Name"});
  EXPECT_NE(flag.out.find(hub_of("\"v1\"", k_old)), std::string::npos) << flag.out;
  const Outcome main = run_args({"--check", "--json", "-q", "Org/Name"});
  EXPECT_NE(main.out.find(hub_of("\"main\"", k_main)), std::string::npos) << main.out;
  const Outcome path =
      run_args({"--check", "--json", "-q", (repo() / "snapshots" / k_main).string()});
  EXPECT_NE(path.out.find(hub_of("null", k_main)), std::string::npos) << path.out;
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
  EXPECT_NE(pinned.err.find("; fetch it with: hf download Org/Name --revision v9\n"),
            std::string::npos)
      << pinned.err;
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
