// SPDX-License-Identifier: Apache-2.0
// SGLang's naming: for each architecture, the prefix each SGLang model class hands to
// quant_config.get_quant_method (where it builds the layer), the packed_modules_mapping its
// quant config is given, and what (if anything) renames config entries. Traced from the model
// classes of sgl-project/sglang, read file by file (docs/research/sglang-naming.md has the
// trace; the commits are the file versions read):
//   - model_loader/loader.py @005cbe0 _initialize_model: every model, drafts included, is built
//     from prefix ""; _get_quantization_config gives the quant config the class's
//     packed_modules_mapping and applies hf_to_sglang_mapper only when the class has one.
//   - A draft is a second model class (configs/model_config.py rewrites architectures[0]:
//     Qwen3_5ForCausalLMMTP, Qwen3NextForCausalLMMTP, DeepseekV3ForCausalLMNextN,
//     Glm4MoeForCausalLMNextN, MiMoMTP) with a quant config of its own built from the same JSON.
#include <qpatch/engine/model_info.hpp>

namespace qpatch::engine {

namespace {

const PackedMapping k_qkv_gate_up = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                                     {"gate_up_proj", {"gate_proj", "up_proj"}}};

bool is_qwen35_vlm(const std::string& architecture) {
  return architecture == "Qwen3_5ForConditionalGeneration" ||
         architecture == "Qwen3_5MoeForConditionalGeneration";
}

// DeepSeek-V3 and GLM-4.5+ NextN: the draft's decoder layer is checkpoint layer N
// (num_hidden_layers), built as model.decoder; eh_proj is a plain nn.Linear and the shared head
// a ParallelLMHead at model.shared_head.head (deepseek_nextn.py DeepseekModelNextN.__init__,
// 2026 copy; glm4_moe_nextn.py @008b79d Glm4MoeModelNextN.__init__). The loader maps checkpoint
// model.layers.{N}.X to model.decoder.X except shared_head, eh_proj, enorm, hnorm
// (load_weights(is_nextn=True)).
void nextn_draft(ModelInfo& info, uint64_t num_hidden_layers) {
  if (num_hidden_layers == 0) {
    return;
  }
  const std::string layer = "model.layers." + std::to_string(num_hidden_layers) + ".";
  info.draft_prefix = layer;
  info.plain_linears = {"eh_proj"};
  info.draft_renames = {{layer + "shared_head.head", "model.shared_head.head"},
                        {layer + "eh_proj", "model.eh_proj"},
                        {layer, "model.decoder."}};
  info.draft_head_prefix = "model.shared_head.head";
  info.draft_layer_prefix = "model.decoder.";
}

// DeepseekModelNextN and DeepseekV3ForCausalLMNextN (deepseek_nextn.py @398b81f7 and
// @b98d4721): under modelopt_fp4 DeepseekModelNextN.__init__ sets quant_config = None ("Overriding
// DeepseekV3ForCausalLMNextN quant config for modelopt_fp4 Deepseek model."), in every version
// read. From #23219 (57ecce98, 2026-04-20, "Enable MTP for GLM-5-mxfp4"), under Quark eh_proj is
// ReplicatedLinear(quant_config=quant_config, prefix="model.eh_proj"), and
// DeepseekV3ForCausalLMNextN._resolve_nextn_quant_config (inline in __init__ until #30265) builds
// the draft model without a quant config when quark/utils.py should_ignore_layer(mapped_prefix,
// exclude_layers) holds, mapped_prefix being "model.layers.{N}" through the class's mapper. The
// draft's lm_head keeps the config either way.
void nextn_draft_quant_gates(ModelInfo& info, const EngineVersion& version, bool drops) {
  info.draft_dense_under_nvfp4 = true;
  if (!version.has("#23219") || info.num_hidden_layers == 0) {
    return;
  }
  info.quark_builds_plain_linears = true;
  if (drops) {
    info.draft_quark_drop_prefix =
        info.draft_config_name("model.layers." + std::to_string(info.num_hidden_layers));
  }
  info.row += "/quark_eh_proj";
}

// DeepseekV2ForCausalLM's target naming (deepseek_v2.py, 2026 and @b98d4721):
// packed_modules_mapping gets only fused_qkv_a_proj_with_mqa = [q_a_proj, kv_a_proj_with_mqa] (no
// gate_up_proj entry, so the dense MLP's gate_up_proj is judged by its fused name); embed_tokens
// without a quant config; layers at model.layers.N. Shared experts are judged as layers of their
// own (SGLang's shared-expert fusion off: with it on they load into the routed FusedMoE).
void deepseek_v2_target(ModelInfo& info) {
  info.known = true;
  info.packed.push_back({"fused_qkv_a_proj_with_mqa", {"q_a_proj", "kv_a_proj_with_mqa"}});
  info.quant_packed =
      PackedMapping{{"fused_qkv_a_proj_with_mqa", {"q_a_proj", "kv_a_proj_with_mqa"}}};
  info.embedding_quant_config = false;
}

// DeepseekV3ForCausalLMNextN's mapper, from #19425 (deepseek_nextn.py @f0d78f2e):
// hf_to_sglang_mapper = WeightsMapper(orig_to_new_substr={"model.layers.61": "model.decoder"}),
// which loader.py's _get_quantization_config hands to the draft's quant config
// (apply_weight_name_mapper: compressed_tensors.py's ignore, quark.py's exclude_layers from
// #19425, fp8.py's ignored_layers from #21280, 990c7590b). models/utils.py
// WeightsMapper._map_name replaces the first occurrence. The target class has no mapper. The
// 61 is DeepSeek-V3's layer count written in: a GLM-5 draft built by this class renames its
// target's layer-61 entries onto the draft.
void nextn_draft_mapper(ModelInfo& info, const EngineVersion& version) {
  if (!version.has("#19425")) {
    return;
  }
  ConfigMapper& mapper = info.draft_config_mapper;
  mapper.substrings = {{"model.layers.61", "model.decoder"}};
  mapper.methods = "compressed-tensors quark modelopt";
  if (version.has("#21280")) {
    mapper.methods += " fp8";
  }
  info.row += version.has("#21280") ? "/nextn_mapper_fp8" : "/nextn_mapper";
}

// GLM-5 (GlmMoeDsaForCausalLM; docs/research/sglang-glm5.md, read in upstream history).
// glm4_moe.py @398b81f7 (#18521, 2026-02-10): `class GlmMoeDsaForCausalLM(DeepseekV2ForCausalLM):
// pass`, so every target name is DeepSeek-V2's, and the class dict packed_modules_mapping is
// DeepseekV2's, shared (unchanged @b98d4721). Its DSA indexer sits at self_attn.indexer
// (dsa/dsa_indexer.py @b98d4721 Indexer.__init__; nsa/nsa_indexer.py @398b81f7): wq_b and wk
// built with the layer's quant config, weights_proj a ReplicatedLinear with params_dtype
// bfloat16 and no quant config.
void glm5_row(ModelInfo& info, uint64_t num_hidden_layers, const EngineVersion& version) {
  deepseek_v2_target(info);
  info.row = "glm_moe_dsa";
  info.built_dense_layers = {"weights_proj"};
  if (version.has("#27705")) {
    // #27705 (073de150, 2026-06-27) fuses wk and weights_proj into a bf16 wk_weights_proj with
    // no quant config on CUDA (the loader dequantizes a block-FP8 wk into it:
    // deepseek_weight_loader.py _load_fused_indexer_wk); from #30111 (e552f6ed, 2026-07-04) only
    // when config.json sets indexer_rope_interleave. Elsewhere (ROCm, NPU,
    // SGLANG_DISABLE_DSA_INDEXER_FUSION) wk is built apart with the layer's quant config: that
    // is the build judged, and a patch that satisfies it leaves the fused one loadable.
    info.assumes = "the DSA indexer's wk built apart with the layer's quant config, as off CUDA "
                   "(on CUDA #27705 fuses it into a dense wk_weights_proj)";
    info.assumes_when = ".indexer.wk";
  }
  // The draft: DeepseekV3ForCausalLMNextN (configs/model_config.py @398b81f7 rewrites
  // GlmMoeDsaForCausalLM's architectures[0] to it) with its layer-61 mapper, until #30265
  // (07ef650e, 2026-07-08) gives GLM-5 GlmMoeDsaForCausalLMNextN (glm4_moe.py @07ef650e,
  // unchanged @b98d4721): the same modules, hf_to_sglang_mapper = WeightsMapper() (empty), and
  // _resolve_nextn_quant_config, which for Quark copies exclude entries that start with
  // "model.layers.{N}." onto the draft's names (draft_quark_nextn_layer).
  nextn_draft(info, num_hidden_layers);
  if (!version.has("#30265")) {
    nextn_draft_mapper(info, version);
    nextn_draft_quant_gates(info, version, true);
    return;
  }
  info.row += "/glm_nextn";
  if (num_hidden_layers > 0) {
    info.draft_quark_nextn_layer = "model.layers." + std::to_string(num_hidden_layers);
  }
  // Its _resolve_nextn_quant_config never returns None; eh_proj is still DeepseekModelNextN's.
  nextn_draft_quant_gates(info, version, false);
}

// The change that moved the Qwen3.5 text model to model.language_model (sglang/history.cpp).
constexpr std::string_view k_language_model_prefix = "#18926";

// Qwen3-VL's hf_to_sglang_mapper over the target's quant config, which the Qwen3.5 VLM
// classes inherit until #23471 (docs/research/sglang-qwen3vl-mapper.md). qwen3_vl.py
// Qwen3VLForConditionalGeneration.hf_to_sglang_mapper (712f44ee #11914, unchanged to b98d4721):
// substr {"attn.qkv": "attn.qkv_proj"}, prefix {"model.language_model.":
// "language_model.model.", "model.visual.": "visual.", "lm_head.": "language_model.lm_head.",
// "model.": "language_model.model."}. qwen3_5.py (27c44765 #18489, 2026-02-10) subclasses
// Qwen3VLForConditionalGeneration without an override until #21234 (e6071e60, 2026-03-30) and
// #21692 (cd373667, 2026-04-08) set hf_to_sglang_mapper = None under `if _is_gfx95 or
// _is_npu`, and #23471 (9814cc89, 2026-04-28) unconditionally. model_loader/loader.py
// _get_quantization_config (006da222 #18273, unchanged at 7c7b2a8c and 712b01d8) calls
// quant_config.apply_weight_name_mapper(hf_to_sglang_mapper) when the class has one. The
// configs that implement it: CompressedTensorsConfig (ignore and target_scheme_map keys,
// compressed_tensors.py since 712f44ee), ModelOptQuantConfig (exclude_modules, plus each
// mapped name starting "language_model." without it; #18370 7b836593, 2026-02-08) and
// ModelOptMixedPrecisionConfig (quantized_layers keys, #20407), QuarkConfig (exclude_layers,
// #19425 f0d78f2e, 2026-02-26; the language_model.-stripped copy only from #25390, after
// #23471) and Fp8Config (ignored_layers after from_config's model. variants, #21280 990c7590,
// 2026-04-03). The MTP draft (Qwen3_5ForCausalLMMTP) has no mapper: its own quant config
// keeps the entries as written.
// `source` names the class that carries the mapper, for reports.
void qwen3_vl_config_mapper(ModelInfo& info, const EngineVersion& version, std::string source) {
  ConfigMapper& mapper = info.target_config_mapper;
  mapper.substrings = {{"attn.qkv", "attn.qkv_proj"}};
  mapper.prefixes = {{"model.language_model.", "language_model.model."},
                     {"model.visual.", "visual."},
                     {"lm_head.", "language_model.lm_head."},
                     {"model.", "language_model.model."}};
  mapper.methods = "compressed-tensors modelopt";
  if (version.has("#19425")) {
    mapper.methods += " quark";
  }
  if (version.has("#21280")) {
    mapper.methods += " fp8";
  }
  mapper.source = std::move(source);
  info.row += "/qwen3_vl_mapper:" + mapper.methods;
}

// The text model built at "model" (its layers model.layers.N whichever naming the checkpoint
// has) and the vision tower at "visual" with the quant config, VisionAttention's fused
// projection named qkv_proj (load_weights: attn.qkv. -> attn.qkv_proj.): Qwen3-VL's classes
// before #18926 and Qwen2/2.5-VL's throughout.
void text_at_model_vision_at_visual(ModelInfo& info) {
  info.layer_renames = {{"model.language_model.", "model."}, {"model.visual.", "visual."}};
  info.component_renames = {{"visual.", "qkv", "qkv_proj"}};
}

// Qwen3.5/3.6 VLM classes, before and after #18926, and their draft.
void qwen35_vlm_row(ModelInfo& info, const EngineVersion& version) {
  info.known = true;
  info.embedding_quant_config = false;
  if (version.has(k_language_model_prefix)) {
    // Since #18926 (qwen3_vl.py, qwen3_5.py at a5ea6158, and at xbfs/sglang@c72ed54, one
    // commit each): the text model is built at add_prefix("model.language_model"), so its
    // layers carry the checkpoint's names (model.language_model.layers.N.linear_attn.in_proj_ba,
    // shards in_proj_b/in_proj_a); the vision tower is built at model.visual with
    // quant_config=None: always dense.
    info.built_without_quant_config = {"model.visual."};
    info.row = "qwen3_5_vlm/language_model";
    if (version.has("#21019")) {
      info.packed.push_back({"in_proj_qkvz", {"in_proj_qkv", "in_proj_z"}});
      info.packed.push_back({"in_proj_ba", {"in_proj_b", "in_proj_a"}});
    } else {
      // sammysun0711/sglang@07d9ce3 (after #18937) Qwen3_5GatedDeltaNet.__init__: in_proj_qkv
      // (a MergedColumnParallelLinear of its own), in_proj_z, in_proj_b, in_proj_a apart.
      info.row += "/gdn_apart";
    }
    if (!version.has("#23471")) {
      // On CUDA until #23471 (#21234 and #21692 set these for gfx95 and NPU only): no class
      // declares packed_modules_mapping (07d9ce3, xbfs/sglang@c72ed54), so the loader gives the
      // quant config {} and fused layers are judged by their own names.
      info.quant_packed = PackedMapping{};
      info.row += "/no_packed_mapping";
    }
  } else {
    // Before #18926 (an assumed row: no commit holds these files together; qwen3_5.py @cf4465f
    // and qwen3_vl.py @005fa83 name the layers alike): Qwen3_5(Moe)ForConditionalGeneration
    // (Qwen3VLForConditionalGeneration) builds the text model at add_prefix("model", ""), its
    // layers at model.layers.N (make_layers) with self_attn / linear_attn children; lm_head at
    // "lm_head"; embed_tokens without a quant config. qwen3_vl.py @005fa83
    // Qwen3VLForConditionalGeneration.__init__ builds the vision tower at "visual" with the
    // quant config; VisionAttention(use_qkv_parallel=True) names its fused projection qkv_proj
    // (load_weights: attn.qkv. -> attn.qkv_proj.).
    // The GDN projections are built apart (in_proj_qkv, a MergedColumnParallelLinear of its
    // own, in_proj_z, in_proj_b, in_proj_a: qwen3_5.py @cf4465f, as at
    // sammysun0711/sglang@07d9ce3 after #18926; fused only from #21019, 2026-03-23), and no
    // class declares packed_modules_mapping (the mapping arrived with #21234 and #23471), so the
    // loader gives the quant config {}: qkv_proj and gate_up_proj are judged by their fused
    // names (docs/research/sglang-versions.md §6-7).
    info.quant_packed = PackedMapping{};
    text_at_model_vision_at_visual(info);
    info.row = "qwen3_5_vlm/model";
    info.assumed_because = "before #18926 no one commit holds the files read";
  }
  if (!version.has("#23471")) {
    qwen3_vl_config_mapper(info,
                           version,
                           "Qwen3-VL's hf_to_sglang_mapper (qwen3_vl.py; the Qwen3.5 classes "
                           "inherit it until #23471)");
    info.target_config_mapper.assumes =
        "the CUDA build: from 2026-03-30 (#21234) on gfx95 and from 2026-04-08 (#21692) on NPU "
        "too, the Qwen3.5 classes have no mapper and declare the packed mapping, as #23471 "
        "(2026-04-28) made them everywhere";
  }
  // qwen3_5_mtp.py @008b79d Qwen3_5ForCausalLMMTP: the draft's layers at add_prefix("mtp", ""),
  // fc a plain nn.Linear (never quantized), lm_head at "lm_head" (the target's name). The
  // class declares no packed_modules_mapping, so its quant config judges qkv_proj and
  // gate_up_proj by the fused names (sglang#35797); PR #35887 gives it the text model's.
  // Unchanged at a5ea6158.
  info.draft_prefix = "mtp.";
  info.plain_linears = {"fc"};
  info.draft_layer_prefix = "mtp.";
  if (!version.has("#35887")) {
    info.draft_packed = PackedMapping{}; // the quant mapping only: the layers are the same
  }
}

// Qwen3-VL's own classes (Qwen3VLForConditionalGeneration, Qwen3VLMoeForConditionalGeneration,
// which has no __init__ of its own), read at b98d4721 (2026-08-22) and back to #18926
// (fa5698d7, 2026-02-18) in hdt98/sglang's copy of upstream history: the text model and vision
// tower are built as the Qwen3.5 VLM's (qwen35_vlm_row, whose classes were these until #23471),
// without the GDN layers or a draft. Unlike the Qwen3.5 classes they keep the mapper on every
// platform and to the newest version read, and declare no packed_modules_mapping (the loader
// gives the quant config {}: qkv_proj and gate_up_proj judged by their fused names). embed_tokens
// gets the quant config (qwen2.py Qwen2Model); the MoE router `gate` none (qwen3_moe.py, every
// method but modelslim from #30768). Traced in docs/research/sglang-qwen3vl-classes.md.
void qwen3_vl_row(ModelInfo& info, const EngineVersion& version) {
  info.known = true;
  info.quant_packed = PackedMapping{};
  if (version.has(k_language_model_prefix)) {
    info.built_without_quant_config = {"model.visual."};
    info.row = "qwen3_vl/language_model";
  } else {
    // qwen3_vl.py @005fa83: the text model at "model", the vision tower at "visual" with the
    // quant config, its attention's qkv built as qkv_proj.
    text_at_model_vision_at_visual(info);
    info.row = "qwen3_vl/model";
  }
  qwen3_vl_config_mapper(info, version, "Qwen3-VL's hf_to_sglang_mapper (qwen3_vl.py)");
}

// Qwen2.5-VL and Qwen2-VL (qwen2_5_vl.py, qwen2_vl.py; docs/research/sglang-qwen25vl.md, read
// at b98d4721 and unchanged through 2026): the text model is Qwen2Model at add_prefix("model"),
// so its layers are model.layers.N whichever naming the checkpoint has (load_weights reads only
// the older model.* / visual.* names), lm_head at "lm_head"; the vision tower at "visual" with the
// quant config, its attention's fused projection named qkv_proj (checkpoint attn.qkv). The
// classes carry Qwen3-VL's hf_to_sglang_mapper (712f44ee), which the loader applies to the
// config's lists: plain text entries in either naming become language_model.model.*, which no
// layer has. Qwen2.5-VL's packed_modules_mapping holds gate_up_proj only (qkv_proj judged by its
// own name); Qwen2-VL's none (its vision MLP is fc1/fc2).
void qwen2_vl_row(ModelInfo& info, const std::string& architecture, const EngineVersion& version) {
  info.known = true;
  text_at_model_vision_at_visual(info);
  const bool qwen2_5 = architecture == "Qwen2_5_VLForConditionalGeneration";
  info.row = qwen2_5 ? "qwen2_5_vl" : "qwen2_vl";
  info.quant_packed =
      qwen2_5 ? PackedMapping{{"gate_up_proj", {"gate_proj", "up_proj"}}} : PackedMapping{};
  qwen3_vl_config_mapper(info,
                         version,
                         std::string("Qwen3-VL's hf_to_sglang_mapper (") +
                             (qwen2_5 ? "qwen2_5_vl.py" : "qwen2_vl.py") + " carries it)");
}

// The Qwen family's rows; false for an architecture of no Qwen row.
bool qwen_row(ModelInfo& info, const std::string& architecture, const EngineVersion& version) {
  if (is_qwen35_vlm(architecture)) {
    qwen35_vlm_row(info, version);
    return true;
  }
  if (architecture == "Qwen3VLForConditionalGeneration" ||
      architecture == "Qwen3VLMoeForConditionalGeneration") {
    qwen3_vl_row(info, version);
    return true;
  }
  if (architecture == "Qwen2_5_VLForConditionalGeneration" ||
      architecture == "Qwen2VLForConditionalGeneration") {
    qwen2_vl_row(info, architecture, version);
    return true;
  }
  if (architecture == "Qwen3MoeForCausalLM") {
    // qwen3_moe.py @b98d4721 (docs/research/sglang-qwen25vl.md Q3): layers at model.layers.N,
    // packed_modules_mapping qkv_proj and gate_up_proj (from #18189, 2026-02-08), no mapper, the
    // router gate without a quant config (modelslim aside, #30768).
    info.known = true;
    info.row = "qwen3_moe";
    return true;
  }
  if (architecture == "Qwen3NextForCausalLM") {
    // qwen3_next.py @0201bc8 Qwen3NextForCausalLM: packed_modules_mapping holds only qkv_proj
    // and gate_up_proj; the checkpoint stores in_proj_qkvz and in_proj_ba fused already.
    // embed_tokens without a quant config. qwen3_next_mtp.py @0053421 Qwen3NextForCausalLMMTP:
    // the draft is built at add_prefix("model", "") (mtp.layers.0 -> model.layers.0; load_weights
    // replaces "mtp" with "model"), fc a plain nn.Linear, its head at model.shared_head.head; it
    // inherits the class mapping.
    info.known = true;
    info.quant_packed = k_qkv_gate_up;
    info.packed.push_back({"in_proj_qkvz", {"in_proj_qkvz"}});
    info.packed.push_back({"in_proj_ba", {"in_proj_ba"}});
    info.embedding_quant_config = false;
    info.draft_prefix = "mtp.";
    info.plain_linears = {"fc"};
    info.draft_renames = {{"mtp.", "model."}};
    return true;
  }
  return false;
}

} // namespace

