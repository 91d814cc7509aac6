// SPDX-License-Identifier: Apache-2.0
// transformers' naming: one nn.Linear per checkpoint module, no renames, class "Linear"; the
// compressed-tensors library also matches a shard through the fused layer vLLM would build.
#include <qpatch/engine/model_info.hpp>

namespace qpatch::engine {

ModelInfo transformers_view(const ModelInfo& model) {
  ModelInfo view;
  view.architecture = model.architecture;
  view.known = model.known;
  view.engine_layers = false;
  view.fused_aliases = model.packed;
  return view;
}

} // namespace qpatch::engine
