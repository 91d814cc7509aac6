// SPDX-License-Identifier: Apache-2.0
// Whole-config checks of transformers' quantizers (files and commits:
// tools/transformers_diff/SOURCES; tools/transformers_diff executes them).
#include "engine/registry.hpp"
#include "json/python_values.hpp"

#include <qpatch/engine/pattern.hpp>
#include <qpatch/quant/gptq.hpp>

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

// Fine-grained FP8: FineGrainedFP8Config.post_init (utils/quantization_config.py, store copy
// in tools/transformers_diff/SOURCES).
std::optional<std::string> fp8_rejection(const json::Json& config) {
  if (const auto it = config.find("activation_scheme"); it != config.end()) {
    if (!it->is_string()) {
      return "AttributeError: '" + py::type_name(*it) + "' object has no attribute 'lower'";
    }
    std::string scheme = it->get<std::string>();
    for (char& c : scheme) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (scheme != "dynamic" && scheme != "static") {
      return "ValueError: Activation scheme " + scheme + " not supported";
    }
  }
  if (config.contains("weight_block_size") && config["weight_block_size"].is_array()) {
    const json::Json& sizes = config["weight_block_size"];
    if (sizes.size() != 2) {
      return std::string("ValueError: weight_block_size must be a tuple of two integers");
    }
    const auto positive = [](const json::Json& side) {
      return !side.is_number() || side.get<double>() > 0;
    };
    if (!positive(sizes[0]) || !positive(sizes[1])) {
      return std::string("ValueError: weight_block_size must be a tuple of two positive integers");
    }
  }
  return std::nullopt;
}

// auto-round: utils/quantization_config.py (6ed74f1) AutoRoundConfig.post_init (bits, then
// group_size; 4 and 128 when absent), then auto_round v0.14.2 (e98f1c1) convert_model.py
// convert_hf_model (desc_act without static_groups) and get_layer_config (`extra_config.keys()`
// on a null extra_config), before any layer is replaced. A layer no backend serves is judged
// with the layers (auto_round_rules.cpp).
std::optional<std::string> auto_round_rejection(const json::Json& config) {
  if (config.contains("bits")) {
    const json::Json& bits = config["bits"];
    if (!equals_int(bits, 2) && !equals_int(bits, 3) && !equals_int(bits, 4) &&
        !equals_int(bits, 8)) {
      return "ValueError: Only support quantization to [2,3,4,8] bits but found " + py::str(bits);
    }
  }
  if (config.contains("group_size") && !equals_int(config["group_size"], -1)) {
    const json::Json& group = config["group_size"];
    if (!group.is_number() && !group.is_boolean()) {
      return "TypeError: '<=' not supported between instances of '" + py::type_name(group) +
             "' and 'int'";
    }
    if ((group.is_boolean() ? (group.get<bool>() ? 1.0 : 0.0) : group.get<double>()) <= 0) {
      return std::string("ValueError: group_size must be greater than 0 or equal to -1");
    }
  }
  const auto given = [&](const char* key) {
    return config.contains(key) && py::truthy(config[key]);
  };
  if (given("desc_act") && !given("static_groups")) {
    return std::string("NotImplementedError: This GPTQ model may contain a non-dummy g_idx, which "
                       "is not yet supported by AutoRound.");
  }
  if (config.contains("extra_config") && config["extra_config"].is_null()) {
    return std::string("AttributeError: 'NoneType' object has no attribute 'keys'");
  }
  return std::nullopt;
}

// Quark: utils/quantization_config.py (6ed74f1) QuarkConfig.__init__ builds amd-quark's
// Config.from_dict (quark/torch/quantization/config/config.py @1d27b55) from the whole
// quantization_config, which indexes the four keys below directly (each may be null) and
// accepts only the layer types of QUARK_LAYER_TYPES, before any module is replaced.
std::optional<std::string> quark_rejection(const json::Json& config) {
  for (const char* key :
       {"global_quant_config", "layer_type_quant_config", "layer_quant_config", "exclude"}) {
    if (!config.contains(key)) {
      return "KeyError: '" + std::string(key) + "'";
    }
  }
  const json::Json& types = config["layer_type_quant_config"];
  if (types.is_object()) {
    for (const auto& [name, value] : types.items()) {
      if (name != "Conv2d" && name != "Linear" && name != "ConvTranspose2d") {
        return "NotImplementedError: Quark does not support reloading a quantization `Config` "
               "from a dictionary using custom `layer_type_quantization_config`. Found `'" +
               name +
               "'` in `layer_type_quantization_config`, which is not among the supported "
               "{'Conv2d': <class 'torch.nn.modules.conv.Conv2d'>, 'Linear': <class "
               "'torch.nn.modules.linear.Linear'>, 'ConvTranspose2d': <class "
               "'torch.nn.modules.conv.ConvTranspose2d'>}.";
      }
    }
  }
  return std::nullopt;
}

} // namespace

// AWQ and FP8: quantizers_utils.py should_convert_module runs re.match(entry, name) for every
// entry of the skip list over every module, so an entry that is no Python regex (a glob such as
// "*mtp*") raises re.error while the model is prepared, before any weight loads. FP8's list is
// modules_to_not_convert, or ignored_layers when that is None.
std::optional<std::string> transformers_config_rejection(std::string_view quant_method,
                                                         const json::Json& config,
                                                         const EngineVersion& /*version*/) {
  if (quant_method == "gptq") {
    return gptq_rejection(config);
  }
  if (quant_method == "auto-round") {
    return auto_round_rejection(config);
  }
  if (quant_method == "quark") {
    return quark_rejection(config);
  }
  if (quant_method == "modelopt") {
    // quantizers/auto.py (6ed74f1) supports_quant_method: no "modelopt" in
    // AUTO_QUANTIZATION_CONFIG_MAPPING, so get_hf_quantizer builds no quantizer.
    return std::string("Unknown quantization type, got modelopt ... Hence, we will skip the "
                       "quantization (no ModelOpt quantizer: every quantized module loads as a "
                       "plain nn.Linear)");
  }
  std::string key = "modules_to_not_convert";
  if (quant_method == "fp8") {
    if (auto rejection = fp8_rejection(config)) {
      return rejection;
    }
    if (!config.contains(key) || config[key].is_null()) {
      key = "ignored_layers";
    }
  } else if (quant_method != "awq") {
    return std::nullopt;
  }
  if (!config.contains(key) || !config[key].is_array()) {
    return std::nullopt;
  }
  for (const json::Json& entry : config[key]) {
    if (!entry.is_string()) {
      continue;
    }
    const std::string text = entry.get<std::string>();
    if (auto pattern = Pattern::compile(text, "modules_to_not_convert"); !pattern) {
      return "re.error: " + key + " entry \"" + text + "\" is not a Python regex (" +
             pattern.error().message + ")";
    }
  }
  return std::nullopt;
}

} // namespace qpatch::engine
