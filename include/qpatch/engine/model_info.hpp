// SPDX-License-Identifier: Apache-2.0
// What an engine's model class contributes to quantization decisions: how it renames checkpoint
// names (vLLM's hf_to_vllm_mapper, engines.md §3.3), which checkpoint shards it fuses into one
// layer (packed_modules_mapping, quant-formats.md §4), and what it builds without a quant
// config. One naming row per architecture and version range, in each engine's folder
// (src/engine/<engine>/naming.cpp); keyed by config.json's architecture.
#pragma once

#include <qpatch/engine/versions.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace qpatch::engine {

using PackedMapping = std::vector<std::pair<std::string, std::vector<std::string>>>;

// A model class's mapper over its target's quant config, where the engine builds the layers
// under names of their own (SGLang: the loader calls quant_config.apply_weight_name_mapper with
// the class's hf_to_sglang_mapper, model_loader/loader.py _get_quantization_config since #18273;
// the Qwen3.5 VLM inherited Qwen3-VL's until #23471). WeightsMapper._map_name (models/utils.py,
// unchanged since 712f44ee): at most one substring rule (the first occurrence), then at most one
// prefix rule, each list tried longest key first, on every entry ("re:" ones too: a prefix
// never fires on them, a substring does). Only the methods whose config class implements
// apply_weight_name_mapper are renamed; the MTP draft's quant config comes from a class without
// a mapper, so its entries stay as written.
struct ConfigMapper {
  std::vector<std::pair<std::string, std::string>> substrings; // longest key first
  std::vector<std::pair<std::string, std::string>> prefixes;   // longest key first
  std::string methods; // canonical method names whose config maps (space-separated)
  // Where the mapper comes from, for reports ("Qwen3-VL's hf_to_sglang_mapper (qwen3_vl.py)").
  std::string source;
  // The build it belongs to, said in the report of a method it renames (ModelInfo::assumes).
  std::string assumes;
  bool maps(std::string_view method) const;
  std::string map(std::string_view entry) const;
};

