// SPDX-License-Identifier: Apache-2.0
// Methods whose config is one skip list of module names, as vLLM main (017e9f4) reads them
// (engines.md §6-7): every Linear is quantized unless the list skips it.
//   awq  `modules_to_not_convert` (auto_awq.py): skipped when an entry is a substring of the
//        layer name; fused layers by their shards, which must agree; experts when an entry is a
//        substring of the experts prefix. An absent key is derived from the headers: every
//        module whose tensors are all floating point.
//   fp8  `ignored_layers`, else `modules_to_not_convert` (fp8.py, is_layer_skipped, exact
//        mode): a fused name listed verbatim, else exact shard names that must agree; experts
//        when the prefix is a substring of an entry that contains "experts".
//   modelopt  `exclude_modules` (hf_quant_config.json) or its copy `ignore` in config.json
//        (modelopt.py, is_layer_excluded): first is_layer_skipped in exact mode (a fused name
//        listed verbatim, else exact shard names that must agree), then the entry a substring of
//        the (fused) name (also of the name without a leading "language_model."), then
//        fnmatch(name, entry) (a glob over the whole name: "mtp.layers.0*" does not cover
//        "mtp.fc"). A model class with a mapper first splits "X*" into "X" and "X.*"
//        (ModelOptQuantConfigBase.apply_vllm_mapper). ParallelLMHead is quantized like a Linear;
//        names holding vision_tower, vision_model or vit_large_projector are built dense. With
//        NVFP4, vLLM builds Qwen3.5 and Qwen3-Next `mtp.fc` without a quant config (#38832,
//        #46316).
//   bitsandbytes  `llm_int8_skip_modules` (bitsandbytes.py, is_layer_skipped_bnb): skipped when
//        an entry equals one dot-component of the layer name ("mtp" skips every mtp.* layer) or
//        a dotted prefix of it ("mtp.layers.0"); fused layers are tested by their fused name.
//   modelopt MIXED_PRECISION (modelopt.py, ModelOptMixedPrecisionConfig): after the exclusion
//        tests above, a layer is quantized only when `quantized_layers` resolves it: its name
//        is a key (also across model.language_model./language_model.model.), a shard of a
//        fused layer is (shards with different algorithms raise), or a key starts with its name
//        plus "." (experts: with its parent's); anything else is built dense.
//   quark  `exclude` (quark/quark.py QuarkConfig.get_quant_method, quark/utils.py
//        should_ignore_layer, 017e9f4; unchanged in the window but for #46757): entries renamed
//        by the model's mapper (QuarkConfig.apply_vllm_mapper); a plain entry equal to the name,
//        or "re:" followed by a regex that re.match-es it (anchored at the start only); a fused
//        layer through its shards only (prefix.replace(proj, shard); shards that disagree raise
//        "Found a different quantization schemes"), so an entry naming qkv_proj excludes
//        nothing; a "re:" entry that does not compile raises re.error for every layer whose
//        test reaches it (no earlier entry matched); an experts layer (since #46757) also when a
//        plain entry names one of its children. A layer not excluded is quantized
//        (layer_quant_config and global_quant_config only choose its scheme); a ParallelLMHead is
//        never quantized (get_quant_method returns None for what is not LinearBase, Attention or
//        experts).
// lm_head is a ParallelLMHead, which FP8, bitsandbytes and Quark never quantize, AWQ only with
// `lm_head: true`, and ModelOpt like any Linear.
//
// SGLang's AWQ (layers/quantization/awq/awq.py, AWQMarlinConfig, the kernel it picks on CUDA for
// 4- and 8-bit checkpoints; sgl-project/sglang 01f67c3): a layer is skipped when an entry is a
// substring of the name it is built under, which for a fused layer is the fused name
// ("...qkv_proj"), never its shards, and for experts the FusedMoE name ("...mlp.experts"); an
// absent list is empty (nothing is derived). Its Qwen3.5 draft builds mtp.fc as a plain
// nn.Linear (always dense).
//
// SGLang's ModelOpt (modelopt_quant.py, store 54490057226; no commit named):
// ModelOptQuantConfig._get_quant_method skips a LinearBase when is_layer_skipped (exact, as its
// FP8) or is_layer_excluded (each entry, "." literal and "*" any run, full-matching the name, a
// dot-part of it, or either without "language_model.") holds, a FusedMoE by is_layer_excluded;
// lm_head is never quantized. Under NVFP4 its Qwen3.5 builds attention and the MTP draft dense.
//
// SGLang's FP8 (fp8.py @00563d3, quantization/utils/utils.py @c5bef61 is_layer_skipped): the
// first of ignored_layers / modules_to_not_convert present, each entry with and without a
// leading "model."; exact names, a fused layer (by its quant config's mapping, the Qwen3.5
// draft's {}) by its shards only, an unfused gate_up_proj by both its parts. Its bitsandbytes
// (bitsandbytes.py @b53daee): is_layer_skipped_bnb on the built name, FusedMoE never skipped.
// Its Quark (quark/quark.py @ce1ec3af, quark/utils.py @382abd60): vLLM's rule before #46757 on
// the entries as written (a DeepSeek-V3 draft's renamed by its NextN mapper, #19425); the
// Qwen3.5 draft built dense once an entry starts with "mtp." (#23146).
//
// transformers' Quark (amd-quark's _map_to_quark / get_layer_quant_config): every nn.Linear,
// lm_head included, quantized unless an entry fnmatch-es its module name.
#pragma once

