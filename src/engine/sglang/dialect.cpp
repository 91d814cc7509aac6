// SPDX-License-Identifier: Apache-2.0
// SGLang's dialect (sgl-project/sglang; the versions in sglang/history.cpp change its naming,
// not these rules).
#include "engine/registry.hpp"

#include <qpatch/engine/dialect.hpp>

namespace qpatch::engine {

namespace {

void compressed_tensors_dialect(CtDialect& ct, const EngineVersion& version) {
  // compressed_tensors/utils.py check_equal_or_regex_match, as should_ignore_layer calls it:
  // until #32736, _is_equal_or_regex_match(check_contains=True), `target.lower() in
  // value.lower()` (@06b5b19, b553569); from #32736 (f69af7b7a, 2026-07-29, read in upstream
  // history) `target == layer_name or layer_name.endswith("." + target)`, case-sensitive, so
  // that a parent module's entry no longer swallows its quantized children.
  ct.substring_ignore = !version.has("#32736");
  ct.suffix_ignore = version.has("#32736");
  // CompressedTensorsConfig.get_quant_method (compressed_tensors.py @b553569) returns a method
  // for LinearBase and FusedMoE layers only.
  ct.head_without_method = true;
  // get_quant_method runs should_ignore_layer, then get_scheme, whose find_matched_target
  // raises ValueError("Unable to find matching target for {layer_name} in the
  // compressed-tensors config.") with no try/except around it (compressed_tensors.py
  // @b553569, compressed_tensors/utils.py @06b5b19): a Linear no target matches stops the
  // model's construction, as vLLM's did before #41965.
  ct.untargeted_raises = true;
  // find_matched_target (utils.py @06b5b19): _find_first_match(layer_name) or
  // _find_first_match(module.__class__.__name__, check_contains=True) or _match_fused_layer:
  // the class step comes before the fused shards, as vLLM's before #49483.
  ct.class_before_fused = true;
}

void awq_and_fp8_dialect(Dialect& dialect, const EngineVersion& version) {
  // awq/awq.py AWQMarlinConfig (@01f67c3): is_layer_skipped_awq(prefix, modules_to_not_convert)
  // on the name each layer is built under; from_config reads the list or [] (no derivation).
  dialect.skip_list.awq_built_name_only = true;
  dialect.skip_list.awq_derives_absent_list = false;
  // AWQMarlinConfig.get_quant_method (@01f67c3): `isinstance(layer, LinearBase) or
  // (isinstance(layer, ParallelLMHead) and self.lm_head_quantized)`, lm_head_quantized being
  // get_from_keys_or(config, ["lm_head"], default=False); the plain AWQConfig (a config Marlin
  // cannot serve) answers LinearBase only.
  dialect.skip_list.awq_reads_lm_head = true;
  dialect.skip_list.awq_head_needs_marlin = true;

  // FP8 (fp8.py @00563d3 Fp8Config.from_config): ignored_layers = get_from_keys_or(config,
  // ["ignored_layers", "modules_to_not_convert"], None), base_config.py @008b79d get_from_keys
  // returning the first key `in config` (an empty or null ignored_layers wins); each entry then
  // held as layer.removeprefix("model.") and f"model.{base}".
  dialect.skip_list.fp8_first_present_key = true;
  // Fp8Config.get_quant_method asks is_layer_skipped(prefix, ignored_layers,
  // fused_mapping=self.packed_modules_mapping) for LinearBase and FusedMoE only (a
  // ParallelLMHead gets None: dense). quantization/utils/utils.py @c5bef61 is_layer_skipped: a
  // last component in the mapping is judged by its shards (`shard_prefix in ignored_layers`,
  // all alike or ValueError), never by its own name; else `prefix in ignored_layers`, or for a
  // "gate_up_proj" name both gate_proj and up_proj listed, or for an "experts" name the prefix a
  // substring of an entry holding "experts".
  dialect.skip_list.fused_name_skips = false;
  dialect.skip_list.fp8_gate_up_by_parts = true;
  // That is a 2025 copy. On main in 2026 (quantization/utils.py, read in upstream history,
  // docs/research/sglang-fp8-skip.md): `ignored in prefix` (a substring, since #14251,
  // 2025-12-04) for names and shards; from #23467 (4323fce82, 2026-04-22) _module_path_match
  // (equal, a parent, or a run of whole dotted parts) with _FALLBACK_FUSED_SHARDS for a proj name
  // the mapping lacks (qkv_proj, gate_up_proj, in_proj_ba, in_proj_qkvz; the last two dropped by
  // #23973, 3d31ac267, 2026-04-29); trailing dots stripped from #26287 (2b1e53c98, 2026-05-26).
  // The experts branch ORs the general hit from #18742 (0e8697781, 2026-03-01), which also gave
  // Fp8Config the packed mapping and made a FusedMoE ask is_layer_skipped.
  auto& skip = dialect.skip_list;
  skip.skipped_match = version.has("#23467") ? SkippedMatch::module_path : SkippedMatch::substring;
  skip.skipped_strips_dots = version.has("#26287");
  if (version.has("#23467")) {
    skip.fallback_fused_shards = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                                  {"gate_up_proj", {"gate_proj", "up_proj"}}};
    if (!version.has("#23973")) {
      skip.fallback_fused_shards.push_back({"in_proj_ba", {"in_proj_b", "in_proj_a"}});
      skip.fallback_fused_shards.push_back({"in_proj_qkvz", {"in_proj_qkv", "in_proj_z"}});
    }
  }
  skip.experts_keep_general_hit = version.has("#18742");
  skip.fp8_without_fused_mapping = !version.has("#18742");
  skip.fp8_model_prefix_variants = version.has("#18742");
}

void bnb_modelopt_quark_dialect(Dialect& dialect, const EngineVersion& version) {
  // bitsandbytes (bitsandbytes.py @b53daee): from_config reads llm_int8_skip_modules (None or
  // absent: []), no mapper renames it (Qwen3.5's hf_to_sglang_mapper is None);
  // get_quant_method gives a LinearBase UnquantizedLinearMethod when
  // is_layer_skipped_bnb(prefix, ...) holds (an entry equal to one dot-component of the name it
  // builds, a fused layer by its fused name, or to a leading run of components), a FusedMoE
  // BitsAndBytesMoEMethod without a test, anything else (ParallelLMHead) None: dense.
  dialect.skip_list.bnb_experts_ignore_list = true;

  // ModelOpt (modelopt_quant.py, store 54490057226, no commit named; base_config.py @008b79d):
  // ModelOptQuantConfig._get_quant_method gives a LinearBase UnquantizedLinearMethod when
  // is_layer_skipped(prefix, exclude_modules, packed_modules_mapping) (quantization/utils/utils.py
  // @c5bef61, FP8's exact rule) or is_layer_excluded(prefix); a FusedMoE None (dense) when
  // is_layer_excluded; anything else (a ParallelLMHead) None. from_config reads `ignore` of the
  // flat config.json format, else quantization.exclude_modules, as written:
  // apply_weight_name_mapper runs only for a class with an hf_to_sglang_mapper (none of the naming
  // tables').
  dialect.skip_list.modelopt_skipped_or_excluded = true;
  // Before #18546 (33c33a7d, 2026-02-21, read in upstream history at its parent):
  // ModelOptFp8Config.is_layer_excluded was `any(module in prefix or (prefix.startswith(
  // "language_model.") and module in prefix.removeprefix("language_model.")) ...)`,
  // ModelOptFp4Config's `re.fullmatch(regex_str, prefix)` or an MLA tail (no dot-parts, no
  // stripped name), and _get_quant_method returned Moe(self) for every FusedMoE.
  dialect.skip_list.modelopt_excluded_per_class = !version.has("#18546");
  dialect.skip_list.nvfp4_dense_attention_and_draft = version.has("#18937");
  // ModelOptMixedPrecisionConfig.get_quant_method (store 54490057226): FP8 and NVFP4 only, the
  // dialect's default modelopt_mixed_algos.

  // Quark (quark/quark.py @ce1ec3af QuarkConfig.get_quant_method, quark/utils.py @382abd60
  // should_ignore_layer; docs/research/quark-sglang-transformers.md): vLLM's rule before #46757,
  // ported as is. A plain `exclude` entry equal to the built name, or "re:" + a regex that
  // re.match-es it; a fused layer whose last component the quant config's packed_modules_mapping
  // holds by its shards only (all alike, or "ValueError: Found a different quantization schemes for
  // [...] in ... vLLM requires all to use the same scheme."); a FusedMoE by its own prefix only
  // (an entry naming one expert excludes nothing: #39317, September 2026, is later than the
  // newest SGLang read); LinearBase, RadixAttention and FusedMoE get a method, a ParallelLMHead
  // none (dense). apply_weight_name_mapper renames the entries only for a class with an
  // hf_to_sglang_mapper (none of the naming tables'): they are compared as written.
  dialect.skip_list.quark_experts_by_children = false;
  // qwen3_5_mtp.py @008b79d _mtp_quant_config (#23146): any exclude entry starting with "mtp."
  // gives the Qwen3.5 draft no quant config.
  dialect.skip_list.quark_mtp_entry_drops_draft_quant = version.has("#23146");
}

} // namespace

