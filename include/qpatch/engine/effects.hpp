// SPDX-License-Identifier: Apache-2.0
// What an engine does when the layers it builds and the tensors stored disagree: the words a
// report's "breaks" line uses, one function per engine in its folder
// (src/engine/<engine>/effects.cpp), looked up through the registry.
#pragma once

#include <qpatch/engine/engines.hpp>

#include <cstdint>
#include <string>

namespace qpatch::engine {

enum class Mismatch : uint8_t {
  dense_built_quantized,    // stored dense, built quantized
  quantized_built_dense,    // stored quantized, built dense
  config_shards_disagree,   // the config quantizes some shards of a fused layer only
  disk_shards_disagree,     // the files store the shards of a fused layer differently
  unindexed_file,           // a file the index does not list
  untargeted_raises,        // compressed-tensors: a Linear no target matches
  quantized_without_config, // quantized tensors, no quantization config
  config_rejected,          // the config is refused while it is read
};

// What the weight parameter of a layer the engine quantizes is, as the method's scheme registers
// it: where a dense checkpoint's `weight` goes when the config quantizes its layer.
struct BuiltWeight {
  enum class Layout : uint8_t {
    own_name,   // the quantized weight has another name (weight_packed, qweight): no `weight`
    same_shape, // `weight` of the dense shape in an 8-bit dtype (FP8, INT8): the copy casts
    packed_fp4, // `weight` U8 [rows, cols/2] (NVFP4, MXFP4): the loader's shape check fails
  };
  Layout layout = Layout::own_name;
  std::string dtype; // same_shape: "FP8" or "INT8"
};

struct MismatchContext {
  std::string first_module;  // the first module concerned ("mtp.fc")
  std::string packed_tensor; // the parameter a packed layer registers ("weight_packed")
  std::string engine_error;  // the engine's own message, where qpatch computed it
  BuiltWeight built{};       // the weight parameter a quantized layer registers
};

// The engine's consequence ("start-up fails ..."), or "" when it has none for `mismatch`.
std::string effect_of(Engine engine, Mismatch mismatch, const MismatchContext& context);

} // namespace qpatch::engine