#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/dialect.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/pattern.hpp>

#include <memory>
#include <string>
#include <vector>

namespace qpatch::engine {

enum class SkipListMethod { awq, fp8, modelopt, bitsandbytes, quark };
// The canonical quant_method name of `method` ("modelopt" for every ModelOpt format).
std::string_view method_name(SkipListMethod method);

// Python fnmatch.fnmatchcase: `*` any run (dots included), `?` one character, `[seq]`/`[!seq]`.
bool fnmatch(std::string_view name, std::string_view pattern);

class SkipListRules {
public:
  // `version`'s engine: vLLM, SGLang or transformers, each by its own dialect (dialect.hpp;
  // transformers has no ModelOpt quantizer).
  // `version`: vLLM before #43981 judges a fused layer through its shards only (its own name
  // listed skips nothing); before #38832 (Qwen3.5) / #46316 (Qwen3-Next) modelopt_fp4 builds
  // mtp.fc quantized; before #42124 ModelOpt gives a ParallelLMHead no quant method.
  SkipListRules(SkipListMethod method,
                std::vector<std::string> entries,
                const ModelInfo& model,
                bool nvfp4 = false,
                const EngineVersion& version = newest_version(Engine::vllm));

  // AWQ `lm_head: true` (auto_awq.py AutoAWQConfig.get_quant_method): vLLM quantizes the
  // ParallelLMHead too, unless the list skips it.
  void set_lm_head_quantized(bool quantized) {
    m_lm_head_quantized = quantized;
    if (m_draft) {
      m_draft->set_lm_head_quantized(quantized);
    }
  }
  // Whether the config gives the list at all (transformers' bitsandbytes skips "lm_head" only
  // when it does not).
  void set_list_given(bool given) {
    m_list_given = given;
    if (m_draft) {
      m_draft->set_list_given(given);
    }
  }

