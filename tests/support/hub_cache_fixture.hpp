// SPDX-License-Identifier: Apache-2.0
// A Hugging Face hub cache laid out as huggingface_hub lays it out (blobs/, snapshots/<commit>/
// of relative symlinks, refs/), for the hub library's tests and the CLI's.
#pragma once

#include "support/fixtures.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/hub/hub_cache.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace qpatch::hub {

namespace fs = std::filesystem;

inline constexpr const char* k_main = "0123456789abcdef0123456789abcdef01234567";
inline constexpr const char* k_old = "fedcba9876543210fedcba9876543210fedcba98";

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

} // namespace qpatch::hub
