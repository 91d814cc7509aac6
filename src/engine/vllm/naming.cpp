// SPDX-License-Identifier: Apache-2.0
// vLLM's naming rows: model classes as vLLM main defines them, one row per architecture (and per
// version range where a class changed). Qwen3.5/3.6 VLM classes inherit Qwen3-VL's mapper
// (qwen3_vl.py); the text-only classes map model.language_model. -> model. (qwen3_5.py). MTP
// names (mtp.*) are untouched by every Qwen mapper. Read at 017e9f4 (2026-08-17) unless a row
// says otherwise.
#include <qpatch/engine/model_info.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::engine {

namespace {

// The error DeepSeekMTP.load_weights (deepseek_mtp.py, since #35548 2562e0271) and
// DeepSeekV4MTP.load_weights (deepseek_v4/nvidia/mtp.py, since 4d51588e2) raise for a declared
// draft layer with no weights; {} is the layer index.
constexpr std::string_view k_mtp_layer_missing =
    "ValueError: MTP speculative decoding layer {} weights missing from checkpoint. The "
    "checkpoint may have been quantized without including the MTP layers. Use a checkpoint that "
    "includes MTP layer weights, or disable speculative decoding.";

// qwen3_vl.py Qwen3VLForConditionalGeneration.hf_to_vllm_mapper's prefixes, which its MoE
// subclass and the Qwen3.5/3.6 VLM classes inherit.
const std::vector<std::pair<std::string, std::string>> k_qwen3_vl_mapper = {
    {"model.visual.", "visual."},
    {"lm_head.", "language_model.lm_head."},
    {"model.language_model.", "language_model.model."}};

// Qwen3.5/3.6 (VLM and text-only) and Qwen3-Next.
void qwen_rows(ModelInfo& info, const std::string& architecture, const EngineVersion& version) {
  const bool qwen35_vlm = architecture == "Qwen3_5ForConditionalGeneration" ||
                          architecture == "Qwen3_5MoeForConditionalGeneration";
  const bool qwen35_text =
      architecture == "Qwen3_5ForCausalLM" || architecture == "Qwen3_5MoeForCausalLM";
  const bool qwen3_next = architecture == "Qwen3NextForCausalLM";
  if (qwen35_vlm || qwen35_text || qwen3_next) {
    info.known = true;
    // Qwen3_5Model and Qwen3NextModel (and their MTP drafts) build VocabParallelEmbedding without
    // a quant_config (qwen3_5.py Qwen3_5Model.__init__, qwen3_next.py Qwen3NextModel.__init__).
    info.embedding_quant_config = false;
    if (qwen3_next) {
      // Qwen3-Next checkpoints store the GDN projections fused (qwen3_next.py
      // Qwen3NextForCausalLM.packed_modules_mapping: "in_proj_ba": ["in_proj_ba"]).
      info.packed.push_back({"in_proj_qkvz", {"in_proj_qkvz"}});
      info.packed.push_back({"in_proj_ba", {"in_proj_ba"}});
    } else {
      info.packed.push_back({"in_proj_qkvz", {"in_proj_qkv", "in_proj_z"}});
      info.packed.push_back({"in_proj_ba", {"in_proj_b", "in_proj_a"}});
    }
  }
  info.has_mapper = qwen35_vlm || qwen35_text;
  if (qwen35_vlm || qwen35_text) {
    // Qwen3_5MTP (qwen3_5_mtp.py, vLLM main 017e9f4) builds ParallelLMHead(quant_config,
    // prefix="lm_head") and its load_weights keeps checkpoint names holding "lm_head", so the
    // checkpoint's head is loaded a second time, into the draft's. The draft's VllmConfig shares
    // the target's quant config object (llm_base_proposer.py _create_draft_vllm_config:
    // dataclasses.replace), already renamed by the target's mapper; configure_quant_config
    // (model_loader/utils.py) only swaps in Qwen3_5MTP.packed_modules_mapping.
    info.draft_lm_head = "lm_head";
  }
  if (qwen35_vlm || qwen35_text) {
    // Before #42124 (6f5b53324, 2026-05-26) Qwen3_5ForCausalLMBase and Qwen3_5MTP built their
    // ParallelLMHead without quant_config: the head was dense for every method.
    info.lm_head_quant_config = version.has("#42124");
    info.row = info.lm_head_quant_config ? "qwen3_5" : "qwen3_5/dense-head";
  }
  if (qwen35_vlm) {
    info.prefix_renames = k_qwen3_vl_mapper;
  } else if (qwen35_text && version.has("#50355")) {
    info.prefix_renames = {{"model.language_model.", "model."}};
  } else if (qwen35_text) {
    // Registered on 2026-07-29 (#50210) with no hf_to_vllm_mapper until #50355 (febea17f6,
    // 2026-08-06): config entries stay unmapped while the layers are built at model.layers.N.
    info.has_mapper = false;
    info.separate_layer_names = true;
    info.layer_renames = {{"model.language_model.", "model."}};
    info.row += "/unmapped";
  }
}

// Qwen3-VL's own classes and Qwen3-MoE (017e9f4). qwen3_vl.py Qwen3VLForConditionalGeneration and
// qwen3_vl_moe.py Qwen3VLMoeForConditionalGeneration (which inherits its hf_to_vllm_mapper) are
// not SupportsQuant, so configure_quant_config (model_loader/utils.py) renames the config's lists
// with the class mapper, unstacked: prefixes model.visual. -> visual., lm_head. ->
// language_model.lm_head., model.language_model. -> language_model.model. (no substring rule).
// The loader builds them from prefix "": the vision tower (Qwen3_VisionTransformer) at visual.*
// with the model's quant config on every linear (blocks.N.attn.qkv a QKVParallelLinear named
// qkv, attn.proj, mlp.linear_fc1/fc2, merger and deepstack_merger_list.N linear_fc1/fc2; no
// vision exemption for any method), the text model at language_model.model.layers.N
// (docs/research/vllm-qwen3vl.md).
void qwen3_vl_rows(ModelInfo& info, const std::string& architecture) {
  const bool dense = architecture == "Qwen3VLForConditionalGeneration";
  const bool moe = architecture == "Qwen3VLMoeForConditionalGeneration";
  if (moe || architecture == "Qwen3MoeForCausalLM") {
    // qwen3_moe.py Qwen3MoeSparseMoeBlock.__init__: the router `gate` is a ReplicatedLinear
    // built with quant_config=quant_config (shared_expert_gate with None); Qwen3-VL-MoE's
    // decoder layer is Qwen3MoeDecoderLayer (qwen3_vl_moe.py Qwen3VLMoeDecoderLayer).
    info.known = true;
    info.router_quant_config = true;
    info.row = "qwen3_moe";
  }
  if (!dense && !moe) {
    return;
  }
  info.has_mapper = true;
  info.prefix_renames = k_qwen3_vl_mapper;
  if (dense) {
    // Qwen3VLForConditionalGeneration.packed_modules_mapping adds "qkv": ["qkv"] (the vision
    // tower's fused QKV, judged by its own name either way). Its Qwen3LLMForCausalLM builds the
    // ParallelLMHead with prefix="lm_head" written in (not maybe_prefix), so the quant config
    // is asked about "lm_head" although the weights load into language_model.lm_head.
    info.row = "qwen3_vl";
    info.packed.push_back({"qkv", {"qkv"}});
    info.separate_layer_names = true;
    info.layer_renames = {{"model.visual.", "visual."},
                          {"model.language_model.", "language_model.model."}};
  } else {
    // Qwen3VLMoeForConditionalGeneration.packed_modules_mapping is {"qkv_proj": [q, k, v]}:
    // configure_quant_config hands the config that class dict, and __init__'s merge with the
    // language model's mapping rebinds the instance attribute, not the config's (gate_up_proj
    // exists only for mlp_only_layers). Its Qwen3MoeLLMForCausalLM builds the head at
    // maybe_prefix(prefix, "lm_head"): language_model.lm_head.
    info.row = "qwen3_vl_moe";
    info.quant_packed = PackedMapping{{"qkv_proj", {"q_proj", "k_proj", "v_proj"}}};
  }
}

// Qwen2.5-VL (qwen2_5_vl.py Qwen2_5_VLForConditionalGeneration, 017e9f4; docs/research/
// vllm-qwen3vl.md §8). SupportsQuant: SupportsQuant.__new__ (interfaces.py) renames the config's
// lists with the class mapper, unstacked (prefixes model.language_model. ->
// language_model.model., model.visual. -> visual., lm_head. -> language_model.lm_head., model.
// -> language_model.model., in that order: checkpoints saved by transformers from 4.52 and the
// older model.layers.N / visual.* ones both reach the built names), and adds the class's
// packed_modules_mapping (qkv_proj, gate_up_proj, and "qkv": ["qkv"] for the vision tower's
// fused QKV); its Qwen2ForCausalLM does the same with Qwen2Model's stacked-only mapper (nothing
// renamed) and the same mapping. The vision tower (Qwen2_5_VisionTransformer at visual) gets the
// quant config on every linear: attn.qkv, attn.proj, mlp.gate_up_proj (gate_proj + up_proj),
// mlp.down_proj, merger.mlp.0 and mlp.2. The text model is Qwen2ForCausalLM at language_model:
// layers at language_model.model.layers.N, head at language_model.lm_head.
//
// Qwen2-VL (qwen2_vl.py Qwen2VLForConditionalGeneration) has the same mapper and prefixes but is
// not SupportsQuant and declares no packed_modules_mapping: configure_quant_config renames the
// config's lists, and its Qwen2ForCausalLM adds qkv_proj and gate_up_proj; the vision tower
// (attn.qkv, attn.proj, mlp.fc1, mlp.fc2, merger.mlp.0/2) gets the quant config too.
void qwen2_vl_rows(ModelInfo& info, const std::string& architecture) {
  if (architecture != "Qwen2_5_VLForConditionalGeneration" &&
      architecture != "Qwen2VLForConditionalGeneration") {
    return;
  }
  info.known = true;
  info.row = architecture == "Qwen2VLForConditionalGeneration" ? "qwen2_vl" : "qwen2_5_vl";
  info.has_mapper = true;
  info.prefix_renames = {{"model.language_model.", "language_model.model."},
                         {"model.visual.", "visual."},
                         {"lm_head.", "language_model.lm_head."},
                         {"model.", "language_model.model."}};
  if (info.row == "qwen2_5_vl") {
    info.packed.push_back({"qkv", {"qkv"}});
  }
}

// Gemma 3 (gemma3_mm.py Gemma3ForConditionalGeneration, 017e9f4, unchanged since 2025-10 and
// at f3fef12; docs/research/vllm-gemma3.md). Not SupportsQuant: configure_quant_config renames
// the config's lists with the class mapper (prefixes model.language_model. ->
// language_model.model., model.vision_tower. -> vision_tower., model.multi_modal_projector. ->
// multi_modal_projector., lm_head. -> language_model.lm_head.) and hands it the class mapping
// (qkv_proj, gate_up_proj; the SigLIP attention's q/k/v are a qkv_proj too). Gemma3ForCausalLM
// at language_model (embed_tokens and the tied lm_head with the quant config). The vision tower
// (SiglipVisionModel at vision_tower.vision_model) gives its attention the quant config, but its
// MLP fc1/fc2 only when hidden and intermediate sizes are multiples of 64 or the method is
// bitsandbytes/torchao (siglip.py SiglipMLP): Gemma 3's SigLIP (1152, 4304) is not. The
// projector's mm_input_projection_weight is a raw parameter, no layer.
void gemma3_row(ModelInfo& info) {
  info.known = true;
  info.row = "gemma3_mm";
  info.has_mapper = true;
  info.prefix_renames = {{"model.language_model.", "language_model.model."},
                         {"model.vision_tower.", "vision_tower."},
                         {"model.multi_modal_projector.", "multi_modal_projector."},
                         {"lm_head.", "language_model.lm_head."}};
  info.dense_but_bitsandbytes = {"vision_tower.", {"fc1", "fc2"}};
  info.assumes = "the SigLIP of every Gemma 3 release (intermediate_size 4304, not a multiple of "
                 "64: its MLP fc1/fc2 built without a quant config except under bitsandbytes)";
  info.assumes_when = "vision_tower.";
}

// DeepSeek-V2/V3/V3.2, GLM-5 (GlmMoeDsaForCausalLM) and GLM-4.5 (Glm4MoeForCausalLM): the draft
// at model.layers.{num_hidden_layers}.
void deepseek_glm_rows(ModelInfo& info,
                       const std::string& architecture,
                       uint64_t num_hidden_layers) {
  // DeepseekV32ForCausalLM and GlmMoeDsaForCausalLM (GLM-5) are DeepseekV2ForCausalLM
  // (models/registry.py; deepseek_v2.py `class GlmMoeDsaForCausalLM(DeepseekV2ForCausalLM)`).
  const bool deepseek =
      architecture == "DeepseekV3ForCausalLM" || architecture == "DeepseekV2ForCausalLM" ||
      architecture == "DeepseekV32ForCausalLM" || architecture == "GlmMoeDsaForCausalLM";
  if (deepseek) {
    info.known = true;
    info.packed.push_back({"fused_qkv_a_proj", {"q_a_proj", "kv_a_proj_with_mqa"}});
    // deepseek_v2.py Indexer.__init__: wk and weights_proj are one MergedColumnParallelLinear
    // built with quant_config=None (load_weights' indexer_fused_mapping); wq_b keeps the
    // layer's quant config. Only V3.2-style checkpoints (GLM-5) store an indexer.
    info.packed.push_back({"wk_weights_proj", {"wk", "weights_proj"}});
    info.built_dense_layers = {"wk_weights_proj"};
  }
  if (architecture == "Glm4MoeForCausalLM") {
    info.known = true;
    info.embedding_quant_config = false; // glm4_moe.py Glm4MoeModel.__init__: no quant_config
  }
  if ((deepseek || architecture == "Glm4MoeForCausalLM") && num_hidden_layers > 0) {
    // The draft (deepseek_mtp.py DeepSeekMultiTokenPredictor, glm4_moe_mtp.py
    // Glm4MoeMultiTokenPredictor) builds layer model.layers.{num_hidden_layers}: eh_proj a plain
    // nn.Linear, and SharedHead's `head` a ParallelLMHead(quant_config,
    // prefix=maybe_prefix(prefix, "head")), named model.layers.{N}.head.
    info.draft_prefix = "model.layers." + std::to_string(num_hidden_layers) + ".";
    info.plain_linears = {"eh_proj"};
    info.draft_head_prefix = info.draft_prefix + "head";
  }
  if (deepseek && architecture != "DeepseekV2ForCausalLM") {
    // config/speculative.py hf_config_override: model_type deepseek_v3, deepseek_v32 and
    // glm_moe_dsa draft through DeepSeekMTP, whose load_weights raises for a declared layer with
    // no weights loaded (deepseek_mtp.py, since #35548 2562e0271, 2026-02-28: every version
    // judged). Glm4MoeMTP and Qwen3_5MTP have no such check.
    info.draft_missing_error = std::string(k_mtp_layer_missing);
  }
}

// DeepSeek-V4 (vllm/models/deepseek_v4/, NVIDIA classes, 017e9f4).
void deepseek_v4_row(ModelInfo& info, uint64_t num_hidden_layers) {
  info.known = true;
  info.row = "deepseek_v4";
  // DeepseekV4FP8Config ("deepseek_v4_fp8", quant_config.py, since #40860 4d51588e2,
  // 2026-04-26) is Fp8Config with its own RoutedExperts dispatch; override_quantization_method
  // swaps it in for quant_method "fp8" when model_type is deepseek_v4 (and
  // DeepseekV4ForCausalLMConfig rewrites the key). Its linears and experts are skipped by
  // Fp8Config's is_layer_skipped (ignored_layers, exact match, the experts substring rule;
  // modules_to_not_convert when ignored_layers is empty), so an "fp8" config is judged by vLLM's
  // FP8 rules under the names below. A "deepseek_v4_fp8" quant_method, and Quark configs it
  // takes over (from_config copies `exclude` into ignored_layers), are not judged.
  info.own_quant_method = "deepseek_v4_fp8";
  info.own_quant_method_replaces = {"deepseek_v4_fp8", "quark"};
  // model.py _make_deepseek_v4_weights_mapper (4d51588e2), applied to ignored_layers by
  // configure_quant_config -> Fp8Config.apply_vllm_mapper (fp8.py): prefixes layers., embed.,
  // norm., hc_head, mtp. under model.; `.shared_experts.w2` -> `.shared_experts.down_proj`. So
  // "layers.3.attn.wo_b" and "model.layers.3.attn.wo_b" both name model.layers.3.attn.wo_b, and
  // "mtp.0.e_proj" becomes model.mtp.0.e_proj, which no layer is built as.
  info.has_mapper = true;
  info.prefix_renames = {{"layers.", "model.layers."},
                         {"embed.", "model.embed."},
                         {"norm.", "model.norm."},
                         {"hc_head", "model.hc_head"},
                         {"mtp.", "model.mtp."}};
  info.substring_renames = {{".shared_experts.w2", ".shared_experts.down_proj"}};
  // attention.py: wq_a and wkv load into one MergedColumnParallelLinear fused_wqa_wkv; model.py
  // DeepseekV4MLP: shared_experts w1 and w3 into gate_up_proj. The NVIDIA class declares no
  // packed_modules_mapping (quant_config's stays {}; amd/model.py maps both), so the fused
  // layers are judged by their own names.
  info.packed = {{"fused_wqa_wkv", {"wq_a", "wkv"}}, {"gate_up_proj", {"w1", "w3"}}};
  info.quant_packed = PackedMapping{};
  // Built with quant_config=None: the attention and indexer compressors' fused_wkv_wgate
  // (compressor.py), indexer.weights_proj (attention.py), ffn.gate (GateLinear), the heads
  // (lm_head and the draft's shared_head.head, ParallelLMHead without a quant config, checkpoint
  // `head` and `mtp.{i}.head`); embed_tokens gets one, but Fp8Config.get_quant_method returns
  // None for an embedding (checkpoint `embed`, the draft's `emb.tok_emb`).
  info.built_dense_components = {"compressor"};
  info.built_dense_layers = {"weights_proj", "gate", "head", "embed", "tok_emb"};
  info.lm_head_quant_config = false;
  info.embedding_quant_config = false;
  // flashmla.py and flashinfer_sparse.py (the NVIDIA attention backends, target and draft) run
  // the output projection through nvidia/ops/o_proj.py deep_gemm_fp8_o_proj, which reads
  // wo_a.weight_scale_inv (already at 4673ca1d7; bf27e34eb, 2026-07-23, also takes
  // weight_scale): a wo_a built dense has neither, so the first forward raises AttributeError.
  info.needs_quantized = {
      {"wo_a",
       "its NVIDIA attention reads wo_a's FP8 weight scale on every forward "
       "(nvidia/ops/o_proj.py), so a dense wo_a raises AttributeError at the first one"}};
  // nvidia/mtp.py DeepSeekV4MTP (drafted through speculative.py hf_config_override: model_type
  // deepseek_v4 -> deepseek_mtp, DeepSeekV4MTPModel) builds draft layer i at
  // model.layers.{N+i} (no mtp_block in the quant prefix), its e_proj and h_proj ReplicatedLinear
  // with the target's quant config object (already mapped); load_weights renames the
  // checkpoint's mtp.{i}. to model.layers.{N+i}.
  if (num_hidden_layers > 0) {
    info.draft_prefix = "mtp.0.";
    info.draft_renames_under = "mtp.";
    for (uint64_t i = 0; i < 16; ++i) {
      info.draft_renames.emplace_back("mtp." + std::to_string(i) + ".",
                                      "model.layers." + std::to_string(num_hidden_layers + i) +
                                          ".");
    }
  }
  // mtp.py DeepSeekV4MTP.load_weights raises for a declared layer with no weights (the same
  // text as deepseek_mtp.py; 4d51588e2, switchable off only for weight-transfer updates since
  // ba1892907, 2026-07-22).
  info.draft_missing_error = std::string(k_mtp_layer_missing);
}

// The error KimiK3MTP.load_weights raises for a declared draft layer with none of its weights
// loaded (kimi_k3/nvidia/mtp.py, since #50089 7c6729b76); {} is the layer index.
constexpr std::string_view k_kimi_k3_mtp_layer_missing =
    "ValueError: MTP speculative decoding layer {} weights missing from checkpoint. The "
    "checkpoint may not include the MTP layer weights. Use a checkpoint that includes MTP layer "
    "weights, or disable speculative decoding.";

// Kimi-K3 (vllm/models/kimi_k3/, NVIDIA classes, 017e9f4; traced from
// KimiK3ForConditionalGeneration down: KimiLinearForCausalLM at language_model, KimiLinearModel
// at language_model.model, its layers at language_model.model.layers.N).
void kimi_k3_row(ModelInfo& info, uint64_t num_hidden_layers, const EngineVersion& version) {
  info.known = true;
  info.row = version.has("#51249") ? "kimi_k3" : "kimi_k3/unfused-mla-mapping";
  // nvidia/model.py KimiK3ForConditionalGeneration.hf_to_vllm_mapper, applied to the quant
  // config by SupportsQuant._maybe_apply_model_mapping (compressed-tensors renames dotted,
  // non-"re:" entries); published checkpoints already use language_model.model.layers.
  info.has_mapper = true;
  info.prefix_renames = {{"language_model.layers.", "language_model.model.layers."},
                         {"mm_projector.proj.0", "mm_projector.linear_1"},
                         {"mm_projector.proj.2", "mm_projector.linear_2"}};
  // KimiLinearModel.load_weights stacked_params_mapping: the KDA input projections load into
  // in_proj_qkvgfab (g_proj as shard 3 beside q_proj: use_full_rank_gate), the KDA convs into
  // conv1d, the MLA q_a/kv_a into fused_qkv_a_proj, gate/up into gate_up_proj. An MLA layer's
  // g_proj (its output gate) is a layer of its own.
  info.packed = {
      {"gate_up_proj", {"gate_proj", "up_proj"}},
      {"in_proj_qkvgfab", {"q_proj", "k_proj", "v_proj", "g_proj", "b_proj", "f_a_proj"}},
      {"conv1d", {"q_conv1d", "k_conv1d", "v_conv1d"}},
      {"fused_qkv_a_proj", {"q_a_proj", "kv_a_proj_with_mqa"}}};
  info.shard_needs_sibling = {{"g_proj", "q_proj"}};
  // KimiLinearModel.packed_modules_mapping (#50500 d87d2ca74; fused_qkv_a_proj from #51249): the
  // quant config checks in_proj_qkvgfab through q, k, v, b and f_a only, not g_proj.
  info.quant_packed =
      PackedMapping{{"gate_up_proj", {"gate_proj", "up_proj"}},
                    {"in_proj_qkvgfab", {"q_proj", "k_proj", "v_proj", "b_proj", "f_a_proj"}},
                    {"conv1d", {"q_conv1d", "k_conv1d", "v_conv1d"}}};
  if (version.has("#51249")) {
    info.quant_packed->push_back({"fused_qkv_a_proj", {"q_a_proj", "kv_a_proj_with_mqa"}});
  }
  // Built with quant_config=None: the KDA conv1d, the latent MoE's routed_expert_up/down_proj,
  // the AttnRes projections (model.py KimiDecoderLayer, KimiLinearModel); the router gate
  // (GateLinear) and embed_tokens (no quant_config) too.
  info.built_dense_layers = {"conv1d",
                             "routed_expert_up_proj",
                             "routed_expert_down_proj",
                             "self_attention_res_proj",
                             "mlp_res_proj",
                             "output_attn_res_proj"};
  info.embedding_quant_config = false;
  // model.py _maybe_ignore_quant_config: the vision tower and projector get None under
  // CompressedTensorsConfig.
  info.built_without_compressed_tensors_config = {"vision_tower.", "mm_projector."};
  // models/config.py KimiK3ForConditionalGenerationConfig (aeeb36b1f): a compressed-tensors
  // config whose format is mxfp4-pack-quantized becomes Mxfp4Config (from_config keeps nothing
  // of it: every linear dense, the routed experts MXFP4), which qpatch does not model.
  info.own_quant_method = "mxfp4";
  info.own_quant_method_replaces = {"compressed-tensors:mxfp4-pack-quantized"};
  // nvidia/mtp.py KimiK3MTP (speculative.py hf_config_override: kimi_k3 -> KimiK3MTPModel)
  // builds draft layer D = N + i at model.layers.D, the decoder block's layers under it (the
  // mtp_block module adds nothing to the quant prefix), with the target's quant config object
  // (mapped: an entry language_model.model.layers.D.X does not reach model.layers.D.X);
  // load_weights strips language_model. and reads checkpoint model.layers.D. eh_proj is a plain
  // nn.Linear; shared_head.head a ParallelLMHead at model.layers.D.head.
  if (num_hidden_layers > 0) {
    info.draft_prefix = "language_model.model.layers." + std::to_string(num_hidden_layers) + ".";
    info.draft_renames_under = "language_model.model.layers.";
    info.plain_linears = {"eh_proj"};
    for (uint64_t i = 0; i < 4; ++i) {
      const std::string layer = std::to_string(num_hidden_layers + i);
      info.draft_renames.emplace_back("language_model.model.layers." + layer + ".shared_head.head",
                                      "model.layers." + layer + ".head");
      info.draft_renames.emplace_back("language_model.model.layers." + layer + ".",
                                      "model.layers." + layer + ".");
    }
    info.draft_head_prefix = "model.layers." + std::to_string(num_hidden_layers) + ".head";
    info.draft_missing_error = std::string(k_kimi_k3_mtp_layer_missing);
  }
}

} // namespace

ModelInfo model_info_for(const std::string& architecture,
                         uint64_t num_hidden_layers,
                         const EngineVersion& version) {
  ModelInfo info;
  info.architecture = architecture;
  info.num_hidden_layers = num_hidden_layers;
  info.packed = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                 {"gate_up_proj", {"gate_proj", "up_proj"}}};
  qwen_rows(info, architecture, version);
  qwen3_vl_rows(info, architecture);
  if (architecture == "MiMoForCausalLM" && num_hidden_layers > 0) {
    info.known = true;
    info.renumbered_from = "model.mtp_layers.";
    info.renumber_base = num_hidden_layers;
    info.draft_prefix = "model.mtp_layers.";
    info.plain_linears = {"input_proj"};
  }
  deepseek_glm_rows(info, architecture, num_hidden_layers);
  qwen2_vl_rows(info, architecture);
  if (architecture == "Gemma3ForConditionalGeneration") {
    gemma3_row(info);
  }
  if (architecture == "DeepseekV4ForCausalLM") {
    deepseek_v4_row(info, num_hidden_layers);
  }
  if (architecture == "KimiK3ForConditionalGeneration") {
    kimi_k3_row(info, num_hidden_layers, version);
  }
  return info;
}

} // namespace qpatch::engine
