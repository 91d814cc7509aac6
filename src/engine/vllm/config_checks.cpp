// SPDX-License-Identifier: Apache-2.0
// Whole-config checks of vLLM main 017e9f4, read in vllm/model_executor/layers/quantization/.
// Messages are vLLM's f-strings with Python's str() of each value (True/False for booleans);
// where vLLM prints a set, whose order Python's string hashing varies, it is printed sorted.
#include "engine/registry.hpp"
#include "json/python_values.hpp"

#include <qpatch/util/names.hpp>

#include <algorithm>
#include <vector>

namespace qpatch::engine {
namespace {

using json::Json;

using py::get_from_keys;
using py::is_int;
using py::is_true;
using py::str;

// auto_gptq.py AutoGPTQConfig.from_config, __init__: TYPE_MAP holds (4, True) and (8, True).
std::optional<std::string> gptq(const Json& config, const EngineVersion& version) {
  std::optional<std::string> error;
  const Json* bits = get_from_keys(config, {"bits"}, error);
  get_from_keys(config, {"group_size"}, error);
  get_from_keys(config, {"desc_act"}, error);
  const Json* sym = get_from_keys(config, {"sym"}, error);
  if (error) {
    return error;
  }
  if (!version.has("#38288")) {
    // Before #38288 (fa2a33b89^) a config gptq_marlin cannot serve fell back to GPTQConfig
    // (gptq.py __init__), which takes 2, 3, 4 and 8 bits, either sym.
    if (!(is_int(*bits, 2) || is_int(*bits, 3) || is_int(*bits, 4) || is_int(*bits, 8))) {
      return "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported for "
             "GPTQ, but got " +
             str(*bits) + " bits.";
    }
    return std::nullopt;
  }
  if (!((is_int(*bits, 4) || is_int(*bits, 8)) && is_true(*sym))) {
    return "ValueError: Unsupported quantization config: bits=" + str(*bits) + ", sym=" + str(*sym);
  }
  return std::nullopt;
}

// inc/inc.py INCConfig.from_config, __init__ (SUPPORTED_BITS, _DTYPES, _FORMATS, _BACKENDS).
std::optional<std::string> auto_round(const Json& config) {
  std::optional<std::string> error;
  const Json* bits = get_from_keys(config, {"bits"}, error);
  get_from_keys(config, {"group_size"}, error);
  get_from_keys(config, {"sym"}, error);
  if (error) {
    return error;
  }
  const auto text_or = [&](const std::vector<std::string>& keys, const std::string& fallback) {
    for (const std::string& key : keys) {
      if (config.contains(key)) {
        return str(config[key]);
      }
    }
    return fallback;
  };
  if (!(is_int(*bits, 2) || is_int(*bits, 3) || is_int(*bits, 4) || is_int(*bits, 8))) {
    return "ValueError: Unsupported weight_bits: " + str(*bits) +
           ", currently only support {2, 3, 4, 8}.";
  }
  const std::string data_type = text_or({"data_type"}, "int");
  if (data_type != "int" && data_type != "mx_fp" && data_type.find("mx_fp") == std::string::npos) {
    return "ValueError: Unsupported data_type: " + data_type +
           ", currently only support {'int', 'mx_fp'}.";
  }
  const std::vector<std::string> formats = {
      "auto_round:auto_awq", "auto_round:auto_gptq", "auto_round:llm_compressor"};
  const std::string format = text_or({"packing_format"}, "auto_round:auto_gptq");
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    return "ValueError: Unsupported packing_format: " + format +
           ", currently only support {'auto_round:auto_awq', 'auto_round:auto_gptq', "
           "'auto_round:llm_compressor'}.";
  }
  const std::vector<std::string> backends = {
      "auto", "awq", "awq:marlin", "gptq", "gptq:marlin", "marlin"};
  const std::string backend = text_or({"backend", "vllm_backend"}, "auto");
  if (std::find(backends.begin(), backends.end(), backend) == backends.end()) {
    return "ValueError: Unsupported backend: " + backend +
           ", currently only support {'auto', 'awq', 'awq:marlin', 'gptq', 'gptq:marlin', "
           "'marlin'}.";
  }
  return std::nullopt;
}

// auto_awq.py AutoAWQConfig.from_config, __init__: TYPE_MAP holds 4 only.
std::optional<std::string> awq(const Json& config) {
  std::optional<std::string> error;
  const Json* bits = get_from_keys(config, {"w_bit", "bits"}, error);
  get_from_keys(config, {"q_group_size", "group_size"}, error);
  get_from_keys(config, {"zero_point"}, error);
  if (error) {
    return error;
  }
  if (!is_int(*bits, 4)) {
    return "ValueError: Unsupported num_bits = " + str(*bits) +
           ". Supported: 4. For 8-bit AWQ, use Marlin backend by setting backend='awq:marlin' "
           "or backend='marlin'.";
  }
  return std::nullopt;
}

// fp8.py Fp8Config.from_config, __init__ (ACTIVATION_SCHEMES = ["static", "dynamic"]).
std::optional<std::string> fp8(const Json& config) {
  std::optional<std::string> error;
  get_from_keys(config, {"quant_method"}, error);
  const Json* scheme = get_from_keys(config, {"activation_scheme"}, error);
  if (error) {
    return error;
  }
  const std::string activation = str(*scheme);
  if (activation != "static" && activation != "dynamic") {
    return "ValueError: Unsupported activation scheme " + activation;
  }
  if (config.contains("weight_block_size") && !config["weight_block_size"].is_null()) {
    const Json& block = config["weight_block_size"];
    const size_t dims = block.is_array() ? block.size() : 0;
    if (dims != 2) {
      return "ValueError: The quantization block size of weight must have 2 dimensions, but "
             "got " +
             std::to_string(dims) + " dimensions";
    }
    if (activation != "dynamic") {
      return "ValueError: The block-wise quantization only supports dynamic activation scheme "
             "for now, but got " +
             activation + " activation scheme.";
    }
  }
  return std::nullopt;
}

// modelopt.py ModelOptQuantConfigBase.from_config: quant_algo (under "quantization" in the
// hf_quant_config.json layout), upper-cased, must be one of QUANT_ALGOS.
std::optional<std::string> modelopt(const Json& config) {
  const Json* algo = nullptr;
  if (config.contains("quantization")) {
    if (!config["quantization"].is_object()) {
      return "ValueError: Expected 'quantization' to be a dictionary in config";
    }
    if (config["quantization"].contains("quant_algo")) {
      algo = &config["quantization"]["quant_algo"];
    }
  } else if (config.contains("quant_algo")) {
    algo = &config["quant_algo"];
  }
  const std::string text = algo == nullptr || algo->is_null() ? "" : str(*algo);
  if (text.empty()) {
    return "ValueError: Missing 'quant_algo' in quantization config";
  }
  const std::string upper = util::upper_ascii(text);
  const std::vector<std::string> algos = {"FP8",
                                          "FP8_PER_CHANNEL_PER_TOKEN",
                                          "FP8_PB_WO",
                                          "NVFP4",
                                          "W4A16_NVFP4",
                                          "MXFP8",
                                          "MIXED_PRECISION"};
  if (std::find(algos.begin(), algos.end(), upper) == algos.end()) {
    return "ValueError: ModelOpt currently only supports: ['FP8', 'FP8_PER_CHANNEL_PER_TOKEN', "
           "'FP8_PB_WO', 'NVFP4', 'W4A16_NVFP4', 'MXFP8', 'MIXED_PRECISION'] quantizations in "
           "vLLM. Please check the `hf_quant_config.json` file for your model's quant "
           "configuration.";
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> vllm_config_rejection(std::string_view quant_method,
                                                 const json::Json& config,
                                                 const EngineVersion& version) {
  if (quant_method == "gptq") {
    return gptq(config, version);
  }
  if (quant_method == "auto-round") {
    return auto_round(config);
  }
  if (quant_method == "awq") {
    return awq(config);
  }
  if (quant_method == "fp8") {
    return fp8(config);
  }
  if (quant_method == "modelopt" || quant_method == "modelopt_fp4") {
    return modelopt(config);
  }
  return std::nullopt;
}

} // namespace qpatch::engine
