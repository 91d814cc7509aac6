// SPDX-License-Identifier: Apache-2.0
// How one version of one engine reads each method's config, as data. The method rules
// (compressed_tensors_rules, skip_list_rules, gptq_rules, auto_round_rules) are written once and
// ask their dialect wherever engines or versions differ; each engine's folder fills the same struct
// for each of its versions (src/engine/<engine>/dialect.cpp), citing the file, function and commit
// behind every field. Adding an engine is a folder of this shape; a version is a `has("#N")`.
#pragma once

#include <qpatch/engine/model_info.hpp>
#include <qpatch/engine/versions.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::engine {

// compressed-tensors: should_ignore_layer, find_matched_target, get_quant_method.
struct CtDialect {
  // A plain (non-"re:") ignore entry matches as a case-insensitive substring of the layer name
  // (SGLang's check_contains=True), not by equality.
  bool substring_ignore = false;
  // A plain ignore entry matches the layer name exactly or as a dotted suffix of it ("mlp.gate"
  // matches "model.layers.0.mlp.gate", never "...mlp.gate_up_proj" or a parent's children:
  // SGLang's check_equal_or_regex_match from #32736).
  bool suffix_ignore = false;
  // The library's own matching (transformers through compressed-tensors' is_match): an ignore
  // entry may name the module's class too, and a class matches a target or an entry only by
  // equality with a class of its MRO (never a regex, never a substring; "Linear" also names
  // vLLM's LinearBase). Names match exactly or by re.match: no fused mapping is given.
  bool library_matching = false;
  // find_matched_target raises for a Linear no target matches, and get_quant_method lets it
  // through: the model is never built ("Unable to find matching target for ...").
  bool untargeted_raises = false;
  // find_matched_target tries a class-name target before the fused shards.
  bool class_before_fused = false;
  // get_quant_method gives a ParallelLMHead no method: the head is always dense.
  bool head_without_method = false;
};

// AWQ, FP8, ModelOpt, bitsandbytes: one skip list of module names.
// How SGLang's is_layer_skipped (quantization/utils.py) compares an entry with a layer name:
// `prefix in ignored_layers` (vLLM's, and SGLang's before 2025-12-04), `ignored in prefix`
// (2025-12-04 to 2026-04-21), or _module_path_match (#23467: the name, a parent of it, or a run
// of its dotted parts).
enum class SkippedMatch : uint8_t { exact, substring, module_path };

struct SkipListDialect {
  // AWQ: every layer, fused or experts, is tested under the one name the engine builds it as (a
  // fused layer by its fused name, never its shards).
  bool awq_built_name_only = false;
  // An absent or empty AWQ list is derived from the headers (every all-float module); else it
  // is empty.
  bool awq_derives_absent_list = true;
  // A fused layer listed by its own name is skipped (else only its shards are tested).
  bool fused_name_skips = true;
  // Quark: an experts layer is excluded when a plain entry equals it or names one of its
  // children ("model.layers.78.mlp.experts.*.down_proj"); else only its own name is tested.
  bool quark_experts_by_children = false;
  // Quark: an exclude entry starting with "mtp." builds the whole Qwen3.5 MTP draft without a
  // quant config (SGLang's _mtp_quant_config).
  bool quark_mtp_entry_drops_draft_quant = false;
  // ModelOpt NVFP4 builds the Qwen3.5 / Qwen3-Next MTP fc without a quant config.
  bool fc_dense_nvfp4 = false;
  // ModelOpt gives a ParallelLMHead a quant method (it is quantized like any Linear).
  bool modelopt_quantizes_head = false;
  // AWQ honours `lm_head: true` by quantizing the ParallelLMHead.
  bool awq_reads_lm_head = false;
  // ... only under the Marlin config (a config Marlin cannot serve gets the plain AWQ config,
  // which gives a ParallelLMHead no method).
  bool awq_head_needs_marlin = false;
  // ModelOpt's apply_vllm_mapper splits "X*" into "X" and "X.*" (for a model with a mapper).
  bool modelopt_splits_globs = false;
  // ModelOpt builds names holding vision_tower, vision_model or vit_large_projector dense.
  bool modelopt_dense_vision = false;
  // ModelOpt MIXED_PRECISION: the quant_algo values (upper-cased) get_quant_method builds a
  // quantized layer for; any other algo a quantized_layers entry gives is built dense.
  std::vector<std::string> modelopt_mixed_algos{"FP8", "NVFP4"};
  // transformers' quantizers: every nn.Linear is tested under its checkpoint name against the
  // list get_modules_to_not_convert returns. AWQ (should_convert_module: re.match(entry + "\."),
  // re.match(entry) or endswith; an entry that is no regex raises re.error) always adds
  // "lm_head"; bitsandbytes (_replace_with_bnb_linear: the module's own name in the list,
  // `entry + "."` contained in the name, or the whole name) reads a given list whole, and
  // ["lm_head"] only when none is given.
  bool transformers_convert = false;
  // FP8: `modules_to_not_convert` is the list whenever it is not None, and `ignored_layers`
  // only otherwise (transformers' FineGrainedFP8Config.__init__); vLLM reads ignored_layers
  // first and falls back when it is empty.
  bool fp8_prefers_modules_to_not_convert = false;
  // The engine has no ModelOpt quantizer: it skips the quantization config and builds every
  // layer dense (transformers: quantizers/auto.py supports_quant_method).
  bool modelopt_unsupported = false;
  // FP8: the list is get_from_keys_or(config, ["ignored_layers", "modules_to_not_convert"]),
  // the first key present even when its value is empty or null (vLLM falls back past an empty
  // ignored_layers); every entry is held both without and with one leading "model.".
  bool fp8_first_present_key = false;
  // FP8: an unfused name holding "gate_up_proj" is skipped too when both its gate_proj and
  // up_proj names are listed (SGLang's is_layer_skipped).
  bool fp8_gate_up_by_parts = false;
  // SGLang's is_layer_skipped (FP8, and ModelOpt's is_layer_skipped step): how an entry names a
  // layer, whether trailing dots are stripped first (#26287), the shards it fuses a name by when
  // the quant config's mapping has none (#23467's _FALLBACK_FUSED_SHARDS), and whether its
  // "experts" branch keeps a general hit (`is_skipped or any(...)`, #18742).
  SkippedMatch skipped_match = SkippedMatch::exact;
  bool skipped_strips_dots = false;
  std::vector<std::pair<std::string, std::vector<std::string>>> fallback_fused_shards;
  bool experts_keep_general_hit = false;
  // SGLang's Fp8Config before #18742: is_layer_skipped is asked without the fused mapping, and a
  // FusedMoE is always given Fp8MoEMethod (its list is never read for experts).
  bool fp8_without_fused_mapping = false;
  // Fp8Config.from_config holds each entry without and with one leading "model." (#18742; with
  // fp8_first_present_key).
  bool fp8_model_prefix_variants = false;
  // bitsandbytes: a FusedMoE is quantized whatever the list says (SGLang's
  // BitsAndBytesConfig.get_quant_method tests LinearBase only).
  bool bnb_experts_ignore_list = false;
  // ModelOpt (SGLang's ModelOptQuantConfig._get_quant_method): a LinearBase is dense when
  // is_layer_skipped (FP8's exact rule, over the entries as written and the quant config's
  // mapping) or is_layer_excluded (an entry, "." literal and "*" any run, full-matching the name,
  // one of its dot-parts, or either without a leading "language_model."; an MLA projection tail
  // contained in the last part) skips it; a FusedMoE by is_layer_excluded only; a ParallelLMHead
  // is given no method (dense).
  bool modelopt_skipped_or_excluded = false;
  // Before #18546 (33c33a7d, 2026-02-21) each config class had its own is_layer_excluded:
  // ModelOptFp8Config's `module in prefix` (or in the name without "language_model."),
  // ModelOptFp4Config's fullmatch of the whole name or an MLA projection tail; and a FusedMoE
  // was never excluded (_get_quant_method: `return Moe(self)`).
  bool modelopt_excluded_per_class = false;
  // ModelOpt NVFP4: the Qwen3.5 attention and linear-attention projections are built without a
  // quant config, and the whole MTP draft too (SGLang's modelopt_fp4 gates).
  bool nvfp4_dense_attention_and_draft = false;
};

