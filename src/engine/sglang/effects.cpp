// SPDX-License-Identifier: Apache-2.0
// What SGLang does with each mismatch.
#include "engine/registry.hpp"

#include <qpatch/engine/effects.hpp>

namespace qpatch::engine {

// SGLang's loaders skip a checkpoint tensor whose name the model has no parameter for
// (`if name not in params_dict: continue`), so a mismatch loads without an error.
std::string sglang_effect(Mismatch mismatch, const MismatchContext& context) {
  switch (mismatch) {
  case Mismatch::dense_built_quantized:
  case Mismatch::quantized_built_dense:
  case Mismatch::config_shards_disagree:
    return "loads, and drops the stored weights silently";
  case Mismatch::quantized_without_config:
    return "builds every layer dense and drops the quantized weights silently";
  case Mismatch::config_rejected:
    // quantization/utils/utils.py override_config (@c5bef61) raises while a layer is built.
    return refuses_config(context.engine_error);
  case Mismatch::untargeted_raises:
    // compressed_tensors.py get_quant_method -> find_matched_target (@b553569).
    return untargeted_raise();
  default:
    return "";
  }
}

} // namespace qpatch::engine
