// SPDX-License-Identifier: Apache-2.0
// What vLLM does with each mismatch (vLLM main 017e9f4).
#include "engine/registry.hpp"

#include <qpatch/engine/effects.hpp>

namespace qpatch::engine {
namespace {

// vLLM's AutoWeightsLoader (model_executor/models/utils.py `_load_module`, vLLM main 017e9f4)
// raises for a checkpoint tensor the built model has no parameter for. The MTP draft model
// loads the head's tensors with the `mtp.` prefix stripped, so its message names `fc.weight`
// (README's flagship).
std::string missing_parameter(const std::string& tensor, const std::string& when) {
  const std::string shown = tensor.rfind("mtp.", 0) == 0 ? tensor.substr(4) : tensor;
  return "start-up fails" + when + ": \"ValueError: There is no module or parameter named '" +
         shown + "' in ...\"";
}

} // namespace

std::string vllm_effect(Mismatch mismatch, const MismatchContext& context) {
  const bool mtp = context.first_module.rfind("mtp.", 0) == 0;
  const std::string when = mtp ? " once speculative decoding loads the MTP head" : "";
  switch (mismatch) {
  case Mismatch::dense_built_quantized:
    // The scheme's create_weights decides where the stored `weight` goes; the loader for a
    // ModelWeightParameter (parameter.py load_column_parallel_weight and its merged/qkv forms,
    // 017e9f4) asserts the shape and then `self.data.copy_(loaded_weight)`, which casts.
    switch (context.built.layout) {
    case BuiltWeight::Layout::same_shape:
      return "loads without an error: the stored BF16 weight of " + context.first_module +
             " is cast into its " + context.built.dtype +
             " `weight` parameter and the weight scale is never loaded, so the layer computes "
             "garbage" +
             (mtp ? std::string(" and the draft's acceptance collapses") : std::string());
    case BuiltWeight::Layout::packed_fp4:
      return "start-up fails" + when +
             ": AssertionError in the weight loader (the `weight` parameter holds packed FP4, "
             "half the stored width)";
    case BuiltWeight::Layout::own_name:
      break;
    }
    return missing_parameter(context.first_module + ".weight", when);
  case Mismatch::quantized_built_dense:
    return missing_parameter(context.first_module + "." + context.packed_tensor, when);
  case Mismatch::config_shards_disagree:
  case Mismatch::disk_shards_disagree:
    return "start-up fails" + std::string(mtp ? " with speculative decoding" : "") +
           " while building the fused layer (its shards must agree)";
  case Mismatch::unindexed_file:
    return "never opens the file, so its tensors are not loaded";
  case Mismatch::untargeted_raises:
    return untargeted_raise();
  case Mismatch::quantized_without_config:
    // Without a quantization config vLLM builds every Linear unquantized, whose only
    // parameters are weight (and bias): the first packed or scale tensor has nowhere to go
    // (model_executor/models/utils.py AutoWeightsLoader._load_module, vLLM main 017e9f4).
    return "start-up fails: \"" + context.engine_error + "\"";
  case Mismatch::config_rejected:
    // Raised while vLLM reads quantization_config (the method's from_config/__init__, see
    // vllm/config_checks.cpp), before any layer or weight: speculative decoding or not.
    return refuses_config(context.engine_error);
  }
  return "";
}

} // namespace qpatch::engine