ModelInfo sglang_model_info(const std::string& architecture,
                            uint64_t num_hidden_layers,
                            const EngineVersion& version) {
  ModelInfo info;
  info.architecture = architecture;
  info.num_hidden_layers = num_hidden_layers;
  info.naming = "sglang";
  // layer_renames only: no class below renames its target's config entries (the DeepSeek-V3
  // draft's mapper renames the draft's: draft_config_mapper)
  info.separate_layer_names = true;
  info.packed = k_qkv_gate_up;
  if (qwen_row(info, architecture, version)) {
    return info;
  }
  if (architecture == "DeepseekV3ForCausalLM" || architecture == "DeepseekV2ForCausalLM") {
    deepseek_v2_target(info);
    nextn_draft(info, num_hidden_layers);
    if (architecture == "DeepseekV3ForCausalLM") {
      nextn_draft_mapper(info, version);
      nextn_draft_quant_gates(info, version, true);
    }
    return info;
  }
  if (architecture == "GlmMoeDsaForCausalLM") {
    glm5_row(info, num_hidden_layers, version);
    return info;
  }
  if (architecture == "Glm4MoeForCausalLM") {
    // glm4_moe.py @005ffc6 Glm4MoeForCausalLM: no packed_modules_mapping, no mapper; qkv_proj
    // and gate_up_proj are judged by their fused names; embed_tokens without a quant config.
    info.known = true;
    info.quant_packed = PackedMapping{};
    info.embedding_quant_config = false;
    nextn_draft(info, num_hidden_layers);
    return info;
  }
  if (architecture == "MiMoForCausalLM") {
    // mimo.py @14de7d3 MiMoForCausalLM: the Qwen2 chain, no packed_modules_mapping.
    // mimo_mtp.py @0564b52 MiMoMTP: the draft block is a Qwen2DecoderLayer built with prefix "",
    // so its layers are self_attn.qkv_proj, mlp.gate_up_proj (no model or layer index);
    // input_proj is a plain nn.Linear. Only draft layer 0 is built.
    info.known = true;
    info.quant_packed = PackedMapping{};
    info.draft_prefix = "model.mtp_layers.";
    info.plain_linears = {"input_proj"};
    info.draft_renames = {{"model.mtp_layers.0.", ""}};
    return info;
  }
  if (architecture == "LlamaForCausalLM" || architecture == "Qwen2ForCausalLM" ||
      architecture == "Qwen3ForCausalLM") {
    // llama.py @bf7a0e2 LlamaForCausalLM, qwen3.py @d4ff9a8 Qwen3ForCausalLM (Qwen2Model chain):
    // layers at model.layers.N.{self_attn,mlp}, lm_head at "lm_head", no packed_modules_mapping
    // (the loader's fusion is stacked_params_mapping only), so qkv_proj and gate_up_proj are
    // judged by their fused names.
    info.known = true;
    info.quant_packed = PackedMapping{};
    return info;
  }
  // No naming table: the checkpoint's names, q/k/v and gate/up fused and judged through their
  // shards (what SGLang's loader does for a class that declares the mapping).
  info.assumed_naming = true;
  if (architecture == "Qwen3_5ForCausalLM" || architecture == "Qwen3_5MoeForCausalLM") {
    // Not an SGLang entry class (qwen3_5.py @005fa71 EntryClass): assumed to be built like the
    // VLM's text model.
    info.layer_renames = {{"model.language_model.", "model."}};
    info.packed.push_back({"in_proj_qkvz", {"in_proj_qkv", "in_proj_z"}});
    info.packed.push_back({"in_proj_ba", {"in_proj_b", "in_proj_a"}});
    info.embedding_quant_config = false;
    info.draft_prefix = "mtp.";
    info.plain_linears = {"fc"};
  }
  return info;
}

} // namespace qpatch::engine