struct ModelInfo {
  std::string architecture;
  uint64_t num_hidden_layers = 0; // config.json's, 0 when unknown
  // The engine's mapper over config entries (hf_to_vllm_mapper's orig_to_new_prefix renames,
  // each tried in order on the name as renamed so far); empty when the engine renames none
  // (SGLang's Qwen3.5 has hf_to_sglang_mapper = None).
  std::vector<std::pair<std::string, std::string>> prefix_renames;
  // The mapper's substring renames, applied before its prefix renames (WeightsMapper order:
  // regex, substr, prefix, suffix), to config entries and layer names alike: DeepSeek-V4's
  // `.shared_experts.w2` -> `.shared_experts.down_proj`.
  std::vector<std::pair<std::string, std::string>> substring_renames;
  // Where the engine builds a layer, as prefix renames of its checkpoint name (the same renames
  // as prefix_renames unless `separate_layer_names`): SGLang builds Qwen3.5's text layers under
  // model.layers.N although it renames no config entry.
  std::vector<std::pair<std::string, std::string>> layer_renames;
  bool separate_layer_names = false;
  // Last-component renames of layers under an engine prefix, (under, from, to): SGLang builds
  // the Qwen3-VL vision attention's checkpoint `attn.qkv` as `attn.qkv_proj` (VisionAttention).
  std::vector<std::tuple<std::string, std::string, std::string>> component_renames;
  // Draft (MTP) layers renamed as a whole, first matching checkpoint prefix wins: SGLang builds
  // the Qwen3-Next draft under `model` (mtp.layers.0 -> model.layers.0) and the DeepSeek/GLM
  // NextN layer under model.decoder.
  std::vector<std::pair<std::string, std::string>> draft_renames;
  // The prefix every draft rename's checkpoint prefix starts with, where it is not
  // draft_prefix (vLLM's DeepSeek-V4 mtp.{i}: "mtp."): other names skip the renames.
  std::string draft_renames_under;
  // fused layer name -> checkpoint shard names: the layers the model class builds fused.
  PackedMapping packed;
  // The mapping the quant config is given (packed_modules_mapping), by which a fused layer is
  // judged through its shards; nothing: `packed`. SGLang's Llama, Qwen2/3, GLM and MiMo classes
  // declare none, so their fused layers are judged by the fused name itself.
  std::optional<PackedMapping> quant_packed;
  // The draft's own quant config mapping, for layers under `draft_layer_prefix`; nothing: the
  // target's. SGLang's Qwen3_5ForCausalLMMTP declares none before PR #35887.
  std::optional<PackedMapping> draft_packed;
  std::string draft_layer_prefix; // the draft's layers in engine naming ("mtp.")
  // The draft class's hf_to_sglang_mapper: the loader applies it to the draft's own quant config
  // entries (SGLang's DeepseekV3ForCausalLMNextN since #19425: substring "model.layers.61" ->
  // "model.decoder"; compressed-tensors, Quark, ModelOpt, and FP8 from #21280).
  ConfigMapper draft_config_mapper;
  // The target's quant config renamed by its class's mapper (ConfigMapper); none when empty.
  ConfigMapper target_config_mapper;
  // The same model as its draft's quant config sees it: no target_config_mapper.
  ModelInfo without_target_config_mapper() const;
  // The checkpoint prefix of the NextN layer ("model.layers.78") whose Quark exclude entries the
  // draft copies onto its own names (SGLang's GlmMoeDsaForCausalLMNextN since #30265:
  // _resolve_nextn_quant_config); "" when none.
  std::string draft_quark_nextn_layer;
  // SGLang's DeepSeek NextN draft (deepseek_nextn.py, #23219 57ecce98 on): under Quark eh_proj is
  // a ReplicatedLinear built with the quant config, not a plain nn.Linear
  // (`quark_builds_plain_linears`), and the whole draft model is built without one when Quark's
  // should_ignore_layer skips `draft_quark_drop_prefix` (the NextN layer's prefix after the
  // class's mapper: "model.decoder" for DeepSeek-V3; "" when the class never drops it).
  bool quark_builds_plain_linears = false;
  std::string draft_quark_drop_prefix;
  // DeepseekModelNextN builds the draft without a quant config under modelopt_fp4 (every SGLang
  // version read): its decoder and eh_proj are dense whatever the config says.
  bool draft_dense_under_nvfp4 = false;
  // True for a layer of the draft model proper (its decoder and its plain linears, not its
  // head), in engine naming.
  bool in_draft_model(std::string_view prefix) const;
  // The engine name of the draft's own ParallelLMHead when it is stored as a linear of the draft
  // layer (DeepSeek/GLM shared_head.head, which SGLang builds at model.shared_head.head).
  std::string draft_head_prefix;
  // The exception the engine's draft model raises when a layer the config declares has no
  // weights on disk, with {} for the layer index ("" when it has no such check and starts with
  // the draft's parameters uninitialised).
  std::string draft_missing_error;
  // Set when the model class loads every quantized checkpoint through a quant config of its own
  // whatever quant_method says (vLLM's DeepSeek-V4: deepseek_v4_fp8), which qpatch has not
  // modelled: the engine is then not judged for it, and the report says why.
  std::string own_quant_method;
  // The quant_method values it takes over; "METHOD:FORMAT" for one format of a method (vLLM's
  // Kimi-K3 reroutes compressed-tensors "mxfp4-pack-quantized" to Mxfp4Config).
  std::vector<std::string> own_quant_method_replaces;
  // Which engine's naming this is, and which row (with its version range): versions whose
  // rows are equal build the same layers, so they share them.
  std::string naming = "vllm";
  std::string row;
  // Checkpoint-name prefixes the model class builds with quant_config=None: every layer under
  // them is dense whatever the config says (SGLang's Qwen3.5 vision tower since a5ea6158).
  std::vector<std::string> built_without_quant_config;
  // Fused layers, by last name component, that the model class builds with quant_config=None
  // wherever they sit (vLLM's DeepSeek-V3.2/GLM-5 indexer wk_weights_proj).
  std::vector<std::string> built_dense_layers;
  // Name components under which every linear is built with quant_config=None, wherever they
  // sit (DeepSeek-V4's attention and indexer `compressor`); their modules are not fused, so
  // they keep their checkpoint names.
  std::vector<std::string> built_dense_components;
  bool in_built_dense_component(std::string_view name) const;
  // Under built_without_quant_config or a built_dense_component.
  bool built_without_quant_config_for(std::string_view name) const;
  // Checkpoint-name prefixes the model class builds without a quant config under
  // compressed-tensors only (vLLM's Kimi-K3 _maybe_ignore_quant_config: the vision tower and
  // projector get None when the config is a CompressedTensorsConfig, the config otherwise).
  std::vector<std::string> built_without_compressed_tensors_config;
  bool built_without_compressed_tensors_config_for(std::string_view name) const;
  // Layers built with quant_config=None under every method but bitsandbytes: (a part the
  // checkpoint name holds, its last components). vLLM's SiglipMLP (siglip.py) gives fc1 and fc2
  // the quant config only when its sizes are multiples of 64 or the method is bitsandbytes or
  // torchao.
  std::pair<std::string, std::vector<std::string>> dense_but_bitsandbytes;
  bool dense_but_bitsandbytes_for(std::string_view name) const;
  // Shards fused only beside a sibling, (shard, sibling): Kimi-K3's KDA layers load g_proj as
  // shard 3 of in_proj_qkvgfab (beside q_proj), while its MLA layers build their own g_proj.
  std::vector<std::pair<std::string, std::string>> shard_needs_sibling;
  // Layers, by last name component, that the model cannot run dense whatever the config says,
  // with why: vLLM's DeepSeek-V4 NVIDIA attention reads wo_a's weight scale on every forward
  // (nvidia/ops/o_proj.py deep_gemm_fp8_o_proj), so a dense wo_a fails at the first one.
  std::vector<std::pair<std::string, std::string>> needs_quantized;
  // Why the layer vLLM names `prefix` must be stored quantized, or "" when it need not be.
  std::string_view needs_quantized_because(std::string_view prefix) const;
  // True when qpatch has no naming table for this architecture under this engine: its names
  // are assumed (the report says so).
  bool assumed_naming = false;
  // Why this row's names are assumed for this engine version although it has a naming table
  // ("" when they were read): a row paired from files of several commits, or a span whose
  // naming is known to differ and is not modelled apart. The report says it for every version
  // judged.
  std::string assumed_because;
  // What this row assumes about the platform or the run where the engine builds the model
  // otherwise ("" when nothing): the names are read, the build they describe is one of several.
  // The report says it for every version judged.
  std::string assumes;
  // The name component that makes `assumes` matter: said only when a stored module's name holds
  // it ("" when always).
  std::string assumes_when;
  bool known = false; // false: generic rules (no renames, q/k/v and gate/up fusion)
  // false: vLLM builds embed_tokens with no quant config, so no rule can quantize it.
  bool embedding_quant_config = true;
  // true: the MoE router `gate` is built with the quant config, judged as any linear (vLLM's
  // Qwen3-MoE family); false: routers are dense whatever the config says.
  bool router_quant_config = false;
  // false: the model class builds its ParallelLMHead (and the draft's) with no quant config.
  bool lm_head_quant_config = true;
  // The model class has an hf_to_vllm_mapper, so vLLM calls the quant config's
  // apply_vllm_mapper (model_loader/utils.py configure_quant_config).
  bool has_mapper = false;
  // MiMo: the draft's layers model.mtp_layers.{i} are built as model.layers.{base + i}, and the
  // per-instance name mapper is not applied to the quant config (engines.md §10.2).
  std::string renumbered_from; // "model.mtp_layers." or ""
  uint64_t renumber_base = 0;  // num_hidden_layers
  // Where the MTP draft's layers start in checkpoint naming ("model.mtp_layers." for MiMo,
  // "model.layers.61." for DeepSeek-V3), and the last name components of its projections vLLM
  // builds as a plain nn.Linear (never quantized: MiMo input_proj, DeepSeek/GLM eh_proj).
  std::string draft_prefix;
  std::vector<std::string> plain_linears;
  // The name under which the MTP draft builds a ParallelLMHead of its own over the checkpoint's
  // `lm_head`, judged by the same quant config ("" when the draft has none): vLLM's Qwen3.5
  // draft builds "lm_head" while the Qwen3.5 VLM's own head is "language_model.lm_head".
  std::string draft_lm_head;
  // false: the transformers view of a checkpoint, one nn.Linear per module (no fusion, class
  // "Linear" everywhere, no renames; per-expert modules are judged through expert 0).
  bool engine_layers = true;

