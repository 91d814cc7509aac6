// SPDX-License-Identifier: Apache-2.0
// Hugging Face repo ids (`Org/Name`, `Org/Name@REV`) resolved to the snapshot directory the local
// cache holds, by the rules huggingface_hub itself follows, so `qpatch --check Org/Name` judges
// exactly the files `vllm serve Org/Name` would load offline:
//   - the cache directory (constants.py, huggingface_hub 03333b6): HF_HUB_CACHE, else the legacy
//     HUGGINGFACE_HUB_CACHE, else HF_HOME + "/hub", where HF_HOME defaults to
//     XDG_CACHE_HOME + "/huggingface" and XDG_CACHE_HOME to "~/.cache"; a variable that is set
//     wins even when empty (os.getenv), and each value goes through expanduser and expandvars;
//   - the repo's folder and revision (try_to_load_from_cache, file_download.py, huggingface_hub
//     003956d): CACHE/models--ORG--NAME; a revision (default "main") that names a file under
//     refs/ is replaced by its contents (read as is, no strip); the snapshot is
//     snapshots/<that revision>, which must exist.
// qpatch adds one thing huggingface_hub does not do offline: a revision that is neither a ref nor
// a snapshot name may be a unique prefix (5 hex digits or more, REGEX_COMMIT_OID in constants.py)
// of a snapshot's commit. Values only; nothing is printed.
#pragma once

#include <qpatch/error.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace qpatch::hub {

// Reads one environment variable: nullptr when unset. Tests pass their own.
using Environment = std::function<const char*(const char*)>;
Environment process_environment();

struct CacheDir {
  std::filesystem::path path;
  std::string decided_by; // "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME",
                          // or "the default"
};

// HF_HOME as huggingface_hub computes it (default XDG_CACHE_HOME/huggingface, ~/.cache/...).
std::string hf_home(const Environment& env);

// Where huggingface_hub keeps the token `hf auth login` saved: $HF_TOKEN_PATH, else
// HF_HOME/token (constants.py, huggingface_hub ee0a451).
std::string hf_token_path(const Environment& env);

// The hub cache directory huggingface_hub uses under `env`.
CacheDir hub_cache_dir(const Environment& env);

struct RepoRef {
  std::string repo_id;  // "Org/Name"
  std::string revision; // "" when none was given ("main")
};

// Parse `text` as a model repo id, "ORG/NAME" or "ORG/NAME@REV", each part of letters, digits,
// '-', '_' and '.', neither starting nor ending with '-' or '.', with no "--" or ".." (the rules
// of validate_repo_id, utils/_validators.py); nothing when it is not one.
std::optional<RepoRef> parse_repo_ref(std::string_view text);

struct Snapshot {
  std::string repo_id;
  std::string revision; // as asked ("main" by default)
  std::string commit;   // the snapshot's folder name
  std::filesystem::path dir;
};

// The snapshot of `ref` in `cache`; ErrorCode::not_a_directory naming the folder looked in (and
// why) when the cache does not hold it.
Result<Snapshot> resolve_snapshot(const CacheDir& cache, const RepoRef& ref);

// Where a checkpoint directory sits in a hub cache, judged by its path alone
// (".../models--Org--Name/snapshots/<commit>"): the repo id and commit, or nothing.
std::optional<Snapshot> snapshot_of_path(const std::filesystem::path& dir);

} // namespace qpatch::hub
