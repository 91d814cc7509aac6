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
    return "loads, and drops the stored weights silently";
  case Mismatch::config_shards_disagree:
    // The quant config raises ValueError while the fused layer is built: compressed_tensors/
    // utils.py and quark/utils.py should_ignore_layer ("Found a different quantization schemes
    // for ..."), quantization/utils.py is_layer_skipped ("Detected some but not all shards of
    // ..."), ModelOptMixedPrecisionConfig._resolve_quant_algo ("Mixed quant_algo within fused
    // layer ..."); the MTP draft is built only with speculative decoding.
    return std::string("start-up fails") +
           (context.first_module.rfind("mtp.", 0) == 0 ? " with speculative decoding" : "") +
           " while building the fused layer (its shards must agree)";
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
