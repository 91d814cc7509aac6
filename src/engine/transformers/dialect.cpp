// SPDX-License-Identifier: Apache-2.0
// transformers' dialect: compressed-tensors through the library's own matching
// (vllm-project/compressed-tensors ac8e2ba8, quantization/lifecycle/apply.py and
// utils/match.py, read in the fetched repository).
#include "engine/registry.hpp"

#include <qpatch/engine/dialect.hpp>

namespace qpatch::engine {

Dialect transformers_dialect(const EngineVersion& /*version*/, const ModelInfo& /*model*/) {
  Dialect dialect;
  dialect.engine_name = "transformers";
  // apply.py apply_quantization_config calls match_named_modules(model, target_to_scheme,
  // config.ignore, warn_on_fail=True) with no `fused` mapping, so match.py match_name is
  // `target == name` or re.match; _match_class compares the MRO's class names for equality
  // ("will never match against a regex pattern"), and is_match tests ignore by name or class.
  dialect.compressed_tensors.library_matching = true;
  // AWQ and bitsandbytes: quantizer_awq.py / quantizer_bnb_4bit.py
  // _process_model_before_weight_loading -> base.py get_modules_to_not_convert, then
  // quantizers_utils.py should_convert_module (AWQ) or integrations/bitsandbytes.py
  // _replace_with_bnb_linear (commits: tools/transformers_diff/SOURCES, executed by
  // tools/transformers_diff). Nothing is derived from the headers.
  dialect.skip_list.transformers_convert = true;
  dialect.skip_list.awq_derives_absent_list = false;
  // FP8: utils/quantization_config.py FineGrainedFP8Config.__init__ (store copy, SOURCES) takes
  // `ignored_layers` only when modules_to_not_convert is None; the quantizer
  // (quantizer_finegrained_fp8.py) hands it to get_modules_to_not_convert (["lm_head"] only
  // for None) and replace_with_fp8_linear's should_convert_module.
  dialect.skip_list.fp8_prefers_modules_to_not_convert = true;
  // ModelOpt: quantizers/auto.py (6ed74f1) AUTO_QUANTIZATION_CONFIG_MAPPING has no "modelopt";
  // AutoHfQuantizer.supports_quant_method warns "Unknown quantization type ... we will skip the
  // quantization" and get_hf_quantizer returns no quantizer: every nn.Linear stays one.
  dialect.skip_list.modelopt_unsupported = true;
  // GPTQ: quantizer_gptq.py (0276854) GptqHfQuantizer._process_model_before_weight_loading ->
  // optimum v2.1.0 gptq/quantizer.py GPTQQuantizer.convert_model (block and list only; no
  // list derived from the headers, no `dynamic`, no `lm_head`).
  dialect.gptq.optimum_convert = true;
  dialect.gptq.reads_module_list = false;
  // auto-round: quantizers/quantizer_auto_round.py (cea4241) AutoRoundQuantizer.
  // _process_model_before_weight_loading -> intel/auto-round v0.14.2 (e98f1c1)
  // inference/convert_model.py convert_hf_model -> get_layer_config, _replace_by_quant_layers
  // (auto_round_rules.cpp cites each step).
  dialect.auto_round.library_convert = true;
  return dialect;
}

} // namespace qpatch::engine
