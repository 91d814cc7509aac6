// SPDX-License-Identifier: Apache-2.0
// The checks an engine runs on a quantization config as a whole before it builds any layer
// (for vLLM, each method's from_config and __init__): a config that fails one never loads,
// whatever its skip lists say. Each engine's folder holds its own (vllm/config_checks.cpp); the
// registry dispatches. The layer rules are in the method's own rules file.
#pragma once

#include <qpatch/engine/versions.hpp>
#include <qpatch/json/strict_json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace qpatch::engine {

// Return the exception `version` raises while reading `config` as `quant_method`
// ("ValueError: Unsupported quantization config: bits=3, sym=True"), or nothing when it reads
// it (or its engine runs no such checks).
std::optional<std::string> config_rejection(const EngineVersion& version,
                                            std::string_view quant_method,
                                            const json::Json& config);

// Another method than the one `quant_method` names, which an engine reads the config as.
struct ConfigReading {
  std::string method; // as the engine names it ("w4afp8")
  std::string why;    // one text for every version it holds for
  bool operator==(const ConfigReading&) const = default;
};

// The method `version` reads `config` as where it is not the one `quant_method` names, or
// nothing: SGLang's configs/model_config.py _parse_modelopt_quant_config reads a ModelOpt
// MIXED_PRECISION config as W4AFP8 unless its rules pick modelopt_mixed. `architecture` is
// config.json's architectures[0] (some routes depend on it).
std::optional<ConfigReading> config_read_as(const EngineVersion& version,
                                            std::string_view quant_method,
                                            const json::Json& config,
                                            std::string_view architecture);

// Whether an AWQ config is one AWQ Marlin serves (SGLang's AWQMarlinConfig.
// is_awq_marlin_compatible on a CUDA GPU: 4 bits with zero points, group size -1, 32, 64 or
// 128): SGLang then reads it with AWQMarlinConfig, which honours `lm_head`
// (sglang/config_checks.cpp).
bool awq_marlin_compatible(const json::Json& config);

} // namespace qpatch::engine
