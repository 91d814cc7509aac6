// SPDX-License-Identifier: Apache-2.0
// A read-only view of a GPTQ quantization config (quant_method "gptq", also written by
// AutoRound's GPTQ exporter): the `dynamic` rules in file order (order decides: first match
// wins), `modules_in_block_to_quantize` (flattened) and `lm_head`.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qpatch::quant {

struct GptqRule {
  std::string key; // as written: "-:.*mtp.*", "+:...", or a bare pattern
  bool negative = false;
  std::string pattern; // the key without its "-:" / "+:" prefix
};

struct GptqConfig {
  std::vector<GptqRule> dynamic;
  bool has_dynamic = false;
  std::optional<std::vector<std::string>> modules_in_block; // absent: derived from the headers
  bool lm_head = false;
};

Result<GptqConfig> read_gptq(const ConfigFile& file);

} // namespace qpatch::quant
