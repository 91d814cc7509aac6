// SPDX-License-Identifier: Apache-2.0
// What each engine's folder contributes, declared once for the registry (engines.cpp): its
// history (versions as data). Private to src/engine/.
#pragma once

#include <qpatch/engine/versions.hpp>

namespace qpatch::engine {

const History& vllm_history();         // vllm/history.cpp
const History& sglang_history();       // sglang/history.cpp
const History& transformers_history(); // transformers/history.cpp

} // namespace qpatch::engine
