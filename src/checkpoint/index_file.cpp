// SPDX-License-Identifier: Apache-2.0
// The index parser. simdjson does the strict JSON work: a 1T-parameter MoE index holds ~200k
// entries, where nlohmann's ordered_json (linear key lookup) would be quadratic.
#include "json/simdjson_util.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>

#include <simdjson.h>

#include <unordered_map>
#include <unordered_set>

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

}  // namespace

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
  if (name == "." || name == ".." || name.find("..") != std::string_view::npos) {
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

Result<IndexFile> parse_index(std::string_view text, std::string_view path) {
  using simdjson::dom::element;
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    return index_error(ErrorCode::invalid_json, path, 0, "",
                       "file starts with a UTF-8 byte-order mark, which Python's json rejects");
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return index_error(ErrorCode::invalid_json, path, nul, "", "NUL byte in JSON text");
  }
  simdjson::dom::parser parser;
  if (parser.allocate(std::max<size_t>(text.size(), 4096), limits::k_max_json_depth)) {
    return index_error(ErrorCode::limit_exceeded, path, std::nullopt, "", "index too large");
  }
  const simdjson::padded_string padded(text);
  element root;
  if (auto code = parser.parse(padded).get(root)) {
    if (auto located = json::locate_syntax_error(text)) {
      return index_error(ErrorCode::invalid_json, path, located->pos, "", located->message);
    }
    return index_error(ErrorCode::invalid_json, path, std::nullopt, "",
                       simdjson::error_message(code));
  }
  if (!root.is_object()) {
    return index_error(ErrorCode::invalid_index, path, std::nullopt, "",
                       "the index is " + json::type_name(root.type()) + ", expected an object");
  }
  if (auto key = json::find_duplicate_key(root)) {
    return index_error(ErrorCode::duplicate_key, path, std::nullopt, "",
                       "key \"" + *key + "\" appears twice in one object");
  }
  element weight_map;
  if (root["weight_map"].get(weight_map) != simdjson::SUCCESS) {
    return index_error(ErrorCode::invalid_index, path, std::nullopt, "",
                       "no \"weight_map\" object");
  }
  if (!weight_map.is_object()) {
    return index_error(ErrorCode::invalid_index, path, std::nullopt, "/weight_map",
                       "weight_map is " + json::type_name(weight_map.type()) +
                           ", expected an object of tensor name to file name");
  }
  element metadata;
  if (root["metadata"].get(metadata) == simdjson::SUCCESS && !metadata.is_object() &&
      !metadata.is_null()) {
    return index_error(ErrorCode::invalid_index, path, std::nullopt, "/metadata",
                       "metadata is " + json::type_name(metadata.type()) + ", expected an object");
  }
  IndexFile index;
  const auto map = weight_map.get_object().value_unsafe();
  if (map.size() > limits::k_max_index_entries) {
    return index_error(ErrorCode::limit_exceeded, path, std::nullopt, "/weight_map",
                       std::to_string(map.size()) + " entries, over the limit of " +
                           std::to_string(limits::k_max_index_entries));
  }
  index.weight_map.reserve(map.size());
  std::unordered_set<std::string_view> shards;
  for (auto field : map) {
    const std::string pointer = "/weight_map/" + std::string(field.key);
    if (!field.value.is_string()) {
      return index_error(ErrorCode::invalid_index, path, std::nullopt, pointer,
                         "value is " + json::type_name(field.value.type()) +
                             ", expected a file name");
    }
    const std::string_view shard = field.value.get_string().value_unsafe();
    if (shards.insert(shard).second) {
      if (const std::string reason = unsafe_shard_name_reason(shard); !reason.empty()) {
        return index_error(ErrorCode::unsafe_path, path, std::nullopt, pointer,
                           "file name \"" + std::string(shard) + "\" " + reason);
      }
      if (shards.size() > limits::k_max_shards) {
        return index_error(ErrorCode::limit_exceeded, path, std::nullopt, "/weight_map",
                           "more than " + std::to_string(limits::k_max_shards) + " shard files");
      }
      index.shards.emplace_back(shard);
    }
    index.weight_map.emplace_back(std::string(field.key), std::string(shard));
  }
  return index;
}

}  // namespace qpatch::checkpoint
