// SPDX-License-Identifier: Apache-2.0
// model.safetensors.index.json, read as a claim to verify, never as the truth: shard headers are
// the truth. The index is untrusted input: size and count caps apply before anything is kept,
// every shard name must be a plain file name beside the index (no '/', no "..", no URL, no
// control character, ending in .safetensors), and no key may appear twice.
#pragma once

#include <qpatch/error.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::checkpoint {

inline constexpr std::string_view k_index_file_name = "model.safetensors.index.json";

struct IndexFile {
  // tensor name -> shard file name, in the file's order
  std::vector<std::pair<std::string, std::string>> weight_map;
  // distinct shard names in order of first appearance
  std::vector<std::string> shards;
};

// Parse the text of an index file; `path` names it in errors.
Result<IndexFile> parse_index(std::string_view text, std::string_view path);

// Return why `name` is not a safe shard file name, or an empty string when it is.
std::string unsafe_shard_name_reason(std::string_view name);

}  // namespace qpatch::checkpoint
