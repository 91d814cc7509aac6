// SPDX-License-Identifier: Apache-2.0
#include <qpatch/diagnose/built_weight.hpp>

#include <string>

namespace qpatch::diagnose {
namespace {

using Layout = engine::BuiltWeight::Layout;

std::string string_at(const json::Json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string()
             ? object[key].get<std::string>()
             : std::string();
}

engine::BuiltWeight same_shape(const char* dtype) {
  return {Layout::same_shape, dtype};
}

// compressed-tensors: the W8A8 schemes (compressed_tensors_w8a8_fp8.py, _int8.py) register
// `weight` of the dense shape for a "float-quantized", "int-quantized" or "naive-quantized"
// format; the packed ones (wNa16, nvfp4, mxfp4) register `weight_packed`. Every group's format
// (or the global one) must agree for the text to name one.
engine::BuiltWeight compressed_tensors(const json::Json& config) {
  const std::string global = string_at(config, "format");
  std::string format;
  bool mixed = false;
  if (config.contains("config_groups") && config["config_groups"].is_object()) {
    for (const auto& [name, group] : config["config_groups"].items()) {
      std::string own = string_at(group, "format");
      own = own.empty() ? global : own;
      mixed = mixed || (!format.empty() && own != format);
      format = own;
    }
  }
  if (mixed) {
    return {};
  }
  if (format == "float-quantized") {
    return same_shape("FP8");
  }
  if (format == "int-quantized" || format == "naive-quantized") {
    return same_shape("INT8");
  }
  return {};
}

} // namespace

engine::BuiltWeight built_weight(std::string_view quant_method, const json::Json& config) {
  // fp8.py Fp8LinearMethod.create_weights: a serialized FP8 checkpoint's `weight` is
  // float8_e4m3fn [rows, cols].
  if (quant_method == "fp8") {
    return same_shape("FP8");
  }
  if (quant_method == "compressed-tensors") {
    return compressed_tensors(config);
  }
  // modelopt.py: ModelOptFp8LinearMethod and ModelOptMxFp8LinearMethod register `weight`
  // float8_e4m3fn [rows, cols]; ModelOptNvFp4LinearMethod (NVFP4, and W4A16_NVFP4 through its
  // use_a16 path) `weight` uint8 [rows, cols // 2]. MIXED_PRECISION picks per layer: one layout
  // is named when every quantized_layers entry has the same algo.
  if (quant_method == "modelopt" || quant_method == "modelopt_fp4") {
    std::string algo = string_at(config, "quant_algo");
    if (algo == "MIXED_PRECISION") {
      algo.clear();
      if (config.contains("quantized_layers") && config["quantized_layers"].is_object()) {
        for (const auto& [name, entry] : config["quantized_layers"].items()) {
          const std::string own = string_at(entry, "quant_algo");
          if (!algo.empty() && own != algo) {
            return {};
          }
          algo = own;
        }
      }
    }
    if (algo == "FP8" || algo == "MXFP8") {
      return same_shape("FP8");
    }
    if (algo == "NVFP4" || algo == "W4A16_NVFP4" || quant_method == "modelopt_fp4") {
      return {Layout::packed_fp4, ""};
    }
    return {};
  }
  // quark.py _get_scheme_from_config over global_quant_config: QuarkW8A8Fp8 and QuarkW8A8Int8
  // register `weight` of the dense shape; QuarkOCP_MX and QuarkNVFP4 a uint8 [rows, cols // 2].
  if (quant_method == "quark") {
    const json::Json* weight = nullptr;
    if (config.contains("global_quant_config") && config["global_quant_config"].is_object() &&
        config["global_quant_config"].contains("weight")) {
      weight = &config["global_quant_config"]["weight"];
    }
    const std::string dtype = weight != nullptr ? string_at(*weight, "dtype") : "";
    if (dtype.rfind("fp8", 0) == 0) {
      return same_shape("FP8");
    }
    if (dtype == "int8") {
      return same_shape("INT8");
    }
    if (dtype == "fp4") {
      return {Layout::packed_fp4, ""};
    }
  }
  return {};
}

} // namespace qpatch::diagnose
