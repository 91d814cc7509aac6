// SPDX-License-Identifier: Apache-2.0
// Issue 16, item 1: the hub cache's directory, repo ids and snapshots resolved by
// huggingface_hub's own rules (hub/hub_cache.hpp), on the library.
#include "support/fake_environment.hpp"
#include "support/hub_cache_fixture.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>

namespace qpatch::hub {
namespace {

Environment fake(std::map<std::string, std::string> vars) {
  return test::fake_environment(std::move(vars));
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

} // namespace
} // namespace qpatch::hub
