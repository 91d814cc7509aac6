// SPDX-License-Identifier: Apache-2.0
// Strict JSON for the files qpatch reads besides shard headers (config.json, sidecars, the index):
// no key twice in any object, at most 127 levels, no BOM, no NUL, and errors that name the file
// with the byte offset (syntax) or the JSON pointer (duplicates). nlohmann's DOM silently keeps
// the last of two equal keys, so duplicates are caught by a parse callback. Member order is kept
// (ordered_json): GPTQ `dynamic` is order-sensitive.
#pragma once

#include <qpatch/error.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace qpatch::json {

using Json = nlohmann::ordered_json;

struct SyntaxLocation {
  size_t pos = 0; // position in the text of the byte where parsing failed
  std::string message;
};

// Return where and why `text` is not JSON by nlohmann's reading, or nothing if it parses.
std::optional<SyntaxLocation> locate_syntax_error(std::string_view text);

struct NegativeZero {
  size_t pos = 0;
  std::string tensor;
  std::string field; // "shape" or "data_offsets"
};

// Find a `-0` inside a tensor entry's shape or data_offsets of a safetensors header.
std::optional<NegativeZero> find_negative_zero_in_tensor_fields(std::string_view text);

// Whether two documents hold the same values in the same order, a NaN equal to a NaN (Python's
// NaN, which parse_strict reads, is never == itself).
bool same_document(const Json& a, const Json& b);

// Parse `text` strictly; `path` names the file in errors.
Result<Json> parse_strict(std::string_view text, std::string_view path);

// Read a whole file of at most `max_size` bytes.
Result<std::string>
read_file(const std::filesystem::path& file, std::string_view display_path, uint64_t max_size);

// Return "/quantization_config/ignore/3" style JSON pointer text for display.
std::string pointer_to_string(const Json::json_pointer& pointer);

} // namespace qpatch::json
