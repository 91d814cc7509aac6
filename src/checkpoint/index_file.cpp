// SPDX-License-Identifier: Apache-2.0
// The index parser. simdjson does the strict JSON work: a 1T-parameter MoE index holds ~200k
// entries, where nlohmann's ordered_json (linear key lookup) would be quadratic.
#include "json/plain_scanner.hpp"
#include "json/simdjson_util.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>

#include <simdjson.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

namespace qpatch::checkpoint {
namespace {

Error index_error(ErrorCode code,
                  std::string_view path,
                  std::optional<uint64_t> offset,
                  std::string pointer,
                  std::string message) {
  Error error = make_error(code, std::string(path), offset, std::move(pointer), std::move(message));
  error.subject_kind = "at";
  return error;
}

} // namespace

std::string unsafe_shard_name_reason(std::string_view name) {
  if (name.empty()) {
    return "is empty";
  }
  if (name.find("://") != std::string_view::npos) {
    return "is a URL";
  }
  if (name.front() == '/') {
    return "is an absolute path";
  }
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos) {
    return "has a path separator (shards must sit beside the index)";
  }
  if (name == "." || name == "..") {
    return "names a directory, not a file";
  }
  if (name.find("..") != std::string_view::npos) {
    return "contains \"..\"";
  }
  for (const char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return "has a control character";
    }
  }
  constexpr std::string_view suffix = ".safetensors";
  if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) {
    return "does not end in .safetensors";
  }
  return "";
}

namespace {

// Where the shard names of weight_map go: distinct names in order of first appearance.
class ShardTable {
public:
  explicit ShardTable(IndexFile& index) : m_index(index) {}
  // Return (id, is new) for `shard`. Consecutive entries nearly always name the same shard:
  // skip the lookup then.
  std::pair<uint32_t, bool> add(std::string_view shard) {
    if (!m_index.shards.empty() && shard == m_last) {
      return {m_last_id, false};
    }
    const auto added =
        m_ids.insert(shard, static_cast<uint32_t>(m_index.shards.size()), [&](uint32_t id) {
          return std::string_view(m_index.shards[id]);
        });
    if (added.second) {
      m_index.shards.emplace_back(shard);
    }
    m_last = m_index.shards[added.first];
    m_last_id = added.first;
    return added;
  }

