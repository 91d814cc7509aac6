// SPDX-License-Identifier: Apache-2.0
// What each engine's folder contributes, declared once for the registry (engines.cpp): its
// history (versions as data) its dialect (how each version reads each method's config) and its effects (what a mismatch does). Private to src/engine/.
#pragma once

#include <qpatch/engine/dialect.hpp>
#include <qpatch/engine/effects.hpp>
#include <qpatch/engine/versions.hpp>

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

} // namespace qpatch::engine
