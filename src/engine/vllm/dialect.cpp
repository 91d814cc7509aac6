// SPDX-License-Identifier: Apache-2.0
// vLLM's dialect for each version (vllm-project/vllm, the changes in vllm/history.cpp).
#include "engine/registry.hpp"

#include <qpatch/engine/dialect.hpp>

namespace qpatch::engine {

Dialect vllm_dialect(const EngineVersion& version, const ModelInfo& model) {
  Dialect dialect;
  dialect.engine_name = "vLLM";
  CtDialect& ct = dialect.compressed_tensors;
  // compressed_tensors.py get_scheme before #41965 (c1819ca28^): find_matched_target raised
  // ValueError for a layer no target matched, and get_quant_method lets it through for a
  // LinearBase (it catches it for a ParallelLMHead only).
  ct.untargeted_raises = !version.has("#41965");
  // compressed_tensors/utils.py find_matched_target before #49483 (8a7b3c299^): name, then the
  // module's class name, then the fused shards.
  ct.class_before_fused = !version.has("#49483");
  // get_quant_method before #37291 (e8b055a5a^) has no ParallelLMHead branch.
  ct.head_without_method = !version.has("#37291");

  SkipListDialect& skip = dialect.skip_list;
  // quant_utils.py is_layer_skipped before #43981 (a3195fab7^): a fused prefix is always judged
  // by prefix.replace(proj, shard) for each shard, never by its own name.
  skip.fused_name_skips = version.has("#43981");
  // quark/utils.py should_ignore_layer's check_children, asked for a RoutedExperts by
  // QuarkConfig.get_quant_method since #46757 (02bf9c790).
  skip.quark_experts_by_children = version.has("#46757");
  // qwen3_5_mtp.py / qwen3_next_mtp.py: fc_quant = None for modelopt_fp4 since #38832
  // (771913e4a) / #46316 (e45b27992).
  skip.fc_dense_nvfp4 =
      version.has(model.architecture == "Qwen3NextForCausalLM" ? "#46316" : "#38832");
  // modelopt.py get_quant_method: LinearBase and ParallelLMHead since #42124 (6f5b53324);
  // LinearBase only before.
  skip.modelopt_quantizes_head = version.has("#42124");
  // auto_awq.py AutoAWQConfig.maybe_update_config: an absent modules_to_not_convert is filled
  // from the headers (every module whose tensors are all floating point).
  skip.awq_derives_absent_list = true;
  // auto_awq.py AutoAWQConfig.get_quant_method: a ParallelLMHead with lm_head: true.
  skip.awq_reads_lm_head = true;
  // modelopt.py ModelOptQuantConfigBase.apply_vllm_mapper (run only for a model class with a
  // mapper): "X*" becomes "X" and "X.*" before the renames.
  skip.modelopt_splits_globs = model.has_mapper;
  // modelopt.py ModelOptQuantConfigBase.get_quant_method: names holding vision_tower,
  // vision_model or vit_large_projector get UnquantizedLinearMethod.
  skip.modelopt_dense_vision = true;
  // modelopt.py ModelOptMixedPrecisionConfig.get_quant_method (017e9f4): FP8 and NVFP4, then
  // W4A16_NVFP4 since #42566 (e203006a8) and MXFP8 since #46756 (debec6440); else
  // UnquantizedLinearMethod ("Layer not in quantized_layers - leave unquantized").
  if (version.has("#42566")) {
    skip.modelopt_mixed_algos.emplace_back("W4A16_NVFP4");
  }
  if (version.has("#46756")) {
    skip.modelopt_mixed_algos.emplace_back("MXFP8");
  }

  // qwen3_5_mtp.py: the "-:"/"mtp" dynamic special case since #48816 (c8db00b16).
  dialect.gptq.qwen35_mtp_special_case = version.has("#48816");
  // utils/gptq_utils.py override_config (017e9f4): since #38288 (fa2a33b89) every GPTQ config
  // is an AutoGPTQConfig over Marlin's TYPE_MAP; before, get_quant_config picked gptq_marlin
  // only for a Marlin-compatible config (gptq_marlin.py is_gptq_marlin_compatible).
  dialect.gptq.marlin_always = version.has("#38288");
  return dialect;
}

} // namespace qpatch::engine