  // Consume the next value when it names the same shard as the entry before (nearly always),
  // without scanning it: the shard names here were read by the plain scanner, so they are plain.
  bool take_repeat(json::PlainScanner& in, uint32_t& id) const {
    if (m_index.shards.empty() || !in.take_string(m_last)) {
      return false;
    }
    id = m_last_id;
    return true;
  }

private:
  IndexFile& m_index;
  util::NameIndex m_ids;
  std::string_view m_last;
  uint32_t m_last_id = 0;
};

// The fast path (json/plain_scanner.hpp): an object with "weight_map" (plain string to plain
// string) and at most a flat "metadata" object, safe shard names, within the limits. True when
// the whole text is such an index, parsed into `index` with names pointing into `text`. False
// means "use the general path", which also words every error; never "invalid".
// `consumed(n)`, when set, is told every few megabytes that the first n bytes of `text` were read
// (and will not be read again unless the general path runs).
// The scanner only looks at ASCII structure, and refuses any NUL byte as the general path does;
// whether the text is UTF-8 is checked a stretch at a time just behind the scan, so that the
// 20 MB of a 1T-parameter index are read once, in order, and never all resident at once.
bool scan_plain_index(std::string_view text,
                      IndexFile& index,
                      const std::function<void(size_t)>& consumed) {
  constexpr size_t k_report_every = size_t{4} << 20;
  size_t reported = 0;
  // Every stretch ends right after an entry's closing quote: no UTF-8 sequence is cut in two.
  const auto utf8_up_to = [&](size_t end) {
    const bool valid = simdjson::validate_utf8(text.data() + reported, end - reported);
    reported = end;
    return valid;
  };
  json::PlainScanner in(text);
  if (!in.take('{')) {
    return false;
  }
  bool seen_metadata = false;
  bool seen_weight_map = false;
  do {
    const auto key = in.string();
    if (!key || !in.take(':')) {
      return false;
    }
    if (*key == "metadata" && !std::exchange(seen_metadata, true)) {
      std::vector<std::string_view> keys;
      if (!in.take('{')) {
        return false;
      }
      if (!in.take('}')) {
        do {
          const auto name = in.string();
          if (!name || !in.take(':') || std::find(keys.begin(), keys.end(), *name) != keys.end()) {
            return false;
          }
          keys.push_back(*name);
          if (!(in.peek() == '"' ? in.string().has_value() : in.unsigned_integer().has_value())) {
            return false;
          }
        } while (in.take(','));
        if (!in.take('}')) {
          return false;
        }
      }
    } else if (*key == "weight_map" && !std::exchange(seen_weight_map, true)) {
      if (!in.take('{')) {
        return false;
      }
      index.entries.reserve(text.size() / 80 + 16); // ~90 bytes of JSON an entry
      index.by_hash.reserve(index.entries.capacity());
      ShardTable shards(index);
      if (!in.take('}')) {
        do {
          const auto tensor = in.string();
          if (!tensor || !in.take(':') || index.entries.size() >= limits::k_max_index_entries) {
            return false;
          }
          uint32_t shard_id = 0;
          if (!shards.take_repeat(in, shard_id)) {
            const auto shard = in.string();
            if (!shard) {
              return false;
            }
            const auto [id, is_new] = shards.add(*shard);
            if (is_new && (!unsafe_shard_name_reason(*shard).empty() ||
                           index.shards.size() > limits::k_max_shards)) {
              return false;
            }
            shard_id = id;
          }
          // Fingerprint the name while it is in cache; finish_index only sorts.
          const util::NameFingerprint fingerprint = util::fingerprint_name(*tensor);
          index.by_hash.push_back({fingerprint.hash,
                                   fingerprint.check,
                                   static_cast<uint32_t>(index.entries.size()),
                                   shard_id});
          index.entries.push_back({*tensor, shard_id});
          if (const auto at = static_cast<size_t>(in.position() - text.data());
              at >= reported + k_report_every) {
            if (!utf8_up_to(at)) {
              return false;
            }
            if (consumed) {
              consumed(at);
            }
          }
        } while (in.take(','));
        if (!in.take('}')) {
          return false;
        }
      }
    } else {
      return false;
    }
  } while (in.take(','));
  return seen_weight_map && in.take('}') && in.at_end() && utf8_up_to(text.size());
}

// Sort the entries by name hash and reject a name listed twice: both paths end here.
Result<IndexFile> finish_index(IndexFile index, std::string_view path) {
  const auto name_of = [&](uint32_t id) { return index.entries[id].tensor; };
  if (index.by_hash.size() == index.entries.size()) {
    util::radix_sort(index.by_hash); // the fast path fingerprinted the names as it read them
  } else {
    index.by_hash = util::sort_by_hash(
        index.entries.size(), name_of, [&](uint32_t id) { return index.entries[id].shard; });
  }
  index.shard_names.assign(index.shards.size(), {});
  for (const util::HashedId& entry : index.by_hash) {
    index.shard_names[entry.aux].add({entry.hash, entry.check});
  }
  for (size_t i = 1; i < index.by_hash.size(); ++i) {
    if (index.by_hash[i].hash == index.by_hash[i - 1].hash) {
      // Equal hashes are rare: compare every earlier name of the run.
      for (size_t j = i; j-- > 0 && index.by_hash[j].hash == index.by_hash[i].hash;) {
        if (name_of(index.by_hash[j].id) == name_of(index.by_hash[i].id)) {
          return index_error(ErrorCode::duplicate_key,
                             path,
                             std::nullopt,
                             "/weight_map",
                             "key \"" + std::string(name_of(index.by_hash[i].id)) +
                                 "\" appears twice in one object");
        }
      }
    }
  }
  return index;
}

// The index's root checked (an object, no key twice, metadata an object or null) and its
// weight_map found.
Result<simdjson::dom::element> find_weight_map(simdjson::dom::element root, std::string_view path) {
  using simdjson::dom::element;
  if (!root.is_object()) {
    return index_error(ErrorCode::invalid_index,
                       path,
                       std::nullopt,
                       "",
                       "the index is " + json::type_name(root.type()) + ", expected an object");
  }
  element weight_map;
  bool has_weight_map = false;
  std::vector<std::string_view> root_keys;
  for (auto field : root.get_object()) {
    if (std::find(root_keys.begin(), root_keys.end(), field.key) != root_keys.end()) {
      return index_error(ErrorCode::duplicate_key,
                         path,
                         std::nullopt,
                         "",
                         "key \"" + std::string(field.key) + "\" appears twice in one object");
    }
    root_keys.push_back(field.key);
    if (field.key == "weight_map") {
      weight_map = field.value;
      has_weight_map = true;
    } else if (auto key = json::find_duplicate_key(field.value)) {
      // Everything but weight_map is small: check it the simple way.
      return index_error(ErrorCode::duplicate_key,
                         path,
                         std::nullopt,
                         "",
                         "key \"" + *key + "\" appears twice in one object");
    }
  }
  if (!has_weight_map) {
    return index_error(
        ErrorCode::invalid_index, path, std::nullopt, "", "no \"weight_map\" object");
  }
  if (!weight_map.is_object()) {
    return index_error(ErrorCode::invalid_index,
                       path,
                       std::nullopt,
                       "/weight_map",
                       "weight_map is " + json::type_name(weight_map.type()) +
                           ", expected an object of tensor name to file name");
  }
  element metadata;
  if (root["metadata"].get(metadata) == simdjson::SUCCESS && !metadata.is_object() &&
      !metadata.is_null()) {
    return index_error(ErrorCode::invalid_index,
                       path,
                       std::nullopt,
                       "/metadata",
                       "metadata is " + json::type_name(metadata.type()) + ", expected an object");
  }
  return weight_map;
}

// weight_map's entries read (each a file name, every new file name safe, within the limits),
// their names copied out of the parser.
Result<IndexFile> read_weight_map(simdjson::dom::element weight_map, std::string_view path) {
  const auto map = weight_map.get_object().value_unsafe();
  if (map.size() > limits::k_max_index_entries) {
    return index_error(ErrorCode::limit_exceeded,
                       path,
                       std::nullopt,
                       "/weight_map",
                       std::to_string(map.size()) + " entries, over the limit of " +
                           std::to_string(limits::k_max_index_entries));
  }
  IndexFile index;
  index.entries.reserve(map.size());
  ShardTable shards(index);
  size_t names_size = 0;
  for (auto field : map) {
    if (!field.value.is_string()) {
      return index_error(ErrorCode::invalid_index,
                         path,
                         std::nullopt,
                         "/weight_map/" + std::string(field.key),
                         "value is " + json::type_name(field.value.type()) +
                             ", expected a file name");
    }
    const std::string_view shard = field.value.get_string().value_unsafe();
    const auto [shard_id, new_shard] = shards.add(shard);
    if (new_shard) {
      if (const std::string reason = unsafe_shard_name_reason(shard); !reason.empty()) {
        return index_error(ErrorCode::unsafe_path,
                           path,
                           std::nullopt,
                           "/weight_map/" + std::string(field.key),
                           "file name \"" + std::string(shard) + "\" " + reason);
      }
      if (index.shards.size() > limits::k_max_shards) {
        return index_error(ErrorCode::limit_exceeded,
                           path,
                           std::nullopt,
                           "/weight_map",
                           "more than " + std::to_string(limits::k_max_shards) + " shard files");
      }
    }
    index.entries.push_back({field.key, shard_id});
    names_size += field.key.size();
  }
  // The keys point into the parser, which is about to go: copy them once, back to back.
  const std::shared_ptr<char[]> names(new char[names_size + 1]);
  char* cursor = names.get();
  for (IndexEntry& entry : index.entries) {
    std::memcpy(cursor, entry.tensor.data(), entry.tensor.size());
    entry.tensor = std::string_view(cursor, entry.tensor.size());
    cursor += entry.tensor.size();
  }
  index.text = std::shared_ptr<const char>(names, names.get());
  return finish_index(std::move(index), path);
}

// `owner` keeps `padded` alive; the fast path's names point into it.
Result<IndexFile> parse_padded(simdjson::padded_string_view padded,
                               std::string_view path,
                               std::shared_ptr<const char> owner,
                               bool plain_fast_path = true,
                               const std::function<void(size_t)>& consumed = {}) {
  using simdjson::dom::element;
  const std::string_view text(padded.data(), padded.length());
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    return index_error(ErrorCode::invalid_json,
                       path,
                       0,
                       "",
                       "file starts with a UTF-8 byte-order mark, which Python's json rejects");
  }
  {
    IndexFile index;
    if (plain_fast_path && scan_plain_index(text, index, consumed)) {
      index.text = std::move(owner);
      return finish_index(std::move(index), path);
    }
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return index_error(ErrorCode::invalid_json, path, nul, "", "NUL byte in JSON text");
  }
  simdjson::dom::parser parser;
  if (parser.allocate(std::max<size_t>(text.size(), 4096), limits::k_max_json_depth)) {
    return index_error(ErrorCode::limit_exceeded, path, std::nullopt, "", "index too large");
  }
  element root;
  if (auto code = parser.parse(padded).get(root)) {
    if (auto located = json::locate_syntax_error(text)) {
      return index_error(ErrorCode::invalid_json, path, located->pos, "", located->message);
    }
    return index_error(
        ErrorCode::invalid_json, path, std::nullopt, "", simdjson::error_message(code));
  }
  QP_TRY_ASSIGN(const element weight_map, find_weight_map(root, path));
  return read_weight_map(weight_map, path);
}

} // namespace

