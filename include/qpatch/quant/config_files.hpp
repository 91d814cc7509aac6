// SPDX-License-Identifier: Apache-2.0
// The files that carry a checkpoint's quantization config, read once with their original bytes
// (edits splice into them) and their parsed form. vLLM reads config.json's quantization_config
// first (also text_config.quantization_config); sidecars only matter to other tools, so they are
// kept in step with it (engines.md §2).
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/json/strict_json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::quant {

struct ConfigFile {
  std::string name; // "config.json", relative to the checkpoint
  std::string text; // the original bytes
  json::Json doc;
  std::vector<std::string> pointer; // where the quantization config object sits; {} = the root
  bool is_symlink = false;
  bool has_config() const;
  const json::Json& config() const; // the object at `pointer`
};

struct ConfigSet {
  std::vector<ConfigFile> files;  // config.json first, then the sidecars that exist
  std::string architecture;       // config.json "architectures"[0], or ""
  uint64_t num_hidden_layers = 0; // config.json (or its text_config), 0 when absent

  // The file whose quantization config vLLM uses, if any: config.json's quantization_config, else
  // GPTQ/AWQ's own quantize_config.json (engines.md §2; compressed-tensors has no file of its own).
  const ConfigFile* active() const;
  const ConfigFile* find(const std::string& name) const;
};

// Sidecars qpatch keeps in step with config.json (issue 4 adds the other methods' files).
inline const std::vector<std::string>& sidecar_names() {
  static const std::vector<std::string> names{
      "quantization_config.json", "quantize_config.json", "hf_quant_config.json"};
  return names;
}

// Return the quant_method a file declares; quantize_config.json, which AutoGPTQ writes without
// one, counts as "gptq".
std::string declared_method(const ConfigFile& file);

// Read config.json (required) and every sidecar present in `dir`.
Result<ConfigSet> load_config_files(const std::filesystem::path& dir);

// Return an error about the field at JSON pointer `pointer` of `file`.
Error field_error(const ConfigFile& file, const std::string& pointer, const std::string& message);

// Return "/quantization_config/ignore" for `pointer` + `field`.
std::string pointer_text(const std::vector<std::string>& pointer);

} // namespace qpatch::quant
