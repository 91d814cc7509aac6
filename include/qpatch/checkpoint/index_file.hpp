// SPDX-License-Identifier: Apache-2.0
// model.safetensors.index.json, read as a claim to verify, never as the truth: shard headers are
// the truth. The index is untrusted input: size and count caps apply before anything is kept,
// every shard name must be a plain file name beside the index (no '/', no "..", no URL, no
// control character, ending in .safetensors), and no key may appear twice.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/util/hash_sort.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::checkpoint {

inline constexpr std::string_view k_index_file_name = "model.safetensors.index.json";

struct IndexEntry {
  std::string_view tensor; // points into IndexFile::text
  uint32_t shard = 0;      // index into IndexFile::shards
};

struct IndexFile {
  util::LargeVector<IndexEntry> entries; // weight_map, in the file's order
  std::vector<std::string> shards;       // distinct shard names in order of first appearance
  // What the tensor names point into: the mapped index file (fast path) or a copy of the names.
  std::shared_ptr<const char> text;
  util::HashedIds by_hash;                // entries sorted by the hash of their tensor name
  std::vector<util::NameSum> shard_names; // per shard: the names weight_map maps to it

  // Return the entry for `tensor`, if weight_map lists it.
  std::optional<uint32_t> find(std::string_view tensor) const {
    return util::find_sorted(by_hash, tensor, [&](uint32_t id) { return entries[id].tensor; });
  }
};

// Parse the text of an index file; `path` names it in errors. `plain_fast_path`: as in
// safetensors::ReaderOptions (identical results; tests turn it off to compare the two paths).
Result<IndexFile>
parse_index(std::string_view text, std::string_view path, bool plain_fast_path = true);
// Read and parse `file` (at most limits::k_max_index_size bytes).
Result<IndexFile> read_index(const std::filesystem::path& file, std::string_view path);

// Return why `name` is not a safe shard file name, or an empty string when it is.
std::string unsafe_shard_name_reason(std::string_view name);

} // namespace qpatch::checkpoint
