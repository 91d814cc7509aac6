// SPDX-License-Identifier: Apache-2.0
#include <qpatch/hub/hub_cache.hpp>

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace qpatch::hub {
namespace fs = std::filesystem;

namespace {

// os.path.join for two POSIX parts: an absolute `b` replaces `a`.
std::string join(const std::string& a, const std::string& b) {
  if (!b.empty() && b.front() == '/') {
    return b;
  }
  return a.empty() || a.back() == '/' ? a + b : a + "/" + b;
}

// posixpath.expanduser: "~" and "~/x" from $HOME (else the password database), "~user/x" from
// the password database; anything else, or an unknown user, unchanged.
std::string expanduser(const std::string& path, const Environment& env) {
  if (path.empty() || path.front() != '~') {
    return path;
  }
  const size_t slash = std::min(path.find('/', 1), path.size());
  std::string home;
  if (slash == 1) {
    if (const char* value = env("HOME"); value != nullptr) {
      home = value;
    } else if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr) {
      home = entry->pw_dir;
    } else {
      return path;
    }
  } else {
    const passwd* entry = ::getpwnam(path.substr(1, slash - 1).c_str());
    if (entry == nullptr) {
      return path;
    }
    home = entry->pw_dir;
  }
  while (!home.empty() && home.back() == '/') {
    home.pop_back();
  }
  const std::string out = home + path.substr(slash);
  return out.empty() ? "/" : out;
}

bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// posixpath.expandvars: "$NAME" and "${NAME}" of set variables replaced, others left as written.
std::string expandvars(const std::string& path, const Environment& env) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] != '$' || i + 1 >= path.size()) {
      out += path[i++];
      continue;
    }
    size_t end = i + 1;
    std::string name;
    if (path[end] == '{') {
      const size_t close = path.find('}', end);
      if (close == std::string::npos) {
        out += path[i++];
        continue;
      }
      name = path.substr(end + 1, close - end - 1);
      end = close + 1;
    } else {
      while (end < path.size() && is_word(path[end])) {
        ++end;
      }
      name = path.substr(i + 1, end - i - 1);
    }
    const char* value = name.empty() ? nullptr : env(name.c_str());
    out += value != nullptr ? std::string(value) : path.substr(i, end - i);
    i = end;
  }
  return out;
}

