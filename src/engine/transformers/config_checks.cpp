// SPDX-License-Identifier: Apache-2.0
// Whole-config checks of transformers' quantizers (files and commits:
// tools/transformers_diff/SOURCES; tools/transformers_diff executes them).
#include "engine/registry.hpp"

#include <qpatch/engine/pattern.hpp>

namespace qpatch::engine {

// AWQ: quantizers_utils.py should_convert_module runs re.match(entry, name) for every entry of
// modules_to_not_convert over every module, so an entry that is no Python regex (a glob such as
// "*mtp*") raises re.error while the model is prepared, before any weight loads.
std::optional<std::string> transformers_config_rejection(std::string_view quant_method,
                                                         const json::Json& config,
                                                         const EngineVersion& /*version*/) {
  if (quant_method != "awq" || !config.contains("modules_to_not_convert") ||
      !config["modules_to_not_convert"].is_array()) {
    return std::nullopt;
  }
  for (const json::Json& entry : config["modules_to_not_convert"]) {
    if (!entry.is_string()) {
      continue;
    }
    const std::string text = entry.get<std::string>();
    if (auto pattern = Pattern::compile(text, "modules_to_not_convert"); !pattern) {
      return "re.error: modules_to_not_convert entry \"" + text + "\" is not a Python regex (" +
             pattern.error().message + ")";
    }
  }
  return std::nullopt;
}

} // namespace qpatch::engine