  Decision decide(const Layer& layer) const;
  // Every rule that bears on `layer`, in the order the engine tries them, as (label, text);
  // `key` names the list ("modules_to_not_convert").
  std::vector<std::pair<std::string, std::string>> trace(const Layer& layer,
                                                         const std::string& key) const;
  // ModelOpt MIXED_PRECISION: the `quantized_layers` keys and their quant_algo.
  void set_quantized_layers(std::vector<std::pair<std::string, std::string>> layers);
  const Dialect& dialect() const { return m_dialect; }
  // Return the index of the entry that skips vLLM name `name`, if any.
  std::optional<size_t> skipping_entry(const std::string& name) const;

private:
  // Hold `entry` (as the config gives it, after ModelOpt's glob split and FP8's model. variants)
  // as the engine holds it, with its copies, each recording `origin` (m_mapped, m_origin).
  void hold(const std::string& entry, size_t origin);
  void hold_as(std::string name, size_t origin);
  // Quark: each held "re:" entry compiled once (m_quark_patterns, m_quark_errors).
  void compile_quark_patterns();
  // SGLang's ModelOpt (is_layer_skipped or is_layer_excluded).
  bool is_sglang_modelopt() const;
  bool matches(const std::string& entry, const std::string& name) const;
  // The entry index whose vLLM form equals `name` (is_layer_skipped's exact mode).
  std::optional<size_t> exact_entry(const std::string& name) const;
  // FP8 and ModelOpt (is_layer_skipped, exact mode): a name holding "experts" that is not a fused
  // layer is skipped when it is a substring of an entry that holds "experts".
  std::optional<size_t> experts_entry(const std::string& name) const;
  // ModelOpt's is_layer_excluded: is_layer_skipped (exact, fused shards that must agree), then
  // an entry contained in the name, then a glob over the name. Sets `decision` on a load error.
  std::optional<size_t> modelopt_excluded(const Layer& layer, Decision& decision) const;
  // SGLang's ModelOpt is_layer_excluded: the entry whose glob full-matches `prefix`, one of its
  // dot-parts, or the name without "language_model."; or an MLA tail in its last part.
  std::optional<size_t> modelopt_glob_excluded(const std::string& prefix) const;
  void compile_exclusions();
  // MIXED_PRECISION: the quant_algo `quantized_layers` gives vLLM name `prefix` ("" when none;
  // "!" followed by the algorithms when the shards of a fused layer disagree).
  std::string resolve_algo(const Layer& layer) const;
  // SGLang's ModelOptMixedPrecisionConfig._resolve_quant_algo: the same three lookups on the
  // names as written (no renaming, no other spelling, no lm_head alias), the algo upper-cased.
  std::string sglang_resolve_algo(const Layer& layer) const;
  // Why the engine builds `layer` with no quant config, or nothing.
  std::optional<std::string> built_dense_reason(const Layer& layer) const;
  // Test each of `names` (a fused layer's shards) with skipping_entry, recording each in
  // decision.shards and shard_ignored; return the first entry that skips one and how many do.
  std::pair<std::optional<size_t>, size_t> test_shards(const std::vector<std::string>& names,
                                                       Decision& decision) const;
  // vLLM's Quark (should_ignore_layer): the verdict on the built name.
  Decision quark_decide(const Layer& layer, Decision decision) const;
  // transformers (SkipListDialect::transformers_convert): the verdict on the checkpoint name.
  Decision transformers_decide(const Layer& layer, Decision decision) const;
  // transformers' Quark (amd-quark's _map_to_quark): an `exclude` glob over the module name.
  Decision transformers_quark_decide(const Layer& layer, Decision decision) const;
  // Not skipped: quantized, or with MIXED_PRECISION only when quantized_layers gives it an algo
  // the engine builds (`sglang_modelopt`: by SGLang's _resolve_quant_algo).
  Decision listed_or_quantized(const Layer& layer, Decision decision, bool sglang_modelopt) const;
  // Not skipped by is_layer_skipped: SGLang's ModelOpt still asks is_layer_excluded.
  Decision not_skipped(const Layer& layer, Decision decision, bool sglang_modelopt) const;
  // The verdict from the entries that test the layer's names: experts, fused shards, the fused
  // name, and SGLang's gate_up_proj by parts (`exact_mode`: is_layer_skipped's exact mode).
  Decision decide_by_names(const Layer& layer,
                           Decision decision,
                           bool exact_mode,
                           bool sglang_modelopt) const;

  SkipListMethod m_method;
  bool m_nvfp4 = false;
  Dialect m_dialect;
  SkipListDialect m_skip; // m_dialect.skip_list
  bool m_lm_head_quantized = false;
  bool m_list_given = true;
  // transformers' AWQ: each entry compiled as a Python regex (nothing: it does not compile),
  // then the default "lm_head".
  std::vector<std::optional<Pattern>> m_convert_patterns;
  // Quark: each renamed entry's "re:" pattern, compiled once (nothing: a plain entry, or one
  // that does not compile).
  std::vector<std::optional<Pattern>> m_quark_patterns;
  std::vector<std::string> m_quark_errors; // per m_mapped: why its "re:" does not compile, or ""
  // vLLM's Quark: the re.error `name`'s test raises, when a target that does not compile comes
  // before any that matches it; nothing otherwise.
  std::optional<std::string> quark_raises(const std::string& name) const;
  // SGLang's ModelOpt: each entry as is_layer_excluded reads it.
  struct Exclusion {
    enum class Kind { literal, glob, regex } kind = Kind::literal;
    std::optional<Pattern> pattern; // regex: compiled (nothing: re.error)
    std::string tail;               // the entry's last dot-part
    bool fused_tail = false;        // tail is one of the MLA projections
  };
  std::vector<Exclusion> m_exclusions;
  std::vector<std::string> m_entries; // as written
  std::vector<std::string> m_mapped;  // as vLLM holds them (renamed, ModelOpt globs split)
  std::vector<size_t> m_origin;       // per m_mapped: its index in m_entries
  ModelInfo m_model;
  std::optional<std::vector<std::pair<std::string, std::string>>> m_layers; // renamed keys
  // The draft's rules when the target's config is renamed by its class's mapper
  // (ModelInfo::target_config_mapper): the same entries as written, judging the draft's layers.
  std::unique_ptr<SkipListRules> m_draft;
  // trace's line for an entry written as `name` that the target's mapper renamed away.
  void trace_renamed_away(const std::string& name,
                          const std::string& key,
                          std::vector<std::pair<std::string, std::string>>& lines) const;
  // m_draft for a draft layer the engine names `prefix`, else this.
  const SkipListRules* rules_for(std::string_view prefix) const;
};

} // namespace qpatch::engine
