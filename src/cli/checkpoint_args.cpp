// SPDX-License-Identifier: Apache-2.0
#include "checkpoint_args.hpp"

#include "diagnostics.hpp"
#include "did_you_mean.hpp"

#include <qpatch/checkpoint/discover.hpp>
#include <qpatch/hub/hub_cache.hpp>

#include <algorithm>
#include <filesystem>

namespace qpatch::cli {
namespace fs = std::filesystem;

namespace {

bool is_subcommand(const std::string& word) {
  const auto& names = subcommand_names();
  return std::find(names.begin(), names.end(), word) != names.end();
}

// Options of the everyday action that take a value: the word after them is not a DIR.
bool takes_value(const std::string& word) {
  return word == "--only" || word == "--engine" || word == "--color" || word == "--revision";
}

} // namespace

bool check_checkpoint_dirs(const std::vector<std::string>& dirs, std::ostream& err) {
  bool all_good = true;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    std::string problem;
    // stat failed for another reason than a missing name (a symlink loop, a permission):
    // the errno text, not "no such directory".
    const bool unreadable =
        ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory;
    if (dir.empty()) {
      problem = "an empty DIR (''): give a checkpoint directory or a Hub repo id ORG/NAME";
    } else if (is_subcommand(dir) && !fs::exists(status) && !unreadable) {
      problem = "'" + dir + "' is a command: write it first, as in 'qpatch " + dir + " DIR'";
    } else if (unreadable) {
      problem = dir + ": cannot read: " + ec.message();
    } else if (!fs::exists(status)) {
      const auto command = closest(dir, subcommand_names());
      problem = command ? "unknown command '" + dir + "'; did you mean '" + *command + "'?"
                        : dir + ": no such directory";
    } else if (!fs::is_directory(status)) {
      problem = dir + ": not a directory";
    } else if (!fs::exists(fs::path(dir) / "config.json", ec)) {
      problem = display_path(dir, "config.json") + ": no such file (not a checkpoint directory)";
      // A repo's folder in the cache holds its checkpoints one level down, per revision.
      const std::string folder = fs::path(dir).lexically_normal().filename().string();
      if (folder.rfind("models--", 0) == 0 && fs::is_directory(fs::path(dir) / "snapshots", ec)) {
        std::string id = folder.substr(8);
        if (const size_t separator = id.find("--"); separator != std::string::npos) {
          id.replace(separator, 2, "/");
        }
        problem += "; this is a Hugging Face cache folder: name the repo ('qpatch " + id + "', '" +
                   id + "@REV') or one of its snapshots (" +
                   display_path(dir, "snapshots/<commit>") + ")";
      }
    }
    if (!problem.empty()) {
      report(err, Level::error, problem);
      all_good = false;
    }
  }
  return all_good;
}

void add_revision_option(CLI::App& cmd, std::string& revision) {
  cmd.add_option("--revision",
                 revision,
                 "Branch, tag or commit (or a unique commit prefix) that ORG/NAME arguments "
                 "resolve to in the Hugging Face cache (default: main)");
}

bool resolve_repo_ids(std::vector<std::string>& dirs,
                      const std::string& revision,
                      bool quiet,
                      std::ostream& err,
                      std::map<std::string, std::string>* revisions) {
  bool all_good = true;
  std::optional<hub::CacheDir> cache; // looked up once, at the first repo id
  for (std::string& dir : dirs) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(dir, ec)) || is_subcommand(dir)) {
      continue; // a path on disk always wins, as huggingface_hub's own from_pretrained does
    }
    auto ref = hub::parse_repo_ref(dir);
    if (!ref) {
      continue;
    }
    if (!revision.empty() && !ref->revision.empty() && ref->revision != revision) {
      report(err,
             Level::error,
             dir + ": --revision " + revision + " names another revision; give one of them");
      all_good = false;
      continue;
    }
    if (ref->revision.empty()) {
      ref->revision = revision;
    }
    if (!cache) {
      cache = hub::hub_cache_dir(hub::process_environment());
    }
    auto snapshot = hub::resolve_snapshot(*cache, *ref);
    if (!snapshot) {
      const std::string where = cache->decided_by == "the default"
                                    ? "the default cache"
                                    : "the cache from $" + cache->decided_by;
      report(err,
             Level::error,
             snapshot.error().to_string() + " (" + where + "); fetch it with: hf download " +
                 ref->repo_id + (ref->revision.empty() ? "" : " --revision " + ref->revision));
      all_good = false;
      continue;
    }
    if (!quiet) {
      report(err,
             Level::note,
             ref->repo_id + ": Hugging Face cache snapshot " + snapshot->commit +
                 (snapshot->commit == snapshot->revision ? "" : " (" + snapshot->revision + ")") +
                 " in " + snapshot->dir.string());
    }
    dir = snapshot->dir.string();
    if (revisions != nullptr) {
      (*revisions)[dir] = snapshot->revision;
    }
  }
  return all_good;
}

bool check_command_word(const std::vector<std::string>& args, std::ostream& err) {
  bool seen_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      return true;
    }
    if (!word.empty() && word[0] == '-') {
      i += takes_value(word) ? size_t{1} : size_t{0};
      continue;
    }
    std::error_code ec;
    const bool on_disk = fs::exists(word, ec);
    if (is_subcommand(word)) {
      if (seen_positional && !on_disk) {
        report(err,
               Level::error,
               "'" + word + "' is a command: write it first, as in 'qpatch " + word + " DIR'");
        return false;
      }
      return true; // CLI11 takes it from here
    }
    if (!seen_positional && !on_disk) {
      if (const auto command = closest(word, subcommand_names())) {
        report(
            err, Level::error, "unknown command '" + word + "'; did you mean '" + *command + "'?");
        return false;
      }
    }
    seen_positional = true;
  }
  return true;
}

std::string diff_prefix(const std::string& dir, bool several) {
  if (!several) {
    return "";
  }
  std::error_code ec;
  const fs::path absolute = fs::absolute(dir, ec);
  const fs::path relative = absolute.lexically_normal().lexically_relative(fs::current_path(ec));
  const std::string text = relative.generic_string();
  return text.empty() || text == "." ? "" : text + "/";
}

std::optional<std::vector<std::string>> find_below_roots(const std::vector<std::string>& roots,
                                                         const std::string& revision,
                                                         std::ostream& err) {
  std::vector<std::string> found;
  for (std::string root : roots) {
    std::error_code ec;
    // A Hub repo id is the repo's folder in the cache: every snapshot it holds.
    if (!fs::exists(root, ec) && hub::parse_repo_ref(root)) {
      std::vector<std::string> repo{root};
      if (!resolve_repo_ids(repo, revision, true, err)) {
        return std::nullopt; // said where it looked and how to fetch it
      }
      root = fs::path(repo.front()).parent_path().parent_path().string();
    }
    if (!fs::is_directory(root, ec)) {
      const bool unreadable =
          ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory;
      report(err,
             Level::error,
             root + (unreadable ? ": cannot read: " + ec.message() : ": no such directory"));
      return std::nullopt;
    }
    const auto below = checkpoint::find_checkpoints(root);
    if (below.empty()) {
      report(err,
             Level::error,
             root + ": no checkpoint below it (a directory with config.json and .safetensors "
                    "files)");
      return std::nullopt;
    }
    found.insert(found.end(), below.begin(), below.end());
  }
  return found;
}

} // namespace qpatch::cli
