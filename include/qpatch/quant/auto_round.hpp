// SPDX-License-Identifier: Apache-2.0
// A read-only view of an auto-round config (quant_method "auto-round", vLLM's INCConfig;
// engines.md §5): the global `bits`, `extra_config` in file order (order decides among regex
// keys), and `block_name_to_quantize` / `to_quant_block_names` (a list or a comma-separated
// string). `dynamic` is not an INC key, but vLLM's Qwen3.5 MTP code reads it whatever the method.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/quant/gptq.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::quant {

struct IncEntry {
  std::string key;
  std::optional<int64_t> bits; // absent: 16 for an exact key's early exit, else the global bits
};

struct IncConfig {
  int64_t bits = 4;
  std::vector<IncEntry> extra_config;
  bool has_extra_config = false;
  std::optional<std::vector<std::string>> block_names; // absent: every layer defaults quantized
  std::string block_names_key;                         // which key held them
  std::vector<GptqRule> dynamic;
};

Result<IncConfig> read_auto_round(const ConfigFile& file);

// True when vLLM's INC parser treats an extra_config key as a regex: it holds one of
// * + ? ^ $ ( ) [ ] { } | \ (a '.' alone does not count).
bool is_inc_regex_key(const std::string& key);

} // namespace qpatch::quant
