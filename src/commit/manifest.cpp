// SPDX-License-Identifier: Apache-2.0
#include "commit/file_io.hpp"

#include <qpatch/commit/manifest.hpp>
#include <qpatch/json/strict_json.hpp>

#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace qpatch::commit {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t k_max_manifest_size = 64'000'000;

Error manifest_error(const std::string& message) {
  return make_error(ErrorCode::invalid_json, k_manifest_name, std::nullopt, "", message);
}

const char* state_name(JournalState state) {
  return state == JournalState::prepare ? "prepare" : "swap";
}

// `entry` with the symlink target `link` as "link", which only a file that was a symlink has.
json::Json with_link(json::Json entry, const std::string& link) {
  if (!link.empty()) {
    entry.emplace("link", link);
  }
  return entry;
}

json::Json records_json(const std::vector<BackupRecord>& records) {
  json::Json out = json::Json::array();
  for (const BackupRecord& record : records) {
    out.push_back(with_link({{"file", record.file},
                             {"backup", record.backup},
                             {"original_xxh3", record.original_hash},
                             {"written_xxh3", record.written_hash}},
                            record.link));
  }
  return out;
}

json::Json to_json(const Manifest& manifest) {
  json::Json doc;
  doc["qpatch_manifest"] = 1;
  doc["backups"] = records_json(manifest.backups);
  doc["kept"] = records_json(manifest.kept);
  if (manifest.journal) {
    json::Json steps = json::Json::array();
    for (const JournalStep& step : manifest.journal->steps) {
      steps.push_back(with_link({{"file", step.file},
                                 {"temp", step.temp},
                                 {"backup", step.backup},
                                 {"before_xxh3", step.before_hash},
                                 {"after_xxh3", step.after_hash},
                                 {"keep", step.keep}},
                                step.link));
    }
    doc["transaction"] = {{"state", state_name(manifest.journal->state)},
                          {"steps", std::move(steps)},
                          {"release", manifest.journal->release}};
  } else {
    doc["transaction"] = nullptr;
  }
  return doc;
}

// A name the manifest may hold: one file directly in the checkpoint directory.
bool plain_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

enum class Field { name, optional_name, hash };

std::string text_field(const json::Json& object, const char* key, Field kind) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) {
    throw std::invalid_argument(std::string("missing string field \"") + key + "\"");
  }
  std::string value = object[key].get<std::string>();
  const bool empty_ok = kind == Field::optional_name && value.empty();
  if (kind != Field::hash && !empty_ok && !plain_name(value)) {
    throw std::invalid_argument(std::string("field \"") + key + "\" is not a plain file name");
  }
  return value;
}

// The optional "link" of a record or step: a symlink's target, any path ("" when absent).
// Restore re-creates the link only where the target holds the recorded original bytes.
std::string link_field(const json::Json& object) {
  if (!object.contains("link")) {
    return "";
  }
  if (!object["link"].is_string() || object["link"].get<std::string>().empty()) {
    throw std::invalid_argument("field \"link\" is not a symlink target");
  }
  return object["link"].get<std::string>();
}

Manifest from_json(const json::Json& doc) {
  Manifest manifest;
  if (!doc.is_object() || doc.value("qpatch_manifest", 0) != 1 || !doc.contains("backups") ||
      !doc["backups"].is_array()) {
    throw std::invalid_argument("not a version 1 qpatch manifest");
  }
  const auto records = [&](const char* key, std::vector<BackupRecord>& out) {
    if (!doc.contains(key)) {
      return;
    }
    for (const json::Json& entry : doc.at(key)) {
      out.push_back({text_field(entry, "file", Field::name),
                     text_field(entry, "backup", Field::name),
                     text_field(entry, "original_xxh3", Field::hash),
                     text_field(entry, "written_xxh3", Field::hash),
                     link_field(entry)});
    }
  };
  records("backups", manifest.backups);
  records("kept", manifest.kept);
  if (doc.contains("transaction") && !doc["transaction"].is_null()) {
    const json::Json& transaction = doc["transaction"];
    const std::string state = text_field(transaction, "state", Field::name);
    if (state != "prepare" && state != "swap") {
      throw std::invalid_argument("unknown transaction state \"" + state + "\"");
    }
    Journal journal;
    journal.state = state == "prepare" ? JournalState::prepare : JournalState::swap;
    if (!transaction.contains("steps") || !transaction["steps"].is_array()) {
      throw std::invalid_argument("the transaction has no steps");
    }
    for (const json::Json& step : transaction["steps"]) {
      journal.steps.push_back({text_field(step, "file", Field::name),
                               text_field(step, "temp", Field::optional_name),
                               text_field(step, "backup", Field::optional_name),
                               text_field(step, "before_xxh3", Field::hash),
                               text_field(step, "after_xxh3", Field::hash),
                               step.value("keep", false),
                               link_field(step)});
    }
    if (transaction.contains("release")) {
      for (const json::Json& name : transaction.at("release")) {
        if (!name.is_string() || !plain_name(name.get<std::string>())) {
          throw std::invalid_argument("a released backup is not a plain file name");
        }
        journal.release.push_back(name.get<std::string>());
      }
    }
    manifest.journal = std::move(journal);
  }
  return manifest;
}

} // namespace

std::string content_hash(std::string_view bytes) {
  const XXH64_hash_t hash = XXH3_64bits(bytes.data(), bytes.size());
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

bool is_temp_name(std::string_view name) {
  if (name.size() < 2 || name.front() != '.') {
    return false;
  }
  if (name.ends_with(".qpatch-link")) {
    return true;
  }
  const size_t at = name.rfind(".qpatch-");
  return at != std::string_view::npos && at > 0 && name.size() - at == 14; // mkstemp's XXXXXX
}

Result<Manifest> read_manifest(const fs::path& dir) {
  std::string text;
  const ReadStatus status = read_no_follow(dir / k_manifest_name, k_max_manifest_size, text);
  if (status.error == ENOENT) {
    return Manifest{};
  }
  if (status.error != 0) {
    return make_error(ErrorCode::io_error,
                      k_manifest_name,
                      std::nullopt,
                      "",
                      "cannot read: " + std::string(std::strerror(status.error)));
  }
  auto doc = json::parse_strict(text, k_manifest_name);
  if (!doc) {
    return doc.take_error();
  }
  try {
    return from_json(*doc);
  } catch (const std::exception& e) { // nlohmann's type errors and ours: a damaged manifest
    return manifest_error(std::string("not a manifest qpatch can use: ") + e.what());
  }
}

Status write_manifest(const fs::path& dir, const Manifest& manifest, FileSystem& fs) {
  const fs::path state_dir = dir / k_state_dir;
  if (manifest.empty()) {
    if (fs.unlink((dir / k_manifest_name).c_str()) != 0 && errno != ENOENT) {
      return make_error(ErrorCode::write_failed,
                        k_manifest_name,
                        std::nullopt,
                        "",
                        "cannot remove: " + std::string(std::strerror(errno)));
    }
    ::rmdir(state_dir.c_str()); // only when empty: not while a lock file is in it
    fsync_directory(fs, dir);
    return ok_status();
  }
  std::error_code ec;
  fs::create_directory(state_dir, ec);
  const std::string text = to_json(manifest).dump(2) + "\n";
  if (std::string error = replace_file(fs, state_dir, "manifest.json", text, 0644);
      !error.empty()) {
    return make_error(ErrorCode::write_failed, k_manifest_name, std::nullopt, "", error);
  }
  return ok_status();
}

} // namespace qpatch::commit
