// SPDX-License-Identifier: Apache-2.0
// A read-only view of a GPTQ quantization config (quant_method "gptq", also written by
// AutoRound's GPTQ exporter): the `dynamic` rules in file order (order decides: first match
// wins), `modules_in_block_to_quantize` as vLLM reads it (flattened), and `lm_head`.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace qpatch::quant {

struct GptqRule {
  std::string key; // as written: "-:.*mtp.*", "+:...", or a bare pattern
  bool negative = false;
  std::string pattern; // the key without its "-:" / "+:" prefix
  // The fields a positive rule overrides (override_config reads them with isinstance(int) /
  // isinstance(bool)); nothing where the rule leaves the config's value.
  std::optional<int64_t> bits{};
  std::optional<int64_t> group_size{};
  std::optional<bool> sym{};
};

// Where one entry of `modules_in_block_to_quantize` sits in the file, so a fix can remove it.
// The characters vLLM cuts out of one string share that string's place.
struct GptqListEntry {
  std::vector<std::string> array; // the array holding it, below the config object
  size_t index = 0;               // its index there
  bool operator<(const GptqListEntry& other) const {
    return std::tie(array, index) < std::tie(other.array, other.index);
  }
  bool operator==(const GptqListEntry& other) const {
    return array == other.array && index == other.index;
  }
};

// modules_in_block_to_quantize and block_name_to_quantize as optimum reads them:
// `sum(modules_in_block_to_quantize, [])` when the value is not None, and a block name handed to
// str.startswith.
struct OptimumList {
  bool given = false;               // present and not null: the list decides
  std::vector<std::string> summed;  // sum(list, []), its string items in order
  std::string error;                // what sum() or endswith raises ("" when nothing)
  bool flat = false;                // a list of strings only: sum() raises, nesting it mends that
  bool simple = true;               // absent, null, [], flat, or lists of strings only
  std::optional<std::string> block; // block_name_to_quantize, a string
  std::string block_error;          // what get_layers' startswith raises for a non-string block
};

struct GptqConfig {
  std::vector<GptqRule> dynamic;
  bool has_dynamic = false;
  // The entries vLLM tests, flattened as it flattens them; nothing when the value is falsy
  // (absent, null, []): vLLM then derives the list from the headers.
  std::optional<std::vector<std::string>> modules_in_block;
  bool lm_head = false; // Python truthiness of "lm_head", as vLLM tests it
  // The config's own bits, group_size and sym (nothing when absent or not of that type).
  std::optional<int64_t> bits;
  std::optional<int64_t> group_size;
  std::optional<bool> sym;
  // Parallel to *modules_in_block: where each entry is written.
  std::vector<GptqListEntry> list_entries;
  // The array new entries go to (the last inner array of a list of lists), and whether the key
  // is in the file with an array value at all.
  std::vector<std::string> list_append_to;
  bool has_list = false;
  // True when the config is config.json's top-level quantization_config: the only place vLLM's
  // Qwen3.5 MTP special case looks for `dynamic` (hf_config.quantization_config).
  bool in_hf_config = false;

  // The config as optimum's GPTQQuantizer reads it for transformers (optimum v2.1.0,
  // gptq/quantizer.py convert_model): the block prefix, and the list summed one level.
  OptimumList optimum;
};

Result<GptqConfig> read_gptq(const ConfigFile& file);
// The list and block as optimum reads them (the `optimum` member of read_gptq's view).
OptimumList read_optimum_list(const json::Json& config);

} // namespace qpatch::quant
