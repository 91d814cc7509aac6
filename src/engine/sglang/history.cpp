// SPDX-License-Identifier: Apache-2.0
// SGLang's history as qpatch models it: the merged changes that move a verdict, and the PRs
// not merged in the newest source read that users run patched builds with. SGLang's repository
// is read file by file (docs/research/sglang-versions.md lists each file and commit).
#include <qpatch/engine/versions.hpp>

namespace qpatch::engine {

namespace {

// Merged up to 2026-03-14.
std::vector<Change> changes_merged_to_02_21() {
  return {
      // sgl-project/sglang#18937 ("NVFP4 checkpoint support", merged; read in qwen3_5.py
      // @005fa71 and qwen3_5_mtp.py @008b79d): under modelopt_fp4 the decoder layers' attention
      // and linear attention, and the whole MTP draft, are built without a quant config. Its
      // merge day was not read, and the era-A row's own source, qwen3_5.py @cf4465f, already
      // has the attention and GDN gate (docs/research/sglang-versions.md §1), so it is modelled
      // from the first day (the draft's gate with it: no pre-#18926 qwen3_5_mtp.py is stored).
      {"#18937",
       "",
       "2026-02-09",
       "",
       "qwen3_5.py, qwen3_5_mtp.py: NVFP4 (modelopt_fp4) builds attention, linear attention and "
       "the MTP draft dense",
       "modelopt",
       "Qwen3_5"},
      // sgl-project/sglang#18926 ("[Qwen3.5] Support block-wise FP8 quantization and model
      // adaptation", merged): Qwen3VLForConditionalGeneration builds the text model at
      // add_prefix("model.language_model") and the vision tower at model.visual with
      // quant_config=None; Qwen3.5 inherits both. The PR opened on 2026-02-17; its merge day was
      // not read, so the era boundary is that day. Between it and #23471 (April) the Qwen3.5 VLM
      // inherited Qwen3-VL's hf_to_sglang_mapper and declared no packed_modules_mapping
      // (xbfs/sglang@c72ed54; sglang/naming.cpp qwen3_vl_config_mapper).
      {"#18926",
       "",
       "2026-02-17",
       "",
       "qwen3_vl.py: the Qwen3.5 and Qwen3-VL text model is built at model.language_model (its "
       "layers carry the checkpoint's names) and the vision tower without a quant config",
       "",
       "Qwen3_5 Qwen3VL"},
      // sgl-project/sglang#18546 (33c33a7d, merged 2026-02-21, read in upstream history):
      // ModelOptQuantConfig.is_layer_excluded, one rule for every ModelOpt class (a glob
      // full-matching the name, one of its dot-parts, or the name without "language_model."),
      // and a FusedMoE it excludes is built dense; before it ModelOptFp8Config tested substrings,
      // ModelOptFp4Config the whole name, and no FusedMoE was excluded (sglang/dialect.cpp).
      // ModelOptFp4Config's MLA-tail test asserted five name parts on both sides before it (an
      // AssertionError for a shorter entry): not modelled.
      {"#18546",
       "33c33a7d",
       "2026-02-21",
       "",
       "modelopt_quant.py: one is_layer_excluded for ModelOpt FP8 and NVFP4 (glob over the name "
       "or one of its dot-parts), and a FusedMoE it excludes built dense (before: FP8 tested "
       "substrings, NVFP4 the whole name, experts always quantized)",
       "modelopt",
       ""},
  };
}

std::vector<Change> changes_merged_02_26_to_03_14() {
  return {
      // sgl-project/sglang#19425 (f0d78f2e, merged 2026-02-26, read in upstream history held by
      // fork mirrors): DeepseekV3ForCausalLMNextN gets hf_to_sglang_mapper
      // {"model.layers.61": "model.decoder"} (substring), and QuarkConfig the
      // apply_weight_name_mapper that renames its exclude_layers with it. The draft's quant
      // config of a DeepSeek-V3 checkpoint then reads checkpoint names of layer 61 as its own:
      // compressed-tensors' ignore list (compressed_tensors.py apply_weight_name_mapper, older)
      // and Quark's exclude list, ModelOpt's exclude_modules and quantized_layers keys
      // (modelopt_quant.py apply_weight_name_mapper: apply_list since #18370, apply_dict since
      // #20407); compressed-tensors' targets are renamed too (not modelled).
      {"#19425",
       "f0d78f2e",
       "2026-02-26",
       "",
       "deepseek_nextn.py: the DeepSeek-V3 draft's mapper renames model.layers.61 to "
       "model.decoder in its compressed-tensors ignore, Quark exclude and ModelOpt "
       "exclude_modules and quantized_layers",
       "compressed-tensors quark modelopt",
       "DeepseekV3ForCausalLM GlmMoeDsaForCausalLM"},
      // The same PR's QuarkConfig.apply_weight_name_mapper (quark/quark.py @f0d78f2e) renames
      // `exclude` with any class's mapper: the Qwen3.5 VLM's, inherited from Qwen3-VL until
      // #23471 (sglang/naming.cpp qwen3_vl_config_mapper). One row per concern, so that a
      // Qwen3.5 checkpoint of another method is not judged at one more version.
      {"#19425",
       "f0d78f2e",
       "2026-02-26",
       "",
       "quark.py: QuarkConfig.apply_weight_name_mapper renames exclude with Qwen3-VL's mapper (the "
       "Qwen3.5 VLM's until #23471, Qwen3-VL's own)",
       "quark",
       "Qwen3_5ForConditionalGeneration Qwen3_5MoeForConditionalGeneration Qwen3VL Qwen2VL "
       "Qwen2_5_VL"},
      // sgl-project/sglang#18742 (0e8697781, merged 2026-03-01, read in upstream history):
      // Fp8Config gets the packed mapping and asks is_layer_skipped for a FusedMoE too, and the
      // experts branch of quantization/utils.py is_layer_skipped keeps a general hit.
      {"#18742",
       "0e8697781",
       "2026-03-01",
       "",
       "fp8.py, quantization/utils.py: FP8 judges fused layers through the packed mapping and "
       "experts by ignored_layers (before, a FusedMoE was always FP8)",
       "fp8 modelopt",
       ""},
      // sgl-project/sglang#20407 (75a7879fd, merged 2026-03-14, read in upstream history):
      // configs/model_config.py _parse_modelopt_quant_config reads a ModelOpt MIXED_PRECISION
      // config as modelopt_mixed for Nemotron-H only, as w4afp8 otherwise (before it, always
      // w4afp8); modelopt_quant.py gains ModelOptMixedPrecisionConfig (sglang/config_checks.cpp
      // sglang_config_read_as).
      {"#20407",
       "75a7879fd",
       "2026-03-14",
       "",
       "model_config.py: ModelOpt MIXED_PRECISION read as modelopt_mixed for Nemotron-H (as "
       "w4afp8 otherwise, and before it for every model)",
       "modelopt",
       ""},
  };
}

// Merged from 2026-03-23 to 2026-04-20.
std::vector<Change> changes_merged_03_23_to_04_20() {
  return {
      // sgl-project/sglang#21019 (merged 2026-03-23 as 5bdc07d9, a third-party dossier's date):
      // Qwen3_5GatedDeltaNet builds in_proj_qkvz and in_proj_ba fused (xbfs/sglang@c72ed54 has
      // its fused_qkvzba_split_reshape_cat_contiguous); before it in_proj_qkv, in_proj_z,
      // in_proj_b and in_proj_a were layers of their own (sammysun0711/sglang@07d9ce3).
      {"#21019",
       "5bdc07d9",
       "2026-03-23",
       "",
       "qwen3_5.py: the GDN projections are built fused (in_proj_qkvz, in_proj_ba)",
       "",
       "Qwen3_5ForConditionalGeneration Qwen3_5MoeForConditionalGeneration"},
      // sgl-project/sglang#21280 (990c7590b, merged 2026-04-03): Fp8Config.apply_weight_name_mapper
      // renames ignored_layers with the class's mapper, so #19425's reaches FP8 too.
      {"#21280",
       "990c7590b",
       "2026-04-03",
       "",
       "fp8.py: Fp8Config.apply_weight_name_mapper (the DeepSeek-V3 draft's ignored_layers renamed "
       "like its Quark exclude list, Qwen3-VL's and until #23471 the Qwen3.5 VLM's by Qwen3-VL's "
       "mapper)",
       "fp8",
       "DeepseekV3ForCausalLM GlmMoeDsaForCausalLM Qwen3_5ForConditionalGeneration "
       "Qwen3_5MoeForConditionalGeneration Qwen3VL Qwen2VL Qwen2_5_VL"},
      // sgl-project/sglang#23146 (the fix of #23113, merged; read in qwen3_5_mtp.py @008b79d
      // _mtp_quant_config, and cited as #23146 by #39064): a Quark config whose exclude list
      // (QuarkConfig.exclude_layers) holds an entry starting with "mtp." builds the whole MTP
      // draft without a quant config. Its merge day was not read: it is dated 2026-04-20, after
      // #23123 (2026-04-18) reported the same MI355 MTP symptom, approximately.
      {"#23146",
       "",
       "2026-04-20",
       "",
       "qwen3_5_mtp.py: a Quark exclude entry starting with \"mtp.\" builds the whole MTP draft "
       "dense",
       "quark",
       "Qwen3_5"},
      // sgl-project/sglang#23219 (57ecce98, merged 2026-04-20, read in upstream history):
      // DeepseekModelNextN builds eh_proj with the Quark config, and the DeepSeek-V3 NextN draft
      // (GLM-5's too until #30265) is built without one when its exclude list skips the NextN
      // layer's mapped prefix (sglang/naming.cpp nextn_draft_quant_gates).
      {"#23219",
       "57ecce98",
       "2026-04-20",
       "",
       "deepseek_nextn.py: under Quark the draft's eh_proj is quantized, and the whole draft is "
       "built dense when exclude skips its mapped layer prefix",
       "quark",
       "DeepseekV3ForCausalLM GlmMoeDsaForCausalLM"},
  };
}

// Merged from 2026-04-22 to 2026-05-26.
std::vector<Change> changes_merged_04_22_to_05_26() {
  return {
      // sgl-project/sglang#23467 (4323fce82, merged 2026-04-22, read in upstream history):
      // quantization/utils.py is_layer_skipped matches on dotted module-path boundaries
      // (_module_path_match) where it tested substrings, and fuses q/k/v, gate/up and the GDN
      // projections by _FALLBACK_FUSED_SHARDS when the mapping has no entry.
      {"#23467",
       "4323fce82",
       "2026-04-22",
       "",
       "quantization/utils.py: FP8 and ModelOpt skip entries match whole dotted parts "
       "(\"mlp.gate\" "
       "no longer skips mlp.gate_up_proj), with fallback fused shards",
       "fp8 modelopt",
       ""},
      // sgl-project/sglang#23471 ("[Fix] NVFP4 qwen3.5 quant error fix by add
      // packed_modules_mapping", merged 2026-04-28 as 9814cc89, read in a third-party commit log
      // and PR table; its description is dated 2026-04-22): from then the Qwen3.5 classes give
      // their quant config the packed_modules_mapping qpatch's row holds and no mapper
      // (qwen3_5.py @005fa71), unconditionally. #21234 (2026-03-30) and #21692 (2026-04-08) had
      // set both only under `if _is_gfx95 or _is_npu`, so on CUDA the interim lasts until this
      // day. Before it (xbfs/sglang@c72ed54) they declared none and inherited Qwen3-VL's
      // hf_to_sglang_mapper, which renames the target's compressed-tensors, ModelOpt, Quark
      // (#19425) and FP8 (#21280) entries (sglang/naming.cpp qwen3_vl_config_mapper), and
      // before #21019 (merged 2026-03-23) the GDN projections were built apart
      // (docs/research/sglang-versions.md §6-7, docs/research/sglang-qwen3vl-mapper.md).
      {"#23471",
       "9814cc89",
       "2026-04-28",
       "0.5.11",
       "qwen3_5.py: the Qwen3.5 classes give their quant config packed_modules_mapping "
       "(qkv_proj, gate_up_proj, in_proj_qkvz, in_proj_ba)",
       "",
       "Qwen3_5ForConditionalGeneration Qwen3_5MoeForConditionalGeneration"},
      // sgl-project/sglang#23973 (3d31ac267, merged 2026-04-29): the fallback fused shards keep
      // qkv_proj and gate_up_proj only.
      {"#23973",
       "3d31ac267",
       "2026-04-29",
       "",
       "quantization/utils.py: the fallback fused shards drop in_proj_ba and in_proj_qkvz",
       "fp8 modelopt",
       ""},
      // sgl-project/sglang#26287 (2b1e53c98, merged 2026-05-26): trailing dots stripped from
      // entry and name before _module_path_match ("model.layers.0." names layer 0's children).
      {"#26287",
       "2b1e53c98",
       "2026-05-26",
       "",
       "quantization/utils.py: an FP8 or ModelOpt skip entry ending in \".\" names its module",
       "fp8 modelopt",
       ""},
  };
}

// Merged from 2026-06-27, then the unmerged PRs judged.
std::vector<Change> changes_from_06_27() {
  return {
      // sgl-project/sglang#27705 (073de150, merged 2026-06-27, read in upstream history):
      // the DSA indexer's wk and weights_proj fused into a dense wk_weights_proj on CUDA (from
      // #30111, e552f6ed, 2026-07-04, only with indexer_rope_interleave). The build judged keeps
      // them apart (sglang/naming.cpp glm5_row); the report says so from this day.
      {"#27705",
       "073de150",
       "2026-06-27",
       "",
       "dsa_indexer.py: on CUDA the indexer's wk is fused into a dense wk_weights_proj (an FP8 wk "
       "dequantized); the build judged keeps wk apart, as off CUDA",
       "",
       "GlmMoeDsaForCausalLM"},
      // sgl-project/sglang#27906 (b1942fc3e, merged 2026-07-05, read in upstream history,
      // unchanged @b98d4721): a MIXED_PRECISION config is read as modelopt_mixed when a
      // quantized_layers entry's quant_algo is NVFP4 or W4A16_NVFP4, as w4afp8 otherwise.
      {"#27906",
       "b1942fc3e",
       "2026-07-05",
       "",
       "model_config.py: ModelOpt MIXED_PRECISION read as modelopt_mixed when a quantized_layers "
       "entry is NVFP4 or W4A16_NVFP4 (as w4afp8 otherwise), for every model",
       "modelopt",
       ""},
      // sgl-project/sglang#30265 (07ef650e, merged 2026-07-08, read in upstream history): GLM-5's
      // draft becomes GlmMoeDsaForCausalLMNextN, whose hf_to_sglang_mapper is empty (entries
      // naming layer 61 no longer reach the draft) and whose _resolve_nextn_quant_config copies
      // Quark exclude entries naming the NextN layer (model.layers.{N}.) onto the draft's names.
      {"#30265",
       "07ef650e",
       "2026-07-08",
       "",
       "glm4_moe.py: GLM-5's draft drops the layer-61 mapper and copies Quark exclude entries "
       "naming its layer onto its own names",
       "compressed-tensors fp8 quark",
       "GlmMoeDsaForCausalLM"},
      // sgl-project/sglang#32736 (f69af7b7a, merged 2026-07-29, read in upstream history):
      // compressed_tensors/utils.py check_equal_or_regex_match reads a plain ignore entry as the
      // layer name or a dotted suffix of it, case-sensitive, where it was a case-insensitive
      // substring (sglang/dialect.cpp).
      {"#32736",
       "f69af7b7a",
       "2026-07-29",
       "",
       "compressed_tensors/utils.py: a plain ignore entry matches the layer name or a dotted "
       "suffix of it (was: a case-insensitive substring)",
       "compressed-tensors",
       ""},
      // sgl-project/sglang#35887 (open since 2026-08-21; #39064 and #38870 retry it): users run
      // it as a patch, so qpatch judges the newest version with it too.
      {"#35887",
       "",
       "",
       "",
       "qwen3_5_mtp.py: the MTP draft's quant config gets the text model's packed_modules_mapping",
       "",
       "Qwen3_5"},
  };
}

History make_sglang_history() {
  History h;
  h.name = "sglang";
  h.display_name = "SGLang";
  h.column = "sgl";
  h.methods = "compressed-tensors gptq awq fp8 bitsandbytes modelopt auto-round quark";
  h.rules = "sglang 2026 (008b79d; MTP draft without and with #35887)";
  h.method_rules = {
      {"awq", "sglang 01f67c3 (awq/awq.py)"},
      {"gptq", "sglang 0cdfa2f (gptq/gptq.py)"},
      {"fp8", "sglang 00563d3 (fp8.py) + c5bef61 (quantization/utils/utils.py is_layer_skipped)"},
      {"bitsandbytes", "sglang b53daee (bitsandbytes.py is_layer_skipped_bnb)"},
      {"modelopt",
       "sglang 2026 modelopt_quant.py (is_layer_excluded) + c5bef61 (is_layer_skipped)"},
      {"auto-round", "sglang 68e037f (auto_round/routing.py get_layer_config)"},
      {"quark",
       "sglang ce1ec3a (quark/quark.py get_quant_method) + 382abd6 (quark/utils.py "
       "should_ignore_layer)"}};
  h.engine = Engine::sglang;
  // SGLang's Qwen3.5 support is taken to start when vLLM's did (2026-02-09): its first
  // qwen3_5.py (cf4465f) carries no date in the copies read.
  h.first = "2026-02-09";
  // The newest coherent set read (qwen3_vl.py, qwen3_5.py, qwen3_5_mtp.py, compressed_tensors.py,
  // quantization/utils.py, awq.py, loader.py, base_config.py at a5ea6158). The copies carry no
  // date; it is late August 2026 or later (it has qwen4_exp), dated 2026-08-31 here.
  h.newest_commit = "a5ea6158";
  h.newest_date = "2026-08-31";
  h.changes = joined_changes({changes_merged_to_02_21,
                              changes_merged_02_26_to_03_14,
                              changes_merged_03_23_to_04_20,
                              changes_merged_04_22_to_05_26,
                              changes_from_06_27});
  return h;
}

} // namespace

const History& sglang_history() {
  static const History h = make_sglang_history();
  return h;
}

} // namespace qpatch::engine
