// SPDX-License-Identifier: Apache-2.0
// The layers vLLM builds from a checkpoint's modules, each named as vLLM names it when it asks
// the quant config (`prefix` in get_quant_method): fused shards become one layer, per-expert
// modules one experts layer, and some layers are built without any quant config at all.
#pragma once

#include <qpatch/checkpoint/module.hpp>
#include <qpatch/engine/model_info.hpp>

#include <string>
#include <vector>

namespace qpatch::engine {

enum class LayerKind {
  linear,      // a Linear layer (possibly fused from shards)
  lm_head,     // ParallelLMHead: quantized only when a target names it
  embedding,   // VocabParallelEmbedding
  experts,     // RoutedExperts: judged through expert 0's names
  built_dense, // built with quant_config=None (GDN conv1d, routers, vision patch embed)
};

struct Layer {
  LayerKind kind = LayerKind::linear;
  std::string name;              // in checkpoint naming, e.g. "mtp.layers.0.self_attn.qkv_proj"
  std::string prefix;            // as vLLM names it (renamed)
  std::string cls;               // the vLLM class a class-name target is compared with
  std::vector<uint32_t> modules; // checkpoint modules, in checkpoint order
  bool draft = false;            // a second layer the MTP draft builds over the same modules
};

// Build the layers of `modules` (norms and parameter-only modules are not layers).
std::vector<Layer> build_layers(const checkpoint::ModuleList& modules, const ModelInfo& model);

} // namespace qpatch::engine