  // Return the fused layer name `shard` belongs to ("q_proj" -> "qkv_proj"), or "".
  std::string_view fused_for(std::string_view shard) const;
  // Return the shards of fused layer name `fused` in the quant config's mapping (the target's),
  // or nullptr.
  const std::vector<std::string>* shards_of(std::string_view fused) const;
  // Return the shards by which the quant config judges the layer the engine names `prefix`
  // (its last component looked up in the draft's mapping for a draft layer), or nullptr.
  const std::vector<std::string>* shards_of_layer(std::string_view prefix) const;
  // Return the name vLLM uses for checkpoint name `name` (prefix renames only): how plain
  // config entries are renamed.
  std::string to_vllm(std::string_view name) const;
  // `entry` as the draft's own quant config holds it after its class's mapper
  // (draft_config_mapper); `entry` itself when none applies.
  std::string draft_config_name(const std::string& entry) const;
  // The names the draft's Quark config adds for exclude entry `entry` (draft_quark_nextn_layer:
  // glm4_moe.py @07ef650e _map_mtp_ckpt_name, and model.decoder.mlp.experts for an entry
  // naming an expert); none for an entry that does not start with the NextN layer's prefix.
  std::vector<std::string> draft_quark_copies(const std::string& entry) const;
  // Return the prefix vLLM asks the quant config about for checkpoint layer `name`: the renames
  // applied to it as to its weights ("lm_head" -> "language_model.lm_head" on the Qwen3.5 VLM),
  // and MiMo's renumbering of its MTP layers.
  std::string layer_prefix(std::string_view name) const;
  // True when vLLM builds layer `name` (checkpoint naming) as a plain nn.Linear.
  bool is_plain_linear(std::string_view name) const;
  // The draft layer `name` sits in, in checkpoint naming ("model.layers.62."), or "": the first
  // at `draft_prefix`, and for heads stored after the main layers every later index too
  // (vLLM's DeepSeekMTP and Glm4MoeMTP build num_nextn_predict_layers of them).
  std::string draft_layer_of(std::string_view name) const;
  // True for a draft layer's shared_head.head, which the draft builds as a ParallelLMHead.
  bool is_draft_shared_head(std::string_view name) const;
};

// vLLM's naming row for `architecture` in `version` (vllm/naming.cpp). `num_hidden_layers`
// (config.json) places renumbered MTP layers; 0 when unknown.
ModelInfo model_info_for(const std::string& architecture,
                         uint64_t num_hidden_layers = 0,
                         const EngineVersion& version = newest_version(Engine::vllm));
// The same model as transformers builds it (see ModelInfo::engine_layers).
ModelInfo transformers_view(const ModelInfo& model);

// SGLang's naming row for `architecture` in `version` (sglang/naming.cpp): the eras before and
// after a5ea6158, and the Qwen3.5 draft with PR #35887 (its quant config gets the text model's
// packed_modules_mapping).
ModelInfo sglang_model_info(const std::string& architecture,
                            uint64_t num_hidden_layers,
                            const EngineVersion& version = newest_version(Engine::sglang));

// The naming row of whichever engine `version` is of (the registry, engines.cpp).
ModelInfo naming_of(const EngineVersion& version,
                    const std::string& architecture,
                    uint64_t num_hidden_layers);

} // namespace qpatch::engine
