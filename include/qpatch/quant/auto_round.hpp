// SPDX-License-Identifier: Apache-2.0
// A read-only view of an auto-round config (quant_method "auto-round", vLLM's INCConfig;
// engines.md §5): the global `bits`, `group_size` and `sym`, `extra_config` in file order (order
// decides among regex keys), and `block_name_to_quantize` / `to_quant_block_names` (a list or a
// comma-separated string). Values are kept as written where vLLM compares them as Python values
// (a fused layer's shards must resolve to one (bits, group_size, sym) tuple). `dynamic` is not an
// INC key, but vLLM's Qwen3.5 MTP code reads it whatever the method.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/quant/gptq.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::quant {

struct IncEntry {
  std::string key;
  // absent: vLLM's cfg.get("bits", default) takes the default (16 for the exact-name early exit,
  // else the global bits when the layer is quantized by default, else 16). "bits": null is read
  // as absent (vLLM would compare None with 16 and raise TypeError; not modelled yet).
  std::optional<int64_t> bits;
  std::optional<json::Json> group_size; // as written; absent: the default
  std::optional<json::Json> sym;        // as written; absent: the default
};

struct IncConfig {
  int64_t bits = 4;
  json::Json group_size; // as written (null when absent: vLLM then rejects the config)
  json::Json sym;        // as written (null when absent)
  std::vector<IncEntry> extra_config;
  bool has_extra_config = false;
  // vLLM's get_from_keys_or: the first of block_name_to_quantize, to_quant_block_names that is
  // present, even when null; a string is split at every comma (Python str.split(",")). Absent,
  // null or empty: no block list, every layer but lm_head defaults to quantized.
  std::optional<std::vector<std::string>> block_names;
  std::string block_names_key; // which key was read ("" when neither is present)
  std::vector<GptqRule> dynamic;
};

Result<IncConfig> read_auto_round(const ConfigFile& file);

// True when vLLM's INC parser treats an extra_config key as a regex: it holds one of
// * + ? ^ $ ( ) [ ] { } | \ (a '.' alone does not count).
bool is_inc_regex_key(const std::string& key);

} // namespace qpatch::quant