Dialect sglang_dialect(const EngineVersion& version, const ModelInfo& /*model*/) {
  Dialect dialect;
  dialect.engine_name = "SGLang";
  compressed_tensors_dialect(dialect.compressed_tensors, version);
  awq_and_fp8_dialect(dialect, version);
  bnb_modelopt_quark_dialect(dialect, version);
  // auto-round (auto_round/auto_round.py, routing.py @68e037f): auto_round_sglang.cpp.
  dialect.auto_round.sglang_routing = true;

  GptqDialect& gptq = dialect.gptq;
  // gptq/gptq.py (@0cdfa2f) get_linear_quant_method: `dynamic` only; no module list is read.
  gptq.reads_module_list = false;
  // GPTQMarlinMoEMethod is returned for every FusedMoE without consulting `dynamic`.
  gptq.moe_reads_dynamic = false;
  // model_config.py _verify_quantization (@001adf5) takes the first override_quantization_method
  // that answers: GPTQMarlinConfig's, for a config is_gptq_marlin_compatible accepts ((bits,
  // sym) in TYPE_MAP {(4, True), (8, True)}, group_size in [-1, 32, 64, 128]); then
  // quantization/utils/utils.py (@c5bef61) override_config raises for a gptq_marlin layer
  // whose overridden (bits, sym) is not in TYPE_MAP, and plain gptq takes 2/3/4/8 bits.
  gptq.marlin_always = false;
  return dialect;
}

} // namespace qpatch::engine