// GPTQ: modules_in_block_to_quantize and `dynamic`.
struct GptqDialect {
  // modules_in_block_to_quantize is read (and derived from the headers when falsy); else every
  // Linear no negative `dynamic` rule matches is quantized.
  bool reads_module_list = true;
  // FusedMoE layers consult `dynamic` (else every experts layer is quantized).
  bool moe_reads_dynamic = true;
  // The Qwen3.5 draft builds its MTP decoder layers dense under a "-:" rule naming "mtp".
  bool qwen35_mtp_special_case = false;
  // How a Linear's per-layer override (override_config) is checked: `marlin_always`, the config
  // is served by GPTQ Marlin whatever it holds (vLLM since #38288: AutoGPTQConfig), so the
  // overridden (bits, sym) must be (4, true) or (8, true); else Marlin only when the config's
  // own bits, sym and group_size are Marlin's (GPTQMarlinConfig.is_gptq_marlin_compatible),
  // and plain GPTQ (2, 3, 4 or 8 bits, any sym) otherwise.
  bool marlin_always = false;
  // transformers through optimum's GPTQQuantizer.convert_model: only the nn.Linear whose names
  // start with the block (block_name_to_quantize, else the first BLOCK_PATTERNS entry a module
  // name starts with) are candidates, and a list that is not None keeps those whose names end
  // with one of its summed entries; `dynamic` and `lm_head` are never read.
  bool optimum_convert = false;
};

// auto-round: extra_config and the block list.
struct AutoRoundDialect {
  // The auto_round library's own conversion (transformers' AutoRoundQuantizer ->
  // convert_hf_model): every nn.Linear under its module name; the block list by startswith, an
  // exact extra_config key joins the layers whatever the blocks, any other key is a regex
  // (re.search, block layers first); modules_to_not_convert and "lm_head" re.search'd over the
  // block layers; quantized iff bits <= 8 or act_bits <= 8. Else vLLM's INC rules.
  bool library_convert = false;
  // SGLang's routing (auto_round/routing.py get_layer_config): an exact key first (global
  // defaults), the block list by startswith, a FusedMoE by the keys it starts, the quant config's
  // packed_modules_mapping (empty unless the model class updates it), then get_config: an exact
  // key, else the first regex key that re.fullmatch-es the name. The layer's GPTQ or AWQ config is
  // then built from the tuple, and refuses what its kernel cannot serve.
  bool sglang_routing = false;
};

struct Dialect {
  std::string_view engine_name; // how sentences name the engine ("vLLM")
  CtDialect compressed_tensors;
  SkipListDialect skip_list;
  GptqDialect gptq;
  AutoRoundDialect auto_round;
};

// The dialect of `version` for `model` (some fields hold for one architecture), from the
// folder of whichever engine `version` is of (the registry, engines.cpp).
Dialect dialect_of(const EngineVersion& version, const ModelInfo& model);

} // namespace qpatch::engine