Result<IndexFile> parse_index(std::string_view text, std::string_view path, bool plain_fast_path) {
  const auto padded = std::make_shared<const simdjson::padded_string>(text);
  return parse_padded(
      *padded, path, std::shared_ptr<const char>(padded, padded->data()), plain_fast_path);
}

Result<IndexFile> read_index(const std::filesystem::path& file, std::string_view path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) {
    return index_error(ErrorCode::io_error, path, std::nullopt, "", "cannot read: " + ec.message());
  }
  if (size > limits::k_max_index_size) {
    return index_error(ErrorCode::limit_exceeded,
                       path,
                       std::nullopt,
                       "",
                       "file is " + std::to_string(size) + " bytes, over the " +
                           std::to_string(limits::k_max_index_size) + "-byte limit");
  }
  // Map the file instead of copying 20-60 MB: reading it into fresh memory cost more than
  // parsing it. simdjson may read SIMDJSON_PADDING bytes past the end, so the mapping is used
  // only when the last page has that much slack (zeros past EOF); otherwise the file is copied.
  // The mapping lives as long as the names that point into it (MAP_PRIVATE: replacing the file
  // by rename, as qpatch's own writes do, leaves it intact).
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return index_error(ErrorCode::io_error,
                       path,
                       std::nullopt,
                       "",
                       std::string("cannot open: ") + std::strerror(errno));
  }
  const auto length = static_cast<size_t>(size);
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const bool slack = length > 0 && (page - length % page) % page >= simdjson::SIMDJSON_PADDING;
  void* mapped = slack ? ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (mapped != MAP_FAILED) {
    const auto* data = static_cast<const char*>(mapped);
    std::shared_ptr<const char> owner(data, [length](const char* p) {
      ::munmap(const_cast<char*>(p), length); // NOLINT: munmap takes a non-const pointer
    });
    // The file is in the page cache (it was just written or downloaded): map its pages a few
    // megabytes ahead of the scan in one call each (faulting them in 64 KiB at a time cost ~320
    // page faults), and give them back as the scan passes them (they refault from the page
    // cache if needed, the general path included). So at most ~12 MB of a 1T-parameter index's
    // 20 MB are mapped at once, beside the headers read meanwhile.
    constexpr size_t k_ahead = size_t{8} << 20;
    size_t populated = 0;
    const auto populate_to = [&](size_t end) {
      end = std::min(length, (end + page - 1) / page * page);
#if defined(MADV_POPULATE_READ)
      if (end > populated) {
        // Advice: on a kernel without it (before 5.14) the pages fault in as they are read.
        ::madvise(static_cast<char*>(mapped) + populated, end - populated, MADV_POPULATE_READ);
      }
#endif
      populated = std::max(populated, end);
    };
    populate_to(k_ahead);
    size_t released = 0;
    const auto release = [&](size_t consumed) {
      populate_to(consumed + k_ahead);
      const size_t cut = consumed / page * page;
      if (cut > released) {
        ::madvise(static_cast<char*>(mapped) + released, cut - released, MADV_DONTNEED);
        released = cut;
      }
    };
    auto result = parse_padded(
        simdjson::padded_string_view(data, length, length + simdjson::SIMDJSON_PADDING),
        path,
        std::move(owner),
        true,
        release);
    ::madvise(mapped, length, MADV_DONTNEED);
    return result;
  }
  auto text = std::make_shared<simdjson::padded_string>();
  errno = 0; // simdjson reads with fopen/fread, which set errno on failure
  if (simdjson::padded_string::load(file.string()).get(*text)) {
    return index_error(ErrorCode::io_error,
                       path,
                       std::nullopt,
                       "",
                       std::string("cannot read the file: ") +
                           (errno != 0 ? std::strerror(errno) : "it ended early"));
  }
  return parse_padded(*text, path, std::shared_ptr<const char>(text, text->data()));
}

} // namespace qpatch::checkpoint
