// SPDX-License-Identifier: Apache-2.0
// A read-only view of a compressed-tensors quantization config: config groups with their
// targets, and the ignore list. Errors name the file and the JSON pointer of the bad field.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>

#include <string>
#include <vector>

namespace qpatch::quant {

struct CtGroup {
  std::string name;                 // "group_0"
  std::vector<std::string> targets; // exact names, "re:" patterns or class names
  std::string format;               // the group's "format", else the top-level one
};

struct CtConfig {
  std::vector<CtGroup> groups; // in the file's order
  std::vector<std::string> ignore;
  bool has_ignore = false; // the key exists (an absent key is created by a patch)
  std::string format;
};

// Return the quant_method of a quantization config object ("" when absent or not a string).
std::string quant_method(const json::Json& config);

// Read the compressed-tensors fields of `file`'s quantization config.
Result<CtConfig> read_compressed_tensors(const ConfigFile& file);

} // namespace qpatch::quant
