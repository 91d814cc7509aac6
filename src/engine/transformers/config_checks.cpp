// SPDX-License-Identifier: Apache-2.0
// Whole-config checks of transformers' quantizers (files and commits:
// tools/transformers_diff/SOURCES; tools/transformers_diff executes them).
#include "engine/registry.hpp"

#include <qpatch/engine/pattern.hpp>
#include <qpatch/quant/gptq.hpp>

#include "engine/python_values.hpp"

namespace qpatch::engine {

namespace {

// Python's `value == n` for what json.load gives (True == 1, 4.0 == 4).
bool equals_int(const json::Json& value, int64_t n) {
  if (value.is_boolean()) {
    return (value.get<bool>() ? 1 : 0) == n;
  }
  if (value.is_number_integer() || value.is_number_unsigned()) {
    return value.get<int64_t>() == n;
  }
  return value.is_number_float() && value.get<double>() == static_cast<double>(n);
}

// GPTQ: utils/quantization_config.py GPTQConfig.post_init (6ed74f1), then optimum v2.1.0
// GPTQQuantizer.convert_model: sum(modules_in_block_to_quantize, []) and get_layers'
// startswith(block_name_to_quantize), before any weight loads.
std::optional<std::string> gptq_rejection(const json::Json& config) {
  if (!config.contains("bits")) {
    return "TypeError: GPTQConfig.__init__() missing 1 required positional argument: 'bits'";
  }
  const json::Json& bits = config["bits"];
  if (!equals_int(bits, 2) && !equals_int(bits, 3) && !equals_int(bits, 4) &&
      !equals_int(bits, 8)) {
    return "ValueError: Only support quantization to [2,3,4,8] bits but found " + py::str(bits);
  }
  if (const auto it = config.find("group_size"); it != config.end() && it->is_number()) {
    const double group = it->get<double>();
    if (group != -1 && group <= 0) {
      return std::string("ValueError: group_size must be greater than 0 or equal to -1");
    }
  }
  if (const auto it = config.find("damp_percent"); it != config.end() && it->is_number()) {
    const double damp = it->get<double>();
    if (!(0 < damp && damp < 1)) {
      return std::string("ValueError: damp_percent must between 0 and 1.");
    }
  }
  const quant::OptimumList list = quant::read_optimum_list(config);
  if (!list.block_error.empty()) {
    return list.block_error;
  }
  if (!list.error.empty()) {
    return list.error;
  }
  return std::nullopt;
}

} // namespace

// AWQ: quantizers_utils.py should_convert_module runs re.match(entry, name) for every entry of
// modules_to_not_convert over every module, so an entry that is no Python regex (a glob such as
// "*mtp*") raises re.error while the model is prepared, before any weight loads.
std::optional<std::string> transformers_config_rejection(std::string_view quant_method,
                                                         const json::Json& config,
                                                         const EngineVersion& /*version*/) {
  if (quant_method == "gptq") {
    return gptq_rejection(config);
  }
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
