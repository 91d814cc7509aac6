// SPDX-License-Identifier: Apache-2.0
#include "commit/file_io.hpp"

#include <qpatch/commit/interrupt.hpp>
#include <qpatch/commit/temp_file.hpp>
#include <qpatch/graft/graft_commit.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace qpatch::graft {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t k_max_journal_size = limits::k_max_config_size;

std::string joined(const std::string& display, const std::string& file) {
  if (display.empty()) {
    return file;
  }
  return display.back() == '/' ? display + file : display + "/" + file;
}

Error failure(ErrorCode code, const std::string& path, const std::string& message) {
  return make_error(code, path, std::nullopt, "", message);
}

bool present(const fs::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

std::string hex_hash(const std::string& text) {
  char out[17];
  std::snprintf(out,
                sizeof out,
                "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  return out;
}

// A new shard's temp file beside its final name; removed unless renamed.
struct Journal {
  std::string state; // "committing" or "committed"
  std::vector<std::string> created;
  std::vector<std::pair<std::string, std::string>> moved; // (file, backup or "" to remove)
  std::string index_hash;
  std::vector<std::pair<std::string, std::string>> configs; // (file, text after)
  std::vector<std::string> backups_before; // JSON files' backups that predate this graft
  // Backups were asked for: the committed journal stays as restore's record, also when the
  // graft only added shards (a dropped head), so restore removes them (issue 23).
  bool keep_record = false;
};

std::string encode(const Journal& journal) {
  json::Json doc;
  doc["schema_version"] = 1;
  doc["state"] = journal.state;
  doc["created"] = journal.created;
  doc["moved"] = json::Json::array();
  for (const auto& [file, backup] : journal.moved) {
    doc["moved"].push_back(
        {{"file", file}, {"backup", backup.empty() ? json::Json() : json::Json(backup)}});
  }
  doc["index_xxh3"] = journal.index_hash;
  doc["backups_before"] = journal.backups_before;
  doc["keep_record"] = journal.keep_record;
  doc["configs"] = json::Json::array();
  for (const auto& [file, text] : journal.configs) {
    doc["configs"].push_back({{"file", file}, {"after", text}});
  }
  return doc.dump(2) + "\n";
}

// A plain file name (no '/', not "." or ".."): the journal is input too.
bool plain_name(const json::Json& value) {
  if (!value.is_string()) {
    return false;
  }
  const std::string name = value.get<std::string>();
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::optional<Journal> read_journal(const fs::path& dir) {
  if (!present(dir / std::string(k_journal_name))) {
    return std::nullopt;
  }
  auto text =
      json::read_file(dir / std::string(k_journal_name), k_journal_name, k_max_journal_size);
  if (!text) {
    return std::nullopt;
  }
  auto doc = json::parse_strict(*text, k_journal_name);
  if (!doc || !doc->is_object()) {
    return std::nullopt;
  }
  Journal journal;
  journal.state = doc->value("state", "");
  journal.index_hash = doc->value("index_xxh3", "");
  const json::Json keep = doc->value("keep_record", json::Json());
  journal.keep_record = keep.is_boolean() && keep.get<bool>();
  for (const auto& created : doc->value("created", json::Json::array())) {
    if (plain_name(created)) {
      journal.created.push_back(created.get<std::string>());
    }
  }
  for (const auto& moved : doc->value("moved", json::Json::array())) {
    if (moved.is_object() && plain_name(moved.value("file", json::Json()))) {
      const json::Json backup = moved.value("backup", json::Json());
      journal.moved.emplace_back(moved["file"].get<std::string>(),
                                 plain_name(backup) ? backup.get<std::string>() : "");
    }
  }
  for (const auto& backup : doc->value("backups_before", json::Json::array())) {
    if (plain_name(backup)) {
      journal.backups_before.push_back(backup.get<std::string>());
    }
  }
  for (const auto& config : doc->value("configs", json::Json::array())) {
    if (config.is_object() && plain_name(config.value("file", json::Json())) &&
        config.value("after", json::Json()).is_string()) {
      journal.configs.emplace_back(config["file"].get<std::string>(),
                                   config["after"].get<std::string>());
    }
  }
  return journal;
}

// Steps 5 and 6: move the replaced shards aside (or remove them), then close the journal.
Status finish(commit::FileSystem& fs,
              const fs::path& dir,
              const std::string& display,
              Journal& journal,
              GraftResult* result) {
  for (auto& [file, backup] : journal.moved) {
    if (!present(dir / file)) {
      continue; // moved before an interruption
    }
    if (backup.empty()) {
      if (fs.unlink((dir / file).c_str()) != 0) {
        return failure(ErrorCode::write_failed,
                       joined(display, file),
                       "the graft is committed, but the replaced shard cannot be removed (" +
                           commit::errno_text() + "); run qpatch graft again to finish");
      }
      if (result != nullptr) {
        result->removed.push_back(file);
      }
      continue;
    }
    if (present(dir / backup)) {
      backup = commit::free_backup_name(dir, file); // never overwrite a backup
    }
    if (fs.rename((dir / file).c_str(), (dir / backup).c_str()) != 0) {
      return failure(ErrorCode::write_failed,
                     joined(display, file),
                     "the graft is committed, but the replaced shard cannot be moved to " + backup +
                         " (" + commit::errno_text() + "); run qpatch graft again to finish");
    }
    if (result != nullptr) {
      result->backups.push_back(backup);
    }
  }
  commit::fsync_directory(fs, dir);
  bool any_backup = journal.keep_record;
  for (const auto& moved : journal.moved) {
    any_backup = any_backup || !moved.second.empty();
  }
  std::string error;
  if (any_backup) {
    journal.state = "committed";
    journal.configs.clear(); // the record needs the file names only
    journal.backups_before.clear();
    error = commit::replace_file(fs, dir, std::string(k_journal_name), encode(journal), 0644);
  } else if (fs.unlink((dir / std::string(k_journal_name)).c_str()) != 0) {
    error = "cannot remove " + std::string(k_journal_name) + ": " + commit::errno_text();
  }
  if (!error.empty()) {
    return failure(ErrorCode::write_failed,
                   joined(display, std::string(k_journal_name)),
                   "the graft is committed, but " + error + "; run qpatch graft again to finish");
  }
  return ok_status();
}

void remove_created(commit::FileSystem& fs, const fs::path& dir, const Journal& journal) {
  for (const std::string& file : journal.created) {
    fs.unlink((dir / file).c_str());
  }
  fs.unlink((dir / std::string(k_journal_name)).c_str());
  commit::fsync_directory(fs, dir);
}

struct OpenFiles {
  std::vector<int> fds;
  OpenFiles() = default;
  OpenFiles(const OpenFiles&) = delete;
  OpenFiles& operator=(const OpenFiles&) = delete;
  ~OpenFiles() {
    for (const int fd : fds) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
};

} // namespace

std::string_view to_string(Recovery recovery) {
  switch (recovery) {
  case Recovery::finished:
    return "finished";
  case Recovery::rolled_back:
    return "rolled-back";
  case Recovery::none:
    break;
  }
  return "none";
}

bool interrupted(const fs::path& dir) {
  const auto journal = read_journal(dir);
  return journal && journal->state == "committing";
}

// 1. Every new shard written and verified under a temp name (the temps, in plan order); the
// bytes copied go to `result`.
Result<std::vector<std::unique_ptr<commit::TempFile>>>
write_new_shards(commit::FileSystem& fs,
                 const fs::path& dir,
                 const std::string& display,
                 const GraftPlan& plan,
                 const CommitOptions& options,
                 GraftResult& result) {
  OpenFiles sources;
  std::vector<std::string> source_names;
  for (const SourceFile& source : plan.sources) {
    sources.fds.push_back(::open(source.path.c_str(), O_RDONLY | O_CLOEXEC));
    source_names.push_back(source.display);
    if (sources.fds.back() < 0) {
      return failure(ErrorCode::io_error, source.display, "cannot open: " + commit::errno_text());
    }
  }
  std::vector<std::unique_ptr<commit::TempFile>> temps;
  uint64_t done_before = 0;
  for (const ShardLayout& layout : plan.new_shards) {
    const std::string shown = joined(display, layout.file);
    temps.push_back(std::make_unique<commit::TempFile>(fs, dir, layout.file));
    commit::TempFile& temp = *temps.back();
    if (!temp.ok() || fs.fchmod(temp.fd(), 0644) != 0) {
      return failure(ErrorCode::write_failed,
                     shown,
                     "cannot create a temporary file: " + commit::errno_text() +
                         "; nothing was changed");
    }
    const Progress progress = [&](uint64_t done, uint64_t) {
      if (options.progress) {
        options.progress(done_before + done, plan.bytes_to_copy);
      }
    };
    QP_TRY_ASSIGN(const CopyStats stats,
                  write_shard(temp.fd(), layout, sources.fds, shown, progress));
    done_before += stats.bytes;
    result.copy.bytes += stats.bytes;
    result.copy.kernel_bytes += stats.kernel_bytes;
    result.copy.userspace_bytes += stats.userspace_bytes;
    if (!temp.close()) {
      return failure(ErrorCode::write_failed,
                     shown,
                     "cannot close the temporary file: " + commit::errno_text() +
                         "; nothing was changed");
    }
    if (auto verified = verify_shard(temp.path(), shown, layout, sources.fds, source_names);
        !verified) {
      return verified.take_error();
    }
  }
  return temps;
}

// 2. The journal, so an interruption from here on is finished or rolled back by the next run.
Journal graft_journal(const fs::path& dir, const GraftPlan& plan, const CommitOptions& options) {
  Journal journal;
  journal.state = "committing";
  if (plan.index_created) {
    journal.created.push_back(plan.index.file); // first: step 2b creates it
  }
  for (const ShardLayout& layout : plan.new_shards) {
    journal.created.push_back(layout.file);
  }
  for (const ShardChange& change : plan.shard_changes) {
    journal.moved.emplace_back(
        change.file,
        options.backup == commit::Backup::yes ? commit::free_backup_name(dir, change.file) : "");
  }
  journal.index_hash = hex_hash(plan.index.after);
  journal.keep_record = options.backup == commit::Backup::yes;
  for (const ConfigEdit& edit : plan.configs) {
    journal.configs.emplace_back(edit.file, edit.after);
  }
  for (const commit::WriteRequest& request : plan.json_writes()) {
    for (std::string& backup : commit::backups_of(dir, request.file)) {
      journal.backups_before.push_back(std::move(backup));
    }
  }
  return journal;
}

// 3. The new shards under their names; the old index does not name them. A failure removes the
// ones renamed so far.
Status rename_new_shards(commit::FileSystem& fs,
                         const fs::path& dir,
                         const std::string& display,
                         const GraftPlan& plan,
                         std::vector<std::unique_ptr<commit::TempFile>>& temps,
                         const Journal& journal) {
  for (size_t k = 0; k < temps.size(); ++k) {
    const std::string& name = plan.new_shards[k].file;
    const bool taken = present(dir / name);
    if (taken || fs.rename(temps[k]->path().c_str(), (dir / name).c_str()) != 0) {
      const std::string why = taken ? "the name was taken meanwhile" : commit::errno_text();
      Journal renamed = journal;
      renamed.created.resize(k + (plan.index_created ? 1 : 0)); // the index, the shards so far
      remove_created(fs, dir, renamed);
      return failure(ErrorCode::write_failed,
                     joined(display, name),
                     "cannot rename the new shard into place (" + why + "); nothing was changed");
    }
    temps[k]->keep();
  }
  return ok_status();
}

// 2b. A single-file checkpoint's index as it is before the graft (graft_plan.cpp
// identity_index), a new file no engine loads differently; from here the graft is the sharded
// one. A failure removes it and the journal.
Status create_index(commit::FileSystem& fs,
                    const fs::path& dir,
                    const std::string& display,
                    const GraftPlan& plan,
                    const Journal& journal) {
  const bool taken = present(dir / plan.index.file);
  const std::string error =
      taken ? "the name was taken meanwhile"
            : commit::replace_file(fs, dir, plan.index.file, plan.index.before, 0644);
  if (error.empty()) {
    return ok_status();
  }
  Journal undo = journal;
  undo.created.clear();
  if (!taken) {
    undo.created.push_back(plan.index.file);
  }
  remove_created(fs, dir, undo);
  return failure(ErrorCode::write_failed,
                 joined(display, plan.index.file),
                 "cannot create the index a second shard needs (" + error +
                     "); nothing was changed");
}

Result<GraftResult> commit_graft(const fs::path& dir,
                                 const std::string& display,
                                 const GraftPlan& plan,
                                 const CommitOptions& options) {
  commit::FileSystem& fs = options.fs != nullptr ? *options.fs : commit::posix_file_system();
  // SIGINT, SIGTERM and SIGHUP are held off for the whole graft: while the shards are copied
  // and verified they stop it between chunks (the temp files go as the error unwinds); once
  // the journal is written the transaction finishes its step and completes or undoes it.
  const commit::InterruptGuard guard;
  if (present(dir / std::string(k_journal_name))) {
    return failure(ErrorCode::write_failed,
                   joined(display, std::string(k_journal_name)),
                   "records an earlier graft; run 'qpatch restore " + display +
                       "' first, or remove the file to keep that graft; nothing was changed");
  }
  GraftResult result;
  QP_TRY_ASSIGN(auto temps, write_new_shards(fs, dir, display, plan, options, result));
  // 2. The journal, so an interruption from here on is finished or rolled back by the next run.
  Journal journal = graft_journal(dir, plan, options);
  if (std::string error =
          commit::replace_file(fs, dir, std::string(k_journal_name), encode(journal), 0644);
      !error.empty()) {
    return failure(ErrorCode::write_failed,
                   joined(display, std::string(k_journal_name)),
                   error + "; nothing was changed");
  }
  if (plan.index_created) {
    if (auto created = create_index(fs, dir, display, plan, journal); !created) {
      return created.take_error();
    }
  }
  // 3. The new shards under their names; the old index does not name them.
  if (auto renamed = rename_new_shards(fs, dir, display, plan, temps, journal); !renamed) {
    return renamed.take_error();
  }
  commit::fsync_directory(fs, dir);
  // 4. The index (the commit point), then the configs.
  auto committed = commit::commit(dir, plan.json_writes(), options.backup, fs);
  if (!committed) {
    Error error = committed.take_error();
    if (error.code != ErrorCode::rollback_failed) {
      remove_created(fs, dir, journal);
    }
    error.path = joined(display, error.path);
    return error;
  }
  result.created = journal.created;
  result.backups = committed->backups;
  // 5 and 6.
  if (auto finished = finish(fs, dir, display, journal, &result); !finished) {
    return finished.take_error();
  }
  return result;
}

Result<Recovery> recover(const fs::path& dir, const std::string& display) {
  commit::FileSystem& fs = commit::posix_file_system();
  auto journal = read_journal(dir);
  const bool committing = journal && journal->state == "committing";
  std::vector<std::string> json_files{std::string(checkpoint::k_index_file_name)};
  for (const auto& config : committing ? journal->configs : decltype(journal->configs){}) {
    json_files.push_back(config.first);
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    bool temp = name.size() > 1 && name[0] == '.' &&
                (name.find(".safetensors.qpatch-") != std::string::npos ||
                 name.rfind("." + std::string(k_journal_name) + ".qpatch-", 0) == 0);
    for (const std::string& file : committing ? json_files : std::vector<std::string>{}) {
      temp = temp || name.rfind("." + file + ".qpatch-", 0) == 0;
    }
    if (temp) {
      fs.unlink(entry.path().c_str()); // a temp of an interrupted graft
    }
  }
  if (!committing) {
    return Recovery::none;
  }
  const std::string index_name(checkpoint::k_index_file_name);
  auto index = json::read_file(dir / index_name, index_name, limits::k_max_index_size);
  if (!index || hex_hash(*index) != journal->index_hash) {
    // The backups commit::commit made before the kill back up files that never changed.
    for (const std::string& file : json_files) {
      for (const std::string& backup : commit::backups_of(dir, file)) {
        if (std::find(journal->backups_before.begin(), journal->backups_before.end(), backup) ==
            journal->backups_before.end()) {
          fs.unlink((dir / backup).c_str());
        }
      }
    }
    remove_created(fs, dir, *journal);
    return Recovery::rolled_back;
  }
  std::vector<commit::WriteRequest> rest;
  for (const auto& [file, after] : journal->configs) {
    auto current = json::read_file(dir / file, file, limits::k_max_config_size);
    if (current && *current != after) {
      rest.push_back({file, *current, after});
    }
  }
  if (!rest.empty()) {
    auto committed = commit::commit(dir, rest, commit::Backup::no, fs);
    if (!committed) {
      Error error = committed.take_error();
      error.path = joined(display, error.path);
      return error;
    }
  }
  if (auto finished = finish(fs, dir, display, *journal, nullptr); !finished) {
    return finished.take_error();
  }
  return Recovery::finished;
}

std::optional<GraftRecord> read_record(const fs::path& dir) {
  auto journal = read_journal(dir);
  if (!journal || journal->state != "committed") {
    return std::nullopt;
  }
  return GraftRecord{journal->created, journal->moved};
}

Status restore_shards(const fs::path& dir, const std::string& display, const GraftRecord& record) {
  commit::FileSystem& fs = commit::posix_file_system();
  for (const auto& [file, backup] : record.moved) {
    if (backup.empty() || !present(dir / backup) || present(dir / file)) {
      continue;
    }
    if (fs.rename((dir / backup).c_str(), (dir / file).c_str()) != 0) {
      return failure(ErrorCode::write_failed,
                     joined(display, backup),
                     "cannot rename it back to " + file + ": " + commit::errno_text());
    }
  }
  commit::fsync_directory(fs, dir);
  return ok_status();
}

Status remove_grafted(const fs::path& dir, const std::string& display, const GraftRecord& record) {
  commit::FileSystem& fs = commit::posix_file_system();
  for (const std::string& file : record.created) {
    if (present(dir / file) && fs.unlink((dir / file).c_str()) != 0) {
      return failure(ErrorCode::write_failed,
                     joined(display, file),
                     "cannot remove it: " + commit::errno_text());
    }
  }
  fs.unlink((dir / std::string(k_journal_name)).c_str());
  commit::fsync_directory(fs, dir);
  return ok_status();
}

} // namespace qpatch::graft
