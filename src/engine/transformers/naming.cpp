// SPDX-License-Identifier: Apache-2.0
// transformers' naming: one nn.Linear per checkpoint module, no renames, class "Linear" (the
// compressed-tensors library is given no fused mapping: a fused name reaches no module).
#include <qpatch/engine/model_info.hpp>

namespace qpatch::engine {

ModelInfo transformers_view(const ModelInfo& model) {
  ModelInfo view;
  view.architecture = model.architecture;
  view.known = model.known;
  view.engine_layers = false;
  return view;
}

} // namespace qpatch::engine
