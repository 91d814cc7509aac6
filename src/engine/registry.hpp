// SPDX-License-Identifier: Apache-2.0
// What each engine's folder contributes, declared once for the registry (engines.cpp): its
// history (versions as data) its dialect (how each version reads each method's config) and its
// effects (what a mismatch does). Private to src/engine/.
#pragma once

#include <qpatch/engine/config_checks.hpp>
#include <qpatch/engine/dialect.hpp>
#include <qpatch/engine/effects.hpp>
#include <qpatch/engine/versions.hpp>
#include <qpatch/json/strict_json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace qpatch::engine {

const History& vllm_history();         // vllm/history.cpp
const History& sglang_history();       // sglang/history.cpp
const History& transformers_history(); // transformers/history.cpp

Dialect vllm_dialect(const EngineVersion& version, const ModelInfo& model);         // vllm/
Dialect sglang_dialect(const EngineVersion& version, const ModelInfo& model);       // sglang/
Dialect transformers_dialect(const EngineVersion& version, const ModelInfo& model); // transformers/

std::string vllm_effect(Mismatch mismatch, const MismatchContext& context);         // vllm/
std::string sglang_effect(Mismatch mismatch, const MismatchContext& context);       // sglang/
std::string transformers_effect(Mismatch mismatch, const MismatchContext& context); // transformers/

// Words engines share for the same failure (engines.cpp): a config refused while it is read or
// a layer is built, with the engine's message when qpatch computed it; a Linear no
// compressed-tensors target matches.
std::string refuses_config(const std::string& engine_error);
std::string untargeted_raise();

// vllm/config_checks.cpp: what vLLM raises while it reads a config (engine/config_checks.hpp).
std::optional<std::string> vllm_config_rejection(std::string_view quant_method,
                                                 const json::Json& config,
                                                 const EngineVersion& version);
// transformers/config_checks.cpp: what transformers raises while it prepares the model.
std::optional<std::string> transformers_config_rejection(std::string_view quant_method,
                                                         const json::Json& config,
                                                         const EngineVersion& version);
// sglang/config_checks.cpp: what SGLang raises while it reads a config.
std::optional<std::string> sglang_config_rejection(std::string_view quant_method,
                                                   const json::Json& config,
                                                   const EngineVersion& version);
// sglang/config_checks.cpp: the method SGLang reads a config as, where not its own.
std::optional<ConfigReading> sglang_config_read_as(std::string_view quant_method,
                                                   const json::Json& config,
                                                   std::string_view architecture,
                                                   const EngineVersion& version);

} // namespace qpatch::engine
