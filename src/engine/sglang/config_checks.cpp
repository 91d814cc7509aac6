// SPDX-License-Identifier: Apache-2.0
// Whole-config checks of SGLang, read in python/sglang/srt/layers/quantization/ (the commits
// are tools/sglang_diff/SOURCES'; tools/sglang_diff executes the same code). SGLang picks a
// method's class before reading it: configs/model_config.py _verify_quantization asks each
// override_quantization_method, so a config the Marlin class can serve is read by it, and any
// other by the plain class, whose from_config and __init__ refuse more.
#include "engine/registry.hpp"
#include "json/python_values.hpp"

#include <qpatch/util/names.hpp>

namespace qpatch::engine {
namespace {

using json::Json;

bool marlin_group_size(const Json& value) {
  // marlin_utils MARLIN_SUPPORTED_GROUP_SIZES
  return py::is_int(value, -1) || py::is_int(value, 32) || py::is_int(value, 64) ||
         py::is_int(value, 128);
}

bool present(const Json& config, const char* key) {
  return config.contains(key) && !config[key].is_null();
}

} // namespace

// awq/awq.py @01f67c3 AWQMarlinConfig.is_awq_marlin_compatible: quant_method "awq"; bits,
// group_size and zero_point given (not None); bits in TYPE_MAP {4, 8}; and
// check_marlin_supported(TYPE_MAP[bits], group_size, has_zp=zero_point). marlin_utils.py
// (@653d854) query_marlin_supported_quant_types gives [uint4] with zero points and
// [uint4b8, uint8b128, ...] without, at MARLIN_SUPPORTED_GROUP_SIZES: so 4 bits with zero
// points only (8-bit AWQ falls to AWQConfig, which refuses it).
bool awq_marlin_compatible(const Json& config) {
  return present(config, "bits") && present(config, "group_size") &&
         present(config, "zero_point") && py::is_int(config["bits"], 4) &&
         py::is_true(config["zero_point"]) && marlin_group_size(config["group_size"]);
}

namespace {

// gptq/gptq.py @0cdfa2f GPTQMarlinConfig.is_gptq_marlin_compatible: quant_method "gptq"; bits,
// group_size, sym and desc_act all given (not None); (bits, sym) in TYPE_MAP {(4, True),
// (8, True)}; check_marlin_supported(group_size). override_quantization_method converts it
// unless check_marlin_format (checkpoint_format "marlin" or is_marlin_format) says it already
// is Marlin's.
bool gptq_marlin(const Json& config) {
  const bool marlin_format =
      (config.contains("checkpoint_format") && config["checkpoint_format"] == "marlin") ||
      (config.contains("is_marlin_format") && py::is_true(config["is_marlin_format"]));
  if (marlin_format || !present(config, "bits") || !present(config, "group_size") ||
      !present(config, "sym") || !present(config, "desc_act")) {
    return false;
  }
  const Json& bits = config["bits"];
  return (py::is_int(bits, 4) || py::is_int(bits, 8)) && py::is_true(config["sym"]) &&
         marlin_group_size(config["group_size"]);
}

// GPTQMarlinConfig.from_config reads bits, group_size, desc_act and sym, all present when it
// is chosen; GPTQConfig.from_config reads bits, group_size, desc_act (get_from_keys raises for
// a missing one) and __init__ takes 2, 3, 4 and 8 bits.
std::optional<std::string> gptq(const Json& config) {
  if (gptq_marlin(config)) {
    return std::nullopt;
  }
  std::optional<std::string> error;
  const Json* bits = py::get_from_keys(config, {"bits"}, error);
  py::get_from_keys(config, {"group_size"}, error);
  py::get_from_keys(config, {"desc_act"}, error);
  if (error) {
    return error;
  }
  if (!(py::is_int(*bits, 2) || py::is_int(*bits, 3) || py::is_int(*bits, 4) ||
        py::is_int(*bits, 8))) {
    return "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported for GPTQ, "
           "but got " +
           py::str(*bits) + " bits.";
  }
  return std::nullopt;
}

// awq/awq.py @01f67c3: AWQMarlinConfig serves what is_awq_marlin_compatible accepts, reading
// bits, group_size and zero_point (all present then); any other config gets AWQConfig.from_config
// (w_bit or bits, q_group_size or group_size, zero_point; get_from_keys raises for a missing
// one), whose __init__ takes 4 bits only.
std::optional<std::string> awq(const Json& config) {
  if (awq_marlin_compatible(config)) {
    return std::nullopt;
  }
  std::optional<std::string> error;
  const Json* bits = py::get_from_keys(config, {"w_bit", "bits"}, error);
  py::get_from_keys(config, {"q_group_size", "group_size"}, error);
  py::get_from_keys(config, {"zero_point"}, error);
  if (error) {
    return error;
  }
  if (!py::is_int(*bits, 4)) {
    return "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but "
           "got " +
           py::str(*bits) + " bits.";
  }
  return std::nullopt;
}

// fp8.py @00563d3 Fp8Config.from_config (get_from_keys(["quant_method"]),
// get_from_keys(["activation_scheme"])) and __init__, in its order: the activation scheme in
// ACTIVATION_SCHEMES ["static", "dynamic"]; a weight_block_size that is not None needs an
// fp8-serialized checkpoint ("fp8" in quant_method), len() == 2 and the dynamic scheme.
std::optional<std::string> fp8(const Json& config) {
  std::optional<std::string> error;
  const Json* method = py::get_from_keys(config, {"quant_method"}, error);
  const Json* scheme = py::get_from_keys(config, {"activation_scheme"}, error);
  if (error) {
    return error;
  }
  const std::string activation = py::str(*scheme);
  if (!scheme->is_string() || (activation != "static" && activation != "dynamic")) {
    return "ValueError: Unsupported activation scheme " + activation;
  }
  if (!present(config, "weight_block_size")) {
    return std::nullopt;
  }
  if (!method->is_string() || method->get<std::string>().find("fp8") == std::string::npos) {
    return std::string("ValueError: The block-wise quantization only supports fp8-serialized "
                       "checkpoint for now.");
  }
  const Json& block = config["weight_block_size"];
  size_t dims = 0;
  if (block.is_array() || block.is_object()) {
    dims = block.size();
  } else if (block.is_string()) {
    dims = block.get<std::string>().size();
  } else {
    const char* type = block.is_boolean() ? "bool" : block.is_number_integer() ? "int" : "float";
    return std::string("TypeError: object of type '") + type + "' has no len()";
  }
  if (dims != 2) {
    return "ValueError: The quantization block size of weight must have 2 dimensions, but got " +
           std::to_string(dims) + " dimensions.";
  }
  if (activation != "dynamic") {
    return "ValueError: The block-wise quantization only supports dynamic activation scheme for "
           "now, but got " +
           activation + " activation scheme.";
  }
  return std::nullopt;
}

// bitsandbytes.py @b53daee BitsAndBytesConfig.from_config reads every key through
// get_safe_value (absent or None: the default, "uint8" for bnb_4bit_quant_storage), and
// __init__ raises for a storage other than "uint8".
std::optional<std::string> bitsandbytes(const Json& config) {
  if (!present(config, "bnb_4bit_quant_storage")) {
    return std::nullopt;
  }
  const Json& storage = config["bnb_4bit_quant_storage"];
  if (storage.is_string() && storage.get<std::string>() == "uint8") {
    return std::nullopt;
  }
  return "ValueError: Unsupported bnb_4bit_quant_storage: " + py::str(storage);
}

// configs/model_config.py @001adf5 _parse_modelopt_quant_config picks the class by quant_algo
// (MIXED_PRECISION: modelopt_mixed, not modelled; "FP4" in it: modelopt_fp4; "FP8": modelopt_fp8);
// anything else stays "modelopt", which is ModelOptFp8Config. Their from_config (modelopt_quant.py,
// store 54490057226) read the flat config.json format when quant_algo is at the top, else the
// nested hf_quant_config.json one ("quantization": {...}).
std::optional<std::string> modelopt(const Json& config) {
  const bool flat = present(config, "quant_algo");
  const Json* section = &config;
  if (!flat) {
    if (!config.contains("quantization") || !config["quantization"].is_object() ||
        !present(config["quantization"], "quant_algo")) {
      return std::string("ValueError: Cannot find 'quant_algo' in the model's quantization "
                         "config. Expected either flat format (config.json) or nested format "
                         "(hf_quant_config.json).");
    }
    section = &config["quantization"];
  }
  const std::string algo = py::str((*section)["quant_algo"]);
  if (algo == "MIXED_PRECISION") {
    return std::nullopt;
  }
  if (algo.find("FP4") == std::string::npos) {
    if (algo.find("FP8") != std::string::npos) {
      return std::nullopt;
    }
    return std::string("ValueError: ModelOptFp8Config only supports static FP8 quantization in "
                       "SGLang. For FP4 quantization, use ModelOptFp4Config. Check the "
                       "quantization config for your model's configuration.");
  }
  // ModelOptFp4Config.from_config: group_size (flat: the top level, else the first
  // config_groups group's weights; nested: common_group_size) and exclude_modules (flat:
  // config.get("ignore", []); nested: quantization.get("exclude_modules", [])) must not be None.
  if (algo != "FP8" && algo != "NVFP4") {
    return std::string("ValueError: ModelOpt currently only supports: FP8, NVFP4 quantizations in "
                       "sglang. Please check the quantization config for your model's "
                       "configuration.");
  }
  bool group_size = present(config, "group_size");
  if (flat && !group_size && config.contains("config_groups") &&
      config["config_groups"].is_object() && !config["config_groups"].empty()) {
    const Json& first = config["config_groups"].begin().value();
    group_size = first.is_object() && first.contains("weights") && first["weights"].is_object() &&
                 present(first["weights"], "group_size");
  }
  if (!flat) {
    group_size = group_size ||
                 (present(*section, "group_size") && (*section)["group_size"].is_number_integer());
  }
  const char* list = flat ? "ignore" : "exclude_modules";
  const bool list_null = section->contains(list) && (*section)[list].is_null();
  if (!group_size || list_null) {
    return std::string("ValueError: NVFP4 quantization requires group_size and exclude_modules "
                       "specified in the quantization config");
  }
  return std::nullopt;
}

// auto_round/auto_round.py @68e037f AutoRoundConfig.from_config (bits, group_size and sym through
// get_from_keys; packing_format, data_type and backend with their defaults) and __init__, in its
// order. The sets are printed as the source writes them (Python's own order of a str set varies
// between runs).
std::optional<std::string> auto_round(const Json& config) {
  std::optional<std::string> error;
  const Json* bits = py::get_from_keys(config, {"bits"}, error);
  py::get_from_keys(config, {"group_size"}, error);
  py::get_from_keys(config, {"sym"}, error);
  if (error) {
    return error;
  }
  if (!(py::is_int(*bits, 2) || py::is_int(*bits, 3) || py::is_int(*bits, 4) ||
        py::is_int(*bits, 8))) {
    return "ValueError: Unsupported weight_bits: " + py::str(*bits) +
           ", currently only support  {2, 3, 4, 8}";
  }
  const std::string data_type = py::str_from_keys_or(config, {"data_type"}, "int");
  if (data_type != "int") {
    return "ValueError: Unsupported data_type: " + data_type + ", currently only support  {'int'}";
  }
  const std::string format =
      py::str_from_keys_or(config, {"packing_format"}, "auto_round:auto_gptq");
  if (format != "auto_round:auto_gptq" && format != "auto_round:auto_awq") {
    return "ValueError: Unsupported packing_format: " + format +
           ", currently only support  {'auto_round:auto_gptq', 'auto_round:auto_awq'}";
  }
  const std::string backend =
      py::str_from_keys_or(config, {"backend", "vllm_backend", "sglang_backend"}, "auto");
  for (const char* known : {"auto", "gptq", "gptq:marlin", "awq", "awq:marlin", "marlin"}) {
    if (backend == known) {
      return std::nullopt;
    }
  }
  return "ValueError: Unsupported backend: " + backend +
         ",  currently only support  {'auto', 'gptq', 'gptq:marlin', 'awq', 'awq:marlin', "
         "'marlin'}";
}

// The ModelOpt section a config.json quantization_config (flat) or hf_quant_config.json
// (nested under "quantization") holds, or null.
const Json* modelopt_section(const Json& config) {
  if (present(config, "quant_algo")) {
    return &config;
  }
  if (config.contains("quantization") && config["quantization"].is_object()) {
    return &config["quantization"];
  }
  return nullptr;
}

} // namespace

std::optional<ConfigReading> sglang_config_read_as(std::string_view quant_method,
                                                   const Json& config,
                                                   std::string_view architecture,
                                                   const EngineVersion& version) {
  // configs/model_config.py _parse_quant_hf_config rewrites a "modelopt" config's quant_method
  // with _parse_modelopt_quant_config's answer; for quant_algo MIXED_PRECISION (read in upstream
  // history, docs/research/sglang-modelopt-mixed.md):
  //   - before #20407 (75a7879fd, 2026-03-14): always "w4afp8";
  //   - #20407: "modelopt_mixed" for Nemotron-H (model_type nemotron_h or an architecture
  //     starting with NemotronH), "w4afp8" otherwise;
  //   - #27906 (b1942fc3e, 2026-07-05, unchanged @b98d4721): "modelopt_mixed" when a
  //     quantized_layers entry's quant_algo is NVFP4 or W4A16_NVFP4, "w4afp8" otherwise.
  // w4afp8.py W4AFp8Config (@b98d4721).from_config reads no skip list: get_quant_method gives
  // every LinearBase Fp8LinearMethod (block 128x128) and every FusedMoE W4AFp8MoEMethod.
  if (quant_method != "modelopt" && quant_method != "modelopt_fp4") {
    return std::nullopt;
  }
  const Json* section = modelopt_section(config);
  if (section == nullptr || py::str((*section)["quant_algo"]) != "MIXED_PRECISION") {
    return std::nullopt;
  }
  if (version.has("#27906")) {
    const Json& layers = (*section)["quantized_layers"];
    if (layers.is_object()) {
      for (const auto& [name, info] : layers.items()) {
        if (info.is_object() && info.contains("quant_algo")) {
          const std::string algo = util::upper_ascii(py::str(info["quant_algo"]));
          if (algo == "NVFP4" || algo == "W4A16_NVFP4") {
            return std::nullopt;
          }
        }
      }
    }
  } else if (version.has("#20407") && architecture.rfind("NemotronH", 0) == 0) {
    return std::nullopt;
  }
  // One text for every version, so that the report says it once with the versions it holds for.
  return ConfigReading{
      "w4afp8",
      "a MIXED_PRECISION config is read as modelopt_mixed only for Nemotron-H from #20407 "
      "(2026-03-14), and for any model with an NVFP4 or W4A16_NVFP4 quantized_layers entry from "
      "#27906 (2026-07-05); W4AFp8Config reads neither its skip list nor quantized_layers, and "
      "builds every linear layer FP8 block-wise and every MoE W4AFP8"};
}

std::optional<std::string> sglang_config_rejection(std::string_view quant_method,
                                                   const json::Json& config,
                                                   const EngineVersion& /*version*/) {
  if (quant_method == "gptq") {
    return gptq(config);
  }
  if (quant_method == "awq") {
    return awq(config);
  }
  if (quant_method == "fp8") {
    return fp8(config);
  }
  if (quant_method == "bitsandbytes") {
    return bitsandbytes(config);
  }
  if (quant_method == "modelopt" || quant_method == "modelopt_fp4") {
    return modelopt(config);
  }
  if (quant_method == "auto-round") {
    return auto_round(config);
  }
  return std::nullopt;
}

} // namespace qpatch::engine
