// SPDX-License-Identifier: Apache-2.0
#include "remote_args.hpp"

#include "diagnostics.hpp"
#include "qpatch_version.hpp"

#include <qpatch/commit/interrupt.hpp>
#include <qpatch/hub/hub_cache.hpp>
#include <qpatch/hub/remote_checkpoint.hpp>
#include <qpatch/report/text_style.hpp>

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace qpatch::cli {
namespace fs = std::filesystem;

RemoteCheckpoints::~RemoteCheckpoints() {
  if (!m_root.empty()) {
    std::error_code ec;
    fs::remove_all(m_root, ec); // sparse files: nothing of the user's is in here
  }
}

std::optional<int> RemoteCheckpoints::fetch(CheckedDirs& checked,
                                            const std::string& revision,
                                            bool quiet,
                                            bool keep_going,
                                            std::ostream& err) {
  std::vector<std::string>& dirs = checked.dirs;
  std::vector<std::string>& labels = checked.labels;
  std::vector<report::HubSource>& sources = checked.sources;
  std::vector<std::optional<Error>>* failed = keep_going ? &checked.remote_failures : nullptr;
  hub::RemoteSettings settings = hub::remote_settings(hub::process_environment());
  settings.user_agent = "qpatch/" QPATCH_VERSION;
  if (settings.offline) {
    report(err,
           Level::error,
           "--remote reads from the Hub, and HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set");
    return to_int(ExitCode::usage);
  }
  std::vector<hub::RepoRef> refs;
  for (const std::string& dir : dirs) {
    auto ref = hub::parse_repo_ref(dir);
    if (!ref) {
      report(err,
             Level::error,
             "--remote takes Hub repo ids (ORG/NAME or ORG/NAME@REV); '" + dir + "' is not one");
      return to_int(ExitCode::usage);
    }
    if (!revision.empty() && !ref->revision.empty() && ref->revision != revision) {
      report(err,
             Level::error,
             dir + ": --revision " + revision + " names another revision; give one of them");
      return to_int(ExitCode::usage);
    }
    if (ref->revision.empty()) {
      ref->revision = revision;
    }
    refs.push_back(std::move(*ref));
  }
  // A private directory for the copies: TMPDIR as mkdtemp(3) users honour it.
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (tmp != nullptr && *tmp != '\0' ? std::string(tmp) : std::string("/tmp")) +
                        "/qpatch-remote-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    report(err,
           Level::error,
           pattern + ": cannot make a temporary directory: " + std::strerror(errno));
    return to_int(ExitCode::invalid_input);
  }
  m_root = pattern;
  // A signal while the Hub is read stops the transfers and removes the copies before exiting.
  const commit::InterruptGuard guard;
  const auto cancelled = [] { return commit::pending_interrupt() != 0; };
  labels.clear();
  sources.clear();
  if (failed != nullptr) {
    failed->assign(refs.size(), std::nullopt);
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    const hub::RepoRef& ref = refs[i];
    const fs::path into = m_root / std::to_string(i);
    std::error_code ec;
    fs::create_directory(into, ec);
    auto remote = hub::read_remote_checkpoint(ref, settings, into, cancelled);
    if (const int sig = commit::take_interrupt(); sig != 0) {
      report(err,
             Level::note,
             "stopped by " + commit::signal_name(sig) + " while reading " + ref.repo_id +
                 " from the Hub; nothing was written");
      return 128 + sig;
    }
    if (!remote && failed != nullptr) {
      (*failed)[i] = remote.take_error();
      labels.push_back(ref.repo_id);
      sources.push_back({ref.repo_id, ref.revision.empty() ? "main" : ref.revision, "", true});
      continue;
    }
    if (!remote) {
      report(err, remote.error(), ref.repo_id);
      return to_int(ExitCode::invalid_input);
    }
    if (!quiet) {
      report(err,
             Level::note,
             ref.repo_id + ": read from " + settings.endpoint + " at commit " +
                 remote->commit.substr(0, 12) + " (" + remote->revision +
                 "): " + std::to_string(remote->whole_files) +
                 " small files whole and the headers of " + std::to_string(remote->shards) +
                 " shards, " + report::human_bytes(remote->bytes_received) + " of " +
                 report::human_bytes(remote->bytes_in_repo));
    }
    dirs[i] = into.string();
    labels.push_back(ref.repo_id);
    sources.push_back({ref.repo_id, remote->revision, remote->commit, true});
  }
  return std::nullopt;
}

} // namespace qpatch::cli
