// SPDX-License-Identifier: Apache-2.0
// The checks vLLM runs on a quantization config as a whole before it builds any layer
// (each method's from_config and __init__): a config that fails one never loads, whatever its
// skip lists say. The layer rules are in the method's own rules file.
#pragma once

#include <qpatch/engine/versions.hpp>
#include <qpatch/json/strict_json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace qpatch::engine {

// Return the exception vLLM `version` raises while reading `config` as `quant_method`
// ("ValueError: Unsupported quantization config: bits=3, sym=True"), or nothing when it reads.
std::optional<std::string>
vllm_config_rejection(std::string_view quant_method,
                      const json::Json& config,
                      const EngineVersion& version = newest_version(Engine::vllm));

} // namespace qpatch::engine