bool is_part(std::string_view part) {
  if (part.empty() || part.front() == '-' || part.front() == '.' || part.back() == '-' ||
      part.back() == '.') {
    return false;
  }
  return std::all_of(part.begin(), part.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
}

bool is_commit_prefix(const std::string& text) {
  return text.size() >= 5 && text.size() <= 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

std::vector<std::string> snapshot_names(const fs::path& snapshots) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(snapshots, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Error not_cached(const RepoRef& ref, const std::string& why) {
  return make_error(ErrorCode::not_a_directory, ref.repo_id, std::nullopt, "", why);
}

} // namespace

Environment process_environment() {
  return [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
}

std::string hf_home(const Environment& env) {
  // constants.py: default_home, HF_HOME.
  const std::string default_home = join(expanduser("~", env), ".cache");
  const char* xdg = env("XDG_CACHE_HOME");
  const char* hf_home_var = env("HF_HOME");
  return expandvars(
      expanduser(hf_home_var != nullptr
                     ? std::string(hf_home_var)
                     : join(xdg != nullptr ? std::string(xdg) : default_home, "huggingface"),
                 env),
      env);
}

std::string hf_token_path(const Environment& env) {
  // constants.py: HF_TOKEN_PATH = expandvars(expanduser(getenv("HF_TOKEN_PATH", HF_HOME/token))).
  const char* path = env("HF_TOKEN_PATH");
  return expandvars(
      expanduser(path != nullptr ? std::string(path) : join(hf_home(env), "token"), env), env);
}

CacheDir hub_cache_dir(const Environment& env) {
  // constants.py: default_cache_path, HUGGINGFACE_HUB_CACHE, HF_HUB_CACHE.
  const char* xdg = env("XDG_CACHE_HOME");
  const char* hf_home_var = env("HF_HOME");
  const std::string home = hf_home(env);
  const char* legacy = env("HUGGINGFACE_HUB_CACHE");
  const char* hub = env("HF_HUB_CACHE");
  const std::string chosen = hub != nullptr      ? std::string(hub)
                             : legacy != nullptr ? std::string(legacy)
                                                 : join(home, "hub");
  CacheDir out;
  out.path = expandvars(expanduser(chosen, env), env);
  out.decided_by = hub != nullptr           ? "HF_HUB_CACHE"
                   : legacy != nullptr      ? "HUGGINGFACE_HUB_CACHE"
                   : hf_home_var != nullptr ? "HF_HOME"
                   : xdg != nullptr         ? "XDG_CACHE_HOME"
                                            : "the default";
  return out;
}

std::optional<RepoRef> parse_repo_ref(std::string_view text) {
  RepoRef ref;
  const size_t at = text.find('@');
  std::string_view id = text.substr(0, at);
  if (at != std::string_view::npos) {
    ref.revision = std::string(text.substr(at + 1));
    if (ref.revision.empty()) {
      return std::nullopt;
    }
  }
  const size_t slash = id.find('/');
  if (slash == std::string_view::npos || id.find('/', slash + 1) != std::string_view::npos ||
      id.size() > 96 || id.find("--") != std::string_view::npos ||
      id.find("..") != std::string_view::npos || !is_part(id.substr(0, slash)) ||
      !is_part(id.substr(slash + 1))) {
    return std::nullopt;
  }
  ref.repo_id = std::string(id);
  return ref;
}

Result<Snapshot> resolve_snapshot(const CacheDir& cache, const RepoRef& ref) {
  // try_to_load_from_cache (file_download.py): models--ORG--NAME, refs/<revision>, snapshots/.
  const std::string object_id = ref.repo_id.substr(0, ref.repo_id.find('/')) + "--" +
                                ref.repo_id.substr(ref.repo_id.find('/') + 1);
  const fs::path repo_cache = cache.path / ("models--" + object_id);
  std::error_code ec;
  if (!fs::is_directory(repo_cache, ec)) {
    return not_cached(ref, "not in the Hugging Face cache: no " + repo_cache.string());
  }
  Snapshot out;
  out.repo_id = ref.repo_id;
  out.revision = ref.revision.empty() ? "main" : ref.revision;
  std::string commit = out.revision;
  const fs::path ref_file = repo_cache / "refs" / out.revision;
  if (fs::is_directory(repo_cache / "refs", ec) && fs::is_regular_file(ref_file, ec)) {
    std::ifstream in(ref_file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    commit = text.str(); // read as is, as huggingface_hub does (it writes no newline)
  }
  const fs::path snapshots = repo_cache / "snapshots";
  const std::vector<std::string> names = snapshot_names(snapshots);
  if (std::find(names.begin(), names.end(), commit) == names.end()) {
    std::vector<std::string> matches;
    if (commit == out.revision && is_commit_prefix(commit)) {
      for (const std::string& name : names) {
        if (name.rfind(commit, 0) == 0) {
          matches.push_back(name);
        }
      }
    }
    if (matches.size() != 1) {
      std::string cached;
      for (const std::string& name : names) {
        cached += (cached.empty() ? "" : ", ") + name.substr(0, 12);
      }
      std::string why =
          commit != out.revision ? "refs/" + out.revision + " names " + commit +
                                       ", which has no snapshot in " + snapshots.string()
          : matches.size() > 1
              ? "revision '" + out.revision + "' is the prefix of " +
                    std::to_string(matches.size()) + " snapshots in " + snapshots.string()
              : "revision '" + out.revision + "' is neither a ref in " +
                    (repo_cache / "refs").string() + " nor a snapshot in " + snapshots.string();
      why += cached.empty() ? " (no snapshot is cached)" : " (cached: " + cached + ")";
      return not_cached(ref, why);
    }
    commit = matches.front();
  }
  out.commit = commit;
  out.dir = snapshots / commit;
  return out;
}

std::optional<Snapshot> snapshot_of_path(const fs::path& dir) {
  fs::path path = dir.lexically_normal();
  if (!path.has_filename()) {
    path = path.parent_path();
  }
  const fs::path snapshots = path.parent_path();
  const std::string repo = snapshots.parent_path().filename().string();
  if (snapshots.filename() != "snapshots" || repo.rfind("models--", 0) != 0) {
    return std::nullopt;
  }
  std::string id = repo.substr(8);
  const size_t separator = id.find("--");
  if (separator == std::string::npos) {
    return std::nullopt;
  }
  id.replace(separator, 2, "/");
  Snapshot out;
  out.repo_id = id;
  out.commit = path.filename().string();
  out.dir = dir;
  return out;
}

} // namespace qpatch::hub
