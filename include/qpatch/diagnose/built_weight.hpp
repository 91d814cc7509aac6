// SPDX-License-Identifier: Apache-2.0
// The weight parameter a quantized layer registers, read from the method's config the way vLLM
// picks the scheme (017e9f4): it decides what a dense checkpoint's `weight` does when the config
// quantizes its layer (missing parameter, a silent cast, or a failed shape check).
#pragma once

#include <qpatch/engine/effects.hpp>
#include <qpatch/json/strict_json.hpp>

#include <string_view>

namespace qpatch::diagnose {

// `config` is the quantization config object the method reads (quantization_config, or
// hf_quant_config.json's "quantization").
engine::BuiltWeight built_weight(std::string_view quant_method, const json::Json& config);

} // namespace qpatch::diagnose
